"""MindSpore's PIL eval chain, ``Decode(to_pil=True)`` -> ``Resize`` -> ``CenterCrop``, in one compiled call
that gives Pillow's bytes.

MindSpore's classification scripts evaluate with Pillow: decode the whole JPEG, resize the whole image,
keep the centre. When those ops follow each other in a map or a Compose (and ``Resize`` is bilinear or
bicubic), :func:`fusion.fuse_ops <recordio.vision.fusion.fuse_ops>` puts a :class:`PilChain` in the
Decode slot: ``_pilfast.c`` decodes the JPEG with libjpeg-turbo as Pillow sets it up and repeats
Pillow 13's fixed-point resampling, but only for the window the crop keeps, from only the source
pixels that window reads. The bytes are Pillow's (tests/test_vision_pil_fast.py compares them with
Pillow over sizes, aspect ratios, subsamplings, grey and progressive JPEGs; a self-check compares
them at first use and turns the part off, with a warning, where they differ).

Anything else runs the ops as written (Pillow): a missing build, a PNG or a CMYK/12-bit/damaged JPEG, a
crop larger than the resized image, an image over Pillow's decompression-bomb limit. The chain hands
on a PIL image, or, when a ``ToTensor`` comes next (which takes either), the same pixels as a numpy array.
"""

import functools
import io

import numpy as np

from recordio import compiled
from recordio.vision import pil
from recordio.vision.checks import check_pixels
from recordio.vision.resampling import Inter
from recordio.vision.decode import Decode, as_buffer, image_size
from recordio.vision.geometry import CenterCrop, Resize

__all__ = ["PilChain", "chain_length"]

_FILTERS = {Inter.LINEAR: 0, Inter.CUBIC: 1}                # bilinear, bicubic: the filters _pilfast repeats


@functools.cache
def _compiled():
    """``recordio.vision._pilfast``, loaded at the first chain's first call; None (warned once) where it
    was not built."""
    return compiled.load("recordio.vision._pilfast")


def chain_length(ops, j):
    """How many ops from ``j`` on form a PIL eval chain: 3 (Decode(to_pil=True), Resize, CenterCrop),
    2 (no crop) or 0."""
    if not (j + 1 < len(ops) and type(ops[j]) is Decode and ops[j].to_pil and type(ops[j + 1]) is Resize
            and ops[j + 1].interpolation in _FILTERS):
        return 0
    return 3 if j + 2 < len(ops) and type(ops[j + 2]) is CenterCrop else 2


class PilChain:
    """``Decode(to_pil=True)``, ``Resize`` and maybe ``CenterCrop`` (``ops``) as one call on the encoded
    bytes; ``as_array``: hand on a numpy <H,W,3> array (for a ``ToTensor`` next) instead of a PIL image."""

    costly = True            # it decodes

    def __init__(self, ops, as_array=False):
        self.ops, self.as_array = list(ops), as_array
        self.__name__ = "Decode"                     # as the pipeline names the op in its error notes

    def __call__(self, data):
        buf = as_buffer("Decode", data)
        out = self._fast(buf) if _compiled() is not None else None
        if out is None:
            return self._as_written(buf)
        if self.as_array:
            return out
        from PIL import Image
        return Image.fromarray(out)

    def _as_written(self, img):
        for op in self.ops:
            img = op(img)
        return img

    def _fast(self, buf):
        """The chain's pixels from ``_pilfast``, or None where it does not apply."""
        resize = self.ops[1]
        size = image_size(buf) if len(buf) > 3 and bytes(buf[:3]) == b"\xff\xd8\xff" else None
        if size is None or not _exact():
            return None
        height, width = size
        if 0 in size or width * height > _pixel_limit():
            return None
        out_w, out_h = pil.resize_size(width, height, resize.size)
        left, top, w, h = (pil.center_crop_box(out_w, out_h, self.ops[2].size) if len(self.ops) == 3
                           else (0, 0, out_w, out_h))
        if top < 0 or left < 0 or top + h > out_h or left + w > out_w:
            return None                                  # Pillow pads a crop beyond the image with black
        found = _compiled().resize_crop(np.ascontiguousarray(buf), width, height, out_w, out_h,
                                        _FILTERS[resize.interpolation], top, left, h, w)
        return None if found is None else np.frombuffer(found, np.uint8).reshape(h, w, 3)

    def __repr__(self):
        return " + ".join(map(repr, self.ops))


def _pixel_limit():
    """Pillow's decompression-bomb limit (a larger image goes through Pillow, which warns or refuses)."""
    from PIL import Image
    return Image.MAX_IMAGE_PIXELS or float("inf")


# Sizes (w, h) -> resizes (w, h) and crops (h, w) whose pass order, rounding and clipping all differ
# between the ways Pillow could do them: both orders of the two passes, up- and downscaling, odd sizes.
_CHECKS = [((77, 61), (40, 33), (32, 30)), ((40, 150), (30, 52), (20, 24)), ((61, 77), (100, 90), (85, 97)),
           ((64, 64), (64, 30), (30, 64))]


@compiled.checked("recordio.vision._pilfast")               # a failed self-check warns once
@compiled.once
def _exact():
    """Whether ``_pilfast`` gives the installed Pillow's bytes on a few JPEGs (grey, 4:2:0, 4:4:4,
    progressive) resized both ways with both filters; otherwise the chain runs in Pillow."""
    from PIL import Image

    for k, ((w, h), (ow, oh), (ch, cw)) in enumerate(_CHECKS):
        img = Image.fromarray(check_pixels((6, 8, 3), k)).resize((w, h), Image.BICUBIC)
        img = img.convert("L") if k == 3 else img
        stream = io.BytesIO()
        img.save(stream, "JPEG", quality=90, subsampling=2 if k < 2 else 0, progressive=k == 2)
        data = stream.getvalue()
        for cubic, method in enumerate((Image.BILINEAR, Image.BICUBIC)):
            left, top = (ow - cw) // 2, (oh - ch) // 2
            want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB").resize((ow, oh), method)
                              .crop((left, top, left + cw, top + ch)))
            found = _compiled().resize_crop(data, w, h, ow, oh, cubic, top, left, ch, cw)
            if found is None or not np.array_equal(np.frombuffer(found, np.uint8).reshape(ch, cw, 3), want):
                return False
    return True
