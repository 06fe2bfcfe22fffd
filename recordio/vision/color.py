"""Colour and value ops: RandomColorAdjust, RandomSharpness, Normalize, Rescale.

Semantics follow MindSpore's CPU ops on uint8 RGB images (results rounded to nearest and saturated
after every adjustment); hue uses the exact float HSV rotation instead of MindSpore's lossy 8-bit
round trip. Float images are computed in float32, clamped to [0, 255] and not rounded.

The numpy kernels here take one image; ``recordio.offload`` holds batched torch versions that follow
the same float32 operation sequence, so both give the same values for the same drawn parameters.
"""

import numpy as np

from recordio.keys import current_keys
from recordio.vision._checks import check_factor, check_image, check_number, check_range

__all__ = ["Normalize", "RandomColorAdjust", "RandomSharpness", "Rescale"]

F32 = np.float32
ONE = F32(1.0)
GREY_WEIGHTS = (4899, 9617, 1868)          # OpenCV's 14-bit fixed-point RGB->GRAY (0.299, 0.587, 0.114)
ADJUSTMENTS = ("brightness", "contrast", "saturation", "hue")


def finish(out, is_uint8):
    """Back to the input's kind: round-half-even and saturate for uint8, clamp for float."""
    if is_uint8:
        return np.clip(np.rint(out), 0, 255).astype(np.uint8)
    return np.clip(out, 0, 255).astype(np.float32)


def grey(img):
    """Per-pixel grey of an RGB image: OpenCV's rounded fixed-point value for uint8, float otherwise."""
    if img.dtype == np.uint8:
        r, g, b = (img[..., c].astype(np.int32) for c in range(3))
        return ((r * GREY_WEIGHTS[0] + g * GREY_WEIGHTS[1] + b * GREY_WEIGHTS[2] + 8192) >> 14).astype(F32)
    x = img.astype(F32)
    return x[..., 0] * F32(0.299) + x[..., 1] * F32(0.587) + x[..., 2] * F32(0.114)


def grey_mean(img):
    """Mean grey level: rounded to an integer for uint8 (MindSpore writes it into a uint8 image)."""
    g = grey(img)
    if img.dtype == np.uint8:
        return F32(np.rint(g.astype(np.int64).sum() / g.size))
    return F32(g.astype(np.float64).mean())


def adjust_brightness(img, factor):
    a = F32(factor)
    return finish(img.astype(F32) * a, img.dtype == np.uint8)


def adjust_contrast(img, factor):
    a = F32(factor)
    return finish(img.astype(F32) * a + grey_mean(img) * (ONE - a), img.dtype == np.uint8)


def adjust_saturation(img, factor):
    a = F32(factor)
    return finish(img.astype(F32) * a + grey(img)[..., None] * (ONE - a), img.dtype == np.uint8)


def rgb_to_hsv(x):
    """RGB in [0, 1] (float32, channels last) -> h, s, v in [0, 1] (torchvision's float formula)."""
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    maxc, minc = x.max(axis=-1), x.min(axis=-1)
    eqc = maxc == minc
    cr = maxc - minc
    s = cr / np.where(eqc, ONE, maxc)
    crd = np.where(eqc, ONE, cr)
    rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (F32(2.0) + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (F32(4.0) + gc - rc)
    h = np.fmod((hr + hg + hb) / F32(6.0) + ONE, ONE)
    return h.astype(F32), s.astype(F32), maxc


def hsv_to_rgb(h, s, v):
    """h, s, v in [0, 1] -> RGB in [0, 1], channels last."""
    h6 = h * F32(6.0)
    i = np.floor(h6)
    f = h6 - i
    i = i.astype(np.int64) % 6
    p = np.clip(v * (ONE - s), 0, 1)
    q = np.clip(v * (ONE - s * f), 0, 1)
    t = np.clip(v * (ONE - s * (ONE - f)), 0, 1)
    table = np.stack([np.stack(c) for c in ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))])
    return np.stack([np.take_along_axis(table[c], i[None], 0)[0] for c in range(3)], axis=-1)


def adjust_hue(img, factor):
    """Rotate the hue by ``factor`` of a full turn, in exact float HSV."""
    x = img.astype(F32) / F32(255.0)
    h, s, v = rgb_to_hsv(x)
    h = np.fmod(h + F32(factor) + ONE, ONE)
    return finish(hsv_to_rgb(h, s, v) * F32(255.0), img.dtype == np.uint8)


ADJUST = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)


def blur_sum(x):
    """Sum of the 3x3 neighbourhood with centre weight 5 (kernel [[1,1,1],[1,5,1],[1,1,1]]), interior only."""
    h, w = x.shape[:2]
    total = 4 * x[1:-1, 1:-1]
    for dy in range(3):
        for dx in range(3):
            total = total + x[dy:h - 2 + dy, dx:w - 2 + dx]
    return total


def adjust_sharpness(img, factor):
    """Blend with the 3x3 smoothed image; the first/last rows and columns stay unchanged."""
    is_uint8 = img.dtype == np.uint8
    x = img.astype(F32)
    out = x.copy()
    if x.shape[0] > 2 and x.shape[1] > 2:
        blur = blur_sum(x) / F32(13.0)
        if is_uint8:
            blur = np.rint(blur)
        a = F32(factor)
        out[1:-1, 1:-1] = x[1:-1, 1:-1] * a + blur * (ONE - a)
    return finish(out, is_uint8)


def color_input(op, img):
    img = check_image(op, img, ranks=(3,), channels=3)
    return img if img.dtype in (np.uint8, np.float32) else img.astype(F32)


class RandomColorAdjust:
    """Random brightness, contrast, saturation and hue, applied in a random order per image."""

    def __init__(self, brightness=(1, 1), contrast=(1, 1), saturation=(1, 1), hue=(0, 0)):
        self.brightness = check_factor("brightness", brightness, center=1, low=0, high=None)
        self.contrast = check_factor("contrast", contrast, center=1, low=0, high=None)
        self.saturation = check_factor("saturation", saturation, center=1, low=0, high=None)
        self.hue = check_factor("hue", hue, center=0, low=-0.5, high=0.5)
        self.ranges = (self.brightness, self.contrast, self.saturation, self.hue)
        self.enabled = tuple(r != (n, n) for r, n in zip(self.ranges, (1, 1, 1, 0)))

    def draw(self, keys):
        """Per sample: ``factors`` (B, 4) and ``order`` (B, 4), a permutation of the adjustments."""
        factors = np.stack([keys.uniform(k, lo, hi) for k, (lo, hi) in enumerate(self.ranges)], axis=1)
        return {"factors": factors, "order": keys.permutation(4, 4)}

    def __call__(self, img):
        img = color_input("RandomColorAdjust", img)
        params = self.draw(current_keys())
        for k in params["order"][0]:
            if self.enabled[k]:
                img = ADJUST[k](img, params["factors"][0, k])
        return img

    def __repr__(self):
        return (f"RandomColorAdjust(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomSharpness:
    """Sharpen or blur by a degree drawn from ``degrees`` (0: blurred, 1: unchanged, 2: sharpened)."""

    def __init__(self, degrees=(0.1, 1.9)):
        self.degrees = check_range("degrees", degrees, 0, None)

    def draw(self, keys):
        return {"degree": keys.uniform(0, *self.degrees)}

    def __call__(self, img):
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

    def __init__(self, mean, std, is_hwc=True):
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
        shape = [1] * img.ndim
        shape[axis] = len(self.mean)
        mean = np.asarray(self.mean, F32).reshape(shape)
        std = np.asarray(self.std, F32).reshape(shape)
        return (img.astype(F32) - mean) / std

    def __repr__(self):
        return f"Normalize(mean={list(self.mean)}, std={list(self.std)}, is_hwc={self.is_hwc})"


class Rescale:
    """``image * rescale + shift`` in float32."""

    def __init__(self, rescale, shift):
        fmax = float(np.finfo(np.float32).max)
        self.rescale = float(check_number("rescale", rescale, -fmax, fmax))
        self.shift = float(check_number("shift", shift, -fmax, fmax))

    def __call__(self, img):
        if not isinstance(img, np.ndarray):
            raise TypeError(f"Rescale: expected a numpy array, found {type(img).__name__}")
        return img.astype(F32) * F32(self.rescale) + F32(self.shift)

    def __repr__(self):
        return f"Rescale(rescale={self.rescale}, shift={self.shift})"
