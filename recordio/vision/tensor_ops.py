"""MindSpore's Python-only tensor ops: FiveCrop, TenCrop, RandomErasing, LinearTransformation, ToType.

FiveCrop/TenCrop take a PIL image as MindSpore does (and, beyond it, a numpy <H,W[,C]> image: the
same boxes, sliced); RandomErasing and LinearTransformation take the numpy <C,H,W> output of
``ToTensor``. Values and output types are those of ``mindspore.dataset.vision.py_transforms_util``;
random draws come from the pipeline's keyed randomness.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from recordio.keys import current_keys
from recordio.common.casting import cast, to_numpy_dtype
from recordio.vision import pil, pil_ops
from recordio.vision.checks import check_number, check_prob, check_size, pair

__all__ = ["FiveCrop", "LinearTransformation", "RandomErasing", "TenCrop", "ToType"]

FLOAT_MAX_INTEGER = 16777216


def _image_size(op, img):
    """(height, width) of a PIL image or a numpy <H,W[,C]> image."""
    if pil.is_pil(img):
        return img.size[1], img.size[0]
    if isinstance(img, np.ndarray) and img.ndim in (2, 3):
        return img.shape[:2]
    raise TypeError(f"{op}: expected a PIL image or a numpy image <H,W[,C]>, found "
                    f"{type(img).__name__}{getattr(img, 'shape', '')}")


def five_crop(op, img, size):
    """(top-left, top-right, bottom-left, bottom-right, centre) crops of ``size`` (h, w)."""
    height, width = _image_size(op, img)
    h, w = size
    if h > height or w > width:
        raise ValueError(f"{op}: crop size {size} is larger than the image {(height, width)}")
    ch, cw = round((height - h) / 2.0), round((width - w) / 2.0)
    boxes = ((0, 0), (0, width - w), (height - h, 0), (height - h, width - w), (ch, cw))
    if pil.is_pil(img):
        return tuple(pil_ops.crop(img, y, x, h, w) for y, x in boxes)
    return tuple(img[y:y + h, x:x + w].copy() for y, x in boxes)


class FiveCrop:
    """The four corner crops and the centre crop of ``size``, as a tuple of 5 images."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = pair(check_size("size", size))

    def __call__(self, img):
        return five_crop("FiveCrop", img, self.size)

    def __repr__(self):
        return f"FiveCrop(size={self.size})"


class TenCrop:
    """:class:`FiveCrop` of the image, then of its mirror image (left-right, or top-bottom with
    ``use_vertical_flip``): a tuple of 10 images."""

    def __init__(self, size: int | Sequence[int], use_vertical_flip: bool = False) -> None:
        self.size = pair(check_size("size", size))
        if not isinstance(use_vertical_flip, bool):
            raise TypeError(f"use_vertical_flip must be a bool, got {use_vertical_flip!r}")
        self.use_vertical_flip = use_vertical_flip

    def __call__(self, img):
        first = five_crop("TenCrop", img, self.size)
        axis = 0 if self.use_vertical_flip else 1
        mirrored = pil_ops.flip(img, axis) if pil.is_pil(img) else np.flip(img, axis)
        return first + five_crop("TenCrop", mirrored, self.size)

    def __repr__(self):
        return f"TenCrop(size={self.size}, use_vertical_flip={self.use_vertical_flip})"


def _numbers_pair(name, value, low, high, low_open=False):
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise TypeError(f"{name} should be a list or tuple of length 2, got {value!r}")
    lo, hi = (check_number(f"{name}[{i}]", v, low, high, low_open=low_open) for i, v in enumerate(value))
    if lo > hi:
        raise ValueError(f"{name} should be in (min, max) format, got {value!r}")
    return float(lo), float(hi)


def _check_erase_value(value):
    if isinstance(value, str):
        if value != "random":
            raise ValueError(f"value for erasing should be a number, 'random' or 3 numbers, got {value!r}")
        return value
    if isinstance(value, (list, tuple)):
        if len(value) != 3:
            raise ValueError(f"value for erasing should be a number, 'random' or 3 numbers, got {value!r}")
        return tuple(check_number("value", v, 0, 255, integer=True) for v in value)
    return check_number("value", value, 0, 255, integer=True)


class RandomErasing:
    """With probability ``prob``, fill a random box of a <C,H,W> array (area fraction in ``scale``,
    aspect ratio in ``ratio``) with ``value``: a number, 3 per-channel numbers or ``'random'``
    (standard normal noise)."""

    def __init__(self, prob: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value: int | Sequence[int] | str = 0, inplace: bool = False, max_attempts: int = 10) -> None:
        self.prob = check_prob("prob", prob)
        self.scale = _numbers_pair("scale", scale, 0, FLOAT_MAX_INTEGER)
        check_number("scale[1]", self.scale[1], 0, None, low_open=True)
        self.ratio = _numbers_pair("ratio", ratio, 0, FLOAT_MAX_INTEGER, low_open=True)
        self.value = _check_erase_value(value)
        if not isinstance(inplace, bool):
            raise TypeError(f"inplace must be a bool, got {inplace!r}")
        self.inplace = inplace
        self.max_attempts = check_number("max_attempts", max_attempts, 1, FLOAT_MAX_INTEGER, integer=True)

    def box(self, keys, height, width):
        """(i, j, h, w) or None: attempt k draws area 3k+1, ratio 3k+2 and, when the box fits, the
        corner from 3k+3 (two draws folded: row then column)."""
        for k in range(self.max_attempts):
            area = keys.uniform(3 * k + 1, *self.scale)[0] * height * width
            aspect = keys.uniform(3 * k + 2, *self.ratio)[0]
            w = round(math.sqrt(area * aspect))
            h = round(w / aspect)
            if h < height and w < width:
                i = int(keys.integers(3 * k + 3, 0, height - h + 1)[0])
                j = int(np.floor(keys.uniform(3 * k + 3, 0.0, 1.0, 1)[0] * (width - w + 1)))
                return i, j, h, w
        return None

    def __call__(self, img):
        if not isinstance(img, np.ndarray) or img.ndim != 3:
            raise TypeError(f"RandomErasing: expected a numpy <C,H,W> array, found "
                            f"{type(img).__name__}{getattr(img, 'shape', '')}")
        keys = current_keys()
        if not keys.bernoulli(0, self.prob)[0]:
            return img
        box = self.box(keys, *img.shape[1:])
        out = img if self.inplace else img.copy()
        if box is None:
            return out
        i, j, h, w = box
        if self.value == "random":
            noise = np.random.default_rng(int(keys.bits(0, 1)[0])).standard_normal((img.shape[0], h, w))
            out[:, i:i + h, j:j + w] = noise
        elif isinstance(self.value, tuple):
            out[:, i:i + h, j:j + w] = np.asarray(self.value)[:, None, None]
        else:
            out[:, i:i + h, j:j + w] = self.value
        return out

    def __repr__(self):
        return (f"RandomErasing(prob={self.prob}, scale={self.scale}, ratio={self.ratio}, value={self.value!r}, "
                f"inplace={self.inplace}, max_attempts={self.max_attempts})")


class LinearTransformation:
    """``(image.ravel() - mean_vector) @ transformation_matrix``, reshaped back (e.g. ZCA whitening)."""

    def __init__(self, transformation_matrix: np.ndarray, mean_vector: np.ndarray) -> None:
        for name, value in (("transformation_matrix", transformation_matrix), ("mean_vector", mean_vector)):
            if not isinstance(value, np.ndarray):
                raise TypeError(f"{name} must be a numpy.ndarray, got {type(value).__name__}")
        if transformation_matrix.ndim != 2 or transformation_matrix.shape[0] != transformation_matrix.shape[1]:
            raise ValueError(f"transformation_matrix should be a square matrix, got shape "
                             f"{transformation_matrix.shape}")
        if mean_vector.shape[:1] != transformation_matrix.shape[:1]:
            raise ValueError(f"mean_vector length {mean_vector.shape[:1]} should match the transformation_matrix "
                             f"{transformation_matrix.shape}")
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def __call__(self, img):
        if not isinstance(img, np.ndarray):
            raise TypeError(f"LinearTransformation: expected a numpy array, found {type(img).__name__}")
        if img.size != self.transformation_matrix.shape[0]:
            raise ValueError(f"LinearTransformation: transformation_matrix shape {self.transformation_matrix.shape} "
                             f"is not compatible with the image shape {img.shape}")
        out = np.dot(img.reshape(1, -1) - self.mean_vector, self.transformation_matrix)
        return out.reshape(img.shape)

    def __repr__(self):
        return f"LinearTransformation(transformation_matrix={self.transformation_matrix.shape}, mean_vector=...)"


class ToType:
    """Cast to ``data_type`` (MindSpore's ``vision.ToType``, the same as ``transforms.TypeCast``);
    a PIL image is converted to an array first."""

    uses_keys = False        # draws no randomness

    def __init__(self, data_type: Any) -> None:
        if isinstance(data_type, numbers.Number):
            raise TypeError(f"data_type must be a numpy or MindSpore type, got {data_type!r}")
        self.data_type = to_numpy_dtype(data_type)

    def __call__(self, array):
        return cast(pil.as_array(array), self.data_type)

    def __repr__(self):
        return f"ToType({self.data_type.name})"
