"""Rows given as columns, checked and encoded for :meth:`FileWriter.write_columns
<recordio.mindrecord.write.writer.FileWriter.write_columns>`: the raw records, blobs and index values that
:meth:`Schema.encode_row <recordio.mindrecord.schema.Schema.encode_row>` gives the equivalent rows,
without a dict per row.

The columns it takes, and the rows they stand for (:func:`rows_of`):

=================  ========================================================================
int32, int64       1-D numpy array of integers (not bool): the Python ints it holds
float32, float64   1-D numpy array of floats: the Python floats it holds
string             list of ``str``
bytes              list of ``bytes``, or a :class:`~recordio.mindrecord.read.columns.BytesColumn`
                   (one buffer and its offsets, no copy per value)
array              list of numpy arrays (or one array, a row per first index), one a row
=================  ========================================================================

Anything else, and any value the checks here refuse (out of range, of another type, a row too large
for a page, a string UTF-8 cannot encode), makes :func:`encode_columns` return None: the writer then
encodes the equivalent rows, so that a bad value raises the row encoder's error (naming the row, the
field, what was expected and what was found) and every column stands for exactly what its rows would.
"""

from __future__ import annotations

import numpy as np

from recordio.errors import SchemaError
from recordio.mindrecord import codec
from recordio.mindrecord.read.columns import BytesColumn
from recordio.mindrecord.schema import FLT32_LIMIT, INT_RANGE

__all__ = ["column_length", "encode_columns", "rows_of"]


def column_length(columns: dict) -> int:
    """The rows of ``columns`` (a dict of columns of one length)."""
    if not isinstance(columns, dict) or not columns:
        raise SchemaError(f"columns must be a non-empty dict of field name -> column, found {columns!r:.60}")
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise SchemaError(f"the columns differ in length: {lengths}")
    for name, column in columns.items():
        if isinstance(column, BytesColumn):
            _check_offsets(name, column)
    return next(iter(lengths.values()))


def _check_offsets(name, column):
    offsets = np.asarray(column.offsets)
    buffer = np.asarray(column.buffer)
    ok = (offsets.ndim == 1 and offsets.dtype.kind in "iu" and buffer.ndim == 1 and buffer.dtype == np.uint8
          and (offsets.size < 2 or (offsets[0] >= 0 and offsets[-1] <= buffer.size
                                    and bool((np.diff(offsets) >= 0).all()))))
    if not ok:
        raise SchemaError(f"column {name!r}: a BytesColumn needs a 1-D uint8 buffer and non-decreasing "
                          f"integer offsets within it, found {column!r}")


def rows_of(schema, columns: dict, n: int) -> list[dict]:
    """The rows ``columns`` stand for (their schema fields; numpy scalars as Python numbers)."""
    values = {name: _values(column) for name, column in columns.items() if name in schema.fields}
    return [{name: column[i] for name, column in values.items()} for i in range(n)]


def _values(column):
    if isinstance(column, BytesColumn):
        return column.tolist()
    if isinstance(column, np.ndarray) and column.ndim == 1:
        return column.tolist()
    return list(column)


def encode_columns(schema, columns: dict, n: int, index_fields: list[str], limit: int):
    """``(raws, blobs, index values, bytes saved, element counts)`` as the writer's row encoding gives
    them for the ``n`` rows of ``columns``; None when a column or value needs the row encoder."""
    raw = [_raw_values(schema.fields[name], columns.get(name)) for name in schema.raw_fields]
    if any(values is None for values in raw):
        return None
    raws = _raw_records(schema, raw, n)
    blob = _blobs(schema, columns, n)
    if raws is None or blob is None or _too_large(raws, limit) or _too_large(blob[0], limit):
        return None
    blobs, saved, elements = blob
    at = [schema.raw_fields.index(name) for name in index_fields]
    values = list(zip(*(raw[p] for p in at))) if at else [()] * n
    return raws, blobs, values, saved, elements


def _raw_values(field, column):
    """The Python values of a raw field's column (as the row encoder keeps them), or None."""
    if field.type == "string":
        ok = type(column) is list and all(type(v) is str for v in column)
        return column if ok else None
    if not isinstance(column, np.ndarray) or column.ndim != 1:
        return None
    kind = column.dtype.kind
    if field.type in INT_RANGE:
        low, high = INT_RANGE[field.type]
        if kind not in "iu" or (column.size and not low <= int(column.min()) <= int(column.max()) <= high):
            return None
        return column.tolist()
    if kind != "f":
        return None
    if field.type == "float32" and column.dtype.itemsize > 4:
        finite = np.abs(column[np.isfinite(column)])
        if finite.size and float(finite.max()) > FLT32_LIMIT:
            return None
    return column.tolist()


def _raw_records(schema, raw, n):
    if not schema.raw_fields:
        return [codec.DUMMY_RAW] * n
    try:
        records = codec.pack_raws(schema.raw_fields, raw)
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(n + 1, np.int64)          # one buffer: the pages cut their entries in one pass
    np.cumsum(np.fromiter(map(len, records), np.int64, n), out=offsets[1:])
    return BytesColumn(np.frombuffer(b"".join(records), np.uint8), offsets)


def _blobs(schema, columns, n):
    """``(blobs, bytes saved, element counts)`` of the blob fields' columns, or None."""
    parts, saved, counted = [], 0, {}
    for field in map(schema.fields.get, schema.blob_fields):
        column = columns.get(field.name)
        if field.shape is None:
            if not _is_bytes(column):
                return None
            parts.append(column)
            continue
        column = list(column) if isinstance(column, np.ndarray) and column.ndim > 1 else column
        encoded = _array_parts(schema, field, column)
        if encoded is None:
            return None
        parts.append([part for part, _ in encoded])
        saved += sum(s for _, s in encoded)
        if field.name in schema.counted:
            counted[field.name] = [value.size for value in column]
    elements = np.array([counted[name] for name in schema.counted], dtype=np.int64).T.reshape(n, -1)
    if not parts:
        return [codec.DUMMY_BLOB] * n, saved, elements
    if len(parts) == 1:
        return parts[0], saved, elements
    lists = [p.tolist() if isinstance(p, BytesColumn) else p for p in parts]
    return [codec.join_blob(row) for row in zip(*lists)], saved, elements


def _is_bytes(column):
    return isinstance(column, BytesColumn) or (type(column) is list and all(type(v) is bytes for v in column))


def _array_parts(schema, field, column):
    if type(column) is not list:
        return None
    try:
        return [schema.encode_part(field, value, i) for i, value in enumerate(column)]
    except SchemaError:
        return None


def _too_large(items, limit):
    if isinstance(items, BytesColumn):
        lengths = items.lengths()
        return bool(lengths.size) and int(lengths.max()) > limit
    return max(map(len, items), default=0) > limit

