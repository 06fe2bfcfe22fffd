"""Geometry shared by the decode and geometry ops: interpolation and border modes, resizing, the
random-area crop box (and the ops' common arguments), enum checks."""

from __future__ import annotations

import enum
from collections.abc import Sequence
import math

import cv2
import numpy as np

from recordio.keys import current_keys
from recordio.vision._checks import check_number, check_range, check_size, pair

__all__ = ["Border", "Inter", "RandomAreaCrop", "SliceMode", "check_enum", "resize", "resized_crop_box",
           "shorter_side_size"]


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


def resize(img, h, w, interpolation):
    if img.shape[:2] == (h, w):
        return img
    out = cv2.resize(img, (w, h), interpolation=interpolation.value)
    return out.reshape(h, w, *img.shape[2:])


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
