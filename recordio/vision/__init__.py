"""Vision ops on numpy images (uint8 RGB <H,W,C>), with MindSpore's names, defaults and validation.

Random ops draw from the pipeline's keyed randomness (:mod:`recordio.keys`), so a row gets the same
augmentation whatever the workers, batch size or offload setting. Eight ops can be offloaded to a
torch device as batched versions (:mod:`recordio.offload.tail`).
"""

from recordio.vision.color import Normalize, RandomColorAdjust, RandomSharpness, Rescale
from recordio.vision.decode import Decode, RandomCropDecodeResize
from recordio.vision.fusion import fuse_decode
from recordio.vision.pil import Grayscale, RandomGrayscale, ToTensor
from recordio.vision.geometry import (Border, CenterCrop, HWC2CHW, Inter, RandomCrop, RandomHorizontalFlip,
                                      RandomResizedCrop, RandomVerticalFlip, Resize, SliceMode, SlicePatches)

__all__ = ["Border", "CenterCrop", "Decode", "Grayscale", "HWC2CHW", "Inter", "Normalize", "RandomColorAdjust",
           "RandomCrop", "RandomCropDecodeResize", "RandomGrayscale", "RandomHorizontalFlip", "RandomResizedCrop",
           "RandomSharpness", "RandomVerticalFlip", "Rescale", "Resize", "SliceMode", "SlicePatches", "ToTensor",
           "fuse_decode"]
