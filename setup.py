"""The package layout and the C extensions; the metadata is in pyproject.toml.

Packages are found, not listed: every folder with an ``__init__.py`` under ``recordio/``,
``converters/`` (installed as ``recordio.converters``) and ``tools/`` (``recordio.tools``) goes
into the wheel and the sdist, with its ``py.typed`` and ``.pyi`` files (``tests/test_packaging.py``
compares a built wheel with the source tree).

* ``recordio.mindrecord._codec``: MindRecord's compressed integer arrays (no library needed). Built
  wherever the package installs; a failed build still leaves a working install on the numpy
  reference codec (``recordio.mindrecord.codec.BACKEND`` says which runs), unless
  ``RECORDIO_REQUIRE_CODEC=1`` (wheel builds) makes the failure an error;
* ``recordio._keys``: the one-sample SplitMix64 folds of ``recordio.keys`` (no library needed; a
  failed build leaves the Python-int folds, the same bits slower; required, as the codec, under
  ``RECORDIO_REQUIRE_CODEC=1``);
* ``recordio.vision._kernels``: one-pass colour kernels (needs a C compiler);
* ``recordio.vision._jpeg``: decoding only the region a crop keeps (also needs libjpeg-turbo's
  headers, e.g. Debian's ``libjpeg62-turbo-dev``);
* ``recordio.vision._chain``: the train chain's crop, resize, flip, colour and level run in one call
  (the region decoder and the colour kernels together; the same needs as ``_jpeg``);
* ``recordio.vision._pilfast``: the PIL eval chain (``Decode(to_pil=True)`` -> ``Resize`` ->
  ``CenterCrop``) with Pillow's bytes, without Pillow (the same needs as ``_jpeg``).

The vision ones are optional: without them the vision ops use their numpy/OpenCV paths, which
give the same values.
"""

import os

from setuptools import Extension, find_packages, setup

# Import name -> folder in the source tree.
PACKAGE_ROOTS = {"recordio": "recordio", "recordio.converters": "converters", "recordio.tools": "tools"}

FLAGS = ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno"]
REQUIRE_CODEC = os.environ.get("RECORDIO_REQUIRE_CODEC") == "1"
# The pixel loops and their argument checks, in the colour kernels and in the crop chain that calls them.
KERNELS = ["recordio/vision/_kernels_args.c", "recordio/vision/_kernels_colour.c", "recordio/vision/_kernels_levels.c",
           "recordio/vision/_kernels_resize.c", "recordio/vision/_kernels_simd.c"]



def packages():
    """Every package under each root, as its import name."""
    found = []
    for name, root in PACKAGE_ROOTS.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(root))]
    return sorted(found)


setup(packages=packages(), package_dir=PACKAGE_ROOTS,
      package_data={"": ["py.typed", "*.pyi"]},
      ext_modules=[
    Extension("recordio.mindrecord._codec", sources=["recordio/mindrecord/_codec.c",
                                                      "recordio/mindrecord/_codec_ints.c",
                                                      "recordio/mindrecord/_codec_ranges.c",
                                                      "recordio/mindrecord/_codec_records.c",
                                                      "recordio/mindrecord/_codec_permute.c"],
              depends=["recordio/mindrecord/_codec.h"], extra_compile_args=["-O3"], optional=not REQUIRE_CODEC),
    Extension("recordio._keys", sources=["recordio/_keys.c"], extra_compile_args=["-O2"], optional=not REQUIRE_CODEC),
    Extension("recordio.vision._kernels", sources=["recordio/vision/_kernels.c", *KERNELS],
              depends=["recordio/vision/_kernels.h"], extra_compile_args=FLAGS,
              optional=True),
    Extension("recordio.vision._jpeg", sources=["recordio/vision/_jpeg.c", "recordio/vision/_jpeg_region.c"],
              depends=["recordio/vision/_jpeg_region.h"], libraries=["jpeg"], extra_compile_args=["-O2"], optional=True),
    Extension("recordio.vision._chain", sources=["recordio/vision/_chain.c", "recordio/vision/_jpeg_region.c", *KERNELS],
              depends=["recordio/vision/_kernels.h", "recordio/vision/_jpeg_region.h"], libraries=["jpeg"],
              extra_compile_args=FLAGS, optional=True),
    Extension("recordio.vision._pilfast", sources=["recordio/vision/_pilfast.c", "recordio/vision/_pilfast_resample.c"],
              depends=["recordio/vision/_pilfast.h"], libraries=["jpeg"], extra_compile_args=FLAGS, optional=True),
])
