"""What MindSpore's ``*ToMR`` classes share: their base class, argument checks, status values and write calls.

The checks raise what ``mindspore.mindrecord`` raises, with its wording, so code written
against MindSpore (``pytest.raises(..., match=...)``, ``except ValueError``) keeps working.
:class:`ToMR` is their shape: ``transform()`` (and ``run()``, MindSpore's other name for it)
converts and returns ``SUCCESS``; :meth:`ToMR.write` makes the :class:`recordio.FileWriter` calls
MindSpore's converters make (header and page size, schema, index, rows in batches of 256, commit):
recordio's writer writes the same bytes as MindSpore's for the same calls.
"""


from recordio import extras
from recordio.errors import ParamValueError, PathNotExistsError
from recordio.mindrecord.params import FAILED, MAX_SHARDS, SUCCESS, check_path_param

__all__ = ["BATCH", "FAILED", "ParamValueError", "PathNotExistsError", "SUCCESS", "ToMR", "check_filename",
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


class ToMR:
    """Base of MindSpore's ``*ToMR`` classes: ``transform()`` writes the files and returns ``SUCCESS``.

    A subclass gives ``_convert()``; its class attributes say how MindSpore's class writes:
    ``sizes`` (header and page size it sets, or None), ``parallel_writer`` (the flag it passes to
    ``write_raw_data``), ``batch`` (rows a ``write_raw_data`` call; None: all rows in one call).
    """

    sizes: tuple[int, int] | None = None
    parallel_writer = False
    batch: int | None = BATCH

    def transform(self):
        """Write the dataset."""
        return self.run()

    def run(self):
        """The same as ``transform()`` (MindSpore's classes have both)."""
        self._convert()
        return SUCCESS

    def _convert(self):
        raise NotImplementedError

    def write(self, writer, schema, desc, rows, index=None):
        """``rows`` (an iterable of dicts) through ``writer`` with MindSpore's calls: header and page
        size (``sizes``), ``add_schema(schema, desc)``, ``add_index(index)`` when given, the rows,
        ``commit()``."""
        if self.sizes is not None:
            writer.set_header_size(self.sizes[0])
            writer.set_page_size(self.sizes[1])
        writer.add_schema(schema, desc)
        if index:
            writer.add_index(index)
        if self.batch is None:
            writer.write_raw_data(list(rows), self.parallel_writer)
        else:
            write_batches(writer, rows, self.parallel_writer)
        writer.commit()
