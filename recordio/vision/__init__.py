"""Vision ops on numpy images (uint8 RGB <H,W,C>), with MindSpore's names, defaults and validation.

As in MindSpore 2.x, an op that has a PIL path (MindSpore's Python transforms) takes a PIL image
too (the output of ``Decode(to_pil=True)``) and computes with Pillow, as MindSpore does.

Random ops draw from the pipeline's keyed randomness (:mod:`recordio.keys`), so a row gets the same
augmentation whatever the workers, batch size or offload setting. Eight ops can be offloaded to a
torch device as batched versions (:mod:`recordio.offload.tail`).
"""

from recordio.extras import requires

with requires("recordio.vision"):
    from recordio.vision.adjust import AutoContrast, Equalize, Invert, RandomColor, RandomPosterize, RandomSolarize
    from recordio.vision.color import Normalize, RandomColorAdjust, RandomSharpness, Rescale
    from recordio.vision.decode import Decode, RandomCropDecodeResize
    from recordio.vision.fusion import fuse_decode
    from recordio.vision.geometry import (HWC2CHW, Border, CenterCrop, Inter, RandomCrop, RandomHorizontalFlip,
                                          RandomResizedCrop, RandomVerticalFlip, Resize, SliceMode, SlicePatches)
    from recordio.vision.mixing import CutMixBatch, ImageBatchFormat, UniformAugment
    from recordio.vision.pil import Grayscale, RandomGrayscale, ToPIL, ToTensor
    from recordio.vision.tensor_ops import FiveCrop, LinearTransformation, RandomErasing, TenCrop, ToType
    from recordio.vision.warp import Pad, RandomAffine, RandomPerspective, RandomResize, RandomRotation

__all__ = ["AutoContrast", "Border", "CenterCrop", "CutMixBatch", "Decode", "Equalize", "FiveCrop", "Grayscale",
           "HWC2CHW", "ImageBatchFormat", "Inter", "Invert", "LinearTransformation", "Normalize", "Pad",
           "RandomAffine", "RandomColor", "RandomColorAdjust", "RandomCrop", "RandomCropDecodeResize",
           "RandomErasing", "RandomGrayscale", "RandomHorizontalFlip", "RandomPerspective", "RandomPosterize",
           "RandomResize", "RandomResizedCrop", "RandomRotation", "RandomSharpness", "RandomSolarize",
           "RandomVerticalFlip", "Rescale", "Resize", "SliceMode", "SlicePatches", "TenCrop", "ToPIL", "ToTensor",
           "ToType", "UniformAugment", "fuse_decode"]
