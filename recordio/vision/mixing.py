"""Ops that mix images or ops: CutMixBatch (on a batch), UniformAugment (a random subset of ops).

Random draws come from the pipeline's keyed randomness: for CutMixBatch a numpy generator seeded by
the batch's key (Beta draws need one), so a batch gets the same mix whatever the workers.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence

import numpy as np

from recordio.keys import current_keys, sub_op
from recordio.vision.checks import check_number, check_prob

__all__ = ["CutMixBatch", "ImageBatchFormat", "UniformAugment"]


class ImageBatchFormat(enum.IntEnum):
    """Layout of a batch of images: <N,H,W,C> or <N,C,H,W>."""
    NHWC = 0
    NCHW = 1


def cut_box(rng, height, width, lam):
    """MindSpore's CutMix box (y, x, h, w) for mixing ratio ``lam``: a box of side ratio
    sqrt(1 - lam) centred at a uniform point, clipped to the image."""
    ratio = math.sqrt(1.0 - lam)
    cut_w, cut_h = int(width * ratio), int(height * ratio)
    cx, cy = int(rng.integers(0, width + 1)), int(rng.integers(0, height + 1))
    x, y = min(max(cx - cut_w // 2, 0), width - 1), min(max(cy - cut_h // 2, 0), height - 1)
    x2, y2 = min(max(cx + cut_w // 2, 0), width - 1), min(max(cy + cut_h // 2, 0), height - 1)
    return y, x, min(max(y2 - y, 0), height - 1), min(max(x2 - x, 0), width - 1)


def _check_batch(images, labels, layout):
    if not isinstance(images, np.ndarray) or images.ndim != 4:
        raise ValueError(f"CutMixBatch: images must be a batch <N,H,W,C> or <N,C,H,W>, found "
                         f"{type(images).__name__}{getattr(images, 'shape', '')}; batch the images first")
    if not isinstance(labels, np.ndarray) or labels.ndim not in (2, 3):
        raise ValueError(f"CutMixBatch: labels must be one-hot <N,Class> or <N,Row,Class>, found "
                         f"{type(labels).__name__}{getattr(labels, 'shape', '')}; apply OneHot and batch first")
    if labels.shape[0] != images.shape[0]:
        raise ValueError(f"CutMixBatch: {images.shape[0]} images but {labels.shape[0]} labels")
    if labels.dtype.kind not in "biuf":
        raise TypeError(f"CutMixBatch: labels must be numeric, found dtype {labels.dtype}")
    channels = images.shape[3] if layout is ImageBatchFormat.NHWC else images.shape[1]
    if channels not in (1, 3):
        raise ValueError(f"CutMixBatch: images {images.shape} are not {layout.name} with 1 or 3 channels")


class CutMixBatch:
    """With probability ``prob`` per image, paste a box of another image of the batch into it
    (box area 1 - lam, lam ~ Beta(alpha, alpha)) and mix the one-hot labels by area. Labels come
    back float32, images in their own dtype."""

    def __init__(self, image_batch_format: ImageBatchFormat, alpha: float = 1.0, prob: float = 1.0) -> None:
        if not isinstance(image_batch_format, ImageBatchFormat):
            raise TypeError(f"image_batch_format must be an ImageBatchFormat, got {image_batch_format!r}")
        self.image_batch_format = image_batch_format
        self.alpha = float(check_number("alpha", alpha, 0, 16777216, low_open=True))
        self.prob = check_prob("prob", prob)

    def __call__(self, images, labels):
        _check_batch(images, labels, self.image_batch_format)
        nhwc = self.image_batch_format is ImageBatchFormat.NHWC
        height, width = images.shape[1:3] if nhwc else images.shape[2:4]
        rng = np.random.default_rng(int(current_keys().bits(0)[0]))
        order = rng.permutation(images.shape[0])
        out, mixed = images.copy(), labels.astype(np.float32)
        for i, j in enumerate(order):
            if rng.random() >= self.prob:
                continue
            y, x, h, w = cut_box(rng, height, width, rng.beta(self.alpha, self.alpha))
            if nhwc:
                out[i, y:y + h, x:x + w] = images[j, y:y + h, x:x + w]
            else:
                out[i, :, y:y + h, x:x + w] = images[j, :, y:y + h, x:x + w]
            keep = 1.0 - (h * w) / (height * width)
            mixed[i] = keep * labels[i] + (1.0 - keep) * labels[j]
        return out, mixed

    def __repr__(self):
        return f"CutMixBatch(image_batch_format={self.image_batch_format}, alpha={self.alpha}, prob={self.prob})"


class UniformAugment:
    """Pick ``num_ops`` distinct ops of ``transforms`` at random and apply each picked op with
    probability 1/2, in the picked order (MindSpore's both paths amount to this). Member ``i``
    draws its randomness under its own nested op id."""

    def __init__(self, transforms: Sequence[Callable], num_ops: int = 2) -> None:
        if not isinstance(transforms, (list, tuple)):
            raise TypeError(f"transforms must be a list or tuple of ops, got {transforms!r}")
        if not transforms:
            raise ValueError("transforms list can not be empty")
        for i, op in enumerate(transforms):
            if not callable(op):
                raise TypeError(f"transforms[{i}] is not a callable op: {op!r}")
        self.num_ops = check_number("num_ops", num_ops, 0, None, integer=True, low_open=True)
        if num_ops > len(transforms):
            raise ValueError(f"num_ops {num_ops} is greater than the transforms list size {len(transforms)}")
        self.transforms = list(transforms)

    def __call__(self, img):
        keys = current_keys()
        picked = keys.permutation(0, len(self.transforms))[0][:self.num_ops]
        for i in picked.tolist():
            if keys.uniform(1, 0.0, 1.0, i)[0] < 0.5:
                with sub_op(i):
                    img = self.transforms[i](img)
        return img

    def __repr__(self):
        return f"UniformAugment(transforms={self.transforms!r}, num_ops={self.num_ops})"
