"""Level runs: per-level float ops on a uint8 image as one compiled pass (see :mod:`recordio.vision.fusion`).

A run of ``Rescale``, ``Normalize`` (on the layout the run is in at that point), ``HWC2CHW``, and
``ToTensor`` (float32) first maps each channel's uint8 level to a float32 value independently of the other
pixels, so the run maps level ``v`` of channel ``c`` to ``tables[c][v]``, the tables being the run's own ops
applied to the 256 levels (the same float32 operations, hence the same values) (:class:`LevelRun`). Where
the run is a multiply, an add, a subtract and a divide in that order, the compiled loops compute it instead
of looking it up (:meth:`LevelRun.program`, checked bit for bit). A compiled ``RandomColorAdjust`` right
before a run writes the run's output itself (:class:`ColourLevels`).
"""

import numpy as np

from recordio.batch_slots import output_array
from recordio.keys import current_keys
from recordio.vision import color_kernels, pil
from recordio.vision.color import Normalize, Rescale
from recordio.vision.crop_chain import CropPlan
from recordio.vision.geometry import HWC2CHW
from recordio.vision.pil import ToTensor

__all__ = ["ColourLevels", "LevelRun", "arithmetic", "run_length"]


def run_length(ops, j):
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


def arithmetic(ops):
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


class LevelRun:
    """A run of per-level float ops (see the module docstring) as one table pass over a uint8 image."""

    def __init__(self, ops, chw):
        self.ops, self.chw = list(ops), chw
        self.__name__ = type(ops[0]).__name__         # as the pipeline names the op in its error notes
        self._tables = {}
        self._program = False                         # not built yet

    def program(self):
        """The run on three channels as the compiled kernels' arithmetic (``arithmetic``), which they compute
        instead of looking the tables up (cheaper than table gathers): only where it gives the tables'
        values, bit for bit, on every level, in numpy and in the kernels; None otherwise."""
        if self._program is False:
            self._program = self._checked_program()
        return self._program

    def _checked_program(self):
        kernels = color_kernels.compiled_kernels()
        program = arithmetic(self.ops) if kernels is not None and self.takes_channels(3) else None
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
            program = self.program() if self.chw else None
            found = img.levels(b"", (1.0, 1.0, 1.0, 0.0), self.tables(3), self.chw, program)
            return found if found is not None else self(img.pixels())
        arr = self._fusable(img)
        if arr is None:
            return self._as_written(img)
        h, w, c = arr.shape
        tables = self.tables(c)
        out = output_array((c, h, w) if self.chw else (h, w, c), np.float32)
        kernels = color_kernels.compiled_kernels()
        if kernels is not None:
            kernels.lookup(arr, tables, out, self.chw, self.program() if c == 3 and self.chw else None)
        else:
            for k in range(c):
                np.take(tables[k], arr[:, :, k], out=out[k] if self.chw else out[:, :, k])
        return out

    def __repr__(self):
        return " + ".join(map(repr, self.ops))


class ColourLevels:
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
