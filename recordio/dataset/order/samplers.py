"""MindSpore's samplers (``SequentialSampler``, ``RandomSampler``, ``DistributedSampler``,
``SubsetSampler``, ``SubsetRandomSampler``, ``PKSampler``) and ``DefaultOrder``, the sampler a source
builds from its ``shuffle``/``num_shards``/``shard_id``/``num_padded`` arguments.

Each gives its own order of ``n`` rows; the base class (``recordio.dataset.order.sampler_chain``)
runs a chain (``add_child``). A distributed sampler also names this process's shard (``shards``),
which the source takes from that order (``recordio.dataset.order.shards``: every ``num_shards``-th
position, or blocks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from recordio import config
from recordio.dataset.order import ms_order
from recordio.dataset.order.permutation import Padded
from recordio.dataset.order.sampler_chain import Sampler, mindspore_orders
from recordio.dataset.order.shuffle import ADAPTIVE_LIMIT, Ids, Shuffle, epoch_rng, global_order, shuffled_ids

__all__ = ["DefaultOrder", "DistributedSampler", "PKSampler", "RandomSampler", "SequentialSampler",
           "SubsetRandomSampler", "SubsetSampler", "split_sampler"]


def split_sampler(ids):
    """The sampler of one ``Dataset.split`` part: a ``SequentialSampler`` over a ``SubsetSampler`` of
    ``ids``, as MindSpore builds it, so that ``use_sampler`` replaces the sequential one and keeps
    the part's rows."""
    sampler = SequentialSampler()
    sampler.add_child(SubsetSampler(ids))
    return sampler


class SequentialSampler(Sampler):
    """Rows in dataset order from ``start_index``."""

    _ms_operator = "sequential"

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if start_index is not None and (not isinstance(start_index, int) or start_index < 0):
            raise ValueError(f"start_index must be None or an int >= 0, got {start_index!r}")
        self.start_index = start_index or 0

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        return np.arange(min(self.start_index, n), n, dtype=np.int64)

    def _own_total(self, n: int, source: Any) -> int:
        return max(0, n - self.start_index)


class RandomSampler(Sampler):
    """A new random order each epoch (``shuffle``: a :class:`Shuffle` mode, ``GLOBAL`` by default);
    with ``replacement``, ``num_samples`` independent draws."""

    _ms_operator = "random"

    def __init__(self, replacement: bool = False, num_samples: int | None = None,
                 shuffle: Shuffle = Shuffle.GLOBAL) -> None:
        super().__init__(num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement must be a bool, got {replacement!r}")
        if not isinstance(shuffle, Shuffle) or shuffle == Shuffle.FALSE:
            raise ValueError(f"RandomSampler: shuffle must be a Shuffle mode other than FALSE, got {shuffle!r}")
        self.replacement = replacement
        self.shuffle = shuffle

    def get_shuffle_mode(self) -> Shuffle:
        return self.shuffle

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        if mindspore_orders():
            return ms_order.random_order(self, self.shuffle, n, seed, epoch, source, self.replacement,
                                         self.num_samples)
        if self.replacement:
            return epoch_rng(seed, epoch).integers(0, n, size=self.num_samples or n, dtype=np.int64)
        return shuffled_ids(self.shuffle, n, seed, epoch, source)

    def _own_total(self, n: int, source: Any) -> int:
        return (self.num_samples or n) if self.replacement else n


def _distributed_mode(shuffle):
    if isinstance(shuffle, bool):
        return Shuffle.GLOBAL if shuffle else Shuffle.FALSE
    if isinstance(shuffle, Shuffle):
        return shuffle
    raise TypeError(f"shuffle must be a boolean value or valid shuffle mode but was: {shuffle}.")


class DistributedSampler(Sampler):
    """Shard ``shard_id`` of ``num_shards``: ``ceil(N / num_shards)`` rows, wrap-around padding.

    ``shard_id`` may also equal ``num_shards`` (MindSpore accepts it): that shard reads positions
    ``num_shards, 2 * num_shards, ...`` of the order, shard 0's rows a round later, wrapping at the
    end. ``shuffle``: a bool or a :class:`Shuffle` mode.
    """

    _ms_operator = "distributed"

    def __init__(self, num_shards: int, shard_id: int, shuffle: bool | Shuffle = True,
                 num_samples: int | None = None, offset: int = -1) -> None:
        super().__init__(num_samples)
        if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards <= 0:
            raise ValueError(f"num_shards must be an int > 0, got {num_shards!r}")
        if isinstance(shard_id, bool) or not isinstance(shard_id, int) or not 0 <= shard_id <= num_shards:
            raise ValueError(f"Input shard_id is not within the required interval of [0, {num_shards}]. "
                             f"shard_id must be an int in [0, {num_shards}], got {shard_id!r}")
        self.shards = (num_shards, shard_id)
        self.num_shards, self.shard_id = num_shards, shard_id
        self.shuffle = _distributed_mode(shuffle)
        self.offset = offset
        self.by_block = os.environ.get("MS_DEV_MINDRECORD_SHARD_BY_BLOCK", "").lower() in ("true", "1")
        self.seed = config.get_seed()          # MindSpore's takes the seed when made (order mode "mindspore")

    def get_shuffle_mode(self) -> Shuffle:
        return self.shuffle

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        if mindspore_orders():
            return _ms_sharded(self, self.shuffle, n, epoch, source)
        if self.shuffle == Shuffle.FALSE:
            return np.arange(n, dtype=np.int64)
        return shuffled_ids(self.shuffle, n, seed, epoch, source)

    def _own_total(self, n: int, source: Any) -> int:
        if mindspore_orders():
            return ms_order.dealt_total(self.shuffle, n, self.num_shards)
        return n


def _ms_sharded(sampler, shuffle, n, epoch, source, padded=0):
    if sampler.num_samples and ms_order.shuffle_kind(shuffle, n) == "partial":
        ms_order.refuse(type(sampler).__name__, "Shuffle.PARTIAL with shards and num_samples")
    return ms_order.distributed_order(shuffle, n, sampler.seed, epoch, source, sampler.shards[0],
                                      getattr(sampler, "by_block", False), padded)


class SubsetSampler(Sampler):
    """The given row ids, in the given order."""

    _ms_operator = "subset"

    def __init__(self, indices: Iterable[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.indices = np.asarray(list(indices), dtype=np.int64)

    def _checked(self, n):
        bad = self.indices[(self.indices < 0) | (self.indices >= n)]
        if bad.size:
            raise IndexError(f"{type(self).__name__}: index {int(bad[0])} is out of range for a dataset "
                             f"of {n} rows")
        return self.indices

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        return self._checked(n)

    def _own_total(self, n: int, source: Any) -> int:
        return len(self.indices)


class SubsetRandomSampler(SubsetSampler):
    """The given row ids, in a random order each epoch."""

    _ms_operator = "subset_random"

    def get_shuffle_mode(self) -> Shuffle:
        return Shuffle.GLOBAL

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        if mindspore_orders():      # MindSpore's: one shuffle of the indices, the same every epoch
            return np.asarray(ms_order.shuffle_list(self._checked(n).tolist(), seed + 1), dtype=np.int64)
        return epoch_rng(seed, epoch).permutation(self._checked(n))


class PKSampler(Sampler):
    """``num_val`` rows of each class, classes read from the indexed ``class_column``.

    Classes come in ascending order of their value (shuffled with ``shuffle=True``); a class with
    fewer than ``num_val`` rows repeats its rows to fill its share.
    """

    _takes_child = False

    def __init__(self, num_val: int, num_class: int | None = None, shuffle: bool = False,
                 class_column: str = "label", num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if not isinstance(num_val, int) or num_val <= 0:
            raise ValueError(f"num_val must be an int > 0, got {num_val!r}")
        if num_class is not None:
            raise NotImplementedError("PKSampler: num_class is not supported (MindSpore neither)")
        self.num_val = num_val
        self.shuffle = bool(shuffle)
        self.class_column = class_column
        self._groups = None

    def _classes(self, source):
        if self._groups is None:
            labels = np.asarray(source.class_values(self.class_column))
            values, inverse = np.unique(labels, return_inverse=True)
            self._groups = [np.flatnonzero(inverse == k).astype(np.int64) for k in range(len(values))]
        return self._groups

    def order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        groups = self._classes(source)
        # Order mode "mindspore" too: MindSpore 2.10's PKSampler over a MindDataset gives row 0 over and
        # over (docs/conformance.md), an order no one can want; both modes give num_val rows a class.
        rng = epoch_rng(seed, epoch)
        picks = []
        for k in (rng.permutation(len(groups)) if self.shuffle else range(len(groups))):
            rows = rng.permutation(groups[k]) if self.shuffle else groups[k]
            picks.append(np.resize(rows, self.num_val))
        return np.concatenate(picks) if picks else np.zeros(0, np.int64)

    def total(self, n: int, source: Any) -> int:
        return self.num_val * len(self._classes(source))


class DefaultOrder(Sampler):
    """Shuffle mode, then the distributed split; ``num_padded`` padded rows close the order (a global
    shuffle shuffles them with the rows, as MindSpore's does).

    Without ``num_shards`` the split follows torch.distributed when it is initialised.
    """

    _ms_operator = "default"

    def __init__(self, mode, num_shards=None, shard_id=None, num_padded=0, num_samples=None, by_block=False):
        super().__init__(num_samples)
        self.mode = mode
        self.by_block = by_block              # shards take contiguous blocks (MindSpore's strategy 2)
        self.shards = None if num_shards is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None
        self.num_padded = num_padded or 0
        self.seed = config.get_seed()          # MindSpore's sharded sampler takes the seed when made

    def get_shuffle_mode(self) -> Shuffle:
        return Shuffle.FALSE if self.mode is None else self.mode

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        if mindspore_orders() and (self.mode is not None or self.shards is not None):
            return self._mindspore_order(n, seed, epoch, source)       # (in order, one shard: the same)
        total = n + self.num_padded
        if self.num_padded and self.mode in (Shuffle.GLOBAL, Shuffle.ADAPTIVE) and total <= ADAPTIVE_LIMIT:
            # as MindSpore's global shuffle: the padded rows (ids n..) move with the rows, so a shard's
            # padded rows differ from epoch to epoch
            return global_order(total, seed, epoch)
        ids = shuffled_ids(self.mode, n, seed, epoch, source)
        if self.num_padded:
            if not isinstance(ids, np.ndarray):
                return Padded(ids, self.num_padded)
            ids = np.concatenate([ids, np.arange(n, n + self.num_padded, dtype=np.int64)])
        return ids

    def _mindspore_order(self, n, seed, epoch, source):
        """MindSpore's sampler for these arguments: a DistributedSampler with shards, else a
        RandomSampler (with replacement when ``num_samples`` is given), else sequential."""
        if self.shards is not None:
            return _ms_sharded(self, self.mode, n, epoch, source, self.num_padded)
        return ms_order.random_order(self, self.mode, n, seed, epoch, source, bool(self.num_samples),
                                     self.num_samples)

    def _own_total(self, n: int, source: Any) -> int:
        if mindspore_orders():
            if self.shards is not None:
                return ms_order.dealt_total(self.mode, n, self.shards[0]) + self.num_padded
            if self.num_samples and self.mode is not None:
                return self.num_samples
        return n + self.num_padded
