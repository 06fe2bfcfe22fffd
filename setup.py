"""Build of the optional C extensions; everything else is in pyproject.toml.

* ``recordio.vision._kernels``: one-pass colour kernels (needs a C compiler);
* ``recordio.vision._jpeg``: decoding only the region a crop keeps (also needs libjpeg-turbo's
  headers, e.g. Debian's ``libjpeg62-turbo-dev``).

Both are optional: without them the install still succeeds and the vision ops use their
numpy/OpenCV paths, which give the same values.
"""

from setuptools import Extension, setup

FLAGS = ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno"]

setup(ext_modules=[
    Extension("recordio.vision._kernels", sources=["recordio/vision/_kernels.c"], extra_compile_args=FLAGS,
              optional=True),
    Extension("recordio.vision._jpeg", sources=["recordio/vision/_jpeg.c"], libraries=["jpeg"],
              extra_compile_args=["-O2"], optional=True),
])
