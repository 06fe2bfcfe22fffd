"""recordio: MindRecord datasets without MindSpore, feeding PyTorch training.

Everything public is importable from here. Names are resolved lazily, so
``import recordio`` loads neither numpy, torch nor OpenCV; each submodule pulls
in what it needs when first used.
"""

import importlib

from recordio import hooks
from recordio.errors import (
    ChecksumError,
    DatasetChangedError,
    DatasetExistsError,
    FormatError,
    IndexFileError,
    MissingFileError,
    PipelineError,
    RecordIOError,
    SchemaError,
    SinkTimeoutError,
    WorkerError,
)

_LAZY = {
    "Callback": "recordio.training",
    "ConcatDataset": "recordio.dataset",
    "DataSink": "recordio.sink.datasink",
    "DeviceQueue": "recordio.sink.queue",
    "DistributedSampler": "recordio.dataset",
    "FileReader": "recordio.mindrecord.read.reader",
    "FileWriter": "recordio.mindrecord.write.writer",
    "GeneratorDataset": "recordio.dataset",
    "LossMonitor": "recordio.training",
    "MindDataset": "recordio.dataset",
    "PKSampler": "recordio.dataset",
    "RandomSampler": "recordio.dataset",
    "SequentialSampler": "recordio.dataset",
    "Shuffle": "recordio.dataset",
    "ShardWriter": "recordio.mindrecord.write.shard_writer",
    "SubsetRandomSampler": "recordio.dataset",
    "SubsetSampler": "recordio.dataset",
    "TimeMonitor": "recordio.training",
    "TorchDataset": "recordio.dataset",
    "collate": "recordio.dataset",
    "count_elements": "recordio.mindrecord.read.elements",
    "count_rows": "recordio.mindrecord.read.count",
    "describe": "recordio.mindrecord.read.description",
    "finalize_shards": "recordio.mindrecord.write.shard_writer",
    "missing_shards": "recordio.mindrecord.write.shard_writer",
    "mix": "recordio.dataset",
    "train": "recordio.training",
    "verify": "recordio.mindrecord.read.verification",
    "write_target": "recordio.mindrecord.storage.upload",
}
_MODULES = {"config": "recordio.config", "keys": "recordio.keys",
            "transforms": "recordio.transforms", "vision": "recordio.vision"}

__all__ = sorted([
    "ChecksumError", "DatasetChangedError", "DatasetExistsError", "FormatError", "IndexFileError", "MissingFileError", "PipelineError",
    "RecordIOError", "SchemaError", "SinkTimeoutError", "WorkerError",
    *_LAZY, *_MODULES,
])


# Dataset.device_que (the dataset layer) builds the sink's queue, resolved by name as every name here is
hooks.provide("DeviceQueue", lambda: getattr(importlib.import_module(_LAZY["DeviceQueue"]), "DeviceQueue"))

def __getattr__(name):
    if name == "__version__":
        return _version()
    if name not in _MODULES and name not in _LAZY:
        raise AttributeError(f"module 'recordio' has no attribute {name!r}")
    from recordio.extras import requires

    with requires(f"recordio.{name}"):
        if name in _MODULES:
            module = importlib.import_module(_MODULES[name])
        else:
            module = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = module
    return module


def _version():
    """The installed distribution's version (``mindrecordio``); ``0+unknown`` from a bare source tree."""
    from importlib import metadata

    try:
        version = metadata.version("mindrecordio")
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    globals()["__version__"] = version
    return version


def __dir__():
    return __all__
