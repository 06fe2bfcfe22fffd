"""MindSpore's converter classes (``mindspore.mindrecord.tools``), over recordio's converters.

``Cifar10ToMR``, ``Cifar100ToMR``, ``MnistToMR``, ``ImageNetToMR``, ``CsvToMR`` and
``TFRecordToMR`` take MindSpore's arguments, make its checks and write the files, schema,
index fields and row order its classes write for the same input (through
:class:`recordio.FileWriter`, with the same calls). ``transform()`` returns ``SUCCESS``.
They are also ``recordio.mindrecord.<Name>``. See ``docs/convert.md``.
"""

import importlib

_LAZY = {
    "Cifar100ToMR": "recordio.converters.tomr.cifar",
    "Cifar10ToMR": "recordio.converters.tomr.cifar",
    "CsvToMR": "recordio.converters.tomr.csv",
    "FixedLenFeature": "recordio.converters.tfrecord",
    "ImageNetToMR": "recordio.converters.tomr.imagenet",
    "MnistToMR": "recordio.converters.tomr.mnist",
    "TFRecordToMR": "recordio.converters.tomr.tfrecord",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'recordio.converters.tomr' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
