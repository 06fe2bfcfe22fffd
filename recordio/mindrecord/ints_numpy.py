"""MindRecord's integer-array compression in numpy: the reference, and the fallback of ``codec``.

``[u32 BE count][ceil(count/4) bytes of 2-bit width codes][elements, LE]`` (FORMAT.md §5.2): each
element takes the smallest of 1, 2, 4 or 8 bytes whose signed range holds it. The compiled codec
(``_codec``'s ``_codec_ints.c``) must give the same bytes and accept exactly the encodings this one
accepts; the errors raised for the others are this module's (tests/test_codec.py compares both).
"""

import struct

import numpy as np

from recordio.errors import FormatError

__all__ = ["compress", "decompress"]

_U32BE = struct.Struct(">I")
_WIDTH_OF_CODE = np.array([1, 2, 4, 8], dtype=np.int64)
_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)


def _width_codes(values):
    codes = np.full(values.shape, 3, dtype=np.uint8)
    codes[(values >= -(1 << 31)) & (values < (1 << 31))] = 2
    codes[(values >= -(1 << 15)) & (values < (1 << 15))] = 1
    codes[(values >= -128) & (values < 128)] = 0
    return codes


def compress_small(values):
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


def compress(values):
    """Compress a flat int64 array: ``[u32 BE count][width bitmap][LE elements]``."""
    values = np.ascontiguousarray(values, dtype="<i8").ravel()
    n = values.size
    if n <= 64:
        return compress_small(values.tolist())
    codes = _width_codes(values)
    padded = np.zeros(4 * ((n + 3) // 4), dtype=np.uint8)
    padded[:n] = codes
    bitmap = np.bitwise_or.reduce(padded.reshape(-1, 4) << _SHIFTS, axis=1).astype(np.uint8)
    keep = np.arange(8) < _WIDTH_OF_CODE[codes][:, None]
    elements = values.view(np.uint8).reshape(n, 8)[keep]
    return _U32BE.pack(n) + bitmap.tobytes() + elements.tobytes()


def decompress(data, dtype):
    """Undo :func:`compress`; ``dtype`` is the schema's int32/int64 numpy dtype."""
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
