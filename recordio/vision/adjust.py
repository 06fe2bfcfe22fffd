"""Point and colour ops: AutoContrast, Equalize, Invert, RandomColor, RandomPosterize, RandomSolarize.

A numpy image takes MindSpore's C path (OpenCV/numpy, the same tables and blends as MindSpore's CPU
kernels); a PIL image takes MindSpore's Python path (Pillow's ``ImageOps``/``ImageEnhance``, as
``mindspore.dataset.vision.py_transforms_util`` does). RandomPosterize and RandomSolarize exist only
as C ops in MindSpore: a PIL image is converted to an array first.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from recordio.keys import current_keys
from recordio.vision import pil
from recordio.vision.checks import check_image, check_number, check_range

__all__ = ["AutoContrast", "Equalize", "Invert", "RandomColor", "RandomPosterize", "RandomSolarize"]

F32 = np.float32


def uint8_image(op, img, channels=None):
    """A uint8 <H,W> or <H,W,C> array (MindSpore's C ops refuse other types)."""
    img = check_image(op, img, channels=channels)
    if img.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image, found dtype {img.dtype}")
    return img


def per_plane(img, function):
    """``function`` applied to each channel plane of a <H,W> or <H,W,C> image."""
    if img.ndim == 2:
        return function(img)
    planes = [function(np.ascontiguousarray(img[:, :, c])) for c in range(img.shape[2])]
    return np.stack(planes, axis=2)


def check_degrees(name, degrees):
    """MindSpore's ``check_positive_degrees``: a (min, max) list/tuple of numbers >= 0."""
    if not isinstance(degrees, (list, tuple)):
        raise TypeError(f"{name} must be either a tuple or a list, got {degrees!r}")
    if len(degrees) != 2:
        raise ValueError(f"{name} must be a sequence with length 2, got {degrees!r}")
    return check_range(name, degrees, 0, 16777216)


def _cut_histogram(hist, cutoff):
    """Remove ``cutoff`` percent of the pixels from each end of ``hist`` (MindSpore's percentiles)."""
    hist, total = hist.copy(), int(hist.sum())
    for order in (slice(None), slice(None, None, -1)):
        cut = int(cutoff / 100.0 * total)
        view = hist[order]
        for i in range(view.size):
            if cut <= 0:
                break
            taken = min(cut, int(view[i]))
            view[i] -= taken
            cut -= taken
    return hist


def contrast_table(plane, cutoff, ignore):
    """The 256-entry table stretching ``plane``'s (trimmed) range to [0, 255]."""
    hist = np.bincount(plane.ravel(), minlength=256).astype(np.int64)
    hist[list(ignore)] = 0
    hist = _cut_histogram(hist, cutoff) if cutoff > 0 else hist
    used = np.flatnonzero(hist)
    lo, hi = (int(used[0]), int(used[-1])) if used.size else (0, -1)
    if hi <= lo:
        return np.arange(256, dtype=np.uint8)
    scale = F32(255.0 / (hi - lo))
    offset = F32(-lo) * scale
    values = np.arange(256, dtype=F32) * scale + offset
    return np.clip(values.astype(np.int32), 0, 255).astype(np.uint8)


class AutoContrast:
    """Stretch each channel's range (less ``cutoff`` percent of pixels at each end, and the
    ``ignore`` levels) to [0, 255]."""

    def __init__(self, cutoff: float = 0.0, ignore: int | Sequence[int] | None = None) -> None:
        cutoff = check_number("cutoff", cutoff, 0, 50)
        if cutoff >= 50:
            raise ValueError(f"cutoff must be within [0, 50), got {cutoff!r}")
        ignore = [] if ignore is None else [ignore] if isinstance(ignore, int) and not isinstance(ignore, bool) \
            else ignore
        if not isinstance(ignore, (list, tuple)):
            raise TypeError(f"ignore must be an int or a list/tuple of ints, got {ignore!r}")
        self.cutoff = cutoff
        self.ignore = [check_number("ignore", v, 0, 255, integer=True) for v in ignore]

    def __call__(self, img):
        if pil.is_pil(img):
            from PIL import ImageOps
            return ImageOps.autocontrast(img, self.cutoff, self.ignore)
        img = uint8_image("AutoContrast", img)
        return per_plane(img, lambda p: cv2.LUT(p, contrast_table(p, self.cutoff, self.ignore)))

    def __repr__(self):
        return f"AutoContrast(cutoff={self.cutoff}, ignore={self.ignore})"


class Equalize:
    """Equalise each channel's histogram (OpenCV's ``equalizeHist``; Pillow's for a PIL image)."""

    def __call__(self, img):
        if pil.is_pil(img):
            from PIL import ImageOps
            return ImageOps.equalize(img)
        return per_plane(uint8_image("Equalize", img), cv2.equalizeHist)

    def __repr__(self):
        return "Equalize()"


class Invert:
    """``255 - pixel`` (in the image's own dtype, as MindSpore computes it for any type)."""

    def __call__(self, img):
        if pil.is_pil(img):
            from PIL import ImageOps
            return ImageOps.invert(img)
        img = check_image("Invert", img, ranks=(3,))
        return (img.dtype.type(255) - img) if img.dtype != np.bool_ else ~img

    def __repr__(self):
        return "Invert()"


class RandomColor:
    """Blend with the grey image by a factor drawn from ``degrees`` (0: grey, 1: unchanged)."""

    def __init__(self, degrees: Sequence[float] = (0.1, 1.9)) -> None:
        self.degrees = check_degrees("degrees", degrees)

    def __call__(self, img):
        factor = float(current_keys().uniform(0, *self.degrees)[0])
        if pil.is_pil(img):
            from PIL import ImageEnhance
            return ImageEnhance.Color(img).enhance(factor)
        img = check_image("RandomColor", img, ranks=(3,), channels=3)
        grey = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
        return cv2.addWeighted(cv2.merge([grey, grey, grey]), 1.0 - factor, img, factor, 0)

    def __repr__(self):
        return f"RandomColor(degrees={self.degrees})"


class RandomPosterize:
    """Keep the top ``b`` bits of each uint8 pixel, ``b`` drawn from ``bits`` (an int or (min, max))."""

    def __init__(self, bits: int | Sequence[int] = (8, 8)) -> None:
        if isinstance(bits, (list, tuple)):
            if len(bits) != 2:
                raise TypeError(f"bits must be an int or a list/tuple (min, max) of length 2, got {bits!r}")
            lo, hi = (check_number("bits", b, 1, 8, integer=True) for b in bits)
            if lo > hi:
                raise ValueError(f"bits must be (min, max) with min <= max, got {bits!r}")
        else:
            lo = hi = check_number("bits", bits, 1, 8, integer=True)
        self.bits = (lo, hi)

    def __call__(self, img):
        img = uint8_image("RandomPosterize", pil.as_array(img))
        bits = int(current_keys().integers(0, self.bits[0], self.bits[1] + 1)[0])
        return img & np.uint8((0xFF << (8 - bits)) & 0xFF)

    def __repr__(self):
        return f"RandomPosterize(bits={self.bits})"


class RandomSolarize:
    """Invert (``255 - pixel``) the pixels within a sub-range of ``threshold`` drawn per image: two
    levels drawn from [min, max], sorted; equal levels invert every pixel at or above them."""

    def __init__(self, threshold: Sequence[int] = (0, 255)) -> None:
        if not isinstance(threshold, tuple):
            raise TypeError(f"threshold must be a tuple of 2 ints, got {threshold!r}")
        if len(threshold) != 2:
            raise ValueError(f"threshold must be a sequence of two numbers, got {threshold!r}")
        lo, hi = (check_number("threshold", t, 0, 255, integer=True) for t in threshold)
        if hi < lo:
            raise ValueError(f"threshold must be in (min, max) order, got {threshold!r}")
        self.threshold = (lo, hi)

    def __call__(self, img):
        img = uint8_image("RandomSolarize", pil.as_array(img))
        keys = current_keys()
        a, b = (int(keys.integers(k, self.threshold[0], self.threshold[1] + 1)[0]) for k in (0, 1))
        lo, hi = min(a, b), max(a, b)
        mask = img >= lo if lo == hi else (img >= lo) & (img <= hi)
        return np.where(mask, 255 - img, img).astype(np.uint8)

    def __repr__(self):
        return f"RandomSolarize(threshold={self.threshold})"
