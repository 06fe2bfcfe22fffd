"""The dataset pipeline: sources, operations, samplers, iterators and the PyTorch adapter.

It answers the ``mindspore.dataset`` names a MindRecord training script uses (``MindDataset``,
``GeneratorDataset``, the samplers, ``Shuffle``, ``config``, ``vision``, ``transforms``), so
``import recordio.dataset as ds`` replaces ``import mindspore.dataset as ds``.

See ``docs/pipeline.md`` for the semantics (shuffle modes, distributed split, keyed randomness,
workers, resume).
"""

import importlib

from recordio import config
from recordio.dataset import callback
from recordio.dataset import batch_op, bucket_op, combine, map_op, ops  # noqa: F401 (they register the builders' operations)
from recordio.dataset.order.balance import WeightedClassSampler
from recordio.dataset.callback import DSCallback
from recordio.dataset.generator import GeneratorDataset
from recordio.dataset.iterators import HostBatch
from recordio.dataset.mind_dataset import MindDataset
from recordio.dataset.mixed import MixedDataset, mix
from recordio.dataset.node import Dataset
from recordio.dataset.combine import ConcatDataset
from recordio.dataset.combine import zip_datasets as zip  # noqa: A004 (mindspore.dataset.zip)
from recordio.dataset.order.shuffle import Shuffle
from recordio.dataset.padded import PaddedDataset
from recordio.dataset.order.sampler_chain import Sampler
from recordio.dataset.order.samplers import (DistributedSampler, PKSampler, RandomSampler, SequentialSampler,
                                       SubsetRandomSampler, SubsetSampler)
from recordio.dataset.text import TextFileDataset

# TorchDataset and collate (they import torch) are answered by __getattr__ but left out of __all__, so that
# `from recordio.dataset import *` stays light; __dir__ lists them.
__all__ = ["ConcatDataset", "DSCallback", "Dataset", "DistributedSampler", "GeneratorDataset", "HostBatch",
           "MindDataset", "MixedDataset", "PKSampler", "PaddedDataset", "RandomSampler", "Sampler", "SequentialSampler",
           "Shuffle", "SubsetRandomSampler", "SubsetSampler", "TextFileDataset", "WeightedClassSampler",
           "callback", "config", "mix", "zip"]
_TORCH_NAMES = ("TorchDataset", "collate")


def __getattr__(name):
    if name in _TORCH_NAMES:                  # import torch: only when asked for
        return getattr(importlib.import_module("recordio.dataset.torch_adapter"), name)
    if name in ("vision", "transforms"):     # ds.vision / ds.transforms, as in mindspore.dataset (cv2 on demand)
        return importlib.import_module(f"recordio.dataset.{name}")
    raise AttributeError(f"module 'recordio.dataset' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_TORCH_NAMES, "vision", "transforms"})
