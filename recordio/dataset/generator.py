"""GeneratorDataset: rows from Python.

Two kinds of source:

* **random access** (``__getitem__`` and ``__len__``): rows are read by id, so the source can be
  shuffled (the default, as in MindSpore), sharded and sampled, and the row id is the index;
* **iterable** (an iterable, or a callable returning an iterator): rows come in the source's
  order, the row id is the count. Asking to shuffle, shard or sample it raises ``PipelineError``
  instead of being silently ignored. Under DataLoader workers or torch.distributed, shard ``s`` of
  ``W`` keeps items ``s, s + W, ...`` (every process reads the whole source; counts may differ
  by one, as the length is unknown).

Each item is a tuple with one value per column (a single value is accepted for one column).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from recordio.dataset.order.shuffle import Shuffle, shuffle_mode
from recordio.dataset.order.sampler_chain import Sampler
from recordio.dataset.order.samplers import DefaultOrder
from recordio.dataset.node import Item
from recordio.dataset.order.shards import check_shards
from recordio.dataset.source import SampledSource, check_sampler_args
from recordio.errors import PipelineError

__all__ = ["GeneratorDataset"]


def _is_random_access(source):
    return hasattr(source, "__getitem__") and hasattr(source, "__len__")


class GeneratorDataset(SampledSource):
    """Rows from a Python source (MindSpore's ``GeneratorDataset``).

    Args:
        source: a random-access object (``__getitem__`` + ``__len__``: shuffled by default,
            shardable, sampleable), an iterable, or a callable returning an iterator (read in
            order; shuffle/shards/sampler raise ``PipelineError``).
        column_names: the name of each value of an item.
        num_parallel_workers, python_multiprocessing: read a random-access source with that many
            threads, or forked processes.
        shuffle, sampler, num_shards, shard_id, num_samples: as for :class:`MindDataset`.
        column_types, schema, max_rowsize: accepted for compatibility; values keep their types.
    """

    _thread_bound = True          # the user's source: started in a thread, it stays there

    def __init__(self, source: Any, column_names: str | Sequence[str] | None = None, column_types: Any = None,
                 schema: Any = None, num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | Shuffle | None = None, sampler: Sampler | None = None,
                 num_shards: int | None = None, shard_id: int | None = None, python_multiprocessing: bool = True,
                 max_rowsize: Any = None) -> None:
        if column_names is None:
            raise ValueError("GeneratorDataset needs column_names")
        self.column_names = [column_names] if isinstance(column_names, str) else list(column_names)
        self.source = source
        self.random_access = _is_random_access(source)
        check_shards(num_shards, shard_id)
        if not self.random_access and (shuffle or sampler is not None or num_shards is not None):
            raise PipelineError(
                "GeneratorDataset: shuffle, sampler and num_shards need a random-access source "
                f"(__getitem__ and __len__); {type(source).__name__} is only iterable")
        if not self.random_access and not (callable(source) or hasattr(source, "__iter__")):
            raise TypeError(f"GeneratorDataset: source must be random-access, iterable or callable, "
                            f"got {type(source).__name__}")
        sampler = check_sampler_args(sampler, shuffle, num_shards) or DefaultOrder(
            shuffle_mode(shuffle) if self.random_access else None, num_shards, shard_id, 0, num_samples)
        super().__init__(sampler, num_parallel_workers, python_multiprocessing)
        self.num_samples = num_samples

    def _columns(self):
        return list(self.column_names)

    def _num_rows(self):
        return len(self.source)

    def class_values(self, column):
        """The value of ``column`` in every row (what ``PKSampler`` groups rows by)."""
        raise PipelineError("PKSampler needs an indexed class column: it works with MindDataset, "
                            "not GeneratorDataset (as in MindSpore)")

    def file_counts(self):
        """Rows of each data file, in order (what the FILES and INFILE shuffles and MindSpore's orders read)."""
        return [self._num_rows()]

    def _to_cols(self, value, where):
        values = value if isinstance(value, (tuple, list)) else (value,)
        if len(values) != len(self.column_names):
            raise PipelineError(f"GeneratorDataset: {where} has {len(values)} values, expected "
                                f"{len(self.column_names)} (column_names={self.column_names})")
        return dict(zip(self.column_names, values))

    def _fetch(self, ids):
        rows = []
        for i in ids.tolist():
            try:
                value = self.source[i]
            except Exception as e:
                e.add_note(f"recordio: in GeneratorDataset source[{i}] ({type(self.source).__name__})")
                e.recordio_row = i
                raise
            rows.append(self._to_cols(value, f"source[{i}]"))
        return rows

    def _size(self, ctx):
        if self.random_access:
            return super()._size(ctx)
        return None

    def _iterable(self):
        src = self.source
        return iter(src()) if callable(src) and not hasattr(src, "__iter__") else iter(src)

    def _epoch_rows(self, ctx, epoch):
        return super()._epoch_rows(ctx, epoch) if self.random_access else None

    def _items(self, ctx, epoch):
        if self.random_access:
            yield from super()._items(ctx, epoch)
            return
        start = ctx.start_of(epoch)
        if start is None:
            return
        num, sid = self._split(ctx)          # DataLoader workers or torch.distributed ranks
        values = itertools.islice(self._iterable(), start, self.num_samples)
        for k, value in enumerate(values, start):
            if (k - start) % num == sid:
                yield Item(self._to_cols(value, f"item {k} of the source"), k, epoch, (epoch, k + 1))
