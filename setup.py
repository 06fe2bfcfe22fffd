"""Build of the C extensions; everything else is in pyproject.toml.

* ``recordio.mindrecord._codec``: MindRecord's compressed integer arrays (no library needed). Built
  wherever the package installs; a failed build still leaves a working install on the numpy
  reference codec (``recordio.mindrecord.codec.BACKEND`` says which runs), unless
  ``RECORDIO_REQUIRE_CODEC=1`` (wheel builds) makes the failure an error;
* ``recordio.vision._kernels``: one-pass colour kernels (needs a C compiler);
* ``recordio.vision._jpeg``: decoding only the region a crop keeps (also needs libjpeg-turbo's
  headers, e.g. Debian's ``libjpeg62-turbo-dev``).

The vision ones are optional: without them the vision ops use their numpy/OpenCV paths, which
give the same values.
"""

import os

from setuptools import Extension, setup

FLAGS = ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno"]
REQUIRE_CODEC = os.environ.get("RECORDIO_REQUIRE_CODEC") == "1"

setup(ext_modules=[
    Extension("recordio.mindrecord._codec", sources=["recordio/mindrecord/_codec.c"], extra_compile_args=["-O3"],
              optional=not REQUIRE_CODEC),
    Extension("recordio.vision._kernels", sources=["recordio/vision/_kernels.c"], extra_compile_args=FLAGS,
              optional=True),
    Extension("recordio.vision._jpeg", sources=["recordio/vision/_jpeg.c"], libraries=["jpeg"],
              extra_compile_args=["-O2"], optional=True),
])
