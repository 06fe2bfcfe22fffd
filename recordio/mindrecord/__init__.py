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
    "FileReader": "recordio.mindrecord.reader",
    "FileWriter": "recordio.mindrecord.writer",
    "FixedLenFeature": "recordio.converters.tomr",
    "ImageNetToMR": "recordio.converters.tomr",
    "MindPage": "recordio.mindrecord.mindpage",
    "MnistToMR": "recordio.converters.tomr",
    "SUCCESS": "recordio.mindrecord.params",
    "ShardWriter": "recordio.mindrecord.shard_writer",
    "TFRecordToMR": "recordio.converters.tomr",
    "cache_info": "recordio.mindrecord.pagecache",
    "clear_cache": "recordio.mindrecord.pagecache",
    "count_elements": "recordio.mindrecord.elements",
    "count_rows": "recordio.mindrecord.count",
    "count_where": "recordio.mindrecord.description",
    "describe": "recordio.mindrecord.description",
    "finalize_shards": "recordio.mindrecord.shard_writer",
    "missing_shards": "recordio.mindrecord.shard_writer",
    "set_dec_mode": "recordio.mindrecord.encryption",
    "set_enc_key": "recordio.mindrecord.encryption",
    "set_enc_mode": "recordio.mindrecord.encryption",
    "verify": "recordio.mindrecord.verification",
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
