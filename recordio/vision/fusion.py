"""Host-side fusion of adjacent ops into cheaper equivalents, keeping every op's index.

* a Decode right before Resize/RandomResizedCrop decodes only what the crop needs
  (:func:`fuse_decode`);
* a run of per-level float ops on a uint8 image — ``Rescale``, ``Normalize`` (on the layout the run
  is in at that point), ``HWC2CHW``, and ``ToTensor`` (float32) first — is one table pass
  (:class:`_LevelRun`): every op of the run maps each channel's uint8 level to a float32 value
  independently of the other pixels, so the run maps level ``v`` of channel ``c`` to
  ``tables[c][v]``, the tables being the run's own ops applied to the 256 levels (the same float32
  operations, hence the same values). The pass writes channels-first directly when the run ends there;
* a compiled ``RandomColorAdjust`` right before such a run writes the run's output itself
  (:class:`_ColourLevels`): one C call, no uint8 image in between;
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

import numpy as np

from recordio.batch_slots import output_array
from recordio.keys import current_keys
from recordio.vision import color_kernels, crop_chain, pil, pil_fast
from recordio.vision.crop_chain import CropPlan, PlannedCrop
from recordio.vision.color import Normalize, RandomColorAdjust, Rescale
from recordio.vision.resampling import resize, shorter_side_size
from recordio.vision.decode import (Decode, EncodedImage, RandomCropDecodeResize, as_buffer, decode_region,
                                    image_size)
from recordio.vision.geometry import (HWC2CHW, CenterCrop, RandomHorizontalFlip, RandomResizedCrop,
                                      RandomVerticalFlip, Resize)
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


def _run_length(ops, j):
    """How many ops from ``j`` on form a level run (0 or 1: none worth fusing); and whether it ends
    channels-first."""
    chw, k = False, j
    while k < len(ops):
        op, kind = ops[k], type(ops[k])
        if kind is ToTensor and k == j and op.output_type == np.float32:
            chw = True
        elif kind is HWC2CHW and not chw:
            chw = True
        elif not (kind is Rescale or (kind is Normalize and op.is_hwc != chw)):
            break
        k += 1
    return k - j, chw


_MUL, _ADD, _SUB, _DIV = range(4)       # the compiled level arithmetic's operations, in its order (_kernels.h)
_IDENTITY = (1.0, -0.0, 0.0, 1.0)       # operands that change no float32 value (x + -0 is x, signed zeros too)


def _steps(op):
    """The float32 operations of one op of a level run on three channels: [(operation, operands)]; None
    where the op is not one of these."""
    kind, f32 = type(op), np.float32
    if kind is Rescale:
        return [(_MUL, [f32(op.rescale)] * 3), (_ADD, [f32(op.shift)] * 3)]
    if kind is Normalize:
        mean, std = (np.broadcast_to(np.asarray(v, f32), (3,)) for v in (op.mean, op.std))
        return [(_SUB, list(mean)), (_DIV, list(std))]
    if kind is ToTensor:
        return [(_MUL, [f32(1 / 255.0)] * 3)]
    if kind is HWC2CHW:
        return []
    return None


def _arithmetic(ops):
    """A level run's ops as the compiled kernels' arithmetic: float32 <4,3>, the operands of a multiply, an
    add, a subtract and a divide per channel, in that order; None where the run's operations are not in
    that order (each at most once) or are not all known."""
    steps = [_steps(op) for op in ops]
    if None in steps:
        return None
    found = [step for op_steps in steps for step in op_steps]
    codes = [code for code, _ in found]
    if not found or codes != sorted(set(codes)):
        return None
    out = np.array([[v] * 3 for v in _IDENTITY], np.float32)
    for code, operands in found:
        out[code] = operands
    return out


class _LevelRun:
    """A run of per-level float ops (see the module docstring) as one table pass over a uint8 image."""

    def __init__(self, ops, chw):
        self.ops, self.chw = list(ops), chw
        self.__name__ = type(ops[0]).__name__         # as the pipeline names the op in its error notes
        self._tables = {}
        self._program = False                         # not built yet

    def program(self):
        """The run on three channels as the compiled kernels' arithmetic (``_arithmetic``), which they compute
        instead of looking the tables up (cheaper than table gathers): only where it gives the tables'
        values, bit for bit, on every level, in numpy and in the kernels; None otherwise."""
        if self._program is False:
            self._program = self._checked_program()
        return self._program

    def _checked_program(self):
        kernels = _compiled()
        program = _arithmetic(self.ops) if kernels is not None and self.takes_channels(3) else None
        if program is None:
            return None
        tables = self.tables(3)
        with np.errstate(all="ignore"):               # an overflow or a NaN simply fails the comparison
            levels = np.repeat(np.arange(256, dtype=np.float32)[None, :], 3, axis=0)
            for operation, k in zip((np.multiply, np.add, np.subtract, np.divide), program):
                levels = operation(levels, k[:, None])
        probe = np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 3, axis=2)       # <1,256,3>
        computed = np.empty((3, 1, 256), np.float32)
        kernels.lookup(probe, tables, computed, True, program)
        same = (np.array_equal(levels.view(np.uint32), tables.view(np.uint32))
                and np.array_equal(computed[:, 0].view(np.uint32), tables.view(np.uint32)))
        return program if same else None

    def tables(self, channels):
        """(channels, 256) float32: the run's ops applied to each level of each channel."""
        found = self._tables.get(channels)
        if found is None:
            probe = np.repeat(np.arange(256, dtype=np.uint8)[:, None, None], channels, axis=2)   # <256,1,C>
            out = self._as_written(probe)
            found = out[:, :, 0] if self.chw else out[:, 0, :].T
            found = np.ascontiguousarray(found, np.float32)
            found.flags.writeable = False
            self._tables[channels] = found
        return found

    def _as_written(self, img):
        for op in self.ops:
            img = op(img)
        return img

    def takes_channels(self, c):
        """Whether every Normalize of the run takes ``c`` channels (otherwise the ops as written raise)."""
        return all(len(op.mean) in (1, c) for op in self.ops if type(op) is Normalize)

    def _fusable(self, img):
        if type(self.ops[0]) is ToTensor and pil.is_pil(img):
            img = np.asarray(img)
            img = img[:, :, None] if img.ndim == 2 else img
        if not (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and 1 <= img.shape[2] <= 4):
            return None
        return img if self.takes_channels(img.shape[2]) else None

    def __call__(self, img):
        if type(img) is CropPlan:                     # the crop chain in one call (crop_chain)
            found = img.levels(b"", (1.0, 1.0, 1.0, 0.0), self.tables(3), self.chw, self.program() if self.chw else None)
            return found if found is not None else self(img.pixels())
        arr = self._fusable(img)
        if arr is None:
            return self._as_written(img)
        h, w, c = arr.shape
        tables = self.tables(c)
        out = output_array((c, h, w) if self.chw else (h, w, c), np.float32)
        kernels = _compiled()
        if kernels is not None:
            kernels.lookup(arr, tables, out, self.chw, self.program() if c == 3 and self.chw else None)
        else:
            for k in range(c):
                np.take(tables[k], arr[:, :, k], out=out[k] if self.chw else out[:, :, k])
        return out

    def __repr__(self):
        return " + ".join(map(repr, self.ops))


class _ColourLevels:
    """A RandomColorAdjust right before a level run: on a uint8 RGB image that the C kernels take, one call
    (``color_kernels.adjust_levels``) with the colour op's draws writes the run's float32 output (the
    adjusted uint8 image is never written out; the values are those of the two ops). Anything else runs
    the colour op, then the run."""

    def __init__(self, colour, run):
        self.colour, self.run = colour, run
        self.__name__ = "RandomColorAdjust"
        self._takes_rgb = run.takes_channels(3)

    def __call__(self, img):
        plan = type(img) is CropPlan                  # the crop chain in one call (crop_chain)
        if not (plan or self._takes_rgb and isinstance(img, np.ndarray) and color_kernels.has_c_kernels(img)):
            return self.run(self.colour(img))
        factors, order = self.colour.draw_one(current_keys())
        program = self.run.program() if self.run.chw else None
        if plan:
            found = img.levels(bytes(k for k in order if self.colour.enabled[k]), factors, self.run.tables(3),
                               self.run.chw, program)
            return found if found is not None else self(img.pixels())
        return color_kernels.adjust_levels(img, factors, order, self.colour.enabled, self.run.tables(3),
                                           self.run.chw, program)

    def __repr__(self):
        return f"{self.colour!r} + {self.run!r}"


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

    def _covers(self, height, width):
        oh, ow = shorter_side_size(height, width, self.resize.size)
        return oh >= self.crop.size[0] and ow >= self.crop.size[1]

    def __call__(self, img):
        if isinstance(img, EncodedImage):
            size = image_size(img.buffer)
            if size is not None and 0 not in size and self._covers(*size):
                return decode_region(img, self.resize.region, self.resize.interpolation, "Decode", self.crop.size,
                                     size)
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
        n, chw = _run_length(ops, j)
        if n >= 2:
            ops[j:j + n] = [_LevelRun(ops[j:j + n], chw)] + [_Passed(op) for op in ops[j + 1:j + n]]
        j += max(n, 1)


def _fuse_colour(ops):
    if _compiled() is None:
        return
    for j in range(len(ops) - 1):
        if type(ops[j]) is RandomColorAdjust and isinstance(ops[j + 1], _LevelRun):
            ops[j], ops[j + 1] = _ColourLevels(ops[j], ops[j + 1]), _Passed(ops[j + 1].ops[0])


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
    return (isinstance(op, (_LevelRun, _ColourLevels))
            or (type(op) is RandomColorAdjust and _compiled() is not None))


def _fuse_crop_chain(ops):
    if not crop_chain.available() or _compiled() is None:
        return
    for j in range(len(ops) - 1):
        kind = type(ops[j])
        takes_bytes = kind is RandomCropDecodeResize
        if not (takes_bytes or kind is RandomResizedCrop and j > 0 and type(ops[j - 1]) is _DeferredDecode):
            continue
        k = j + 2 if type(ops[j + 1]) is _ViewFlip else j + 1
        if k < len(ops) and (type(ops[k]) is _ColourLevels and ops[k].run.takes_channels(3)
                             or type(ops[k]) is _LevelRun and ops[k].takes_channels(3)):
            ops[j] = PlannedCrop(ops[j], takes_bytes)


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
