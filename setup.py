"""Build of the optional C kernels (``recordio.vision._kernels``); everything else is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the vision ops use
their numpy/OpenCV kernels, which give the same values.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "recordio.vision._kernels",
    sources=["recordio/vision/_kernels.c"],
    extra_compile_args=["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno"],
    optional=True,
)])
