"""``mindspore.dataset.vision.utils``: the enumerations of :mod:`recordio.vision` (``Inter``, ``Border``, ...)."""

from recordio.vision import Border, Inter, SliceMode

__all__ = ["Border", "Inter", "SliceMode"]
