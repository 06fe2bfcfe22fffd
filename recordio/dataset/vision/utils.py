"""``mindspore.dataset.vision.utils``: the enumerations of :mod:`recordio.vision` (``Inter``, ``Border``, ...)."""

from recordio.vision import Border, ImageBatchFormat, Inter, SliceMode

__all__ = ["Border", "ImageBatchFormat", "Inter", "SliceMode"]
