"""``mindspore.dataset.vision.transforms``: the names of :mod:`recordio.vision`."""

from recordio.vision import *  # noqa: F401,F403
from recordio.vision import __all__  # noqa: F401
