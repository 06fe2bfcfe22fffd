"""MindSpore's PIL path: ``Decode(to_pil=True)`` and the ops that take its PIL images.

Scripts written for MindSpore's Python transforms decode to a PIL image, then ``Resize``,
``CenterCrop`` and ``Grayscale`` it with Pillow, and ``ToTensor`` turns it into a CHW float32 array
(``/ 255``), usually followed by ``Normalize(..., is_hwc=False)``. These functions are MindSpore
2.10's (``mindspore.dataset.vision.py_transforms_util``) semantics, so the values are the same;
``Resize`` and ``CenterCrop`` dispatch here when they receive a PIL image. A map whose last op
returns a PIL image outputs it as a numpy array, as MindSpore does. Pillow is imported when an op that
needs it is built (``Decode(to_pil=True)``, ``ToPIL``), or on first use.
"""

from __future__ import annotations

import io
import sys
from typing import Any

import numpy as np

from recordio.extras import requires
from recordio.keys import current_keys
from recordio.vision.checks import check_prob, undecodable
from recordio.vision.resampling import Inter

__all__ = ["Grayscale", "RandomGrayscale", "ToPIL", "ToTensor", "as_array", "center_crop", "center_crop_box", "decode",
           "is_pil", "pil_filter", "pillow", "resize", "resize_size", "to_pil"]


def is_pil(value):
    """Whether ``value`` is a PIL image (without importing Pillow when nothing imported it)."""
    image = sys.modules.get("PIL.Image")
    return image is not None and isinstance(value, image.Image)


def pillow():
    """``PIL.Image``; a missing Pillow is a :class:`~recordio.errors.MissingExtraError` naming the extra.
    Ops that need it call this when built: the error comes where the pipeline is written, not at its
    first row, and the import is not paid there."""
    with requires("recordio.vision's PIL path"):
        from PIL import Image
    return Image


def decode(buf, op="Decode"):
    """Encoded bytes -> an RGB PIL image."""
    Image = pillow()
    try:
        return Image.open(io.BytesIO(bytes(buf))).convert("RGB")
    except (OSError, ValueError, SyntaxError) as exc:
        raise undecodable(op, buf, f"Pillow: {exc}") from None


def pil_filter(interpolation, op="Resize"):
    """Pillow's resampling filter for an :class:`Inter` mode (MindSpore's ``Inter.to_python_type``)."""
    Image = pillow()
    filters = {Inter.NEAREST: Image.NEAREST, Inter.LINEAR: Image.BILINEAR, Inter.CUBIC: Image.BICUBIC}
    if interpolation not in filters:
        raise TypeError(f"{op}: interpolation {interpolation} is not supported with PIL input")
    return filters[interpolation]


_filter = pil_filter


def as_array(img):
    """A PIL image as a numpy array (MindSpore's C ops convert their PIL input so); arrays pass."""
    return np.asarray(img) if is_pil(img) else img


def to_pil(img, op="ToPIL"):
    """A numpy <H,W> or <H,W,C> image as a PIL image (MindSpore's ``to_pil`` rules); PIL passes."""
    if is_pil(img):
        return img
    if not isinstance(img, np.ndarray):
        raise TypeError(f"{op}: the input image should be a numpy.ndarray or a PIL image, found {type(img).__name__}")
    if img.ndim not in (2, 3):
        raise ValueError(f"{op}: the image should have 2 or 3 dimensions, found shape {img.shape}")
    img = img[:, :, None] if img.ndim == 2 else img
    if img.shape[-1] > 4:
        raise ValueError(f"{op}: the image should have at most 4 channels, found shape {img.shape}")
    if img.shape[-1] == 1:
        if img.dtype not in _ONE_CHANNEL:
            raise TypeError(f"{op}: dtype {img.dtype} is not supported for an image <H,W> or <H,W,1>")
        img = img[:, :, 0]
    elif img.dtype != np.uint8:
        raise TypeError(f"{op}: dtype {img.dtype} is not supported for an image <H,W,2/3/4> (uint8 only)")
    return pillow().fromarray(img)


_ONE_CHANNEL = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                                      np.float32, np.float64)}


class ToPIL:
    """A numpy image (uint8 <H,W,C>, or any common type for one channel) to a PIL image."""

    def __init__(self) -> None:
        pillow()

    def __call__(self, img):
        return to_pil(img)

    def __repr__(self):
        return "ToPIL()"


def resize_size(width, height, size):
    """The (width, height) that :func:`resize` gives an image of ``width`` x ``height``: an int ``size``
    sets the shorter edge (aspect ratio kept, truncated; unchanged when that edge is ``size``), else
    ``size`` is (h, w)."""
    if not isinstance(size, int):
        return size[1], size[0]
    if (width <= height and width == size) or (height <= width and height == size):
        return width, height
    aspect = width / height
    return (size, int(size / aspect)) if width < height else (int(size * aspect), size)


def resize(img, size, interpolation):
    """MindSpore's PIL resize (sizes: :func:`resize_size`)."""
    out = resize_size(*img.size, size)
    if isinstance(size, int) and out == img.size:
        return img
    return img.resize(out, _filter(interpolation))


def center_crop_box(width, height, size):
    """(left, top, w, h) of MindSpore's PIL centre crop of ``size`` from a ``width`` x ``height`` image."""
    h, w = (size, size) if isinstance(size, int) else size
    return int(round((width - w) / 2.0)), int(round((height - h) / 2.0)), w, h


def center_crop(img, size):
    """MindSpore's PIL centre crop: the box at ``round((H - h) / 2)``; outside the image is black."""
    left, top, w, h = center_crop_box(*img.size, size)
    return img.crop((left, top, left + w, top + h))


class Grayscale:
    """A PIL image (or an RGB uint8 array) to grey, with 1 or 3 identical channels (MindSpore's)."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError(f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}")
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        Image = pillow()
        if not is_pil(img):
            img = Image.fromarray(np.asarray(img, dtype=np.uint8))
        grey = img.convert("L")
        if self.num_output_channels == 1:
            return grey
        plane = np.array(grey, dtype=np.uint8)
        return Image.fromarray(np.dstack([plane, plane, plane]), "RGB")

    def __repr__(self):
        return f"Grayscale(num_output_channels={self.num_output_channels})"


class RandomGrayscale:
    """:class:`Grayscale` with probability ``prob`` (MindSpore's): a grey ("L") image stays one
    channel, any other becomes three identical channels. Takes a PIL image (or a uint8 array, which
    MindSpore refuses), draws from the pipeline's keyed randomness."""

    def __init__(self, prob: float = 0.1) -> None:
        self.prob = check_prob("prob", prob)

    def __call__(self, img):
        if not current_keys().bernoulli(0, self.prob)[0]:
            return img
        grey = img.mode == "L" if is_pil(img) else np.ndim(img) == 2
        return Grayscale(1 if grey else 3)(img)

    def __repr__(self):
        return f"RandomGrayscale(prob={self.prob})"


class ToTensor:
    """A PIL image or an HWC array -> CHW ``output_type`` (float32) scaled by 1/255 (MindSpore's:
    a float32 multiply by the float32 reciprocal, not a division)."""

    def __init__(self, output_type: Any = np.float32) -> None:
        self.output_type = np.dtype(output_type)

    def __call__(self, img):
        arr = np.asarray(img)
        if arr.ndim not in (2, 3):
            raise TypeError(f"ToTensor: the image must have 2 or 3 dimensions, found shape {arr.shape}")
        if arr.ndim == 2:
            arr = arr[:, :, None]
        scaled = arr.transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255.0)   # MindSpore's float32 product
        return scaled.astype(self.output_type, copy=False)

    def __repr__(self):
        return f"ToTensor(output_type={self.output_type.name})"
