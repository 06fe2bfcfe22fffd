"""The train chain's pixel work in one compiled call: crop, resize, flip, colour and level run.

ImageNet's train chain, ``RandomCropDecodeResize`` (or ``Decode`` -> ``RandomResizedCrop``) ->
``RandomHorizontalFlip`` -> ``RandomColorAdjust`` -> ``Rescale`` -> ``Normalize`` -> ``HWC2CHW``, runs as
op after op in :mod:`recordio.vision.fusion`: a region decode, a resize, a flipped view, then one colour and
level call. Each op makes its own random draws under its own op id, so the draws stay where they are; what
this module moves is the pixel work after them:

* the crop op, fused here (:class:`PlannedCrop`), draws its box and hands on a :class:`CropPlan` (the bytes,
  the box, the output size) instead of pixels, where the compiled call can do its part: a JPEG whose box is
  decoded at full scale and resized with the compiled bilinear resize
  (:func:`~recordio.vision.decode.decodes_at_full_scale`);
* a flip after it draws as before and marks the plan flipped;
* the level run that ends the chain (with the colour op before it, if any) draws as before and makes one
  call, ``_chain.crop_levels``, that decodes the box, resizes it, and writes the colour-adjusted float32
  output through the flip, without the GIL and without Python between the parts.

Each part is the very code the unfused ops run (the region decoder, the compiled resize, the colour and
level loops), so the output is theirs, byte for byte. Where the call declines the file (a progressive or
corrupt JPEG: the region decoder decides when it reads the header), the consumer runs on the pixels the
crop op would have given (:meth:`CropPlan.pixels`), and the flip is applied to them as a view: the same
values and the same errors, the error noted as the crop op's.
"""

from functools import partial

import numpy as np

from recordio import compiled
from recordio.batch_slots import output_array
from recordio.vision.decode import (EncodedImage, as_buffer, decode_drawn, decode_region, decodes_at_full_scale,
                                    image_size, window_source)

_chain = compiled.load("recordio.vision._chain")              # None (warned once) where it was not built

__all__ = ["CropPlan", "PlannedCrop", "available", "compiled_chain", "window_plan"]


def compiled_chain():
    """The compiled crop chain (``recordio.vision._chain``), or None where it was not built."""
    return _chain


def available():
    """Whether the compiled crop chain is built."""
    return compiled_chain() is not None


class CropPlan:
    """Encoded bytes and the pixel work a chain of ops asks of them, not yet done: the ``box`` (top, left, h, w)
    of the JPEG to decode, the image it is a part of and its origin there (``whole``: H, W, y0, x0), that
    image's resize (``resized``: dh, dw) and the ``window`` of it kept (wy, wx, oh, ow), and the flips marked
    since (bit 0 horizontal, bit 1 vertical). ``unfused()`` gives the pixels the ops would have given before
    the flips (their own path, for a file the compiled call declines); ``op`` names the op that decodes."""

    __slots__ = ("image", "box", "whole", "resized", "window", "unfused", "op", "flips")

    def __init__(self, image, box, whole, resized, window, unfused, op):
        self.image, self.box, self.whole, self.resized, self.window = image, box, whole, resized, window
        self.unfused, self.op, self.flips = unfused, op, 0

    def flip(self, axis):
        """Marks a flip along ``axis`` (1: horizontal, 0: vertical); two flips of an axis undo each other."""
        self.flips ^= 1 if axis == 1 else 2

    def levels(self, kinds, factors, tables, chw, program):
        """The float32 output of the colour steps ``kinds`` (bytes of 0..3, as ``adjust_levels``) with
        ``factors`` and the level run (``tables``, ``chw``, ``program``) of the flipped window; None where the
        compiled call declines the file."""
        top, left, h, w = self.box
        oh, ow = self.window[2:]
        out = output_array((3, oh, ow) if chw else (oh, ow, 3), np.float32)
        b, c, s, hue = factors
        if _chain.crop_levels(self.image.buffer, top, left, h, w, self.whole, self.resized, self.window, self.flips,
                              out, kinds, b, c, s, hue, tables, chw, program):
            return out
        return None

    def pixels(self):
        """The uint8 <oh,ow,3> image the ops would have given, flips included (the unfused path)."""
        try:
            img = self.unfused()
        except Exception as e:
            e.add_note(f"recordio: raised by the {self.op} earlier in this map, whose decode runs inside this op "
                       "(fused: one compiled call decodes, resizes, flips, adjusts and normalises the image)")
            raise
        if self.flips & 1:
            img = img[:, ::-1]
        if self.flips & 2:
            img = img[::-1]
        return img


def window_plan(image, size, out, window, interpolation, unfused):
    """A :class:`CropPlan` of the ``window`` (y, x, wh, ww) of the whole image resized to ``out`` (the eval
    chain's Resize -> CenterCrop after a deferred Decode), where the compiled call can do it; else None.
    ``unfused()``: the window's pixels as the ops give them."""
    box = window_source(image, size, out, window, interpolation)
    if box is None:
        return None
    return CropPlan(image, box, (*size, box[0], box[1]), out, window, unfused, "Decode")


class PlannedCrop:
    """A ``RandomCropDecodeResize``, or a ``RandomResizedCrop`` after a deferred Decode, whose output goes to
    a flip and a level run (see the module docstring): a :class:`CropPlan` where the compiled call can do the
    pixel work, else the op's own output. The op's draws are its own, made here under its op id."""

    def __init__(self, op, takes_bytes):
        self.op, self.takes_bytes = op, takes_bytes
        self.__name__ = type(op).__name__
        self._op_name = self.__name__ if takes_bytes else "Decode"     # the op that decodes, as errors name it

    def __call__(self, data):
        if isinstance(data, EncodedImage):
            image = data
        elif self.takes_bytes:
            image = EncodedImage(as_buffer(self.__name__, data))
        else:
            return self.op(data)
        size = image_size(image.buffer)
        if size is None or 0 in size:                 # no usable header: the op's own path decodes to find out
            return decode_region(image, self.op.region, self.op.interpolation, self._op_name)
        box, out = self.op.region(*size)
        unfused = partial(decode_drawn, image, size, box, out, self.op.interpolation, self._op_name)
        if decodes_at_full_scale(image, size, box, out, self.op.interpolation):
            return CropPlan(image, box, (box[2], box[3], 0, 0), out, (0, 0, *out), unfused, self._op_name)
        return unfused()

    def __repr__(self):
        return f"<{self.op!r}, planned for one compiled call>"
