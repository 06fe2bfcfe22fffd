"""Image bytes for converters: cheap integrity checks, lossless PNG encoding, re-encode/resize.

OpenCV is imported only by the functions that decode or encode.
"""

from recordio.extras import requires

__all__ = ["check_image", "encode_png", "reencode", "sniff"]

_SIGNATURES = (
    (b"\xff\xd8\xff", "jpeg"), (b"\x89PNG\r\n\x1a\n", "png"), (b"BM", "bmp"), (b"GIF87a", "gif"),
    (b"GIF89a", "gif"), (b"II*\x00", "tiff"), (b"MM\x00*", "tiff"), (b"P5", "pgm"), (b"P6", "ppm"),
)


def sniff(data):
    """The image format named by the first bytes, or None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)


def check_image(data, mode="header"):
    """Raise ValueError when ``data`` is not a whole image.

    ``header``: a known signature, and for JPEG/PNG the end marker after the last scan / the
    IEND chunk (catches truncated files without decoding). ``decode``: a full OpenCV decode.
    ``none``: no check.
    """
    if mode == "none":
        return
    kind = sniff(data)
    if kind is None:
        raise ValueError(f"not a recognised image file (starts with {data[:8]!r})")
    if kind == "jpeg" and not 0 <= _jpeg_scan_start(data) < data.rfind(b"\xff\xd9"):
        raise ValueError("truncated JPEG: no end-of-image marker after the image data")
    if kind == "png" and b"IEND" not in data[-64:]:
        raise ValueError("truncated PNG: no IEND chunk at the end")
    if mode == "decode":
        _decode(data)


def _jpeg_scan_start(data):
    """Offset of the main image's first start-of-scan marker, found by walking the header segments.

    Walking (rather than searching) skips an EXIF thumbnail's own markers inside APP1 and reads
    only the headers, not the compressed data. -1 when the headers are malformed or end first.
    """
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return -1
        marker = data[i + 1]
        if marker == 0xDA:
            return i
        if marker == 0xFF or marker == 0x01 or 0xD0 <= marker <= 0xD8:
            i += 1 if marker == 0xFF else 2          # fill byte, or a marker without a length
            continue
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return -1


def _decode(data, flags=None):
    with requires("image conversion", "vision"):
        import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR if flags is None else flags)
    if image is None:
        raise ValueError("OpenCV cannot decode the image")
    return image


def encode_png(pixels):
    """Lossless PNG of an RGB ``<H,W,3>`` or grey ``<H,W>`` uint8 array (decodes back to the same RGB/grey)."""
    with requires("image conversion", "vision"):
        import cv2

    if pixels.ndim == 3:
        pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", pixels, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise ValueError(f"OpenCV cannot PNG-encode an array of shape {pixels.shape}")
    return buf.tobytes()


def reencode(data, resize=None, encode=None, quality=95):
    """Decode, optionally resize so that the shorter side is ``resize``, encode as ``encode``.

    ``encode`` is ``"jpeg"`` or ``"png"``; None keeps JPEG for JPEG input and uses PNG otherwise.
    """
    with requires("image conversion", "vision"):
        import cv2

    image = _decode(data)
    if resize:
        h, w = image.shape[:2]
        scale = resize / min(h, w)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    encode = encode or ("jpeg" if sniff(data) == "jpeg" else "png")
    params = [cv2.IMWRITE_JPEG_QUALITY, quality] if encode == "jpeg" else [cv2.IMWRITE_PNG_COMPRESSION, 1]
    ok, buf = cv2.imencode(".jpg" if encode == "jpeg" else ".png", image, params)
    if not ok:
        raise ValueError(f"OpenCV cannot encode the image as {encode}")
    return buf.tobytes()
