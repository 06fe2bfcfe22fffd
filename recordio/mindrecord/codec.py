"""Value codecs of MindRecord: msgpack raw records, blobs and integer-array compression.

The second half of "the bytes" (``format.py`` has the file and page layout).
Everything here is pure: bytes in, values out, no I/O.

Raw records (FORMAT.md §5.1) are msgpack maps written with nlohmann's width
rules: the smallest integer encoding, and a float stored as float32 only when
the double survives a float32 round trip exactly. msgpack's C packer follows
the same rules for everything except floats, so only floats go through
:func:`_pack_float` here. Decoding uses msgpack's C unpacker.

Blobs (§5.2): one blob field is stored bare, several are each prefixed with a
u64 big-endian length, none gives the 4-byte dummy ``00 00 00 00``. When a
schema has any integer array field, every integer array part is compressed:
``[u32 BE count][ceil(count/4) bytes of 2-bit width codes][elements, LE]``, in compiled code
(``_codec.c``) where the package was built with it, else in numpy (``ints_numpy``, the reference);
:data:`BACKEND` says which.
"""

import os
import struct
import sys

import msgpack
import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord import ints_numpy

from recordio import compiled             # the compiled integer codec (setup.py); same bytes, same accepted inputs
_codec = compiled.load("recordio.mindrecord._codec")        # None (warned once) where it was not built
if os.environ.get("RECORDIO_CODEC") == "numpy" or sys.byteorder != "little":   # schema dtypes are '<'
    _codec = None

__all__ = [
    "BACKEND", "DUMMY_BLOB", "DUMMY_RAW", "compress_ints", "compress_rows", "decompress_ints",
    "decompress_many", "join_blob", "pack_raw", "pack_raws", "page_entries", "split_blob", "unpack_raw",
]

#: which integer-array codec runs: ``"c"`` (compiled) or ``"numpy"`` (the reference, ``ints_numpy``;
#: forced with ``RECORDIO_CODEC=numpy``; also on big-endian hosts and when the package was installed
#: without a C compiler)
BACKEND = "numpy" if _codec is None else "c"


DUMMY_BLOB = b"\x00\x00\x00\x00"      # the blob of a schema with no blob field
DUMMY_RAW = b"\x81\xa2id\x00"          # msgpack {"id": 0}: the record of a schema with no raw field

_FLT_MAX = 3.4028234663852886e38
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_U64BE = struct.Struct(">Q")
_U64LE = struct.Struct("<Q")
_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack
_I32, _I64 = np.dtype(np.int32), np.dtype(np.int64)


# --- raw records -------------------------------------------------------------------------------

def _pack_float(value):
    if value == value and -_FLT_MAX <= value <= _FLT_MAX:
        narrow = _F32.pack(value)
        if _F32.unpack(narrow)[0] == value:
            return b"\xca" + narrow
    return b"\xcb" + _F64.pack(value)


def _map_header(n):
    if n <= 15:
        return bytes((0x80 | n,))
    if n <= 0xFFFF:
        return b"\xde" + n.to_bytes(2, "big")
    return b"\xdf" + n.to_bytes(4, "big")


def pack_raw(names, values):
    """The msgpack map ``{names[i]: values[i]}`` (names already sorted) with nlohmann's widths.

    ``values`` are Python ``int``, ``float`` or ``str``. msgpack's C packer already uses
    the smallest integer encodings, so only maps holding a float are packed here.
    """
    if float not in map(type, values):
        return _packb(dict(zip(names, values)))
    parts = [_map_header(len(names))]
    for name, value in zip(names, values):
        parts.append(_packb(name))
        parts.append(_pack_float(value) if type(value) is float else _packb(value))
    return b"".join(parts)


def pack_raws(names, columns):
    """:func:`pack_raw` of each row of ``columns`` (one list of values per name, in ``names`` order)."""
    if any(float in map(type, column) for column in columns):
        return [pack_raw(names, values) for values in zip(*columns)]
    if len(names) == 1:
        name = names[0]
        return [_packb({name: value}) for value in columns[0]]
    return [_packb(dict(zip(names, values))) for values in zip(*columns)]


def unpack_raw(data):
    """Decode one raw record into a dict; a corrupt record raises :class:`FormatError`."""
    try:
        record = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise FormatError(f"corrupt raw record (msgpack): {exc}") from None
    if not isinstance(record, dict):
        raise FormatError(f"corrupt raw record: expected a msgpack map, found {type(record).__name__}")
    return record


# --- integer-array compression ------------------------------------------------------------------

def compress_ints(values):
    """Compress a flat integer array: ``[u32 BE count][width bitmap][LE elements]``."""
    if _codec is None:
        return ints_numpy.compress(values)
    return _codec.encode(_native_ints(values))


def compress_rows(values):
    """Compress each row of a 2-D integer array (one encoding per row, as :func:`compress_ints`)."""
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"compress_rows expects a 2-D array, found {values.ndim} dimension(s)")
    if _codec is None:
        return [ints_numpy.compress(row) for row in values]
    return _codec.encode_rows(_native_ints(values), values.shape[0])


def decompress_ints(data, dtype):
    """Undo :func:`compress_ints`; ``dtype`` is the schema's int32/int64 numpy dtype.

    A malformed part raises the reference decoder's :class:`FormatError` (the compiled decoder
    only tells well-formed from not; the reference then names what is wrong).
    """
    if _codec is not None:
        n = _codec.measure(data)
        if n >= 0:
            out = np.empty(n, dtype)
            if _codec.decode_into(data, out):
                return out
    return ints_numpy.decompress(data, dtype)


def decompress_many(parts, dtype):
    """Decode a batch of parts: one ``(len(parts), L)`` array when every part holds ``L`` elements,
    else a list of 1-D arrays (a malformed part raises as :func:`decompress_ints` does)."""
    if _codec is not None and parts:
        counts = _codec.measure_many(parts)
        if min(counts) >= 0 and min(counts) == max(counts):
            out = np.empty((len(parts), counts[0]), dtype)
            if _codec.decode_many(parts, out) < 0:
                return out
    arrays = [decompress_ints(part, dtype) for part in parts]
    if arrays and all(a.size == arrays[0].size for a in arrays):
        return np.stack(arrays)
    return arrays


def decompress_ranges(buf, starts, ends, dtype):
    """:func:`decompress_many` of the parts ``buf[starts[i]:ends[i]]`` (int64 arrays), read in place:
    one ``(n, L)`` array when every part holds ``L`` elements, else a list of 1-D arrays (views of
    one array); a malformed part raises as :func:`decompress_ints` does."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    if _codec is not None and len(starts):
        counts = np.empty(len(starts), np.int64)
        _codec.measure_ranges(buf, starts, ends, counts)
        if counts.min() >= 0:
            equal = bool((counts == counts[0]).all())
            out = np.empty((len(starts), int(counts[0])) if equal else int(counts.sum()), dtype)
            if _codec.decode_ranges(buf, starts, ends, out) < 0:
                if equal:
                    return out
                bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
                return [out[a:b] for a, b in zip(bounds, bounds[1:])]
    view = memoryview(buf).cast("B")
    try:
        return decompress_many([bytes(view[a:b]) for a, b in zip(starts.tolist(), ends.tolist())], dtype)
    finally:
        view.release()


def read_records(buf, starts, ends, fields):
    """Raw records ``buf[starts[i]:ends[i]]`` read into columns by the compiled reader: ``fields`` are
    ``(name, kind)`` pairs, one for each of the schema's raw fields (a record must be a map of exactly
    those keys); kind ``"i"`` gives an int64 array, ``"f"`` a float64 array, ``"s"`` a list of ``str``,
    ``"-"`` nothing (the value is stepped over). A dict of the columns asked for; None without the
    compiled module or when a record is not what it reads (the caller then decodes with msgpack)."""
    if _codec is None:
        return None
    n = len(starts)
    outs = tuple(np.empty(n, np.int64) if k == "i" else np.empty(n, np.float64) if k == "f"
                 else [None] * n if k == "s" else None for _, k in fields)
    bad = _codec.decode_records(buf, np.ascontiguousarray(starts, dtype=np.int64),
                                np.ascontiguousarray(ends, dtype=np.int64),
                                tuple(name.encode() for name, _ in fields),
                                "".join(k for _, k in fields).encode(), outs)
    if bad >= 0:
        return None
    return {name: out for (name, k), out in zip(fields, outs) if k != "-"}


def copy_ranges(buf, starts, ends, out):
    """Copy the byte ranges ``buf[starts[i]:ends[i]]`` one after another into ``out`` (a writable
    buffer of their total length); False (nothing copied) without the compiled module."""
    if _codec is None:
        return False
    _codec.copy_ranges(buf, np.ascontiguousarray(starts, dtype=np.int64),
                       np.ascontiguousarray(ends, dtype=np.int64), out)
    return True


def walk_entries(buf, start, count, limit):
    """Positions of ``count`` consecutive ``[u64 LE n][n bytes]`` entries from byte ``start`` of ``buf``
    (FORMAT.md section 4): ``(pos, bad)`` with ``pos`` an int64 array of each entry's prefix position and,
    last, the end of the last entry; ``bad`` is -1 when every entry ends by ``limit`` (``<= len(buf)``),
    else the index of the first that does not (``pos`` is then filled only up to it)."""
    pos = np.zeros(count + 1, np.int64)
    if _codec is not None:
        return pos, _codec.walk_entries(buf, start, count, limit, pos)
    at = start
    for i in range(count):
        pos[i] = at
        if limit - at < 8:
            return pos, i
        n = _U64LE.unpack_from(buf, at)[0]
        if n > limit - at - 8:
            return pos, i
        at += 8 + n
    pos[count] = at
    return pos, -1


def page_entries(buffer, offsets):
    """The values ``buffer[offsets[i]:offsets[i + 1]]`` as page entries, ``[u64 LE length][bytes]`` each
    (FORMAT.md section 4), one after another: what ``format.entry_prefix(len(v)) + v`` of each gives."""
    offsets = np.asarray(offsets, dtype=np.int64)
    starts, ends = offsets[:-1], offsets[1:]
    out = bytearray(int(ends[-1] - starts[0]) + 8 * len(starts) if len(starts) else 0)
    if _codec is not None:
        _codec.copy_entries(buffer, starts, ends, out)
        return out
    view, at = memoryview(buffer).cast("B"), 0
    for a, b in zip(starts.tolist(), ends.tolist()):
        out[at:at + 8] = _U64LE.pack(b - a)
        out[at + 8:at + 8 + b - a] = view[a:b]
        at += 8 + b - a
    return out


def _native_ints(values):
    """``values`` as a C-contiguous native int32/int64 array (other integer types as int64)."""
    values = np.asarray(values)
    if values.dtype != _I32 and values.dtype != _I64:
        values = values.astype(np.int64)
    return np.ascontiguousarray(values)


# --- blobs ----------------------------------------------------------------------------------------

def join_blob(parts):
    """The blob of one row from its per-field parts (bytes), in ``blob_fields`` order."""
    if not parts:
        return DUMMY_BLOB
    if len(parts) == 1:
        return parts[0]
    out = []
    for part in parts:
        out.append(_U64BE.pack(len(part)))
        out.append(part)
    return b"".join(out)


def split_blob(blob, count):
    """Split a blob back into its ``count`` parts (the inverse of :func:`join_blob`)."""
    if count == 1:
        return [blob]
    parts, pos, size = [], 0, len(blob)
    for i in range(count):
        if pos + 8 > size:
            raise FormatError(f"blob of {size} bytes ends inside the length of part {i} of {count}")
        n = _U64BE.unpack_from(blob, pos)[0]
        pos += 8
        if pos + n > size:
            raise FormatError(f"blob part {i} claims {n} bytes but only {size - pos} remain")
        parts.append(blob[pos:pos + n])
        pos += n
    return parts


def permute(positions, out, n, half, keys) -> bool:
    """The compiled keyed permutation (``recordio.dataset``'s ``Permutation.at``): the rows at ``positions``
    (a contiguous int64 array) written into ``out``; False without the compiled codec (the caller's numpy
    path then computes them)."""
    if _codec is None:
        return False
    _codec.permute(positions, out, n, half, keys)
    return True
