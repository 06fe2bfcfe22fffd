"""Host-side fusion of adjacent ops into cheaper equivalents, keeping every op's index.

* a Decode right before Resize/RandomResizedCrop decodes only what the crop needs
  (:func:`fuse_decode`);
* a channels-last ``Normalize`` right before ``HWC2CHW`` writes the channel-first float32 image
  directly, one table lookup per channel plane, instead of normalising and then transposing
  (the same values: the same float32 tables; anything but a uint8 <H,W,C> image runs both ops as
  written). The ``HWC2CHW`` slot then passes its input on.

The op list keeps its length, so each op keeps its op id and hence its random draws.
"""

import cv2
import numpy as np

from recordio.vision.color import Normalize
from recordio.vision.color_kernels import _kernels
from recordio.vision.decode import Decode, EncodedImage, as_buffer
from recordio.vision.geometry import HWC2CHW, RandomResizedCrop, Resize

__all__ = ["fuse_decode", "fuse_ops"]


class _DeferredDecode(Decode):
    """Decode placed right before a crop/resize: hands the bytes on so the next op decodes less."""

    def __call__(self, data):
        return EncodedImage(as_buffer("Decode", data))


def fuse_decode(operations):
    """The op list with each Decode that is followed by Resize/RandomResizedCrop made deferred.

    Indices are kept, so every op keeps its op id (and its random draws).
    """
    ops = list(operations)
    for j in range(len(ops) - 1):
        if type(ops[j]) is Decode and not ops[j].to_pil and isinstance(ops[j + 1], (Resize, RandomResizedCrop)):
            ops[j] = _DeferredDecode()
    return ops


class _NormalizeToCHW:
    """``Normalize`` then ``HWC2CHW`` in one pass for uint8 <H,W,C> images (C <= 4)."""

    __name__ = "Normalize"                  # as the pipeline names the op in its error notes

    def __init__(self, normalize):
        self.normalize = normalize
        self.hwc2chw = HWC2CHW()

    def __call__(self, img):
        if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3
                and 1 <= img.shape[2] <= 4 and len(self.normalize.mean) in (1, img.shape[2])):
            return self.hwc2chw(self.normalize(img))
        tables = self.normalize.tables(img.shape[2])
        out = np.empty((img.shape[2],) + img.shape[:2], np.float32)
        if _kernels is not None:
            _kernels.lookup_chw(np.ascontiguousarray(img), img.shape[2], tables, out)
            return out
        for c, plane in enumerate(cv2.split(img)):
            cv2.LUT(plane, tables[c], dst=out[c])
        return out

    def __repr__(self):
        return f"{self.normalize!r} + HWC2CHW()"


class _Passed:
    """The slot of an op that a fused neighbour already applied: passes its input on."""

    def __init__(self, op):
        self.op = op
        self.__name__ = type(op).__name__

    def __call__(self, value):
        return value

    def __repr__(self):
        return f"<{self.op!r}, fused into the previous op>"


def fuse_ops(operations):
    """The op list with the fusions above applied (same length, same op at each index otherwise)."""
    ops = fuse_decode(operations)
    for j in range(len(ops) - 1):
        if type(ops[j]) is Normalize and ops[j].is_hwc and type(ops[j + 1]) is HWC2CHW:
            ops[j], ops[j + 1] = _NormalizeToCHW(ops[j]), _Passed(ops[j + 1])
    return ops
