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

import msgpack
import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord.read.column_decode import Declined, decode_columns
from recordio.mindrecord.read.column_forms import (BytesColumn, RowViews, bytes_views, column_of_values,
                                                   empty_column, rows_of)

__all__ = ["BytesColumn", "RowViews", "bytes_views", "read_columns", "row_numbers", "rows_of"]

_unpackb = functools.partial(msgpack.unpackb, raw=False, strict_map_key=False)


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
        return {f.name: empty_column(f, bytes_form) for f in fields}
    shard, local, locs = files.bulk(idx)
    need_raw = any(not f.is_blob for f in fields)
    need_blob = any(f.is_blob for f in fields)
    files.check_rows(shard, locs, need_raw, need_blob)
    buf, where = _gather_rows(files, shard, locs, need_raw, need_blob)
    try:
        return decode_columns(schema, fields, buf, where, bytes_form)
    except Declined:
        rows = _rowwise(files, schema, shard, local, locs, names)
        return {f.name: column_of_values(f, [r[f.name] for r in rows], bytes_form) for f in fields}
    finally:
        del buf


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
