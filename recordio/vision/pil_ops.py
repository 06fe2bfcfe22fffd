"""MindSpore's PIL path of the ops that also take arrays: padding, crops, flips, colour jitter.

MindSpore 2.x runs a PIL image through ``py_transforms_util`` (Pillow) and an array through its C
kernels; these are the Pillow halves, called by the ops of :mod:`recordio.vision.geometry`,
:mod:`recordio.vision.color` and :mod:`recordio.vision.warp` when they receive a PIL image. Random
parameters are drawn by the op (keyed), the same draws as its array path.
"""

from __future__ import annotations

import numpy as np

from recordio.vision.resampling import Border

__all__ = ["color_adjust", "crop", "flip", "pad", "sharpness"]

_NUMPY_MODES = {Border.EDGE: "edge", Border.REFLECT: "reflect", Border.SYMMETRIC: "symmetric"}


def pad(img, left, top, right, bottom, mode=Border.CONSTANT, fill=0):
    """MindSpore's PIL ``pad``: ``ImageOps.expand`` for a constant border, ``numpy.pad`` otherwise."""
    from PIL import Image, ImageOps

    if mode is Border.CONSTANT:
        if isinstance(fill, tuple) and img.mode in ("L", "1"):
            fill = fill[0]
        out = ImageOps.expand(img, border=(left, top, right, bottom), fill=fill)
        if img.mode == "P":
            out.putpalette(img.getpalette())
        return out
    arr = np.asarray(img)
    widths = ((top, bottom), (left, right)) + (((0, 0),) if arr.ndim == 3 else ())
    out = Image.fromarray(np.pad(arr, widths, _NUMPY_MODES[mode]))
    if img.mode == "P":
        out.putpalette(img.getpalette())
    return out


def crop(img, y, x, h, w):
    """The (y, x, h, w) box of a PIL image (outside the image is black, as Pillow crops)."""
    return img.crop((x, y, x + w, y + h))


def flip(img, axis):
    """Flip a PIL image along axis 0 (H, top-bottom) or 1 (W, left-right)."""
    from PIL import Image
    return img.transpose(Image.FLIP_TOP_BOTTOM if axis == 0 else Image.FLIP_LEFT_RIGHT)


def sharpness(img, factor):
    from PIL import ImageEnhance
    return ImageEnhance.Sharpness(img).enhance(factor)


def _hue(img, factor):
    """MindSpore's PIL ``adjust_hue``: shift the 8-bit HSV hue by ``factor * 255``."""
    from PIL import Image

    if img.mode in ("L", "1", "I", "F"):
        return img
    h, s, v = img.convert("HSV").split()
    shifted = (np.asarray(h, dtype=np.int64) + int(factor * 255) % 256) % 256     # uint8 wrap-around
    return Image.merge("HSV", (Image.fromarray(shifted.astype(np.uint8), "L"), s, v)).convert(img.mode)


def color_adjust(img, factors, order):
    """Brightness, contrast, saturation, hue by ``factors``, in ``order`` (MindSpore's PIL
    ``random_color_adjust``: all four run, so a hue of 0 still makes its lossy 8-bit HSV round trip)."""
    from PIL import ImageEnhance

    steps = (lambda im, f: ImageEnhance.Brightness(im).enhance(f),
             lambda im, f: ImageEnhance.Contrast(im).enhance(f),
             lambda im, f: ImageEnhance.Color(im).enhance(f),
             _hue)
    for k in order:
        img = steps[k](img, float(factors[k]))
    return img
