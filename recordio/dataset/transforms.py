"""``mindspore.dataset.transforms``: the names of :mod:`recordio.transforms`."""

from recordio.transforms import *  # noqa: F401,F403
from recordio.transforms import __all__  # noqa: F401
