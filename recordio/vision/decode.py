"""Decoding, and fused decode + crop + resize that skips pixels the crop throws away.

Fused decode: for a crop box (y, x, h, w) resized to (oh, ow), a JPEG is decoded with libjpeg's DCT
scaling at the largest factor s in {8, 4, 2} that keeps the scaled crop at least as large as the
output (h / s >= oh and w / s >= ow); only the box is then resampled from the reduced image, with the
exact sub-pixel geometry of crop-then-resize. The result stays close to decode-then-crop-then-resize
(tolerance measured and tested: see docs/vision.md); with no reduction possible it is identical.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np

from recordio import compiled       # optional C extension (setup.py): decodes only a crop's region
from recordio.batch_slots import output_array
from recordio.errors import FormatError
_jpeg = compiled.load("recordio.vision._jpeg")              # None (warned once) where it was not built

from recordio.vision.checks import PNG_SIGNATURE, check_pixels, row_phrase, undecodable
from recordio.vision.resampling import (Inter, RandomAreaCrop, resize, resize_part, resizes_exactly, resizes_parts,
                                        source_span, window_of)

__all__ = ["Decode", "EncodedImage", "RandomCropDecodeResize", "decode_drawn", "decode_region", "decodes_at_full_scale",
           "image_size", "window_source"]

_FLAGS = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
_REDUCED = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def as_buffer(op, data):
    """Encoded bytes as a 1-D uint8 array (bytes, bytearray, memoryview, a uint8 array, or MindSpore's
    one-element ``S<n>`` array)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, np.uint8)
    if isinstance(data, np.ndarray) and data.dtype.kind == "S" and data.size == 1:
        return np.frombuffer(data.tobytes(), np.uint8)      # the whole item: trailing NULs kept
    if isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1:
        return data
    raise TypeError(f"{op}: expected encoded image bytes{row_phrase()}, found "
                    f"{type(data).__name__}{getattr(data, 'shape', '')}")


def _jpeg_size(b):
    pos, n = 2, len(b)
    while pos + 9 < n:
        if b[pos] != 0xFF:
            return None
        marker = b[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker in _SOF:
            return b[pos + 5] << 8 | b[pos + 6], b[pos + 7] << 8 | b[pos + 8]
        pos += 2 + (b[pos + 2] << 8 | b[pos + 3])
    return None


def image_size(buf):
    """(height, width) from a JPEG or PNG header without decoding pixels; None for other formats."""
    b = memoryview(buf)                   # ints on indexing (a numpy array's are numpy scalars: 3x slower)
    if len(b) > 24 and b[:8] == PNG_SIGNATURE:
        w, h = struct.unpack(">II", bytes(b[16:24]))
        return h, w
    if len(b) > 4 and b[0] == 0xFF and b[1] == 0xD8:
        return _jpeg_size(b)
    return None


def decode(op, buf, flags=_FLAGS):
    img = cv2.imdecode(buf, flags) if len(buf) else None
    if img is None:
        raise undecodable(op, buf)
    return img


class EncodedImage:
    """Encoded bytes passed from a deferred Decode to the next op, which decodes only what it needs."""

    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer


def decode_region(image, region, interpolation, op="Decode", centre=None, size=None):
    """Decode ``image`` (EncodedImage) cropped and resized as ``region(h, w) -> (box, (oh, ow))`` asks;
    ``centre=(ch, cw)``: only the centre window of the result (CenterCrop's, the caller has checked it
    fits), the resize computing no other pixel where it can. ``size``: the image's (h, w) where the
    caller has read it from the header already. ``op="Decode"``: a Decode deferred into the op after it
    (``fusion.fuse_decode``), which an error's note says (the map names the op that runs it)."""
    with _noted(op):
        buf = image.buffer
        size = size or image_size(buf)
        if size is None or 0 in size:                 # no usable JPEG/PNG header: full decode, plain path
            size = decode(op, buf).shape[:2]
        box, out = region(*size)
        return _decode_drawn(buf, size, box, out, interpolation, op, centre)


def decode_drawn(image, size, box, out, interpolation, op="Decode"):
    """:func:`decode_region` with the region already drawn: ``box`` (y, x, h, w) of the (h, w) ``size`` image,
    resized to ``out`` (oh, ow)."""
    with _noted(op):
        return _decode_drawn(image.buffer, size, box, out, interpolation, op, None)


def decodes_at_full_scale(image, size, box, out, interpolation):
    """Whether the region decoder decodes ``box`` of this JPEG at full scale and the compiled bilinear resize
    gives its ``out`` (oh, ow) resize, as :func:`decode_drawn` does (the region decoder may still decline
    the file: progressive, corrupt, ...): then a compiled call may do both (``recordio.vision.crop_chain``)."""
    return 0 not in size and _full_scale_compiled(image.buffer, box[2:], out, interpolation)


class _noted:
    """Adds the note that says a deferred Decode runs inside the op that raised (``op="Decode"``)."""

    def __init__(self, op):
        self.op = op

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, FormatError) and self.op == "Decode":
            error.add_note("recordio: the Decode before this op runs inside it (fused: only the pixels this op "
                           "keeps are decoded)")
        return False


def _decode_drawn(buf, size, box, out, interpolation, op, centre):
    (y, x, h, w), (oh, ow) = box, out
    window = None if centre is None else ((oh - centre[0]) // 2, (ow - centre[1]) // 2, *centre)
    scale = _reduction(buf, h, w, oh, ow)
    if scale == 1 and window is not None and (y, x, h, w) == (0, 0, *size) and resizes_parts(interpolation):
        found = _decode_window(buf, size, (oh, ow), window)
        if found is not None:
            return found
    if scale == 1:
        box = _decode_box(buf, y, x, h, w)
        return resize(decode(op, buf)[y:y + h, x:x + w] if box is None else box, oh, ow, interpolation, window)
    block = _decode_scaled_box(buf, size, (y, x, h, w), scale)
    if block is not None:                             # RGB, only around the box: origin (y0, x0) of the 1/s image
        pixels, y0, x0 = block
        return window_of(_resample(pixels, (y, x, h, w), (oh, ow), scale, interpolation, (y0, x0)), window)
    small = decode(op, buf, _REDUCED[scale] | cv2.IMREAD_IGNORE_ORIENTATION)
    return window_of(cv2.cvtColor(_resample(small, (y, x, h, w), (oh, ow), scale, interpolation), cv2.COLOR_BGR2RGB),
                     window)


def _decode_window(buf, size, out, window):
    """The window of the whole image's resize to ``out``, decoding only the rows and columns it reads;
    None where the region decoder or the compiled resize does not apply."""
    top, left, h, w = _window_source(size, out, window)
    part = _decode_box(buf, top, left, h, w)
    return None if part is None else resize_part(part, (*size, top, left), *out, window)


def _window_source(size, out, window):
    """The box (top, left, h, w) of an image of ``size`` that the ``window`` (y, x, wh, ww) of its bilinear
    resize to ``out`` reads."""
    (H, W), (oh, ow), (y, x, wh, ww) = size, out, window
    (top, bottom), (left, right) = source_span(H, oh, y, wh), source_span(W, ow, x, ww)
    return top, left, bottom - top + 1, right - left + 1


def window_source(image, size, out, window, interpolation):
    """Where :func:`decode_region` of the whole image resized to ``out`` with the centre ``window`` (y, x, wh, ww)
    decodes only the box of the JPEG that the window reads, at full scale, and resizes it with the compiled
    resize: that box (top, left, h, w); None otherwise (the region decoder may still decline the file). Then a
    compiled call may do both (``recordio.vision.crop_chain``)."""
    if 0 in size or not _full_scale_compiled(image.buffer, size, out, interpolation):
        return None
    return _window_source(size, out, window)


def _full_scale_compiled(buf, source, out, interpolation):
    """Whether ``_decode_drawn`` decodes a ``source`` (h, w) region of this JPEG at full scale with the region
    decoder and resizes it to ``out`` with the compiled bilinear resize."""
    return (resizes_parts(interpolation) and buf[0] == 0xFF and _reduction(buf, *source, *out) == 1
            and resizes_exactly(source, out) and _region_decoder_is_exact(1))


def _decode_box(buf, y, x, h, w):
    """Pixels [y:y+h, x:x+w] of a baseline JPEG, decoding only the rows and columns around them;
    None where the region decoder does not apply (the caller decodes the whole image)."""
    if buf[0] != 0xFF or not _region_decoder_is_exact(1):
        return None
    found = _region(buf, y, x, h, w)
    if found is None:
        return None
    pixels, y0, x0 = found
    return pixels[y - y0:y - y0 + h, x - x0:x - x0 + w]


def _decode_scaled_box(buf, size, box, s):
    """The pixels of the 1/s-scaled JPEG around the box ``(y, x, h, w)`` (full-size coordinates), with
    their origin in the scaled image: ``(pixels, y0, x0)``; None where the region decoder does not apply.
    The block has the region decoder's margin, so a resampling that reads a pixel or two beyond the box
    sees what it would see in the whole scaled image (and the image's edge where that is one)."""
    if buf[0] != 0xFF or not _region_decoder_is_exact(s):
        return None
    (y, x, h, w), (H, W) = box, size
    hs, ws = -(-H // s), -(-W // s)
    top, left = min(y // s, hs - 1), min(x // s, ws - 1)
    bottom, right = min(hs, -(-(y + h) // s)), min(ws, -(-(x + w) // s))
    return _region(buf, top, left, max(1, bottom - top), max(1, right - left), 8 // s)


def _region(data, y, x, h, w, eighths=8):
    """``_jpeg.decode_box`` as an RGB array with its origin ``(pixels, y0, x0)``; None where it declines."""
    found = _jpeg.decode_box(data, y, x, h, w, eighths)
    if found is None:
        return None
    pixels, rows, cols, y0, x0 = found
    return np.frombuffer(pixels, np.uint8).reshape(rows, cols, 3), y0, x0


@compiled.checked("recordio.vision._jpeg")                  # a failed self-check warns once
@compiled.once
def _region_decoder_is_exact(s=1):
    """Whether the libjpeg that ``_jpeg`` links decodes at 1/s as OpenCV's does (checked once per s, on a
    few boxes of a 4:2:0 and a 4:2:2 test image); otherwise the region decoder is not used at that scale."""
    if _jpeg is None:
        return False
    img = cv2.resize(check_pixels((6, 8, 3), s), (77 * s, 61 * s), interpolation=cv2.INTER_CUBIC)
    flags = _FLAGS if s == 1 else _REDUCED[s] | cv2.IMREAD_IGNORE_ORIENTATION
    for sampling in (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422):
        data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, sampling])[1].tobytes()
        full = decode("Decode", np.frombuffer(data, np.uint8), flags)
        full = full if s == 1 else full[:, :, ::-1]
        for y, x, h, w in [(0, 0, 61, 77), (19, 21, 23, 29), (40, 50, 21, 27), (1, 17, 5, 3)]:
            found = _region(data, y, x, h, w, 8 // s)
            if found is None:
                return False
            pixels, y0, x0 = found                # the box and the 2 pixels around it that a resampling reads
            a, b, c, d = max(y - 2, y0), min(y + h + 2, full.shape[0]), max(x - 2, x0), min(x + w + 2, full.shape[1])
            if not np.array_equal(pixels[a - y0:b - y0, c - x0:d - x0], full[a:b, c:d]):
                return False
    return True


def _reduction(buf, h, w, oh, ow):
    if buf[0] != 0xFF:                                # only libjpeg scales during decoding
        return 1
    for s in (8, 4, 2):
        if h >= oh * s and w >= ow * s:
            return s
    return 1


def _resample(small, box, out, s, interpolation, origin=(0, 0)):
    """Crop+resize of the full-size box, read from an image decoded at 1/s whose pixel (0, 0) is pixel
    ``origin`` of the whole 1/s image (exact sub-pixel geometry)."""
    (y, x, h, w), (oh, ow), (oy, ox) = box, out, origin
    if interpolation is Inter.AREA:                   # warpAffine has no area mode: integer box, then resize
        y0, x0 = int(round(y / s)), int(round(x / s))
        y1, x1 = max(y0 + 1, int(round((y + h) / s))), max(x0 + 1, int(round((x + w) / s)))
        return resize(small[y0 - oy:y1 - oy, x0 - ox:x1 - ox], oh, ow, interpolation)
    sy, sx = h / oh / s, w / ow / s                   # output pixel centre -> reduced-image coordinates
    m = np.array([[sx, 0.0, x / s + 0.5 * sx - 0.5 - ox], [0.0, sy, y / s + 0.5 * sy - 0.5 - oy]])
    # the batch's slot where this is the row's last op (colour images: OpenCV writes <oh,ow,C> into it)
    colour = small.ndim == 3 and small.shape[2] > 1
    dst = output_array((oh, ow, small.shape[2]), small.dtype, last_only=True) if colour else None
    return cv2.warpAffine(small, m, (ow, oh), dst=dst, flags=interpolation.value | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE)


class Decode:
    """Decode JPEG/PNG bytes into an RGB uint8 <H,W,3> image; ``to_pil=True``: an RGB PIL image
    (MindSpore's Python path, see :mod:`recordio.vision.pil`)."""

    costly = True            # a decode costs more than a hand-off to a worker: the map need not time it

    def __init__(self, to_pil: bool = False) -> None:
        if not isinstance(to_pil, bool):
            raise TypeError(f"Decode: to_pil must be a bool, got {to_pil!r}")
        self.to_pil = to_pil
        if to_pil:
            from recordio.vision import pil
            pil.pillow()                      # a missing Pillow fails here, where the pipeline is written

    def __call__(self, data):
        if self.to_pil:
            from recordio.vision import pil
            return pil.decode(as_buffer("Decode", data))
        return decode("Decode", as_buffer("Decode", data))

    def __repr__(self):
        return "Decode(to_pil=True)" if self.to_pil else "Decode()"


class RandomCropDecodeResize(RandomAreaCrop):
    """Decode, crop a random region (as RandomResizedCrop) and resize, decoding at reduced scale."""

    costly = True

    def __call__(self, data):
        buf = as_buffer("RandomCropDecodeResize", data)
        return decode_region(EncodedImage(buf), self.region, self.interpolation, "RandomCropDecodeResize")

    def __repr__(self):
        return (f"RandomCropDecodeResize(size={self.size}, scale={self.scale}, ratio={self.ratio}, "
                f"interpolation={self.interpolation}, max_attempts={self.max_attempts})")
