"""``Dataset.save``: write any pipeline's output as a MindRecord dataset through FileWriter.

The schema is taken from the first output as MindSpore 2.10 derives it: ``bool``, ``int8/16/32``,
``uint8/16`` become ``int32``; ``int64``, ``uint32``, ``uint64`` and Python ints ``int64``;
``float16/32`` ``float32``; ``float64`` and Python floats ``float64``; ``bytes`` (and ``S``
arrays) ``bytes``; strings ``string``. An array keeps its shape with a ``-1`` first dimension, and
every later value must have the same dimensions after the first (MindSpore's rule). Every scalar
column is indexed, in column order, and the description is ``"mindrecord"``: a one-file save with a
scalar column is MindSpore's data file byte for byte (its ``.db`` adds recordio's checksum tables).

Divergences, each for a reason (docs/porting.md): a ``uint64`` value above the ``int64`` range is
refused (MindSpore stores it wrapped to a negative number); a 1-D ``uint8`` array, recordio's default
form of a bytes value, is saved as ``bytes`` (MindSpore: an ``int32`` array), so a bytes column
passed through ``map`` reads back as the bytes it was; a later value of another type than the
first row's is refused rather than cast; with ``num_files`` above 1 each call of 512 rows is split over
the files as ``FileWriter`` splits a call (MindSpore's save fills them in another way: 5 rows in 3 files
are 4, 1, 0 there, 2, 2, 1 here); a pipeline with only array or
bytes columns stores what MindSpore's ``FileWriter`` stores as the raw record (MindSpore's save: nil).
"""

import numpy as np

from recordio.dataset.values import to_op_input
from recordio.errors import PipelineError, type_check

__all__ = ["save_dataset"]

_WRITE_CHUNK = 512
_INT64_MAX = np.iinfo(np.int64).max
_DTYPES = {"b1": np.int32, "i1": np.int32, "i2": np.int32, "i4": np.int32, "i8": np.int64, "u1": np.int32,
           "u2": np.int32, "u4": np.int64, "u8": np.int64, "f2": np.float32, "f4": np.float32, "f8": np.float64}
_DYNAMIC = ("Tensor with dynamic shape do not currently support saving. Except for the shape of dimension 0, "
            "the other dimension shapes must be fixed. You can reshape the Tensor to a fixed shape before saving.")


def check_save_args(file_name, num_files, file_type):
    """MindSpore's ``check_save``: its order, exception types and messages."""
    if isinstance(num_files, bool):           # MindSpore shows the types as a tuple here
        raise TypeError(f"Argument num_files with value {num_files} is not of type (<class 'int'>,), but got "
                        f"<class 'bool'>.")
    type_check(num_files, (int,), "num_files")
    if num_files <= 0 or num_files > 1000:
        raise ValueError("num_files should between 0 and 1000.")
    type_check(file_name, (str,), "file_name")
    type_check(file_type, (str,), "file_type")
    if file_type != "mindrecord":
        raise ValueError(f"{file_type} dataset format is not supported.")


def _form(value):
    """``(schema entry, key)`` of one value; ``key`` is what later values of the column must match."""
    if isinstance(value, (bytes, bytearray)):
        return {"type": "bytes"}, "bytes"
    arr = to_op_input(value)
    if arr.dtype.kind == "S":
        return {"type": "bytes"}, "bytes"
    if arr.dtype.kind == "U":
        return {"type": "string"}, "string"
    if arr.dtype == np.uint8 and arr.ndim == 1:
        return {"type": "bytes"}, "bytes"
    code = f"{arr.dtype.kind}{arr.dtype.itemsize}"
    if code not in _DTYPES:
        return None, arr.dtype.name
    name = np.dtype(_DTYPES[code]).name
    if arr.ndim == 0:
        return {"type": name}, name
    return {"type": name, "shape": [-1, *arr.shape[1:]]}, (name, arr.shape[1:])


def _convert_value(value, entry):
    """``value`` as the FileWriter takes it for the schema ``entry``."""
    if entry["type"] == "bytes":
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        arr = to_op_input(value)
        return arr.item() if arr.dtype.kind == "S" else arr.tobytes()
    arr = to_op_input(value)
    if entry["type"] == "string":
        return str(arr.item() if arr.ndim == 0 else arr)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _INT64_MAX:
        raise ValueError(f"expected uint64 values at most {_INT64_MAX} (int64, as MindSpore stores uint64), "
                         f"found {int(arr.max())}")
    dtype = np.dtype(entry["type"])
    return dtype.type(arr) if "shape" not in entry else arr.astype(dtype)


class _Schema:
    """The columns' schema from the first row, and each later row checked and converted against it."""

    def __init__(self, first):
        self.entries, self.keys = {}, {}
        for column, value in first.items():
            entry, key = _form(value)
            if entry is None:
                raise PipelineError(f"save: column {column!r} has dtype {key}, which MindRecord cannot store")
            self.entries[column], self.keys[column] = entry, key

    def convert(self, cols, row):
        if set(cols) != set(self.entries):
            raise PipelineError(f"save: row {row} has columns {sorted(cols)}, the first row "
                                f"{sorted(self.entries)}")
        out = {}
        for column, value in cols.items():
            found = _form(value)[1]
            want = self.keys[column]
            if found != want:
                if isinstance(want, tuple) and isinstance(found, tuple) and found[0] == want[0]:
                    raise PipelineError(f"{_DYNAMIC} save: row {row}, column {column!r}: expected dimensions "
                                        f"[-1, {', '.join(map(str, want[1]))}] after the first, found shape "
                                        f"{list(to_op_input(value).shape)}")
                raise PipelineError(f"save: row {row}, column {column!r}: expected {_describe(want)} as in the "
                                    f"first row, found {_describe(found)}")
            try:
                out[column] = _convert_value(value, self.entries[column])
            except ValueError as exc:
                raise PipelineError(f"save: row {row}, column {column!r}: {exc}") from None
        return out


def _describe(key):
    return f"{key[0]} arrays of shape [-1, {', '.join(map(str, key[1]))}]" if isinstance(key, tuple) else key


def save_dataset(dataset, file_name, num_files=1, file_type="mindrecord"):
    from recordio.mindrecord.write.writer import FileWriter

    check_save_args(file_name, num_files, file_type)
    stream = dataset._iter_items(num_epochs=1)
    try:
        rows = (item.cols for item in stream)
        first = next(rows, None)
        if first is None:
            raise PipelineError("save: the pipeline produced no row")
        schema = _Schema(first)
        with FileWriter(file_name, shard_num=num_files) as writer:
            writer.add_schema(schema.entries, "mindrecord")      # MindSpore's description
            scalars = [c for c, e in schema.entries.items() if "shape" not in e and e["type"] != "bytes"]
            if scalars:
                writer.add_index(scalars)      # MindSpore indexes every scalar column, in column order
            chunk = [schema.convert(first, 0)]
            for row, cols in enumerate(rows, 1):
                chunk.append(schema.convert(cols, row))
                if len(chunk) == _WRITE_CHUNK:
                    writer.write_raw_data(chunk)
                    chunk = []
            if chunk:
                writer.write_raw_data(chunk)
    finally:
        stream.close()
