"""What MindSpore's ``*ToMR`` classes share: their argument checks, status values and write loop.

The checks raise what ``mindspore.mindrecord`` raises, with its wording, so code written
against MindSpore (``pytest.raises(..., match=...)``, ``except ValueError``) keeps working.
The write loop makes the :class:`recordio.FileWriter` calls MindSpore's converters make
(header and page size, schema, index, rows in batches of 256, commit): recordio's writer
writes the same bytes as MindSpore's for the same calls.
"""

import enum
import importlib
import os

from recordio.errors import RecordIOError

__all__ = ["BATCH", "FAILED", "ParamValueError", "PathNotExistsError", "SUCCESS", "check_filename",
           "check_partition", "import_optional", "write_batches"]

BATCH = 256                     # rows per write_raw_data call in MindSpore's converters
MIN_SHARDS, MAX_SHARDS = 1, 1000
_FORBIDDEN = set(r'\/:*?"<>|`&\';')


try:                            # the package-wide values, once recordio.mindrecord has them
    from recordio.mindrecord import FAILED, SUCCESS
except ImportError:
    class MSRStatus(enum.IntEnum):
        """MindSpore's ``MSRStatus``: ``SUCCESS == 0``, ``FAILED == 1``."""

        SUCCESS = 0
        FAILED = 1

    SUCCESS, FAILED = MSRStatus.SUCCESS, MSRStatus.FAILED

try:                            # MindSpore's exception classes, once recordio.errors has them
    from recordio.errors import ParamValueError, PathNotExistsError
except ImportError:
    class ParamValueError(RecordIOError, ValueError):
        """An argument with a wrong value (MindSpore's ``ParamValueError`` wording)."""

        def __init__(self, detail):
            super().__init__(f"Invalid parameter value. {detail}")

    class PathNotExistsError(RecordIOError, FileNotFoundError):
        """A path the converter needs is missing (MindSpore's ``PathNotExistsError`` wording)."""

        def __init__(self, path):
            super().__init__(f"Invalid path. {path}")


def check_filename(path, arg_name=""):
    """MindSpore's file-name rules: a non-empty str, no trailing ``/``, no ``\\/:*?"<>|`&';`` in
    the last component, which neither starts nor ends with a space."""
    name = "File path" if arg_name == "" else f"'{arg_name}'"
    if not path:
        raise ParamValueError(f"{name} is not allowed None or empty!")
    if not isinstance(path, str):
        raise ParamValueError(f"File path: {path} is not string.")
    if path.endswith("/"):
        raise ParamValueError("File path can not end with '/'")
    base = os.path.basename(path)
    if set(base) & _FORBIDDEN:
        raise ParamValueError(r"File name should not contains \/:*?\"<>|`&;\'")
    if base.startswith(" ") or base.endswith(" "):
        raise ParamValueError("File name should not start/end with space.")
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
    """``import module``, or an ImportError that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this converter needs {module}: pip install 'mindrecordio[{extra}]'") from exc


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
