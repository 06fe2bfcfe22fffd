"""Everything that knows MindRecord files (mirrors ``mindspore.mindrecord``).

The bytes (``format``, ``codec``, ``pages``), the schema, the ``.db`` index (``index``),
checksums, the commit protocol and recovery (``commit``, ``recovery``), the writer and appends
(``writer``, ``staging``, ``append``), per-shard and parallel writing (``shard_writer``), the
read side's file set (``fileset``), the reader, counts, verification and ``describe``.

This package imports nothing of the pipeline (``recordio.dataset``), vision, offload, sink or
training; a test (``tests/test_layers.py``) keeps it so. Names are resolved lazily, so
``count_rows`` needs no numpy.

``__all__`` holds every name of ``mindspore.mindrecord.__all__`` (MindSpore 2.10) and recordio's
own additions (``count_rows``, ``describe``, ``verify``, ...); MindSpore's exception classes are
importable from here too, as from ``mindspore.mindrecord``.
"""

import importlib

from recordio.errors import MINDSPORE_EXCEPTIONS

_LAZY = {
    "Cifar100ToMR": "recordio.converters.tomr",
    "Cifar10ToMR": "recordio.converters.tomr",
    "CsvToMR": "recordio.converters.tomr",
    "FAILED": "recordio.mindrecord.params",
    "FileReader": "recordio.mindrecord.read.reader",
    "FileWriter": "recordio.mindrecord.write.writer",
    "FixedLenFeature": "recordio.converters.tomr",
    "ImageNetToMR": "recordio.converters.tomr",
    "MindPage": "recordio.mindrecord.read.mindpage",
    "MnistToMR": "recordio.converters.tomr",
    "SUCCESS": "recordio.mindrecord.params",
    "ShardWriter": "recordio.mindrecord.write.shard_writer",
    "TFRecordToMR": "recordio.converters.tomr",
    "cache_info": "recordio.mindrecord.storage.cache",
    "clear_cache": "recordio.mindrecord.storage.cache",
    "count_elements": "recordio.mindrecord.read.elements",
    "count_rows": "recordio.mindrecord.read.count",
    "count_where": "recordio.mindrecord.read.description",
    "describe": "recordio.mindrecord.read.description",
    "finalize_shards": "recordio.mindrecord.write.shard_writer",
    "missing_shards": "recordio.mindrecord.write.shard_writer",
    "set_dec_mode": "recordio.mindrecord.encryption",
    "set_enc_key": "recordio.mindrecord.encryption",
    "set_enc_mode": "recordio.mindrecord.encryption",
    "verify": "recordio.mindrecord.read.verification",
}
__all__ = sorted(_LAZY)
_LAZY.update(dict.fromkeys(MINDSPORE_EXCEPTIONS, "recordio.errors"))  # importable, as from mindspore.mindrecord


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'recordio.mindrecord' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(_LAZY)
