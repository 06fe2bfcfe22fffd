"""Numpy/OpenCV kernels of the colour ops, one image at a time.

Each kernel follows one float32 operation sequence that ``recordio.offload.kernels`` repeats in torch, so
the host and the device give the same values for the same parameters. uint8 images are rounded
(half to even) and saturated after every adjustment, as MindSpore's CPU ops do; float images are
computed in float32, clamped to [0, 255] and not rounded. uint8 fast paths use lookup tables built
with that same float32 sequence, so they are exact, not approximations.
"""

import cv2
import numpy as np

from recordio import compiled       # the optional C kernels (setup.py); same values, one pass each
from recordio.batch_slots import output_array
from recordio.vision.checks import check_pixels

_kernels = compiled.load("recordio.vision._kernels")        # None (warned once) where it was not built

__all__ = ["ADJUST", "adjust_all", "adjust_brightness", "adjust_contrast", "adjust_hue", "adjust_levels",
           "adjust_saturation", "adjust_sharpness", "compiled_kernels", "finish", "grey", "grey_mean"]

F32 = np.float32
ONE = F32(1.0)
GREY_WEIGHTS = (9798, 19235, 3735)          # OpenCV's RGB->GRAY in 15-bit fixed point (0.299, 0.587, 0.114)
LEVELS = np.arange(256, dtype=F32)


def finish(out, is_uint8):
    """Back to the input's kind: round-half-even and saturate for uint8, clamp for float.

    ``out`` is a float32 temporary and is modified in place.
    """
    if is_uint8:
        return round_u8(out)
    return np.clip(out, 0, 255, out=out)


def round_u8(x):
    """float32 -> uint8, rounded half to even and saturated (``rint``, ``clip``, ``astype``) in one
    OpenCV pass: its saturating conversion rounds with the FPU's default mode, half to even."""
    if x.size < 16 or x.dtype != F32:      # OpenCV would take a tiny array for a scalar
        return np.clip(np.rint(x), 0, 255).astype(np.uint8)
    return cv2.add(np.ascontiguousarray(x).reshape(1, -1), 0.0, dtype=cv2.CV_8U).reshape(x.shape)


def grey_formula(img):
    """Rounded fixed-point grey of a uint8 RGB image (int32), written out."""
    r, g, b = (img[..., c].astype(np.int32) for c in range(3))
    w = GREY_WEIGHTS
    return (r * w[0] + g * w[1] + b * w[2] + 16384) >> 15


@compiled.once
def _opencv_grey_is_exact():
    """Whether this OpenCV's RGB2GRAY equals ``grey_formula`` (checked once on 2**16 colours)."""
    colours = check_pixels((256, 256, 3))
    return np.array_equal(cv2.cvtColor(colours, cv2.COLOR_RGB2GRAY), grey_formula(colours))


def grey_u8(img):
    if _opencv_grey_is_exact():
        return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    return grey_formula(img).astype(np.uint8)


def grey(img):
    """Per-pixel grey (float32): the rounded fixed-point value for uint8, the float sum otherwise."""
    if img.dtype == np.uint8:
        return grey_u8(img).astype(F32)
    x = img.astype(F32)
    return x[..., 0] * F32(0.299) + x[..., 1] * F32(0.587) + x[..., 2] * F32(0.114)


def grey_mean(img):
    """Mean grey level: rounded to an integer for uint8 (MindSpore writes it into a uint8 image)."""
    if img.dtype == np.uint8:
        g = grey_u8(img)
        return F32(np.rint(int(g.sum(dtype=np.int64)) / g.size))
    return F32(grey(img).astype(np.float64).mean())


def _lut(img, table):
    return cv2.LUT(img, finish(table, True))


def adjust_brightness(img, factor):
    a = F32(factor)
    if img.dtype == np.uint8:
        return _lut(img, LEVELS * a)
    return finish(img.astype(F32) * a, False)


def adjust_contrast(img, factor):
    a = F32(factor)
    offset = grey_mean(img) * (ONE - a)
    if img.dtype == np.uint8:
        return _lut(img, LEVELS * a + offset)
    return finish(img.astype(F32) * a + offset, False)


def adjust_saturation(img, factor):
    a = F32(factor)
    if img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3:
        return _saturation_u8(img, a)
    x = img.astype(F32)
    x *= a
    x += (grey(img) * (ONE - a))[..., None]
    return finish(x, img.dtype == np.uint8)


def _saturation_u8(img, a):
    """uint8 RGB: ``x * a`` and ``grey * (1 - a)`` read from float32 tables (the same products),
    added and rounded to uint8 by one OpenCV call that adds in float32."""
    scaled = cv2.LUT(img, LEVELS * a)
    rest = cv2.LUT(grey_u8(img), LEVELS * (ONE - a))
    return cv2.add(scaled, cv2.cvtColor(rest, cv2.COLOR_GRAY2RGB), dtype=cv2.CV_8U)


TINY = F32(np.finfo(np.float32).tiny)


def frac(y):
    """``y mod 1`` for ``y >= 0``, in place; exact (equals fmod) and much faster than numpy's fmod."""
    y -= np.floor(y)
    return y


def hue_sector(r, g, b):
    """Float32 planes (any scale) -> hue in sixths of a turn in [-1, 5), chroma, and max.

    In-place numpy spelling of ``offload_ops.hue_sector`` (same float32 operations, same values).
    """
    maxc = np.maximum(np.maximum(r, g), b)
    cr = np.minimum(np.minimum(r, g), b)
    np.subtract(maxc, cr, out=cr)
    is_r = maxc == r
    is_g = maxc == g
    is_g &= ~is_r
    is_b = ~(is_r | is_g)
    num = g - b
    num *= is_r
    for mask, (p, q) in ((is_g, (b, r)), (is_b, (r, g))):
        t = p - q
        t *= mask
        num += t
    num /= np.maximum(cr, TINY)
    offset = is_g * F32(2.0)
    offset += is_b * F32(4.0)
    num += offset
    return num, cr, maxc


_SECTOR_OFFSET = np.zeros(256, F32)
_SECTOR_OFFSET[[0, 1, 2]] = 4.0, 2.0, 0.0       # code 0: blue is the max, 1: green, 2: red


def hue_sector_u8(img):
    """uint8 RGB -> ``hue_sector`` of its float32 planes, the same values: max, min, the masks and
    the numerator are small integers, found exactly with OpenCV in uint8/int16 (masked copies, not
    numpy's slow boolean selection); only the division runs in float32."""
    sector, cr, hi = _hue_sector_planes(img)
    return sector, cr.astype(F32), hi.astype(F32)


def _hue_sector_planes(img):
    """``hue_sector_u8`` with chroma and max as uint8 planes."""
    r, g, b = cv2.split(img)
    hi = cv2.max(cv2.max(r, g), b)
    cr = cv2.subtract(hi, cv2.min(cv2.min(r, g), b))
    is_r = cv2.compare(hi, r, cv2.CMP_EQ)                            # 255 where red is the max
    is_g = cv2.bitwise_and(cv2.compare(hi, g, cv2.CMP_EQ), cv2.bitwise_not(is_r))
    num = cv2.subtract(r, g, dtype=cv2.CV_16S)                       # blue is the max
    num = cv2.copyTo(cv2.subtract(b, r, dtype=cv2.CV_16S), is_g, num)
    num = cv2.copyTo(cv2.subtract(g, b, dtype=cv2.CV_16S), is_r, num)
    code = (is_r & 2) | (is_g & 1)         # numpy: OpenCV would take a 1x1 mask for a scalar
    sector = num.astype(F32)
    sector /= np.maximum(cr.astype(F32), TINY)
    sector += cv2.LUT(code, _SECTOR_OFFSET)
    return sector, cr, hi


_BELOW_SIX = float(np.nextafter(F32(6.0), F32(0.0)))     # k > this  <=>  k >= 6 for float32 k


_CHANNEL_N = np.array([5.0, 3.0, 1.0], F32).reshape(3, 1, 1)


def hsv_to_rgb(h, cr, v):
    """Hue h in turns [0, 1), chroma and value (planes) -> r, g, b stacked on a first axis of 3:
    channel n in (5, 3, 1) is v - cr * clip(min(k, 4 - k), 0, 1) with k = (n + 6h) mod 6.

    The three channels are computed as one array, so each step is one call."""
    k = np.multiply(h, F32(6.0))[None] + _CHANNEL_N
    t = np.empty_like(k)                    # the one other temporary (large fresh buffers cost page faults)
    cols = k.shape[-1] if k.ndim > 1 else 1
    cv2.threshold(k.reshape(-1, cols), _BELOW_SIX, 6.0, cv2.THRESH_BINARY, dst=t.reshape(-1, cols))
    k -= t                                  # minus 6 where k >= 6: the mod (k < 12)
    np.subtract(F32(4.0), k, out=t)
    np.minimum(k, t, out=t)
    np.minimum(t, ONE, out=t)               # clip to [0, 1] (no NaN here; the sign of 0 is lost in v - t)
    np.maximum(t, F32(0.0), out=t)
    t *= cr
    return np.subtract(v, t, out=t)


def adjust_hue(img, factor):
    """Rotate the hue by ``factor`` of a full turn in exact float HSV, on the 0..255 scale."""
    if img.dtype == np.uint8:
        return _hue_u8(img, factor)
    h, cr, v = hue_sector(*cv2.split(img if img.dtype == F32 else img.astype(F32)))
    h = _rotate(h, factor)
    return cv2.merge(list(finish(hsv_to_rgb(h, cr, v), False)))


def _rotate(sector, factor):
    """Hue in sixths of a turn (``hue_sector``) -> rotated by ``factor`` turns, in turns [0, 1); in place."""
    sector /= F32(6.0)
    sector += F32(factor) + ONE
    return frac(sector)


# Hue sector i = floor(6h) (6 only when 6h rounds up to 6, which acts as 0): the one channel of
# ``hsv_to_rgb`` whose k = (n + 6h) mod 6 can fall strictly inside (0, 1) or (3, 4), and what the
# other channels are (their k stay in closed intervals where min(k, 4 - k) clips to exactly 0 or 1).
_MID_N = np.array([3.0, 5.0, 1.0, 3.0, 5.0, 1.0, 3.0] + [0.0] * 249, F32)
_CHANNEL_PICKS = (("hi", "mid", "lo", "lo", "mid", "hi", "hi"),      # red   (n = 5)
                  ("mid", "hi", "hi", "mid", "lo", "lo", "mid"),     # green (n = 3)
                  ("lo", "lo", "mid", "hi", "hi", "mid", "lo"))      # blue  (n = 1)
_MASKS = tuple(tuple(np.array([255 if p == name else 0 for p in picks] + [0] * 249, np.uint8) for name in ("mid", "lo"))
               for picks in _CHANNEL_PICKS)


def _hue_u8(img, factor):
    """uint8 hue rotation computing only the one channel per pixel that ``hsv_to_rgb`` does not clip:
    the others are exactly the max or the min, so they are copied. The same values as
    ``hsv_to_rgb`` on all three channels (the same float32 operations for the computed one)."""
    sector, cr, hi = _hue_sector_planes(img)
    h6 = _rotate(sector, factor)
    h6 *= F32(6.0)
    which = h6.astype(np.uint8)                          # floor: h6 >= 0
    k = cv2.LUT(which, _MID_N)
    k += h6
    _wrap(k)
    t = np.subtract(F32(4.0), k, out=h6)
    np.minimum(k, t, out=t)
    np.minimum(t, ONE, out=t)
    np.maximum(t, F32(0.0), out=t)
    t *= cr
    mid = round_u8(np.subtract(hi, t, out=t, dtype=F32))
    planes = (hi, mid, cv2.subtract(hi, cr))
    out = []
    for mid_mask, lo_mask in _MASKS:
        channel = hi.copy()
        cv2.copyTo(planes[1], cv2.LUT(which, mid_mask), channel)
        cv2.copyTo(planes[2], cv2.LUT(which, lo_mask), channel)
        out.append(channel)
    return cv2.merge(out)


def _wrap(k):
    """k - 6 where k >= 6 (k < 12), in place."""
    cols = k.shape[-1] if k.ndim > 1 else 1
    six = cv2.threshold(k.reshape(-1, cols), _BELOW_SIX, 6.0, cv2.THRESH_BINARY)[1]
    k -= six.reshape(k.shape)
    return k


ADJUST = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)


def compiled_kernels():
    """The C kernels (``recordio.vision._kernels``), or None where they were not built: the one name the
    vision modules pick their compiled paths by."""
    return _kernels


def has_c_kernels(img):
    """Whether the C kernels take ``img``: a uint8 <H,W,3> array with adjacent channels, when they are built."""
    return (_kernels is not None and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
            and img.strides[2] == 1)


def adjust_all(img, factors, order, enabled=(True, True, True, True)):
    """The adjustments ``order`` (indices into ``ADJUST``) with ``factors[k]``, skipping disabled ones;
    on a copy of a uint8 RGB image (any strides) when the C kernels are built: brightness and contrast
    as composed level tables, saturation and hue one pass each."""
    steps = [k for k in order if enabled[k]]
    if not has_c_kernels(img):
        for k in steps:
            img = ADJUST[k](img, factors[k])
        return img
    # the copy is the first pass (a flipped view is flipped there); the batch's slot where the op is last
    out = output_array(img.shape, np.uint8, last_only=True)
    _kernels.adjust_from(img, out, bytes(steps), *(float(f) for f in factors))
    return out


def adjust_levels(img, factors, order, enabled, tables, chw, program=None):
    """``adjust_all`` of a uint8 RGB image that ``has_c_kernels`` takes, then a level run's table pass
    (``tables``: (3, 256) float32, one per channel) to float32 <3,H,W> (``chw``) or <H,W,3>, in one C call:
    the adjusted uint8 image is never written out (a last saturation/hue pass hands each row to the
    tables, pending brightness/contrast tables are composed with them), the values are the same.
    ``program``: the run's float32 operations that give the tables' values (the fused level run's ``program()``),
    computed instead of looked up where that is faster."""
    h, w = img.shape[:2]
    out = output_array((3, h, w) if chw else (h, w, 3), F32)
    steps = bytes(k for k in order if enabled[k])
    _kernels.adjust_levels(img, out, steps, *(float(f) for f in factors), tables, chw, program)
    return out


def blur_sum(x):
    """Sum of the 3x3 neighbourhood with centre weight 5 (kernel [[1,1,1],[1,5,1],[1,1,1]]), interior only."""
    h, w = x.shape[:2]
    total = 4 * x[1:-1, 1:-1]
    for dy in range(3):
        for dx in range(3):
            total = total + x[dy:h - 2 + dy, dx:w - 2 + dx]
    return total


_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], F32)


def adjust_sharpness(img, factor):
    """Blend with the 3x3 smoothed image; the first/last rows and columns stay unchanged."""
    is_uint8 = img.dtype == np.uint8
    x = img.astype(F32)
    out = x.copy()
    if x.shape[0] > 2 and x.shape[1] > 2:
        if is_uint8 and (x.ndim == 2 or x.shape[2] <= 4):   # integer sums < 2**24: exact in any order
            total = cv2.filter2D(x, -1, _KERNEL, borderType=cv2.BORDER_REPLICATE)[1:-1, 1:-1]
            blur = np.rint(total.reshape(out[1:-1, 1:-1].shape) / F32(13.0))
        else:
            blur = blur_sum(x) / F32(13.0)
            if is_uint8:
                blur = np.rint(blur)
        a = F32(factor)
        out[1:-1, 1:-1] = x[1:-1, 1:-1] * a + blur * (ONE - a)
    return finish(out, is_uint8)
