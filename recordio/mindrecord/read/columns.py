"""Batched, columnar reads: many rows of a dataset as one dict of columns, without a Python step per value.

:func:`read_columns` is what :meth:`FileReader.read_batch <recordio.mindrecord.read.reader.FileReader.read_batch>`
(and through it the pipeline's ``batch``) runs, over the reader's open files
(:class:`~recordio.mindrecord.read.shard_set.ShardSet`) and the dataset's schema. Rows are located
in bulk (``Locations.bulk``); the raw records of a batch are read into columns by the compiled record reader (``codec.read_records``; without it, by
one streaming msgpack unpacker over the records); blob fields are cut at their big-endian length
prefixes with numpy and gathered from the mapped pages: parts of equal size by one memcpy a row
(compiled codec) or one numpy take over a window view of the map. Every value is copied out of the
maps, so nothing returned keeps a map open.

Anything the fast path does not expect (a record that is not a map of the schema's fields, a value
of another type, a blob part that does not fit) sends the batch through the row-wise decoder
(``Schema.decoder``), whose values and errors are the reference: a batch equals ``reader[i]`` row
for row, and a corrupt row raises the same :class:`~recordio.errors.FormatError` naming file, row
and field.

Columns (``bytes_form="array"``, :meth:`FileReader.read_batch`): numeric scalars as a 1-D array of
the schema dtype; strings as a list of ``str``; arrays as one ``(n, *shape)`` array when every row
has the same shape (always, for shapes without ``-1``), else a list of arrays; ``bytes`` as an
``(n, L)`` ``uint8`` array when every value has ``L`` bytes, else a :class:`BytesColumn`. With
``bytes_form="arrays"`` (the pipeline's ``batch``), ``bytes`` of one length are the same ``(n, L)``
array and others a :class:`RowViews` list of 1-D ``uint8`` arrays, as the row-wise ``batch`` gives
them; with ``bytes_form="list"`` (the pipeline under ``config.set_bytes_form("mindspore")``), lists
of ``bytes``.
"""

from __future__ import annotations

import functools
import operator

import msgpack
import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord import codec
from recordio.mindrecord.schema import INT_RANGE

__all__ = ["BytesColumn", "RowViews", "bytes_views", "read_columns", "row_numbers"]

_unpackb = functools.partial(msgpack.unpackb, raw=False, strict_map_key=False)
_FANCY_BYTES = 1 << 16    # short rows are gathered by one fancy index up to this many bytes


class _Slow(Exception):
    """The fast path met something it does not decode: use the row-wise decoder for this batch."""


class BytesColumn:
    """Variable-length ``bytes`` values of a batch: one ``buffer`` (``uint8`` array) and ``offsets``
    (``n + 1`` int64; value ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``)."""

    __slots__ = ("buffer", "offsets")

    def __init__(self, buffer, offsets):
        self.buffer, self.offsets = buffer, offsets

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):                     # the values of a run of rows: no copy
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("a BytesColumn is sliced by runs of rows (step 1)")
            return BytesColumn(self.buffer, self.offsets[start:max(start, stop) + 1])
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.buffer[a:b].tobytes()

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def tolist(self) -> list[bytes]:
        """The values as ``bytes`` objects (copies)."""
        data = self.buffer.tobytes()
        bounds = self.offsets.tolist()
        return [data[a:b] for a, b in zip(bounds, bounds[1:])]

    def memoryviews(self) -> list[memoryview]:
        """The values as ``memoryview`` objects of :attr:`buffer` (no copy)."""
        view = memoryview(self.buffer)
        bounds = self.offsets.tolist()
        return [view[a:b] for a, b in zip(bounds, bounds[1:])]

    def __eq__(self, other):
        if isinstance(other, BytesColumn):
            other = other.tolist()
        return isinstance(other, list) and self.tolist() == other

    def __repr__(self):
        return f"BytesColumn({len(self)} values, {self.buffer.size} bytes)"


def row_numbers(rows, total):
    """``rows`` (a slice, a range, an int or any int array; negative rows count from the end) as an
    int64 array of rows in ``[0, total)``; IndexError names the first row out of range."""
    if isinstance(rows, slice):
        return np.arange(*rows.indices(total), dtype=np.int64)
    if isinstance(rows, range):
        idx = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
    else:
        idx = np.asarray(rows)
        if idx.dtype == bool or (idx.size and idx.dtype.kind not in "iu"):
            raise TypeError(f"rows are given by int row numbers, a slice or a range, not {idx.dtype} values")
        idx = idx.astype(np.int64, copy=False).reshape(-1)
    bad = (idx < -total) | (idx >= total)
    if bad.any():
        raise IndexError(f"row {int(idx[np.argmax(bad)])} is out of range for a dataset of {total} rows")
    return np.where(idx < 0, idx + total, idx)


def read_columns(files, schema, idx, names, bytes_form="array"):
    """Columns ``names`` of rows ``idx`` (int64 array of rows in range) of the open files ``files`` (a
    :class:`~recordio.mindrecord.read.shard_set.ShardSet`) of a dataset of ``schema``, as a dict in
    ``names`` order (see the module docstring for the form of each column)."""
    fields = [schema.fields[n] for n in names]
    if not len(idx):
        return {f.name: _empty(f, bytes_form) for f in fields}
    shard, local, locs = files.bulk(idx)
    need_raw = any(not f.is_blob for f in fields)
    need_blob = any(f.is_blob for f in fields)
    files.check_rows(shard, locs, need_raw, need_blob)
    buf, where = _gather_rows(files, shard, locs, need_raw, need_blob)
    try:
        return _fast(schema, fields, buf, where, bytes_form)
    except _Slow:
        rows = _rowwise(files, schema, shard, local, locs, names)
        return {f.name: _column(f, [r[f.name] for r in rows], bytes_form) for f in fields}
    finally:
        del buf


def rows_of(columns: dict, n: int) -> list[dict]:
    """The ``n`` rows of a batch of columns (``read_columns`` with ``bytes_form="list"``) as the row-wise
    read gives them: a dict a row, scalars as numpy scalars, bytes as ``bytes``, strings as ``str``,
    arrays as arrays of their own (a copy each: a row kept, e.g. in a shuffle buffer, does not keep
    its whole batch's arrays alive)."""
    names = list(columns)
    if not names:
        return [{} for _ in range(n)]
    values = []
    for column in columns.values():
        if isinstance(column, np.ndarray):
            values.append(list(column) if column.ndim == 1 else [v.copy() for v in column])
        elif isinstance(column, BytesColumn):
            values.append(column.tolist())
        else:                                    # a list: bytes, strings, arrays of differing shapes
            values.append([v.copy() if isinstance(v, np.ndarray) else v for v in column])
    return [dict(zip(names, row)) for row in zip(*values)]


# --- where the bytes are ------------------------------------------------------------------------------

def _gather_rows(files, shard, locs, need_raw, need_blob):
    """``(buffer, locs)``: the one map and the locations when every row is in one local shard; else a
    copy of the rows' bytes (from their shards' maps, or through the cache of a dataset at a URL), one
    after another, with the locations in that copy."""
    whole = files.one_buffer(shard)
    if whole is not None:
        return whole, locs
    parts, out, at = [], np.empty_like(locs), 0
    for i, (k, (rs, re_, bs, be)) in enumerate(zip(shard.tolist(), locs.tolist())):
        mm = files.maps.get(k) or files.buffer(k)
        files.storage.advance()           # through the cache: each range fetched, read under its lock
        raw = files.fetch(k, mm, rs, re_) if need_raw else b""
        blob = files.fetch(k, mm, bs, be) if need_blob else b""
        parts += (raw, blob)
        out[i] = at, at + len(raw), at + len(raw), at + len(raw) + len(blob)
        at += len(raw) + len(blob)
    return b"".join(parts), out


def _rowwise(files, schema, shard, local, locs, names):
    """The rows by the row-wise decoder (the reference, and its errors)."""
    decode, need_raw, need_blob = schema.decoder(names)
    rows = []
    for k, lo, (rs, re_, bs, be) in zip(shard.tolist(), local.tolist(), locs.tolist()):
        mm = files.maps.get(k) or files.buffer(k)
        record = None
        if need_raw:
            raw = files.fetch(k, mm, rs, re_)          # a fetch's own errors (a changed object) pass as they are
            try:
                record = _unpackb(raw)
            except Exception as exc:       # msgpack raises several unrelated types on bad input
                raise FormatError(f"{files.shards[k].path}: row {lo}: corrupt raw record (msgpack): "
                                  f"{exc}") from None
        blob = files.fetch(k, mm, bs, be) if need_blob else None
        rows.append(decode(record, blob, files.where(k, lo)))
    return rows


# --- the fast path ---------------------------------------------------------------------------------------

def _fast(schema, fields, buf, locs, bytes_form):
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
    data = _concat(buf, starts, ends).tobytes()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    unpack, tell = unpacker.unpack, unpacker.tell
    records, at = [], []
    try:
        for _ in range(n):
            records.append(unpack())
            at.append(tell())
    except Exception:
        raise _Slow from None
    if at != np.cumsum(ends - starts).tolist():
        raise _Slow
    # a record that is not a map of exactly the schema's fields is the row-wise decoder's to judge
    if set(map(type, records)) != {dict} or set(map(len, records)) != {nfields}:
        raise _Slow
    return records


_KINDS = {"int32": "i", "int64": "i", "float32": "f", "float64": "f", "string": "s"}


def _typed(field, values):
    """A raw column the compiled reader gave (int64 / float64 array, list of str) in the field's type."""
    if field.type in INT_RANGE:
        low, high = INT_RANGE[field.type]
        if values.min() < low or values.max() > high:
            raise _Slow
    return values if field.type == "string" else values.astype(field.dtype, copy=False)


def _raw_column(field, records):
    try:
        values = list(map(operator.itemgetter(field.name), records))
    except KeyError:
        raise _Slow from None
    kinds = set(map(type, values))
    if field.type == "string":
        if kinds != {str}:
            raise _Slow
        return values
    if field.type in INT_RANGE:
        if kinds != {int}:
            raise _Slow
        try:
            wide = np.array(values, dtype=np.int64)
        except OverflowError:
            raise _Slow from None
        low, high = INT_RANGE[field.type]
        if wide.min() < low or wide.max() > high:
            raise _Slow
        return wide.astype(field.dtype, copy=False)
    if not kinds <= {float, int}:
        raise _Slow
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
                raise _Slow
            size = data[pos[:, None] + np.arange(8)].view(">u8").ravel()
            if (size > (ends - pos - 8).astype(np.uint64)).any():
                raise _Slow
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
            raise _Slow from None
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
            return RowViews.of(_concat(buf, starts, ends), sizes.tolist())
        return BytesColumn(_concat(buf, starts, ends), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    item = field.dtype.itemsize
    if (sizes % item).any():
        raise _Slow
    if equal:
        return _shaped_rows(field, _gather2d(buf, starts, int(sizes[0])).view(field.dtype))
    return _varying(field, buf, starts, ends)


def _varying(field, buf, starts, ends):
    """Arrays of a ``-1`` shape whose rows differ in size: a list of views of one copy of their bytes."""
    if -1 not in field.shape:
        raise _Slow
    counts = (ends - starts) // field.dtype.itemsize
    fixed = 1
    for d in field.shape:
        fixed *= d if d != -1 else 1
    if (counts % fixed).any():
        raise _Slow
    flat = _concat(buf, starts, ends).view(field.dtype)
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
    """The field's shape for ``count`` elements (its ``-1`` resolved); _Slow when they do not fit."""
    fixed = 1
    for d in field.shape:
        fixed *= d if d != -1 else 1
    if -1 in field.shape:
        if count % fixed:
            raise _Slow
        return tuple(count // fixed if d == -1 else d for d in field.shape)
    if count != fixed:
        raise _Slow
    return field.shape


def _shaped(field, flat):
    return flat.reshape(_resolved(field, flat.size))


def _shaped_rows(field, rows2d):
    return rows2d.reshape(len(rows2d), *_resolved(field, rows2d.shape[1]))


class RowViews(list):
    """A list of 1-D arrays that are consecutive views of one 1-D ``buffer``, value ``i`` holding
    ``sizes[i]`` elements: a batch's ``bytes`` values. It is a plain list to its users; code that
    moves a batch moves the buffer once (pickling it sends the buffer and the sizes)."""

    __slots__ = ("buffer", "sizes")
    buffer: np.ndarray
    sizes: list[int]

    @classmethod
    def of(cls, buffer: np.ndarray, sizes: list[int]) -> RowViews:
        if sizes and all(n == sizes[0] for n in sizes):
            rows = cls(buffer.reshape(len(sizes), sizes[0]))
        else:
            bounds = np.cumsum([0] + sizes).tolist()
            rows = cls(buffer[a:b] for a, b in zip(bounds, bounds[1:]))
        rows.buffer, rows.sizes = buffer, sizes
        return rows

    def __reduce__(self):
        return RowViews.of, (self.buffer, self.sizes)

    def __copy__(self):
        return RowViews.of(self.buffer, self.sizes)


def bytes_views(values) -> RowViews:
    """``bytes`` values as writable 1-D ``uint8`` arrays: views of one copy of them all."""
    return RowViews.of(np.frombuffer(bytearray().join(values), dtype=np.uint8), [len(v) for v in values])


# --- gathers -----------------------------------------------------------------------------------------------

def _concat(buf, starts, ends):
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


# --- the row-wise forms ----------------------------------------------------------------------------------

def _column(field, values, bytes_form):
    """A column from row-wise values, in the form the fast path gives."""
    if field.shape is None and field.type == "bytes":
        if bytes_form == "list":
            return values
        if bytes_form == "arrays":
            return bytes_views(values)
        if len({len(v) for v in values}) == 1:
            return np.frombuffer(b"".join(values), np.uint8).reshape(len(values), len(values[0]))
        sizes = np.array([len(v) for v in values], dtype=np.int64)
        return BytesColumn(np.frombuffer(b"".join(values), np.uint8),
                           np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    if field.type == "string":
        return values
    if field.shape is None:
        return np.array(values, dtype=field.dtype)
    if len({v.shape for v in values}) == 1:
        return np.stack(values)
    return values


def _empty(field, bytes_form):
    if field.type == "string" or (field.type == "bytes" and bytes_form in ("list", "arrays")):
        return []
    if field.type == "bytes":
        return np.zeros((0, 0), np.uint8)
    if field.shape is None:
        return np.zeros(0, field.dtype)
    if -1 in field.shape:
        return []
    return np.zeros((0, *field.shape), field.dtype)
