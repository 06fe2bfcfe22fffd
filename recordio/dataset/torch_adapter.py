"""TorchDataset: a pipeline as a ``torch.utils.data.IterableDataset`` for ``DataLoader``.

    loader = StatefulDataLoader(TorchDataset(ds), batch_size=None, num_workers=2)
    for epoch in range(10):
        loader.dataset.set_epoch(epoch)
        for batch in loader: ...

A rank reads the rows its source names (``num_shards``/``shard_id``, or torch.distributed's rank
and world size), with MindSpore's padding, whatever the number of DataLoader workers: the workers
deal the rank's rows between them in blocks of one output each (``batch_size`` rows after
``ds.batch``), block ``b`` to worker ``b % K``. A DataLoader takes the workers' outputs in turn, so
the batches come in the order the pipeline gives without a DataLoader, for any ``num_workers``.
(Pipelines whose outputs are not a fixed number of rows, e.g. with ``filter`` or a shuffle buffer,
deal rows one by one instead: the same rows, in another order.) Batch in the pipeline and give the
loader ``batch_size=None``. Augmentations are keyed by row, so they are the same as without the
DataLoader. Outputs are dicts of torch tensors (strings stay ``str``); an offloaded tail runs in
the worker, on the cpu.

Resume: ``state_dict()`` / ``load_state_dict()`` are torchdata's ``StatefulDataLoader`` protocol.
Each worker reports where its own stream stands and resumes there, so
``StatefulDataLoader(TorchDataset(ds), num_workers=K).load_state_dict(saved)`` continues exactly,
with the same ``num_workers`` and world size. A worker's state is also a pipeline state: the state
of the worker that produced the last batch the loader handed out is where the whole rank stands
(:func:`merged_state`), which ``ds.load_state_dict`` (the iterator, the sink) and a TorchDataset
with another number of workers or ranks resume from. The plain ``DataLoader`` keeps no state: it
can only restart an epoch (``set_epoch``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from recordio import config
from recordio.dataset import loader_ring
from recordio.dataset.context import torch_world
from recordio.dataset.iterators import ItemStream, Tail
from recordio.dataset.resume import check_state, initial_state
from recordio.dataset.values import to_torch
from recordio.errors import PipelineError
from recordio.extras import requires

with requires("recordio.TorchDataset"):
    import torch
    import torch.utils.data

if TYPE_CHECKING:
    from recordio.dataset.node import Dataset

__all__ = ["TorchDataset", "collate", "merged_state"]


class TorchDataset(torch.utils.data.IterableDataset):
    """A pipeline as a ``torch.utils.data.IterableDataset``: each DataLoader worker of each rank
    reads its own part of the rank's rows (see the module documentation)."""

    def __init__(self, dataset: Dataset, epoch: int = 0) -> None:
        super().__init__()
        self.dataset = dataset
        self.epoch = epoch
        self.world = torch_world()   # captured here: spawned workers have no process group
        try:        # an offloaded tail runs on the CPU in the loader's workers: warned here, once, before they start
            plan = dataset.offload_plan()
        except PipelineError:
            plan = None                 # a pipeline the iteration refuses: it says why there
        if plan is not None:
            plan.warn_on_cpu(stacklevel=2)
        self._loaded: dict | None = None
        self._stream: ItemStream | None = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (reshuffles like ``DistributedSampler.set_epoch``)."""
        self.epoch = int(epoch)

    def state_dict(self) -> dict:
        """Where this process's stream stands: after the last output it delivered (in a worker,
        that worker's position, which is also where the rank stands once the loader handed out
        that output)."""
        if self._stream is not None:
            return self._stream.state_dict()
        return dict(self._loaded) if self._loaded is not None else initial_state(config.get_seed())

    def load_state_dict(self, state: dict) -> None:
        """Resume the next iteration at ``state`` (a state of this class or any pipeline state)."""
        self._loaded = check_state(state)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_stream"] = None
        return state

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """This worker's share of the epoch: dicts of torch tensors (strings stay ``str``)."""
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        if self._loaded is not None:
            self.dataset.load_state_dict(self._loaded)
            self._loaded = None
        stream = ItemStream(self.dataset, num_epochs=self.epoch + 1, shards=(workers, worker) if workers > 1 else None,
                            world=self.world, first_epoch=self.epoch, block=self.dataset._block_rows() or 1,
                            inline=info is not None)
        self._stream = stream
        tail = Tail(stream.plan, None, stream.seed) if stream.plan.offload.tail else None     # the CPU: warns
        shared = info is not None and loader_ring.available()
        try:
            for item in stream:
                cols = tail(item) if tail is not None else item.cols
                batch = {name: value if isinstance(value, torch.Tensor) else to_torch(value)
                         for name, value in cols.items()}
                yield loader_ring.SharedBatch(batch) if shared else batch     # a worker's: through its ring
        finally:
            stream.close()


def merged_state(loader_state: dict) -> dict:
    """The rank's pipeline state from a ``StatefulDataLoader.state_dict()`` over a TorchDataset:
    the state of the worker that produced the last batch handed out (outputs are dealt in turn),
    usable by ``ds.load_state_dict`` and by a loader with another ``num_workers``."""
    try:
        if "_snapshot" not in loader_state:                       # num_workers=0
            state, behind = loader_state["dataset_state"], 0
        else:
            snapshot = loader_state["_snapshot"]
            worker = snapshot["_worker_snapshots"][f"worker_{snapshot['_last_yielded_worker_id']}"]
            state, behind = worker["dataset_state"], loader_state["_steps_since_snapshot"]
    except (KeyError, TypeError) as exc:
        raise PipelineError(f"merged_state: not a StatefulDataLoader state over a TorchDataset ({exc!r})") from None
    if behind:
        raise PipelineError(f"merged_state: the loader's snapshot is {behind} batch(es) old; build the loader "
                            f"with snapshot_every_n_steps=1")
    state = check_state(state)
    if state["source"] is None and state["delivered"]:
        raise PipelineError("merged_state: this pipeline resumes by replaying each worker's stream (it has a "
                            "filter, a shuffle buffer, take/skip, zip or concat); resume the same loader instead")
    state["shards"] = None            # a rank position: valid under any number of workers
    return state


def collate(batch: list) -> Any:
    """``torch.utils.data.default_collate``, whose result (a dict) reaches the main process through the
    worker's shared ring when it runs in a DataLoader worker: the ``collate_fn`` for a map-style
    ``DataLoader`` over a ``FileReader`` with workers::

        loader = DataLoader(FileReader(path), batch_size=256, shuffle=True, num_workers=2,
                            collate_fn=recordio.collate)

    The batches are ``default_collate``'s, value for value (tensors, lists of ``bytes`` and ``str``).
    Without it, torch sends each tensor of a batch through a shared-memory file of its own, whose
    descriptor crosses a socket with an authentication handshake, and the batch's ``bytes`` through
    the result queue's pipe; both cost more than reading the rows. In the main process
    (``num_workers=0``) it is ``default_collate``."""
    out = torch.utils.data.default_collate(batch)
    if type(out) is dict and torch.utils.data.get_worker_info() is not None and loader_ring.available():
        return loader_ring.SharedBatch(out)
    return out
