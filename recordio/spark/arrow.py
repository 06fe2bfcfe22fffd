"""MindRecord rows and columns as Arrow record batches of the types Spark expects (no nulls anywhere,
list items named ``element``): what the ``mindrecord`` data source's readers yield."""

from __future__ import annotations

import math

import numpy as np

from recordio.extras import requires

with requires("recordio.spark", "spark"):
    import pyarrow as pa

__all__ = ["columns_batch", "rows_batch"]

_ARROW = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
          "string": pa.string(), "bytes": pa.binary()}


def _nested(values, spec):
    """Arrays of one field (each with the field's number of dimensions) as an Arrow list array."""
    dtype = np.dtype(spec["type"])
    leaf = pa.array(np.concatenate([v.ravel() for v in values]) if values else np.empty(0, dtype), _ARROW[spec["type"]])
    for depth in reversed(range(len(spec["shape"]))):
        lengths = [np.full(math.prod(v.shape[:depth]), v.shape[depth]) for v in values]
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths) if lengths else [])]).astype(np.int32)
        leaf = pa.ListArray.from_arrays(pa.array(offsets), leaf)
    return leaf


def columns_batch(batch, schema, columns):
    """A ``FileReader.read_batch`` result as one Arrow record batch of ``columns`` (no Python object a
    value for numbers, arrays and bytes)."""
    fields = [pa.field(name, _arrow_type(schema[name]), nullable=False) for name in columns]
    arrays = [_column(batch[name], schema[name], f.type) for name, f in zip(columns, fields)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _column(values, spec, kind):
    if spec["type"] == "bytes":
        if isinstance(values, np.ndarray):                  # every value of one length: (n, L) uint8
            n, width = values.shape
            offsets, data = np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(values).ravel()
        else:                                               # a BytesColumn: one buffer and its offsets
            offsets, data = np.asarray(values.offsets, np.int64), values.buffer
        return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                     [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(kind)
    if spec["type"] == "string" or not spec.get("shape"):
        return pa.array(values, _ARROW[spec["type"]]).cast(kind)
    if isinstance(values, np.ndarray):                      # one shape: (n, *shape)
        values = list(values)
    return _nested(values, spec).cast(kind)


def rows_batch(rows, schema, columns):
    """FileReader rows as one Arrow record batch of ``columns``."""
    arrays = []
    for name in columns:
        spec, values = schema[name], [r[name] for r in rows]
        if spec.get("shape"):
            arrays.append(_nested(values, spec))
        elif spec["type"] in ("string", "bytes"):
            arrays.append(pa.array(values, _ARROW[spec["type"]]))
        else:
            arrays.append(pa.array(np.asarray(values, dtype=spec["type"]), _ARROW[spec["type"]]))
    fields = [pa.field(name, _arrow_type(schema[name]), nullable=False) for name in columns]
    return pa.RecordBatch.from_arrays([a.cast(f.type) for a, f in zip(arrays, fields)], schema=pa.schema(fields))


def _arrow_type(spec):
    """The Arrow type Spark expects of a field: no nulls anywhere, list items named ``element``."""
    kind = _ARROW[spec["type"]]
    for _ in spec.get("shape") or ():
        kind = pa.list_(pa.field("element", kind, nullable=False))
    return kind
