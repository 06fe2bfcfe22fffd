"""Geometric ops: resizing, cropping, flipping, layout, patches (OpenCV/numpy, images <H,W> or <H,W,C>)."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from recordio.keys import current_keys
from recordio.vision.checks import check_image, check_number, check_prob, check_size, pair
from recordio.vision.resampling import (Border, Inter, RandomAreaCrop, SliceMode, check_enum, resize,
                                        shorter_side_size)
from recordio.vision import pil, pil_ops
from recordio.vision.decode import EncodedImage, decode_region

__all__ = ["Border", "CenterCrop", "HWC2CHW", "Inter", "RandomCrop", "RandomHorizontalFlip",
           "RandomResizedCrop", "RandomVerticalFlip", "Resize", "SliceMode", "SlicePatches"]


class Resize:
    """Resize to ``size``: (h, w), or an int for the shorter side (aspect ratio kept)."""

    def __init__(self, size: int | Sequence[int], interpolation: Inter = Inter.LINEAR) -> None:
        self.size = check_size("size", size)
        self.interpolation = check_enum("interpolation", interpolation, Inter)

    def region(self, height, width):
        """The crop box (y, x, h, w) and output (h, w) for an image of this size (used by fused decode)."""
        return (0, 0, height, width), shorter_side_size(height, width, self.size)

    def __call__(self, img):
        if isinstance(img, EncodedImage):
            return decode_region(img, self.region, self.interpolation)
        if pil.is_pil(img):
            return pil.resize(img, self.size, self.interpolation)
        img = check_image("Resize", img)
        return resize(img, *shorter_side_size(*img.shape[:2], self.size), self.interpolation)

    def __repr__(self):
        return f"Resize(size={self.size}, interpolation={self.interpolation})"


class RandomResizedCrop(RandomAreaCrop):
    """Crop a random area/aspect-ratio region and resize it to ``size``."""

    def __call__(self, img):
        if isinstance(img, EncodedImage):
            return decode_region(img, self.region, self.interpolation)
        if pil.is_pil(img):                 # MindSpore's PIL path: Pillow's crop and resize
            (y, x, h, w), size = self.region(img.size[1], img.size[0])
            return pil.resize(pil_ops.crop(img, y, x, h, w), size, self.interpolation)
        img = check_image("RandomResizedCrop", img)
        (y, x, h, w), size = self.region(*img.shape[:2])
        return resize(img[y:y + h, x:x + w], *size, self.interpolation)

    def __repr__(self):
        return (f"RandomResizedCrop(size={self.size}, scale={self.scale}, ratio={self.ratio}, "
                f"interpolation={self.interpolation}, max_attempts={self.max_attempts})")


def pad(img, top, bottom, left, right, mode=Border.CONSTANT, fill=0):
    if not (top or bottom or left or right):
        return img
    value = list(fill) if isinstance(fill, tuple) else [fill] * 4
    out = cv2.copyMakeBorder(img, top, bottom, left, right, mode.value, value=value)
    return out.reshape(out.shape[0], out.shape[1], *img.shape[2:])


def _check_padding(padding):
    """None, an int, (left/right, top/bottom) or (left, top, right, bottom) -> (left, top, right, bottom)."""
    if padding is None:
        return 0, 0, 0, 0
    values = [padding] if isinstance(padding, int) else list(padding) if isinstance(padding, (list, tuple)) else None
    if values is None or len(values) not in (1, 2, 4):
        raise TypeError(f"padding must be an int or a sequence of 2 or 4 ints, got {padding!r}")
    values = [check_number(f"padding[{i}]", v, 0, 2 ** 31 - 1, integer=True) for i, v in enumerate(values)]
    return tuple(values * 4)[:4] if len(values) == 1 else tuple(values * 2) if len(values) == 2 else tuple(values)


def _check_fill(fill_value):
    if isinstance(fill_value, (list, tuple)):
        if len(fill_value) != 3:
            raise TypeError(f"fill_value must be an int or a sequence of 3 ints, got {fill_value!r}")
        return tuple(check_number(f"fill_value[{i}]", v, 0, 255, integer=True) for i, v in enumerate(fill_value))
    return check_number("fill_value", fill_value, 0, 255, integer=True)


class RandomCrop:
    """Crop a random ``size`` window after optional padding (and padding up to ``size`` if asked)."""

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill_value: int | Sequence[int] = 0,
                 padding_mode: Border = Border.CONSTANT) -> None:
        self.size = pair(check_size("size", size))
        self.padding = _check_padding(padding)
        if not isinstance(pad_if_needed, bool):
            raise TypeError(f"pad_if_needed must be a bool, got {pad_if_needed!r}")
        self.pad_if_needed = pad_if_needed
        self.fill_value = _check_fill(fill_value)
        self.padding_mode = check_enum("padding_mode", padding_mode, Border)

    def __call__(self, img):
        if pil.is_pil(img):
            return self._pil(img)
        img = check_image("RandomCrop", img)
        left, top, right, bottom = self.padding
        img = pad(img, top, bottom, left, right, self.padding_mode, self.fill_value)
        h, w = self.size
        if self.pad_if_needed:
            dh, dw = max(0, h - img.shape[0]), max(0, w - img.shape[1])
            img = pad(img, dh, dh, dw, dw, self.padding_mode, self.fill_value)
        y, x = self._corner(*img.shape[:2])
        return img[y:y + h, x:x + w].copy()

    def _corner(self, height, width):
        h, w = self.size
        if height < h or width < w:
            raise ValueError(f"RandomCrop: crop size {self.size} is larger than the (padded) image "
                             f"{(height, width)}; use pad_if_needed=True or padding")
        keys = current_keys()
        return int(keys.integers(0, 0, height - h + 1)[0]), int(keys.integers(1, 0, width - w + 1)[0])

    def _pil(self, img):
        """MindSpore's PIL path: Pillow padding (the same sizes), the same keyed corner."""
        fill = self.fill_value if isinstance(self.fill_value, tuple) else (self.fill_value,) * 3
        img = pil_ops.pad(img, *self.padding, self.padding_mode, fill)
        h, w = self.size
        if self.pad_if_needed and img.size[0] < w:
            img = pil_ops.pad(img, w - img.size[0], 0, w - img.size[0], 0, self.padding_mode, fill)
        if self.pad_if_needed and img.size[1] < h:
            img = pil_ops.pad(img, 0, h - img.size[1], 0, h - img.size[1], self.padding_mode, fill)
        y, x = self._corner(img.size[1], img.size[0])
        return pil_ops.crop(img, y, x, h, w)

    def __repr__(self):
        return f"RandomCrop(size={self.size}, padding={self.padding}, pad_if_needed={self.pad_if_needed})"


class CenterCrop:
    """Crop the centre ``size`` window (offset ``(H - h) // 2``); a smaller image is zero-padded,
    the odd pixel of padding going to the top/left as in MindSpore."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = pair(check_size("size", size))

    def __call__(self, img):
        if pil.is_pil(img):
            return pil.center_crop(img, self.size)
        img = check_image("CenterCrop", img)
        h, w = self.size
        dh, dw = max(0, h - img.shape[0]), max(0, w - img.shape[1])
        img = pad(img, dh - dh // 2, dh // 2, dw - dw // 2, dw // 2)      # the odd pixel top/left (MindSpore)
        y, x = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
        return img[y:y + h, x:x + w].copy()

    def __repr__(self):
        return f"CenterCrop(size={self.size})"


_CV_DEPTHS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64)}


def flip(img, axis):
    """A flipped copy along axis 0 (H) or 1 (W); OpenCV's flip where it handles the dtype."""
    if img.dtype in _CV_DEPTHS and (img.ndim == 2 or img.shape[2] <= 512) and img.size:
        return cv2.flip(img, axis).reshape(img.shape)       # flipCode 0: rows (H), 1: columns (W)
    return np.flip(img, axis).copy()


class _RandomFlip:
    axis = 1

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob("prob", prob)

    def draw(self, keys):
        return {"flip": keys.bernoulli(0, self.prob)}

    def __call__(self, img):
        if pil.is_pil(img):
            return pil_ops.flip(img, self.axis) if self.draw(current_keys())["flip"][0] else img
        img = check_image(type(self).__name__, img)
        if self.draw(current_keys())["flip"][0]:
            return flip(img, self.axis)
        return img

    def __repr__(self):
        return f"{type(self).__name__}(prob={self.prob})"


class RandomHorizontalFlip(_RandomFlip):
    """Flip left-right (the W axis) with probability ``prob``."""
    axis = 1


class RandomVerticalFlip(_RandomFlip):
    """Flip upside down (the H axis) with probability ``prob``."""
    axis = 0


class HWC2CHW:
    """<H,W,C> -> <C,H,W>; a <H,W> image is returned unchanged."""

    def __call__(self, img):
        img = check_image("HWC2CHW", img)
        return img if img.ndim == 2 else np.ascontiguousarray(img.transpose(2, 0, 1))

    def __repr__(self):
        return "HWC2CHW()"


class SlicePatches:
    """Cut an image into ``num_height`` x ``num_width`` patches, returned as that many output columns."""

    def __init__(self, num_height: int = 1, num_width: int = 1, slice_mode: SliceMode = SliceMode.PAD,
                 fill_value: int = 0) -> None:
        self.num_height = check_number("num_height", num_height, 1, 32768, integer=True)
        self.num_width = check_number("num_width", num_width, 1, 32768, integer=True)
        self.slice_mode = check_enum("slice_mode", slice_mode, SliceMode)
        self.fill_value = check_number("fill_value", fill_value, 0, 255, integer=True)

    def __call__(self, img):
        img = check_image("SlicePatches", img)
        height, width = img.shape[:2]
        if self.slice_mode is SliceMode.PAD:
            ph, pw = -(-height // self.num_height), -(-width // self.num_width)
            img = pad(img, 0, ph * self.num_height - height, 0, pw * self.num_width - width,
                      Border.CONSTANT, self.fill_value)
        else:
            ph, pw = height // self.num_height, width // self.num_width
        if ph == 0 or pw == 0:
            raise ValueError(f"SlicePatches: image {img.shape[:2]} is smaller than "
                             f"{self.num_height}x{self.num_width} patches in DROP mode")
        return tuple(np.ascontiguousarray(img[i * ph:(i + 1) * ph, j * pw:(j + 1) * pw])
                     for i in range(self.num_height) for j in range(self.num_width))

    def __repr__(self):
        return (f"SlicePatches(num_height={self.num_height}, num_width={self.num_width}, "
                f"slice_mode={self.slice_mode}, fill_value={self.fill_value})")
