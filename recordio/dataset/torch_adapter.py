"""TorchDataset: a pipeline as a ``torch.utils.data.IterableDataset`` for ``DataLoader``.

    loader = DataLoader(TorchDataset(ds), batch_size=None, num_workers=2)
    for epoch in range(10):
        loader.dataset.set_epoch(epoch)
        for batch in loader: ...

Each DataLoader worker runs the whole pipeline on its share of the source: with ``W`` ranks
(``num_shards``, or torch.distributed) and ``K`` workers, the source is split into ``W * K``
shards (rank ``r``, worker ``w`` -> shard ``r * K + w``), so every row is seen once per epoch
across ranks x workers, padding aside (at most ``W * K - 1`` repeats). Batch in the pipeline
(``ds.batch``) and give the loader ``batch_size=None``. Augmentations are keyed by row, so they
are the same as without the DataLoader. Outputs are dicts of torch tensors (strings stay ``str``);
an offloaded tail runs in the worker, on the cpu.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.utils.data

from recordio.dataset.iterators import ItemStream, Tail
from recordio.dataset.source import torch_world
from recordio.dataset.values import to_torch

if TYPE_CHECKING:
    from recordio.dataset.node import Dataset

__all__ = ["TorchDataset"]


class TorchDataset(torch.utils.data.IterableDataset):
    """A pipeline as a ``torch.utils.data.IterableDataset``: each DataLoader worker of each rank
    reads its own shard (see the module documentation)."""

    def __init__(self, dataset: Dataset, epoch: int = 0) -> None:
        super().__init__()
        self.dataset = dataset
        self.epoch = epoch
        self.world = torch_world()   # captured here: spawned workers have no process group

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (reshuffles like ``DistributedSampler.set_epoch``)."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """This worker's share of the epoch: dicts of torch tensors (strings stay ``str``)."""
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        stream = ItemStream(self.dataset, num_epochs=self.epoch + 1, shards=(workers, worker),
                            world=self.world, first_epoch=self.epoch)
        tail = Tail(stream.plan, "cpu", stream.seed) if stream.plan.offload.tail else None
        try:
            for item in stream:
                cols = tail(item) if tail is not None else item.cols
                yield {name: value if isinstance(value, torch.Tensor) else to_torch(value)
                       for name, value in cols.items()}
        finally:
            stream.close()
