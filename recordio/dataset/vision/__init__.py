"""``mindspore.dataset.vision`` under recordio's pipeline: the names of :mod:`recordio.vision`.

So that ``import recordio.dataset.vision as vision`` (or ``...vision.transforms``) replaces the
MindSpore import line of a training script.
"""

from recordio.vision import *  # noqa: F401,F403  (the same public names)
from recordio.vision import __all__  # noqa: F401
