"""The fast path of a batched read: raw records into columns by the compiled record reader
(``codec.read_records``; without it, one streaming msgpack unpacker over the records), blob fields cut
at their big-endian length prefixes with numpy and gathered from the buffer (one memcpy a row with the
compiled codec, else one numpy take over a window view). Anything it does not expect raises
:class:`Declined`, and the batch goes to the row-wise decoder, whose values and errors are the
reference (:mod:`~recordio.mindrecord.read.columns`)."""

from __future__ import annotations

import operator

import msgpack
import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord import codec
from recordio.mindrecord.read.column_forms import BytesColumn, RowViews
from recordio.mindrecord.schema import INT_RANGE

__all__ = ["Declined", "concat_ranges", "decode_columns"]

_FANCY_BYTES = 1 << 16    # short rows are gathered by one fancy index up to this many bytes


class Declined(Exception):
    """The fast path met something it does not decode: use the row-wise decoder for this batch."""


def decode_columns(schema, fields, buf, locs, bytes_form):
    """Columns ``fields`` of the rows at ``locs`` (absolute raw and blob ranges in ``buf``) without a Python
    step per value; :class:`Declined` when a row is not what the fast path expects."""
    raw = [f for f in fields if not f.is_blob]
    blob = [f for f in fields if f.is_blob]
    out = {}
    if raw:
        wanted = {f.name for f in raw}
        kinds = [(name, _KINDS[schema.fields[name].type] if name in wanted else "-")
                 for name in schema.raw_fields]
        columns = codec.read_records(buf, locs[:, 0], locs[:, 1], kinds)
        if columns is not None:
            for f in raw:
                out[f.name] = _typed(f, columns[f.name])
        else:
            records = _records(buf, locs[:, 0], locs[:, 1], len(schema.raw_fields))
            for f in raw:
                out[f.name] = _raw_column(f, records)
    if blob:
        parts = _blob_parts(buf, locs[:, 2], locs[:, 3], len(schema.blob_fields))
        for f in blob:
            starts, ends = parts[schema.blob_fields.index(f.name)]
            out[f.name] = _blob_column(f, buf, starts, ends, bytes_form)
    return {f.name: out[f.name] for f in fields}


def _records(buf, starts, ends, nfields):
    """The raw records as dicts, by one streaming msgpack unpacker over the records one after another;
    each record must end exactly where its range ends (a record parsed across its end, which a crafted
    file could make decode into other rows' values, goes to the row-wise decoder, which refuses it)."""
    n = len(starts)
    data = concat_ranges(buf, starts, ends).tobytes()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    unpack, tell = unpacker.unpack, unpacker.tell
    records, at = [], []
    try:
        for _ in range(n):
            records.append(unpack())
            at.append(tell())
    except Exception:
        raise Declined from None
    if at != np.cumsum(ends - starts).tolist():
        raise Declined
    # a record that is not a map of exactly the schema's fields is the row-wise decoder's to judge
    if set(map(type, records)) != {dict} or set(map(len, records)) != {nfields}:
        raise Declined
    return records


_KINDS = {"int32": "i", "int64": "i", "float32": "f", "float64": "f", "string": "s"}


def _typed(field, values):
    """A raw column the compiled reader gave (int64 / float64 array, list of str) in the field's type."""
    if field.type in INT_RANGE:
        low, high = INT_RANGE[field.type]
        if values.min() < low or values.max() > high:
            raise Declined
    return values if field.type == "string" else values.astype(field.dtype, copy=False)


def _raw_column(field, records):
    try:
        values = list(map(operator.itemgetter(field.name), records))
    except KeyError:
        raise Declined from None
    kinds = set(map(type, values))
    if field.type == "string":
        if kinds != {str}:
            raise Declined
        return values
    if field.type in INT_RANGE:
        if kinds != {int}:
            raise Declined
        try:
            wide = np.array(values, dtype=np.int64)
        except OverflowError:
            raise Declined from None
        low, high = INT_RANGE[field.type]
        if wide.min() < low or wide.max() > high:
            raise Declined
        return wide.astype(field.dtype, copy=False)
    if not kinds <= {float, int}:
        raise Declined
    return np.array(values, dtype=field.dtype)


def _blob_parts(buf, starts, ends, nblob):
    """``[(starts, ends)]`` of each blob field's part in every row (split at the u64 BE prefixes)."""
    if nblob == 1:
        return [(starts, ends)]
    data = np.frombuffer(buf, dtype=np.uint8)
    try:
        out, pos = [], starts
        for _ in range(nblob):
            if (pos + 8 > ends).any():
                raise Declined
            size = data[pos[:, None] + np.arange(8)].view(">u8").ravel()
            if (size > (ends - pos - 8).astype(np.uint64)).any():
                raise Declined
            out.append((pos + 8, pos + 8 + size.astype(np.int64)))
            pos = out[-1][1]
        return out
    finally:
        del data


def _blob_column(field, buf, starts, ends, bytes_form):
    if field.compressed:
        try:
            flat = codec.decompress_ranges(buf, starts, ends, field.dtype)
        except FormatError:
            raise Declined from None
        if isinstance(flat, list):
            return flat if field.shape == (-1,) else [_shaped(field, a) for a in flat]
        return flat if field.shape == (-1,) else _shaped_rows(field, flat)
    sizes = ends - starts
    equal = bool((sizes == sizes[0]).all())
    if field.shape is None:
        if bytes_form == "list":
            return [buf[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
        if equal:
            whole = _gather2d(buf, starts, int(sizes[0]))
            return whole
        if bytes_form == "arrays":
            return RowViews.of(concat_ranges(buf, starts, ends), sizes.tolist())
        return BytesColumn(concat_ranges(buf, starts, ends), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    item = field.dtype.itemsize
    if (sizes % item).any():
        raise Declined
    if equal:
        return _shaped_rows(field, _gather2d(buf, starts, int(sizes[0])).view(field.dtype))
    return _varying(field, buf, starts, ends)


def _varying(field, buf, starts, ends):
    """Arrays of a ``-1`` shape whose rows differ in size: a list of views of one copy of their bytes."""
    if -1 not in field.shape:
        raise Declined
    counts = (ends - starts) // field.dtype.itemsize
    fixed = 1
    for d in field.shape:
        fixed *= d if d != -1 else 1
    if (counts % fixed).any():
        raise Declined
    flat = concat_ranges(buf, starts, ends).view(field.dtype)
    at = field.shape.index(-1)
    before, after = field.shape[:at], field.shape[at + 1:]
    if not before:                   # [-1, ...]: rows of one reshaped array, one slice a value
        whole = flat.reshape((-1,) + after)
        bounds = np.concatenate([[0], np.cumsum(counts // fixed)]).tolist()
        return [whole[a:b] for a, b in zip(bounds, bounds[1:])]
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [flat[a:b].reshape(before + (k,) + after)
            for a, b, k in zip(bounds, bounds[1:], (counts // fixed).tolist())]


def _resolved(field, count):
    """The field's shape for ``count`` elements (its ``-1`` resolved); Declined when they do not fit."""
    fixed = 1
    for d in field.shape:
        fixed *= d if d != -1 else 1
    if -1 in field.shape:
        if count % fixed:
            raise Declined
        return tuple(count // fixed if d == -1 else d for d in field.shape)
    if count != fixed:
        raise Declined
    return field.shape


def _shaped(field, flat):
    return flat.reshape(_resolved(field, flat.size))


def _shaped_rows(field, rows2d):
    return rows2d.reshape(len(rows2d), *_resolved(field, rows2d.shape[1]))

# --- gathers -----------------------------------------------------------------------------------------------

def concat_ranges(buf, starts, ends):
    """The byte ranges ``[starts[i], ends[i])`` of ``buf``, one after another, as a uint8 array."""
    data = np.frombuffer(buf, dtype=np.uint8)
    try:
        if len(starts) == 1 or bool((starts[1:] == ends[:-1]).all()):
            return data[int(starts[0]):int(ends[-1])].copy()
        sizes = ends - starts
        total = int(sizes.sum())
        out = np.empty(total, np.uint8)
        if codec.copy_ranges(buf, starts, ends, out):     # one memcpy a range
            return out
        if total <= _FANCY_BYTES * 4:
            shift = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
            return data[np.arange(total, dtype=np.int64) + shift]
        out = np.empty(total, np.uint8)          # large values: one copy each, straight into place
        at = 0
        for a, b in zip(starts.tolist(), ends.tolist()):
            out[at:at + b - a] = data[a:b]
            at += b - a
        return out
    finally:
        del data


def _gather2d(buf, starts, size):
    """An ``(n, size)`` uint8 copy of the ``size`` bytes at each of ``starts`` in ``buf``: one memcpy a
    row without the GIL (``codec.copy_ranges``), else one numpy take over a window view of the buffer
    (row ``s`` of the view is ``buf[s:s + size]``)."""
    if size == 0:
        return np.zeros((len(starts), 0), np.uint8)
    out = np.empty((len(starts), size), np.uint8)
    if codec.copy_ranges(buf, starts, starts + size, out):
        return out
    data = windows = np.frombuffer(buf, dtype=np.uint8)
    try:
        windows = np.lib.stride_tricks.as_strided(data, (len(data) - size + 1, size), (1, 1), writeable=False)
        return windows[starts]
    finally:
        del data, windows
