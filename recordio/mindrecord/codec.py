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
``[u32 BE count][ceil(count/4) bytes of 2-bit width codes][elements, LE]``.
"""

import struct

import msgpack
import numpy as np

from recordio.errors import FormatError

__all__ = [
    "DUMMY_BLOB", "DUMMY_RAW", "compress_ints", "decompress_ints", "join_blob",
    "pack_raw", "split_blob", "unpack_raw",
]

DUMMY_BLOB = b"\x00\x00\x00\x00"      # the blob of a schema with no blob field
DUMMY_RAW = b"\x81\xa2id\x00"          # msgpack {"id": 0}: the record of a schema with no raw field

_FLT_MAX = 3.4028234663852886e38
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_U64BE = struct.Struct(">Q")
_U32BE = struct.Struct(">I")
_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack
_WIDTH_OF_CODE = np.array([1, 2, 4, 8], dtype=np.int64)
_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)


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

def _width_codes(values):
    codes = np.full(values.shape, 3, dtype=np.uint8)
    codes[(values >= -(1 << 31)) & (values < (1 << 31))] = 2
    codes[(values >= -(1 << 15)) & (values < (1 << 15))] = 1
    codes[(values >= -128) & (values < 128)] = 0
    return codes


def _compress_small(values):
    """The same encoding in plain Python: faster than numpy for a few dozen elements."""
    bitmap = bytearray((len(values) + 3) // 4)
    body = []
    for i, v in enumerate(values):
        if -128 <= v < 128:
            code, width = 0, 1
        elif -32768 <= v < 32768:
            code, width = 1, 2
        elif -2147483648 <= v < 2147483648:
            code, width = 2, 4
        else:
            code, width = 3, 8
        bitmap[i >> 2] |= code << (6 - 2 * (i & 3))
        body.append(v.to_bytes(width, "little", signed=True))
    return _U32BE.pack(len(values)) + bytes(bitmap) + b"".join(body)


def compress_ints(values):
    """Compress a flat int64 array: ``[u32 BE count][width bitmap][LE elements]``."""
    values = np.ascontiguousarray(values, dtype="<i8").ravel()
    n = values.size
    if n <= 64:
        return _compress_small(values.tolist())
    codes = _width_codes(values)
    padded = np.zeros(4 * ((n + 3) // 4), dtype=np.uint8)
    padded[:n] = codes
    bitmap = np.bitwise_or.reduce(padded.reshape(-1, 4) << _SHIFTS, axis=1).astype(np.uint8)
    keep = np.arange(8) < _WIDTH_OF_CODE[codes][:, None]
    elements = values.view(np.uint8).reshape(n, 8)[keep]
    return _U32BE.pack(n) + bitmap.tobytes() + elements.tobytes()


def decompress_ints(data, dtype):
    """Undo :func:`compress_ints`; ``dtype`` is the schema's int32/int64 numpy dtype."""
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size < 4:
        raise FormatError(f"compressed int array of {buf.size} bytes is shorter than its 4-byte count")
    n = _U32BE.unpack_from(data, 0)[0]
    nmap = (n + 3) // 4
    if 4 + nmap + n > buf.size:
        raise FormatError(f"compressed int array claims {n} elements but holds only {buf.size} bytes")
    codes = ((buf[4:4 + nmap, None] >> _SHIFTS) & 3).ravel()[:n]
    if n and (codes == codes[0]).all():          # one width for every element: a plain view
        width = int(_WIDTH_OF_CODE[codes[0]])
        if 4 + nmap + n * width != buf.size:
            raise FormatError(f"compressed int array: {n} elements of {width} bytes do not fill "
                              f"{buf.size - 4 - nmap} bytes")
        out = buf[4 + nmap:].view(f"<i{width}").astype(np.int64)
        return _narrow(out, dtype)
    widths = _WIDTH_OF_CODE[codes]
    ends = 4 + nmap + np.cumsum(widths)
    if n and ends[-1] != buf.size:
        raise FormatError(f"compressed int array: widths sum to {int(ends[-1])} bytes, part has {buf.size}")
    if not n and buf.size != 4:
        raise FormatError(f"compressed int array: 0 elements but {buf.size} bytes")
    starts = ends - widths
    out = np.empty(n, dtype=np.int64)
    for code, width in enumerate((1, 2, 4, 8)):
        sel = np.nonzero(codes == code)[0]
        if sel.size:
            raw = buf[starts[sel, None] + np.arange(width)]
            out[sel] = np.ascontiguousarray(raw).view(f"<i{width}").ravel()
    return _narrow(out, dtype)


def _narrow(out, dtype):
    if dtype == np.int32 and out.size and (out.min() < -(1 << 31) or out.max() >= (1 << 31)):
        raise FormatError("compressed int32 array holds a value outside the int32 range")
    return out.astype(dtype, copy=False)


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
