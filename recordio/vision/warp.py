"""Padding and warps: Pad, RandomRotation, RandomAffine, RandomPerspective, RandomResize.

A numpy image takes MindSpore's C path (OpenCV's ``copyMakeBorder``/``warpAffine``/``resize`` with
MindSpore's matrices); a PIL image takes its Python path (Pillow's ``rotate``/``transform``, the
matrices of ``py_transforms_util``). RandomPerspective is a Python-only op in MindSpore: an array is
warped through Pillow too and returned as an array. Random parameters are drawn from the pipeline's
keyed randomness, the same draws for both paths.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import cv2
import numpy as np

from recordio.keys import current_keys
from recordio.vision import pil, pil_ops
from recordio.vision.checks import check_image, check_number, check_prob, check_size
from recordio.vision.resampling import Border, Inter, check_enum, resize, shorter_side_size
from recordio.vision.geometry import pad

__all__ = ["Pad", "RandomAffine", "RandomPerspective", "RandomResize", "RandomRotation"]

INT32_MAX = 2 ** 31 - 1
FLOAT_MAX_INTEGER = 16777216


def check_padding(padding):
    """MindSpore's ``check_padding`` + ``parse_padding``: -> (left, top, right, bottom)."""
    if isinstance(padding, bool) or not isinstance(padding, (numbers.Number, list, tuple)):
        raise TypeError(f"padding must be an int or a list/tuple of 2 or 4 ints, got {padding!r}")
    values = [padding] if isinstance(padding, numbers.Number) else list(padding)
    if len(values) not in (1, 2, 4):
        raise ValueError(f"The size of the padding list or tuple should be 2 or 4, got {padding!r}")
    values = [check_number("padding", v, 0, INT32_MAX, integer=True) for v in values]
    return tuple(values * 4) if len(values) == 1 else tuple(values * 2) if len(values) == 2 else tuple(values)


def check_fill(fill_value, name="fill_value"):
    """MindSpore's ``check_fill_value``: a uint8 int or a 3-tuple of them -> an (r, g, b) tuple."""
    if isinstance(fill_value, tuple) and len(fill_value) == 3:
        return tuple(check_number(f"{name}[{i}]", v, 0, 255, integer=True) for i, v in enumerate(fill_value))
    if isinstance(fill_value, int) and not isinstance(fill_value, bool):
        return (check_number(name, fill_value, 0, 255, integer=True),) * 3
    raise TypeError(f"{name} should be a single integer or a 3-tuple, got {fill_value!r}")


def check_degrees(degrees):
    """MindSpore's ``check_degrees``: a number >= 0 or a (min, max) pair of numbers."""
    if isinstance(degrees, bool) or not isinstance(degrees, (int, float, list, tuple)):
        raise TypeError(f"degrees must be a number or a list/tuple of 2 numbers, got {degrees!r}")
    if isinstance(degrees, (int, float)):
        return check_number("degrees", degrees, 0, FLOAT_MAX_INTEGER)
    if len(degrees) != 2:
        raise TypeError(f"If degrees is a sequence, the length must be 2, got {degrees!r}")
    lo, hi = (check_number("degrees", d, -FLOAT_MAX_INTEGER, FLOAT_MAX_INTEGER) for d in degrees)
    if lo > hi:
        raise ValueError(f"degrees should be in (min, max) format, got {degrees!r}")
    return lo, hi


def _fill_scalar(img, fill):
    return fill[:img.shape[2]] if img.ndim == 3 else fill[:1]


_AB_BITS, _TAB_BITS = 10, 5           # OpenCV 4's warpAffine: 10-bit coordinates, 1/32-pixel weight tables


def _fixed_point_maps(matrix, size, nearest):
    """The maps OpenCV 4's ``warpAffine`` builds for a forward ``matrix``: each source coordinate
    rounded to 1/1024 pixel, then to 1/32 (bilinear/bicubic table index) or a whole pixel (nearest)."""
    inv = cv2.invertAffineTransform(np.asarray(matrix, np.float64).reshape(2, 3))
    scale = 1 << _AB_BITS
    rounding = scale // 2 if nearest else scale >> (_TAB_BITS + 1)
    xs, ys = np.arange(size[0], dtype=np.float64), np.arange(size[1], dtype=np.float64)
    x = np.rint((inv[0, 1] * ys + inv[0, 2]) * scale).astype(np.int64)[:, None] + rounding \
        + np.rint(inv[0, 0] * xs * scale).astype(np.int64)[None, :]
    y = np.rint((inv[1, 1] * ys + inv[1, 2]) * scale).astype(np.int64)[:, None] + rounding \
        + np.rint(inv[1, 0] * xs * scale).astype(np.int64)[None, :]
    shift = _AB_BITS if nearest else _AB_BITS - _TAB_BITS
    x, y = x >> shift, y >> shift
    whole = (x, y) if nearest else (x >> _TAB_BITS, y >> _TAB_BITS)
    xy = np.stack([np.clip(v, -32768, 32767) for v in whole], axis=-1).astype(np.int16)
    mask = (1 << _TAB_BITS) - 1
    return xy, None if nearest else ((y & mask) << _TAB_BITS | (x & mask)).astype(np.uint16)


def warp_affine(img, matrix, size, interpolation, fill):
    """Warp by a forward affine ``matrix`` to ``size`` (w, h) with a constant border, as MindSpore's
    CPU ops (OpenCV 4's fixed-point ``warpAffine``: the same values, whichever OpenCV is installed).
    A <H,W,1> image stays three-dimensional."""
    flags = cv2.INTER_LINEAR if interpolation is Inter.AREA else interpolation.value
    border = _fill_scalar(img, fill)
    channels = 1 if img.ndim == 2 else img.shape[2]
    if max(size) < 32767 and max(img.shape[:2]) < 32767 and channels <= 4 and img.dtype in _REMAP_TYPES:
        xy, table = _fixed_point_maps(matrix, size, flags == cv2.INTER_NEAREST)
        out = cv2.remap(img, xy, table, flags, borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    else:
        out = cv2.warpAffine(img, np.asarray(matrix, np.float64).reshape(2, 3), size, flags=flags,
                             borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    return out.reshape(size[1], size[0], *img.shape[2:])


_REMAP_TYPES = {np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32, np.float64)}


class Pad:
    """Pad the borders: ``padding`` an int (all sides), (left/right, top/bottom) or
    (left, top, right, bottom); ``fill_value`` for a constant border."""

    def __init__(self, padding: int | Sequence[int], fill_value: int | tuple[int, int, int] = 0,
                 padding_mode: Border = Border.CONSTANT) -> None:
        self.padding = check_padding(padding)
        self.fill_value = check_fill(fill_value)
        self.padding_mode = check_enum("padding_mode", padding_mode, Border)

    def __call__(self, img):
        left, top, right, bottom = self.padding
        if pil.is_pil(img):
            return pil_ops.pad(img, left, top, right, bottom, self.padding_mode, self.fill_value)
        img = check_image("Pad", img)
        return pad(img, top, bottom, left, right, self.padding_mode, self.fill_value)

    def __repr__(self):
        return f"Pad(padding={self.padding}, fill_value={self.fill_value}, padding_mode={self.padding_mode})"


def _rotation_range(degrees):
    """MindSpore's normalisation of ``degrees`` to a [min, max] range of angles."""
    if isinstance(degrees, (int, float)):
        degrees = degrees % 360
        return -degrees, degrees
    if degrees[1] - degrees[0] >= 360:
        return -180, 180
    lo, hi = degrees[0] % 360, degrees[1] % 360
    return (lo, hi + 360) if lo > hi else (lo, hi)


def rotation_matrix(height, width, angle, center, expand):
    """MindSpore's C rotation: ``getRotationMatrix2D`` about ``center`` (default the pixel centre
    ((W-1)/2, (H-1)/2)); ``expand`` grows the output to the rotated box. -> (matrix, (w, h))."""
    cx, cy = ((width - 1) * 0.5, (height - 1) * 0.5) if center is None else center
    matrix = cv2.getRotationMatrix2D((float(cx), float(cy)), float(angle), 1.0)
    if not expand:
        return matrix, (width, height)
    box = cv2.RotatedRect((float(cx), float(cy)), (float(width), float(height)), float(angle)).boundingRect2f()
    matrix[0, 2] += box[2] / 2.0 - width / 2.0
    matrix[1, 2] += box[3] / 2.0 - height / 2.0
    return matrix, (int(np.rint(box[2])), int(np.rint(box[3])))      # cv::Size(Size2f) rounds


class RandomRotation:
    """Rotate by an angle drawn from ``degrees`` (counter-clockwise), about ``center`` ((x, y))."""

    def __init__(self, degrees: float | Sequence[float], resample: Inter = Inter.NEAREST, expand: bool = False,
                 center: Sequence[float] | None = None, fill_value: int | tuple[int, int, int] = 0) -> None:
        self.degrees = _rotation_range(check_degrees(degrees))
        self.resample = check_enum("resample", resample, Inter)
        if not isinstance(expand, bool):
            raise TypeError(f"expand must be a bool, got {expand!r}")
        self.expand = expand
        if center is not None:
            if not isinstance(center, (list, tuple)) or len(center) != 2:
                raise TypeError(f"center must be a 2-tuple (x, y), got {center!r}")
            center = tuple(check_number("center", v, -2 ** 31, INT32_MAX) for v in center)
        self.center = center
        self.fill_value = check_fill(fill_value)

    def __call__(self, img):
        angle = float(current_keys().uniform(0, *self.degrees)[0])
        if pil.is_pil(img):
            fill = self.fill_value[0] if img.mode in ("L", "1") else self.fill_value
            return img.rotate(angle % 360.0, pil.pil_filter(self.resample, "RandomRotation"), self.expand,
                              self.center, fillcolor=fill)
        img = check_image("RandomRotation", img)
        matrix, size = rotation_matrix(img.shape[0], img.shape[1], angle, self.center, self.expand)
        return warp_affine(img, matrix, size, self.resample, self.fill_value[::-1])   # MindSpore's (b, g, r) fill

    def __repr__(self):
        return (f"RandomRotation(degrees={self.degrees}, resample={self.resample}, expand={self.expand}, "
                f"center={self.center}, fill_value={self.fill_value})")


def _check_pairs(name, value, lengths, low, high):
    if not isinstance(value, (list, tuple)) or len(value) not in lengths:
        raise TypeError(f"{name} should be a list or tuple of length {' or '.join(map(str, lengths))}, got {value!r}")
    return tuple(check_number(f"{name}[{i}]", v, low, high) for i, v in enumerate(value))


def _check_affine_shear(shear):
    if isinstance(shear, numbers.Number) and not isinstance(shear, bool):
        check_number("shear", shear, 0, None, low_open=True)
        return -shear, shear, 0.0, 0.0
    shear = _check_pairs("shear", shear, (2, 4), None, None)
    if shear[0] > shear[1] or (len(shear) == 4 and shear[2] > shear[3]):
        raise ValueError(f"shear must be (min, max) pairs with min <= max, got {shear!r}")
    return shear + (0.0, 0.0) if len(shear) == 2 else shear


def affine_matrix(height, width, angle, tx, ty, scale, shear_x, shear_y):
    """MindSpore's C affine matrix (forward, for ``warpAffine``): rotation by ``angle`` and shear
    about the pixel centre ((W-1)/2, (H-1)/2), scaled, then translated by (tx, ty) pixels."""
    a, sx, sy = (math.radians(v) for v in (angle, shear_x, -shear_y))        # MindSpore's sign of shear_y
    m = [scale * math.cos(a + sy) / math.cos(sy),
         scale * (-math.cos(a + sy) * math.tan(sx) / math.cos(sy) - math.sin(a)), 0.0,
         scale * math.sin(a + sy) / math.cos(sy),
         scale * (-math.sin(a + sy) * math.tan(sx) / math.cos(sy) + math.cos(a)), 0.0]
    m = [float(np.float32(v)) for v in m]
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    m[2] = (1 - m[0]) * cx - m[1] * cy + tx
    m[5] = (1 - m[4]) * cy - m[3] * cx + ty
    return m


def pil_affine_matrix(size, angle, translation, scale, shear):
    """MindSpore's PIL affine (``py_transforms_util.random_affine``): the inverse matrix for
    ``Image.transform``, about the centre (W/2 + 0.5, H/2 + 0.5)."""
    center = (size[0] * 0.5 + 0.5, size[1] * 0.5 + 0.5)
    a, s0, s1 = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    d = math.cos(a + s0) * math.cos(a + s1) + math.sin(a + s0) * math.sin(a + s1)
    m = [math.cos(a + s0), math.sin(a + s0), 0, -math.sin(a + s1), math.cos(a + s1), 0]
    m = [1.0 / scale / d * v for v in m]
    m[2] += m[0] * (-center[0] - translation[0]) + m[1] * (-center[1] - translation[1])
    m[5] += m[3] * (-center[0] - translation[0]) + m[4] * (-center[1] - translation[1])
    m[2] += center[0]
    m[5] += center[1]
    return m


class RandomAffine:
    """Rotate, translate, scale and shear by amounts drawn from the given ranges. ``translate``:
    for an array (MindSpore's C op) (x_min, x_max[, y_min, y_max]) fractions of the size; for a PIL
    image (its Python op) (max_x, max_y) fractions, drawn in [-max, max]."""

    def __init__(self, degrees: float | Sequence[float], translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None, shear: float | Sequence[float] | None = None,
                 resample: Inter = Inter.NEAREST, fill_value: int | tuple[int, int, int] = 0) -> None:
        degrees = check_degrees(degrees)
        self.degrees = (-degrees, degrees) if isinstance(degrees, (int, float)) else degrees
        self.translate = (0.0,) * 4 if translate is None else _check_pairs("translate", translate, (2, 4), -1.0, 1.0)
        if scale is None:
            scale = (1.0, 1.0)
        self.scale = _check_pairs("scale", scale, (2,), 0, FLOAT_MAX_INTEGER)
        if self.scale[0] > self.scale[1]:
            raise ValueError(f"Input scale[1] must be equal to or greater than scale[0], got {scale!r}")
        check_number("scale[1]", self.scale[1], 0, None, low_open=True)
        self.shear = (0.0,) * 4 if shear is None else _check_affine_shear(shear)
        self.resample = check_enum("resample", resample, Inter)
        self.fill_value = check_fill(fill_value)

    def draw(self, keys, height, width):
        """(angle, tx, ty, scale, shear_x, shear_y): draws 0..5 (C semantics of ``translate``; the
        translation truncated to whole pixels, as MindSpore's C op)."""
        t = self.translate + (0.0, 0.0) if len(self.translate) == 2 else self.translate
        ranges = (self.degrees, (t[0] * width, t[1] * width), (t[2] * height, t[3] * height), self.scale,
                  self.shear[:2], self.shear[2:])
        v = [float(keys.uniform(k, lo, hi)[0]) for k, (lo, hi) in enumerate(ranges)]
        v[1], v[2] = float(int(v[1])), float(int(v[2]))
        return v

    def __call__(self, img):
        keys = current_keys()
        if pil.is_pil(img):
            return self._pil(img, keys)
        img = check_image("RandomAffine", img)
        height, width = img.shape[:2]
        matrix = affine_matrix(height, width, *self.draw(keys, height, width))
        return warp_affine(img, matrix, (width, height), self.resample, self.fill_value)

    def _pil(self, img, keys):
        from PIL import Image

        width, height = img.size
        max_dx, max_dy = self.translate[0] * width, self.translate[1] * height
        angle, dx, dy, scale, shear_x, shear_y = (
            float(keys.uniform(k, lo, hi)[0]) for k, (lo, hi) in enumerate(
                (self.degrees, (-max_dx, max_dx), (-max_dy, max_dy), self.scale, self.shear[:2], self.shear[2:])))
        matrix = pil_affine_matrix(img.size, angle, (round(dx), round(dy)), scale, (shear_x, shear_y))
        fill = self.fill_value[0] if img.mode in ("L", "1") else self.fill_value
        return img.transform(img.size, Image.AFFINE, matrix, pil.pil_filter(self.resample, "RandomAffine"),
                             fillcolor=fill)

    def __repr__(self):
        return (f"RandomAffine(degrees={self.degrees}, translate={self.translate}, scale={self.scale}, "
                f"shear={self.shear}, resample={self.resample}, fill_value={self.fill_value})")


def perspective_coeffs(start, end):
    """Pillow's PERSPECTIVE coefficients mapping ``end`` points back to ``start`` points."""
    rows = []
    for (x1, y1), (x0, y0) in zip(end, start):
        rows.append([x1, y1, 1, 0, 0, 0, -x0 * x1, -x0 * y1])
        rows.append([0, 0, 0, x1, y1, 1, -y0 * x1, -y0 * y1])
    return np.linalg.lstsq(np.array(rows, float), np.array(start, float).reshape(8), rcond=None)[0].tolist()


class RandomPerspective:
    """With probability ``prob``, move each corner inwards by up to ``distortion_scale`` of half the
    size and warp (Pillow, MindSpore's Python op; an array goes through Pillow and comes back as one)."""

    def __init__(self, distortion_scale: float = 0.5, prob: float = 0.5,
                 interpolation: Inter = Inter.BICUBIC) -> None:
        for name, value in (("distortion_scale", distortion_scale), ("prob", prob)):
            if not isinstance(value, float):
                raise TypeError(f"{name} must be a float, got {type(value).__name__} {value!r}")
        self.distortion_scale = check_prob("distortion_scale", distortion_scale)
        self.prob = check_prob("prob", prob)
        self.interpolation = check_enum("interpolation", interpolation, Inter)

    def end_points(self, keys, width, height):
        """The corners' destinations: draws 1..8, integers as MindSpore's ``get_perspective_params``."""
        hw, hh = int(width / 2 * self.distortion_scale), int(height / 2 * self.distortion_scale)
        ranges = ((0, hw), (0, hh), (width - hw - 1, width - 1), (0, hh),
                  (width - hw - 1, width - 1), (height - hh - 1, height - 1), (0, hw), (height - hh - 1, height - 1))
        v = [int(keys.integers(k + 1, lo, hi + 1)[0]) for k, (lo, hi) in enumerate(ranges)]
        return [(v[0], v[1]), (v[2], v[3]), (v[4], v[5]), (v[6], v[7])]

    def __call__(self, img):
        keys = current_keys()
        if not keys.bernoulli(0, self.prob)[0]:
            return img
        from PIL import Image

        image = pil.to_pil(img, "RandomPerspective")
        width, height = image.size
        start = [(0, 0), (width - 1, 0), (width - 1, height - 1), (0, height - 1)]
        coeffs = perspective_coeffs(start, self.end_points(keys, width, height))
        out = image.transform(image.size, Image.PERSPECTIVE, coeffs,
                              pil.pil_filter(self.interpolation, "RandomPerspective"))
        return out if pil.is_pil(img) else np.asarray(out).reshape(img.shape)

    def __repr__(self):
        return (f"RandomPerspective(distortion_scale={self.distortion_scale}, prob={self.prob}, "
                f"interpolation={self.interpolation})")


_RESIZE_MODES = (Inter.LINEAR, Inter.NEAREST, Inter.CUBIC, Inter.AREA)


class RandomResize:
    """:class:`~recordio.vision.Resize` to ``size`` with an interpolation drawn from bilinear,
    nearest, bicubic and area (MindSpore's C op; a PIL image is converted to an array)."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = check_size("size", size)

    def __call__(self, img):
        img = check_image("RandomResize", pil.as_array(img))
        mode = _RESIZE_MODES[int(current_keys().integers(0, 0, len(_RESIZE_MODES))[0])]
        return resize(img, *shorter_side_size(*img.shape[:2], self.size), mode)

    def __repr__(self):
        return f"RandomResize(size={self.size})"
