"""Geometry shared by the decode and geometry ops: interpolation and border modes, resizing, the
random-area crop box (and the ops' common arguments), enum checks."""

from __future__ import annotations

import enum
from collections.abc import Sequence
import math
import warnings

import cv2
import numpy as np

from recordio import compiled
from recordio.batch_slots import output_array
from recordio.keys import current_keys
from recordio.vision.checks import check_number, check_pixels, check_range, check_size, pair

__all__ = ["Border", "Inter", "RandomAreaCrop", "SliceMode", "check_enum", "compiled_resize", "opencv_halves",
           "resize", "resize_part", "resized_crop_box", "resizes_exactly", "resizes_parts", "shorter_side_size",
           "source_span",
           "window_of"]


class Inter(enum.Enum):
    """Interpolation modes (MindSpore's names; BILINEAR and BICUBIC are aliases)."""
    NEAREST = cv2.INTER_NEAREST
    LINEAR = cv2.INTER_LINEAR
    BILINEAR = cv2.INTER_LINEAR
    CUBIC = cv2.INTER_CUBIC
    BICUBIC = cv2.INTER_CUBIC
    AREA = cv2.INTER_AREA


class Border(enum.Enum):
    """Padding modes: constant fill, edge repeat, reflect (dcb|abcd|cba), symmetric (cba|abcd|dcb)."""
    CONSTANT = cv2.BORDER_CONSTANT
    EDGE = cv2.BORDER_REPLICATE
    REFLECT = cv2.BORDER_REFLECT_101
    SYMMETRIC = cv2.BORDER_REFLECT


class SliceMode(enum.Enum):
    """How SlicePatches treats a remainder: pad it with ``fill_value`` or drop it."""
    PAD = "pad"
    DROP = "drop"


def check_enum(name, value, kind):
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__} member, got {value!r}")
    return value


_kernels = compiled.load("recordio.vision._kernels")        # None (warned once) where it was not built


def resize(img, h, w, interpolation, window=None):
    """``img`` resized to (h, w) as cv2.resize does it; ``window=(y, x, wh, ww)``: only that window of
    the output (the same pixels, computed alone where the compiled resize applies)."""
    if img.shape[:2] == (h, w):
        return window_of(img, window)
    if window is not None and window[2:] == (h, w):
        window = None
    if interpolation is Inter.LINEAR and _takes(img, h, w):
        y, x, oh, ow = window or (0, 0, h, w)
        out = output_array((oh, ow, *img.shape[2:]), np.uint8, last_only=True)     # the batch's slot if last
        _kernels.resize(img if img.ndim == 3 else img[:, :, None], out.reshape(oh, ow, -1), h, w, y, x)
        return out
    return window_of(cv2.resize(img, (w, h), interpolation=interpolation.value).reshape(h, w, *img.shape[2:]),
                     window)


def resizes_parts(interpolation):
    """Whether :func:`resize_part` can resize from a part of an image (the compiled bilinear resize):
    then a caller may decode only the part a window of the output reads."""
    return interpolation is Inter.LINEAR and compiled_resize() is not None


def source_span(src, dst, start, count):
    """(first, last) source index that outputs ``start .. start + count - 1`` of a ``src -> dst``
    bilinear resize read along one axis (OpenCV's positions, a pixel of margin either way for the float32
    rounding), within the image."""
    scale = 1.0 / (dst / src)
    first = math.floor((start + 0.5) * scale - 0.5) - 1
    last = math.floor((start + count - 1 + 0.5) * scale - 0.5) + 2
    return max(0, min(first, src - 1)), max(0, min(last, src - 1))


def resize_part(part, whole, h, w, window):
    """The window ``(y, x, wh, ww)`` of the (h, w) bilinear resize of an image of ``whole = (H, W, y0, x0)``
    (its size and the part's origin in it) read from ``part`` only (a uint8 <h,w,C> array holding at least
    the :func:`source_span` of the window); None where the compiled resize does not take it (the caller
    then resizes the whole image)."""
    H, W, y0, x0 = whole
    if not _takes(part, h, w, (H, W)):
        return None
    y, x, oh, ow = window
    out = output_array((oh, ow, *part.shape[2:]), np.uint8, last_only=True)
    _kernels.resize(part if part.ndim == 3 else part[:, :, None], out.reshape(oh, ow, -1), h, w, y, x, H, W, y0, x0)
    return out


def window_of(img, window):
    """``img[y:y + h, x:x + w]`` for ``window = (y, x, h, w)``; ``img`` for None."""
    if window is None:
        return img
    y, x, h, w = window
    return img[y:y + h, x:x + w]


def _takes(img, h, w, whole=None):
    """Whether the compiled bilinear resize gives cv2.resize's bytes here: uint8 with adjacent pixels and
    channels, not OpenCV's exact 2x reduction of the image resized (``whole``'s size, or ``img``'s; OpenCV
    does it as INTER_AREA), and the self-check passed."""
    if compiled_resize() is None or img.dtype != np.uint8 or img.ndim not in (2, 3) or 0 in img.shape:
        return False
    c = img.shape[2] if img.ndim == 3 else 1
    if c > 4 or img.strides[-1] != 1 or (img.ndim == 3 and img.strides[1] != c) or img.strides[0] < img.shape[1] * c:
        return False
    H, W = whole or img.shape[:2]
    return not (opencv_halves(W, w) and opencv_halves(H, h))


def resizes_exactly(size, out):
    """Whether the compiled bilinear resize gives cv2.resize's bytes for a uint8 image of ``size`` (h, w)
    with adjacent pixels and channels resized to ``out`` (oh, ow), as :func:`resize` would call it."""
    (H, W), (h, w) = size, out
    return compiled_resize() is not None and not (opencv_halves(W, w) and opencv_halves(H, h))


def opencv_halves(src, dst):
    """OpenCV's test for an exact 2x reduction along one axis (scale 1 / (dst / src) within DBL_EPSILON of 2)."""
    scale = 1.0 / (dst / src)
    return round(scale) == 2 and abs(scale - 2) < 2.220446049250313e-16


@compiled.once
def compiled_resize():
    """The compiled bilinear resize (``recordio.vision._kernels``, its ``resize``) where it is built and
    gives this OpenCV's bytes (checked once, on upscales, reductions and odd sizes); None otherwise, and
    then cv2.resize does every resize (a one-time RuntimeWarning says so when the bytes differ)."""
    if _kernels is None:
        return None
    cases = [((37, 53, 3), (224, 224)), ((300, 401, 3), (224, 191)), ((64, 65, 1), (31, 129)), ((9, 7, 4), (5, 3)),
             ((5, 450, 3), (256, 341))]
    for k, ((sh, sw, c), (h, w)) in enumerate(cases):
        img = check_pixels((sh, sw, c), k)
        out = np.empty((h, w, c), np.uint8)
        _kernels.resize(img, out, h, w, 0, 0)
        if not np.array_equal(out, cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR).reshape(h, w, c)):
            warnings.warn(f"the compiled bilinear resize (recordio.vision._kernels) differs from OpenCV "
                          f"{cv2.__version__}'s cv2.resize: cv2.resize is used instead (slower)", RuntimeWarning,
                          stacklevel=2)
            return None
    return _kernels


def shorter_side_size(height, width, size):
    """Output (h, w) of MindSpore's Resize: an int sets the shorter side and keeps the aspect ratio."""
    if not isinstance(size, int):
        return size
    if height <= width:
        return size, max(1, int(width * size / height))
    return max(1, int(height * size / width)), size


def resized_crop_box(keys, height, width, scale, ratio, attempts):
    """(y, x, h, w) of a random crop with area fraction in ``scale`` and aspect ratio in ``ratio``.

    Attempt k draws area = ``uniform(4k, *scale)``, log ratio = ``uniform(4k+1, ...)`` and, when the
    box fits, y = ``integers(4k+2, 0, H-h+1)``, x = ``integers(4k+3, 0, W-w+1)``. Draws are made one
    attempt at a time (keyed draws do not depend on which others were made).
    """
    lr = math.log(ratio[0]), math.log(ratio[1])
    for k in range(attempts):
        u = keys.unit_floats([(4 * k,), (4 * k + 1,), (4 * k + 2,), (4 * k + 3,)])
        target = height * width * (scale[0] + (scale[1] - scale[0]) * u[0])
        aspect = float(np.exp(lr[0] + (lr[1] - lr[0]) * u[1]))        # numpy's exp, as the batched draws
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return math.floor(u[2] * (height - h + 1)), math.floor(u[3] * (width - w + 1)), h, w
    return _fallback_box(height, width, ratio)


def _fallback_box(height, width, ratio):
    """Centre crop at the closest allowed aspect ratio when every attempt failed."""
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, max(1, int(round(width / ratio[0])))
    elif in_ratio > ratio[1]:
        h, w = height, max(1, int(round(height * ratio[1])))
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


class RandomAreaCrop:
    """The arguments and the box of a random area/aspect-ratio crop resized to ``size``
    (``RandomResizedCrop``, ``RandomCropDecodeResize``)."""

    def __init__(self, size: int | Sequence[int], scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: Inter = Inter.BILINEAR,
                 max_attempts: int = 10) -> None:
        self.size = pair(check_size("size", size))
        self.scale = check_range("scale", scale, 0, None)
        self.ratio = check_range("ratio", ratio, 0, None)
        if self.ratio[0] <= 0:
            raise ValueError(f"ratio must be positive, got {ratio!r}")
        self.interpolation = check_enum("interpolation", interpolation, Inter)
        self.max_attempts = check_number("max_attempts", max_attempts, 1, 2 ** 31 - 1, integer=True)

    def region(self, height, width):
        box = resized_crop_box(current_keys(), height, width, self.scale, self.ratio, self.max_attempts)
        return box, self.size
