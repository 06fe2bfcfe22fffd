"""Thumbnails: a JPEG or PNG field made small with Pillow, its size bounded.

Only bytes whose magic bytes say JPEG or PNG are opened, and only by Pillow's JPEG and PNG decoders;
the result is always a fresh JPEG or PNG. An image larger than ``MAX_PIXELS`` or ``MAX_BYTES`` is
refused rather than decoded.
"""

from __future__ import annotations

import io

from recordio.view.render import image_type

THUMB = 128                  # default side in pixels
MAX_THUMB = 512
MAX_BYTES = 64 << 20         # an encoded image larger than this is not served
MAX_PIXELS = 64_000_000


class ImageRefused(ValueError):
    """The bytes are not an image this app serves, or one too large."""


def thumbnail(data: bytes, side: int = THUMB) -> tuple[bytes, str]:
    """``(encoded bytes, mime type)`` of the image ``data`` fitted into ``side`` x ``side`` pixels."""
    from recordio.view.extra import requires_view

    with requires_view():
        from PIL import Image

    mime = image_type(data)
    if mime is None:
        raise ImageRefused("the bytes are neither JPEG nor PNG")
    if len(data) > MAX_BYTES:
        raise ImageRefused(f"image of {len(data)} bytes is larger than {MAX_BYTES}")
    side = max(16, min(int(side), MAX_THUMB))
    try:
        with Image.open(io.BytesIO(data), formats=["JPEG" if mime == "image/jpeg" else "PNG"]) as img:
            if img.width * img.height > MAX_PIXELS:
                raise ImageRefused(f"image of {img.width}x{img.height} pixels is larger than {MAX_PIXELS}")
            if mime == "image/jpeg":
                img.draft("RGB", (side, side))
            img.thumbnail((side, side))
            out = io.BytesIO()
            if mime == "image/jpeg" or img.mode not in ("RGBA", "LA", "P"):
                img.convert("RGB").save(out, "JPEG", quality=85)
                return out.getvalue(), "image/jpeg"
            img.convert("RGBA").save(out, "PNG")
            return out.getvalue(), "image/png"
    except ImageRefused:
        raise
    except Exception as exc:           # Pillow raises many kinds on a damaged image
        raise ImageRefused(f"the image does not decode ({type(exc).__name__}: {exc})") from None
