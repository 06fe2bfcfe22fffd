"""recordio: MindRecord datasets without MindSpore, feeding PyTorch training.

Everything public is importable from here. Names are resolved lazily, so
``import recordio`` loads neither numpy, torch nor OpenCV; each submodule pulls
in what it needs when first used.
"""

import importlib

from recordio.errors import (
    ChecksumError,
    DatasetExistsError,
    FormatError,
    IndexFileError,
    PipelineError,
    RecordIOError,
    SchemaError,
    SinkTimeoutError,
    WorkerError,
)

__version__ = "0.1.0"

_LAZY = {
    "Callback": "recordio.training",
    "ConcatDataset": "recordio.dataset",
    "DataSink": "recordio.sink",
    "DistributedSampler": "recordio.dataset",
    "FileReader": "recordio.reader",
    "FileWriter": "recordio.writer",
    "GeneratorDataset": "recordio.dataset",
    "LossMonitor": "recordio.training",
    "MindDataset": "recordio.dataset",
    "PKSampler": "recordio.dataset",
    "RandomSampler": "recordio.dataset",
    "SequentialSampler": "recordio.dataset",
    "Shuffle": "recordio.dataset",
    "ShardWriter": "recordio.shards",
    "SubsetRandomSampler": "recordio.dataset",
    "SubsetSampler": "recordio.dataset",
    "TimeMonitor": "recordio.training",
    "TorchDataset": "recordio.dataset",
    "count_rows": "recordio.count",
    "describe": "recordio.description",
    "finalize_shards": "recordio.shards",
    "missing_shards": "recordio.shards",
    "train": "recordio.training",
    "verify": "recordio.verification",
}
_MODULES = {"config": "recordio.dataset.config", "keys": "recordio.keys",
            "transforms": "recordio.transforms", "vision": "recordio.vision"}

__all__ = sorted([
    "ChecksumError", "DatasetExistsError", "FormatError", "IndexFileError", "PipelineError",
    "RecordIOError", "SchemaError", "SinkTimeoutError", "WorkerError",
    *_LAZY, *_MODULES,
])


def __getattr__(name):
    if name in _MODULES:
        module = importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        module = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'recordio' has no attribute {name!r}")
    globals()[name] = module
    return module


def __dir__():
    return __all__
