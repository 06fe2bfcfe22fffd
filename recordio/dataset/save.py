"""``Dataset.save``: write any pipeline's output as a MindRecord dataset through FileWriter.

The schema is taken from the first output: numpy integers become ``int32``/``int64``, floats
``float32``/``float64`` (narrower types are widened), ``uint8`` arrays and ``bytes`` become
``bytes``, strings ``string``; arrays keep their shape with a ``-1`` first dimension.
"""

import numpy as np

from recordio.dataset.values import to_op_input
from recordio.errors import PipelineError

__all__ = ["save_dataset"]

_WRITE_CHUNK = 512
_DTYPES = {"b": np.int32, "i1": np.int32, "i2": np.int32, "i4": np.int32, "i8": np.int64,
           "u2": np.int32, "u4": np.int64, "f2": np.float32, "f4": np.float32, "f8": np.float64}


def _kind(column, value):
    """(schema entry, converter) for one column, from its first value."""
    if isinstance(value, (bytes, bytearray)):
        return {"type": "bytes"}, bytes
    arr = to_op_input(value)
    if arr.dtype.kind in "US":
        return {"type": "string"}, lambda v: str(to_op_input(v))
    if arr.dtype == np.uint8:
        return {"type": "bytes"}, lambda v: to_op_input(v).tobytes()
    key = "b" if arr.dtype.kind == "b" else f"{arr.dtype.kind}{arr.dtype.itemsize}"
    if key not in _DTYPES:
        raise PipelineError(f"save: column {column!r} has dtype {arr.dtype}, which MindRecord cannot store")
    dtype = _DTYPES[key]
    name = np.dtype(dtype).name
    if arr.ndim == 0:
        return {"type": name}, lambda v: dtype(to_op_input(v))
    return {"type": name, "shape": [-1, *arr.shape[1:]]}, lambda v: to_op_input(v).astype(dtype)


def save_dataset(dataset, file_name, num_files=1, file_type="mindrecord"):
    from recordio.mindrecord.writer import FileWriter

    if file_type != "mindrecord":
        raise ValueError(f"save: file_type must be 'mindrecord', got {file_type!r}")
    if isinstance(num_files, bool) or not isinstance(num_files, int) or not 1 <= num_files <= 1000:
        raise ValueError(f"save: num_files must be an int in [1, 1000], got {num_files!r}")
    stream = dataset._iter_items(num_epochs=1)
    try:
        rows = (item.cols for item in stream)
        first = next(rows, None)
        if first is None:
            raise PipelineError("save: the pipeline produced no row")
        kinds = {c: _kind(c, v) for c, v in first.items()}
        with FileWriter(file_name, shard_num=num_files) as writer:
            writer.add_schema({c: k[0] for c, k in kinds.items()}, "saved by recordio")
            chunk = [first]
            for cols in rows:
                chunk.append(cols)
                if len(chunk) == _WRITE_CHUNK:
                    writer.write_raw_data(_convert(chunk, kinds))
                    chunk = []
            if chunk:
                writer.write_raw_data(_convert(chunk, kinds))
    finally:
        stream.close()


def _convert(chunk, kinds):
    try:
        return [{c: kinds[c][1](v) for c, v in cols.items()} for cols in chunk]
    except KeyError as e:
        raise PipelineError(f"save: a row has column {e} that the first row did not have") from None
