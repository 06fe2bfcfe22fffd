"""Host-side fusion of adjacent ops into cheaper equivalents, keeping every op's index.

* a Decode right before Resize/RandomResizedCrop decodes only what the crop needs
  (:func:`fuse_decode`);
* a run of per-level float ops on a uint8 image — ``Rescale``, ``Normalize`` (on the layout the run
  is in at that point), ``HWC2CHW``, and ``ToTensor`` (float32) first — is one table pass
  (:class:`~recordio.vision.level_runs.LevelRun`): every op of the run maps each channel's uint8 level
  to a float32 value independently of the other pixels, so the run maps level ``v`` of channel ``c`` to
  ``tables[c][v]``, the tables being the run's own ops applied to the 256 levels (the same float32
  operations, hence the same values). The pass writes channels-first directly when the run ends there;
* a compiled ``RandomColorAdjust`` right before such a run writes the run's output itself
  (:class:`~recordio.vision.level_runs.ColourLevels`): one C call, no uint8 image in between;
* ``Decode(to_pil=True)`` -> ``Resize`` (-> ``CenterCrop``), MindSpore's PIL eval chain, is one compiled
  call with Pillow's bytes that decodes and resamples only what the crop keeps
  (:class:`~recordio.vision.pil_fast.PilChain`);
* ``Resize`` -> ``CenterCrop`` (MindSpore's eval chain) resizes only the window the crop keeps, where the
  resized image covers it (:class:`_CroppedResize`); after a deferred Decode it decodes, then resizes the
  window;
* a ``RandomHorizontalFlip``/``RandomVerticalFlip`` or a ``CenterCrop`` right before such a run or a
  compiled ``RandomColorAdjust`` hands on a view (:class:`_ViewFlip`, :class:`_ViewCrop`): the next op's
  pass reads it flipped or cropped, instead of a flip or crop pass and a copy;
* ``RandomCropDecodeResize`` (or a deferred Decode and ``RandomResizedCrop``), an optional flip view and such
  a colour op or level run (the train chain) hand on a plan instead of pixels, and the last of them does the
  decoding, resizing, flipping and colour work in one compiled call (:mod:`recordio.vision.crop_chain`).

Anything else (a float image, a channel count the ops refuse, ...) runs the ops as written, so the
values and the errors are those of the unfused ops. The op list keeps its length: the slots of ops
that a fused neighbour applies pass their input on (:class:`_Passed`), so each op keeps its op id and
hence its random draws.
"""

from functools import partial

import numpy as np

from recordio.keys import current_keys
from recordio.vision import color_kernels, crop_chain, pil_fast
from recordio.vision.crop_chain import CropPlan, PlannedCrop
from recordio.vision.color import RandomColorAdjust
from recordio.vision.resampling import resize, shorter_side_size
from recordio.vision.decode import (Decode, EncodedImage, RandomCropDecodeResize, as_buffer, decode_region,
                                    image_size)
from recordio.vision.geometry import (CenterCrop, RandomHorizontalFlip, RandomResizedCrop,
                                      RandomVerticalFlip, Resize)
from recordio.vision.level_runs import ColourLevels, LevelRun, run_length
from recordio.vision.pil import ToTensor

__all__ = ["fuse_decode", "fuse_ops"]


def _compiled():
    """The C kernels (``recordio.vision._kernels``), or None: the one place fusion picks its path."""
    return color_kernels.compiled_kernels()


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


class _ViewFlip:
    """A random flip whose next op reads strided images: a flipped view (no copy) of a uint8 <H,W,C>
    image, the same draw."""

    def __init__(self, op):
        self.op = op
        self.__name__ = type(op).__name__

    def __call__(self, img):
        plan = type(img) is CropPlan
        if not (plan or isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] <= 4):
            return self.op(img)
        flip = current_keys().unit_floats([(0,)])[0] < self.op.prob        # the op's bernoulli(0, prob), one row
        if not flip:
            return img
        if plan:
            img.flip(self.op.axis)
            return img
        return img[:, ::-1] if self.op.axis == 1 else img[::-1]     # np.flip's view, without its argument checks

    def __repr__(self):
        return f"<{self.op!r}, as a view>"


class _ViewCrop:
    """A CenterCrop whose next op reads strided images: the window as a view of a uint8 <H,W,C> image
    that needs no padding."""

    def __init__(self, op):
        self.op = op
        self.__name__ = "CenterCrop"

    def __call__(self, img):
        h, w = self.op.size
        if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] <= 4
                and img.shape[0] >= h and img.shape[1] >= w):
            return self.op(img)
        y, x = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
        return img[y:y + h, x:x + w]

    def __repr__(self):
        return f"<{self.op!r}, as a view>"


class _CroppedResize:
    """Resize followed by CenterCrop: the crop's window of the resized image, computed alone (the same
    bytes as the two ops) for encoded bytes or a uint8 <H,W,C> array whose resized size covers the crop;
    anything else (PIL images, padding crops, other dtypes) runs the two ops as written."""

    def __init__(self, resize_op, crop_op):
        self.resize, self.crop = resize_op, crop_op
        self.__name__ = "Resize"
        self.plans = False          # hands a CropPlan on to a level run (set by _fuse_crop_chain)

    def _covers(self, height, width):
        oh, ow = shorter_side_size(height, width, self.resize.size)
        return oh >= self.crop.size[0] and ow >= self.crop.size[1]

    def __call__(self, img):
        if isinstance(img, EncodedImage):
            size = image_size(img.buffer)
            if size is not None and 0 not in size and self._covers(*size):
                unfused = partial(decode_region, img, self.resize.region, self.resize.interpolation, "Decode",
                                  self.crop.size, size)
                if self.plans:
                    oh, ow = shorter_side_size(*size, self.resize.size)
                    ch, cw = self.crop.size
                    plan = crop_chain.window_plan(img, size, (oh, ow), ((oh - ch) // 2, (ow - cw) // 2, ch, cw),
                                                  self.resize.interpolation, unfused)
                    if plan is not None:
                        return plan
                return unfused()
        elif (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and 1 <= img.shape[2] <= 4
              and 0 not in img.shape and self._covers(*img.shape[:2])):
            oh, ow = shorter_side_size(*img.shape[:2], self.resize.size)
            ch, cw = self.crop.size
            return resize(img, oh, ow, self.resize.interpolation, ((oh - ch) // 2, (ow - cw) // 2, ch, cw))
        return self.crop(self.resize(img))

    def __repr__(self):
        return f"{self.resize!r} + {self.crop!r}"


class _Passed:
    """The slot of an op that a fused neighbour already applied: passes its input on. ``passes_input``
    tells the pipeline and ``Compose`` so: they skip the slot (no call, no key scope); the other ops keep
    their indices."""

    passes_input = True

    def __init__(self, op):
        self.op = op
        self.__name__ = type(op).__name__

    def __call__(self, value):
        return value

    def __repr__(self):
        return f"<{self.op!r}, fused into the previous op>"


def _fuse_levels(ops):
    j = 0
    while j < len(ops):
        n, chw = run_length(ops, j)
        if n >= 2:
            ops[j:j + n] = [LevelRun(ops[j:j + n], chw)] + [_Passed(op) for op in ops[j + 1:j + n]]
        j += max(n, 1)


def _fuse_colour(ops):
    if _compiled() is None:
        return
    for j in range(len(ops) - 1):
        if type(ops[j]) is RandomColorAdjust and isinstance(ops[j + 1], LevelRun):
            ops[j], ops[j + 1] = ColourLevels(ops[j], ops[j + 1]), _Passed(ops[j + 1].ops[0])


def _fuse_pil(ops):
    for j in range(len(ops)):
        n = pil_fast.chain_length(ops, j)
        if n:
            as_array = j + n < len(ops) and type(ops[j + n]) is ToTensor
            ops[j:j + n] = [pil_fast.PilChain(ops[j:j + n], as_array)] + [_Passed(op) for op in ops[j + 1:j + n]]


def _fuse_resize_crop(ops):
    for j in range(len(ops) - 1):
        if type(ops[j]) is Resize and type(ops[j + 1]) is CenterCrop:
            ops[j], ops[j + 1] = _CroppedResize(ops[j], ops[j + 1]), _Passed(ops[j + 1])


def _reads_views(op):
    return (isinstance(op, (LevelRun, ColourLevels))
            or (type(op) is RandomColorAdjust and _compiled() is not None))


def _next_live(ops, k):
    while k < len(ops) and isinstance(ops[k], _Passed):
        k += 1
    return k


def _takes_plans(ops, k):
    """Whether op k (after any pass-through slots and a flip view) writes a level run of three channels: the
    consumer of a CropPlan."""
    k = _next_live(ops, k)
    if k < len(ops) and type(ops[k]) is _ViewFlip:
        k = _next_live(ops, k + 1)
    return k < len(ops) and (type(ops[k]) is ColourLevels and ops[k].run.takes_channels(3)
                             or type(ops[k]) is LevelRun and ops[k].takes_channels(3))


def _fuse_crop_chain(ops):
    if not crop_chain.available() or _compiled() is None:
        return
    for j in range(len(ops) - 1):
        kind = type(ops[j])
        takes_bytes = kind is RandomCropDecodeResize
        if not _takes_plans(ops, j + 1):
            continue
        if takes_bytes or kind is RandomResizedCrop and j > 0 and type(ops[j - 1]) is _DeferredDecode:
            ops[j] = PlannedCrop(ops[j], takes_bytes)
        elif kind is _CroppedResize and j > 0 and type(ops[j - 1]) is _DeferredDecode:
            ops[j].plans = True


def fuse_ops(operations):
    """The op list with the fusions above applied (same length, same op at each index otherwise)."""
    ops = fuse_decode(operations)
    _fuse_pil(ops)
    _fuse_resize_crop(ops)
    _fuse_levels(ops)
    _fuse_colour(ops)
    for j in range(len(ops) - 1):
        if type(ops[j]) in (RandomHorizontalFlip, RandomVerticalFlip) and _reads_views(ops[j + 1]):
            ops[j] = _ViewFlip(ops[j])
        elif type(ops[j]) is CenterCrop and _reads_views(ops[j + 1]):
            ops[j] = _ViewCrop(ops[j])
    _fuse_crop_chain(ops)
    return ops
