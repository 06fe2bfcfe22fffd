"""``count_elements(path)``: how many elements (tokens) the numeric array fields of a dataset hold.

A field of fixed shape holds ``rows × prod(shape)``. A variable-shape field (``int32 [-1]`` token
rows) holds what each row holds: recordio's writers record each shard's totals in its ``.db`` (the
meta table, beside the checksums), so counting reads nothing else. A shard without them (written by
MindSpore) is counted by a scan that reads only the first bytes of each row's part of the blob (the
element count of a compressed integer array; the byte length of another array), checked against the
part's size, never decoding the values.
"""

from __future__ import annotations

import math
import os

import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord import index

__all__ = ["count_elements"]

_U64BE, _U32BE = np.dtype(">u8"), np.dtype(">u4")


def count_elements(path: str | os.PathLike | list, *, storage_options: dict | None = None,
                   cache_dir: str | None = None) -> dict:
    """``{field: {"elements": n, "source": "schema" | "index" | "scan"}}`` for each numeric array field
    of the dataset ``path`` (any shard, or a list of data files, or a URL: a scan then fetches the data
    files); ``{}`` when it has none."""
    from recordio.mindrecord.read.reader import FileReader

    with FileReader(path, storage_options=storage_options, cache_dir=cache_dir) as reader:
        schema = reader.typed_schema
        arrays = [f for f in schema.fields.values() if f.dtype is not None and f.shape is not None]
        out = {f.name: {"elements": len(reader) * math.prod(f.shape), "source": "schema"}
               for f in arrays if -1 not in f.shape}
        if schema.counted:
            totals, source = _counted(reader, schema.counted)
            out.update({name: {"elements": int(n), "source": source} for name, n in zip(schema.counted, totals)})
    return {name: out[name] for name in sorted(out)}


def _counted(reader, fields):
    totals, scanned = np.zeros(len(fields), np.int64), False
    files = reader.shard_set
    for k, shard in enumerate(files.shards):
        recorded = index.recorded_elements(shard.path, fields)
        if recorded is None:
            files.storage.ensure(shard.path, 0, shard.size)     # the scan reads the blobs' prefixes from the map
            recorded, scanned = _scan(files, reader.typed_schema, k, fields), True
        totals += recorded
    return totals, "scan" if scanned else "index"


def _scan(files, schema, k, fields):
    """Element totals of ``fields`` in shard ``k`` of the open files ``files``, from the length and count
    prefixes of its blobs."""
    shard = files.shards[k]
    locs = files.locations.shard_rows(k, 0, shard.count)
    data = np.frombuffer(files.buffer(k), dtype=np.uint8)
    problem = None
    try:
        totals = _walk(shard, schema, fields, data, locs[:, 2].copy(), locs[:, 3])
    except FormatError as exc:
        problem = str(exc)           # raised below, once no frame holds a view of the map
    finally:
        del data
    if problem is not None:
        raise FormatError(problem)
    return totals


def _walk(shard, schema, fields, data, starts, ends):
    """Walk the blob parts of every row at once (``starts``/``ends``: each row's blob range)."""
    totals = []
    several = len(schema.blob_fields) > 1
    for name in schema.blob_fields:
        size = ends - starts
        if several:
            _need(shard, size >= 8, "the 8-byte length of", name, starts, ends)
            size = _gather(data, starts, _U64BE).astype(np.int64)
            starts = starts + 8
            _need(shard, (size >= 0) & (starts + size <= ends), "the bytes of", name, starts, ends)
        if name in fields:
            totals.append(_elements(shard, schema.fields[name], data, starts, size))
        starts = starts + size
    return np.array(totals, dtype=np.int64)


def _elements(shard, field, data, starts, size):
    if not field.compressed:
        _need(shard, size % field.dtype.itemsize == 0, "a whole number of elements in", field.name, starts,
              starts + size)
        return int((size // field.dtype.itemsize).sum())
    _need(shard, size >= 4, "the 4-byte element count of", field.name, starts, starts + size)
    n = _gather(data, starts, _U32BE).astype(np.int64)
    low = 4 + (n + 3) // 4 + n                # every element 1 byte wide ... every element 8 bytes wide
    _need(shard, (size >= low) & (size <= low + 7 * n), "a size that fits the element count of",
          field.name, starts, starts + size)
    return int(n.sum())


def _gather(data, starts, dtype):
    """The big-endian integers of ``dtype`` at byte offsets ``starts`` of ``data``."""
    width = dtype.itemsize
    return data[starts[:, None] + np.arange(width)].copy().view(dtype).ravel()


def _need(shard, ok, what, name, starts, ends):
    bad = np.flatnonzero(~ok)
    if bad.size:
        row = int(bad[0])
        raise FormatError(f"{shard.path}: row {row}: field {name!r}: the blob does not hold {what} the part "
                          f"(blob bytes {int(starts[row])}..{int(ends[row])}): the file is corrupt")
