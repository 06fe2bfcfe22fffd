"""Colour and value ops: RandomColorAdjust, RandomSharpness, Normalize, Rescale.

Semantics follow MindSpore's CPU ops on uint8 RGB images (results rounded to nearest and saturated
after every adjustment); hue uses the exact float HSV rotation instead of MindSpore's lossy 8-bit
round trip. Float images are computed in float32, clamped to [0, 255] and not rounded.

The numpy kernels (``color_kernels``) take one image; ``recordio.offload.kernels`` holds batched torch
versions that follow the same float32 operation sequence, so both give the same values for the same
drawn parameters.
"""

from __future__ import annotations

import cv2
from collections.abc import Sequence

import numpy as np

from recordio.keys import current_keys
from recordio.vision import pil, pil_ops
from recordio.vision.checks import check_factor, check_image, check_number, check_range
from recordio.vision.color_kernels import adjust_all, adjust_sharpness

__all__ = ["Normalize", "RandomColorAdjust", "RandomSharpness", "Rescale"]

F32 = np.float32
ADJUSTMENTS = ("brightness", "contrast", "saturation", "hue")


def color_input(op, img):
    img = check_image(op, img, ranks=(3,), channels=3)
    return img if img.dtype in (np.uint8, np.float32) else img.astype(F32)


class RandomColorAdjust:
    """Random brightness, contrast, saturation and hue, applied in a random order per image."""

    def __init__(self, brightness: float | Sequence[float] = (1, 1), contrast: float | Sequence[float] = (1, 1),
                 saturation: float | Sequence[float] = (1, 1), hue: float | Sequence[float] = (0, 0)) -> None:
        self.brightness = check_factor("brightness", brightness, center=1, low=0, high=None)
        self.contrast = check_factor("contrast", contrast, center=1, low=0, high=None)
        self.saturation = check_factor("saturation", saturation, center=1, low=0, high=None)
        self.hue = check_factor("hue", hue, center=0, low=-0.5, high=0.5)
        self.ranges = (self.brightness, self.contrast, self.saturation, self.hue)
        self.enabled = tuple(r != (n, n) for r, n in zip(self.ranges, (1, 1, 1, 0)))

    def draw(self, keys):
        """Per sample: ``factors`` (B, 4), factor k = ``keys.uniform(k, *range_k)``, and ``order`` (B, 4)
        = ``keys.permutation(4, 4)``, a permutation of the adjustments.

        The draws are evaluated in two vectorised calls (draw numbers as a column), which gives the
        same values as the eight scalar calls.
        """
        if len(keys) == 1:                  # a host op: the same values from Python floats
            factors, order = self.draw_one(keys)
            return {"factors": np.array([factors]), "order": np.array([order])}
        column = np.arange(4)[:, None]
        low, high = (np.array([r[i] for r in self.ranges])[:, None] for i in (0, 1))
        factors = keys.uniform(column, low, high).T
        order = np.argsort(keys.uniform(4, 0.0, 1.0, column).T, axis=1, kind="stable")
        return {"factors": factors, "order": order}

    _DRAWS = [(k,) for k in range(4)] + [(4, k) for k in range(4)]

    def draw_one(self, keys):
        """``draw`` for one sample, as Python lists: (the four factors, the order of the adjustments)."""
        u = keys.unit_floats(self._DRAWS)
        factors = [lo + (hi - lo) * v for (lo, hi), v in zip(self.ranges, u)]
        return factors, sorted(range(4), key=u[4:].__getitem__)       # stable, as argsort(kind="stable")

    def __call__(self, img):
        if pil.is_pil(img):                 # MindSpore's PIL path: Pillow's ImageEnhance, same draws
            params = self.draw(current_keys())
            return pil_ops.color_adjust(img, params["factors"][0], params["order"][0])
        img = color_input("RandomColorAdjust", img)
        params = self.draw(current_keys())
        return adjust_all(img, params["factors"][0], params["order"][0], self.enabled)

    def __repr__(self):
        return (f"RandomColorAdjust(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomSharpness:
    """Sharpen or blur by a degree drawn from ``degrees`` (0: blurred, 1: unchanged, 2: sharpened)."""

    def __init__(self, degrees: Sequence[float] = (0.1, 1.9)) -> None:
        self.degrees = check_range("degrees", degrees, 0, None)

    def draw(self, keys):
        return {"degree": keys.uniform(0, *self.degrees)}

    def __call__(self, img):
        if pil.is_pil(img):                 # MindSpore's PIL path: Pillow's ImageEnhance.Sharpness
            return pil_ops.sharpness(img, float(self.draw(current_keys())["degree"][0]))
        img = check_image("RandomSharpness", img, ranks=(2, 3))
        img = img if img.dtype in (np.uint8, np.float32) else img.astype(F32)
        return adjust_sharpness(img, self.draw(current_keys())["degree"][0])

    def __repr__(self):
        return f"RandomSharpness(degrees={self.degrees})"


def _check_channels(name, values, low, high, low_open=False):
    if isinstance(values, (int, float)) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{name} must be a non-empty sequence of numbers, got {values!r}")
    return tuple(float(check_number(f"{name}[{i}]", v, low, high, low_open=low_open))
                 for i, v in enumerate(values))


class Normalize:
    """``(image - mean) / std`` per channel, float32 output; channels last unless ``is_hwc=False``."""

    def __init__(self, mean: float | Sequence[float], std: float | Sequence[float], is_hwc: bool = True) -> None:
        self.mean = _check_channels("mean", mean, 0, 255)
        self.std = _check_channels("std", std, 0, 255, low_open=True)
        if len(self.mean) != len(self.std):
            raise ValueError(f"mean and std must have the same length, got {len(self.mean)} and {len(self.std)}")
        if not isinstance(is_hwc, bool):
            raise TypeError(f"is_hwc must be a bool, got {is_hwc!r}")
        self.is_hwc = is_hwc

    def affine(self, channels):
        """(scale, offset) per channel with ``out = x * scale + offset``; used to fuse on a device."""
        mean, std = (np.broadcast_to(np.asarray(v, np.float64), (channels,)) for v in (self.mean, self.std))
        return 1.0 / std, -mean / std

    def __call__(self, img):
        img = check_image("Normalize", img, ranks=(2, 3))
        axis = -1 if self.is_hwc or img.ndim == 2 else 0
        channels = 1 if img.ndim == 2 else img.shape[axis]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"Normalize: mean/std have {len(self.mean)} values, image has {channels} channels "
                             f"(shape {img.shape}, is_hwc={self.is_hwc})")
        if img.dtype == np.uint8 and axis == -1 and channels <= 4:
            return self._lookup(img, channels)
        shape = [1] * img.ndim
        shape[axis] = len(self.mean)
        mean = np.asarray(self.mean, F32).reshape(shape)
        std = np.asarray(self.std, F32).reshape(shape)
        return (img.astype(F32) - mean) / std

    def tables(self, channels):
        """(channels, 256) float32: the normalised value of each uint8 level, per channel (the same
        float32 operations as the formula). Read-only, computed once per channel count."""
        key = (self.mean, self.std, channels)
        cached = self.__dict__.get("_tables")
        if cached is None or cached[0] != key:
            mean = np.broadcast_to(np.asarray(self.mean, F32), (channels,))
            std = np.broadcast_to(np.asarray(self.std, F32), (channels,))
            table = np.ascontiguousarray(((np.arange(256, dtype=F32)[:, None] - mean) / std).T)
            table.flags.writeable = False
            self._tables = cached = (key, table)
        return cached[1]

    def _lookup(self, img, channels):
        """uint8 fast path: a per-channel table of the same float32 values, applied by OpenCV."""
        table = np.ascontiguousarray(self.tables(channels).T.reshape(1, 256, channels))
        return cv2.LUT(img, table).reshape(img.shape)

    def __repr__(self):
        return f"Normalize(mean={list(self.mean)}, std={list(self.std)}, is_hwc={self.is_hwc})"


class Rescale:
    """``image * rescale + shift`` in float32."""

    def __init__(self, rescale: float, shift: float) -> None:
        fmax = float(np.finfo(np.float32).max)
        self.rescale = float(check_number("rescale", rescale, -fmax, fmax))
        self.shift = float(check_number("shift", shift, -fmax, fmax))

    def __call__(self, img):
        if not isinstance(img, np.ndarray):
            raise TypeError(f"Rescale: expected a numpy array, found {type(img).__name__}")
        return img.astype(F32) * F32(self.rescale) + F32(self.shift)

    def __repr__(self):
        return f"Rescale(rescale={self.rescale}, shift={self.shift})"
