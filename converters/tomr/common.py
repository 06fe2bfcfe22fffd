"""What MindSpore's ``*ToMR`` classes share: their argument checks, status values and write loop.

The checks raise what ``mindspore.mindrecord`` raises, with its wording, so code written
against MindSpore (``pytest.raises(..., match=...)``, ``except ValueError``) keeps working.
The write loop makes the :class:`recordio.FileWriter` calls MindSpore's converters make
(header and page size, schema, index, rows in batches of 256, commit): recordio's writer
writes the same bytes as MindSpore's for the same calls.
"""


from recordio import extras
from recordio.errors import ParamValueError, PathNotExistsError
from recordio.mindrecord.params import FAILED, MAX_SHARDS, SUCCESS, check_path_param

__all__ = ["BATCH", "FAILED", "ParamValueError", "PathNotExistsError", "SUCCESS", "check_filename",
           "check_partition", "import_optional", "write_batches"]

BATCH = 256                     # rows per write_raw_data call in MindSpore's converters
MIN_SHARDS = 1


def check_filename(path, arg_name=""):
    """MindSpore's file-name rules (:func:`recordio.mindrecord.params.check_path_param`)."""
    check_path_param(path, "File path" if arg_name == "" else f"'{arg_name}'")
    return True


def check_partition(partition_number):
    """``partition_number`` as MindSpore checks it: an int (ValueError) from 1 to 1000 (ParamValueError)."""
    if partition_number is None or isinstance(partition_number, bool) or not isinstance(partition_number, int):
        raise ValueError("The parameter partition_number must be int")
    if not MIN_SHARDS <= partition_number <= MAX_SHARDS:
        raise ParamValueError(f"Parameter shard_num's value: {partition_number} should between {MIN_SHARDS} "
                              f"and {MAX_SHARDS}.")
    return partition_number


def import_optional(module, extra):
    """``import module``, or a :class:`~recordio.errors.MissingExtraError` naming the extra that installs it."""
    return extras.import_module(module, "this converter", extra)


def write_batches(writer, rows, parallel_writer=False):
    """Hand ``rows`` (an iterable of dicts) to ``writer`` in batches of 256, as MindSpore's converters do."""
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            writer.write_raw_data(batch, parallel_writer)
            batch = []
    if batch:
        writer.write_raw_data(batch, parallel_writer)
