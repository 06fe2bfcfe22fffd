"""MindSpore's samplers, and sampler chains (``add_child``, ``Dataset.add_sampler`` / ``use_sampler``).

A sampler gives the global order of an epoch (``order(n, seed, epoch, source)``: row ids); a
distributed one also names this process's shard (``shards``), which the source takes from that
order (``recordio.dataset.order.shards``: every ``num_shards``-th position, or blocks).

A chain, as in MindSpore: a sampler with a child samples the rows the child gives, not the
dataset's. The child's whole output (its order, its own shard, its ``num_samples``) is computed
first, as an array (a chain holds one permutation per epoch); the parent's order of that many
positions picks from it, and the parent's shard and ``num_samples`` apply as for a sampler alone.
The child draws its randomness from a seed derived from the chain's, so a shuffled parent over a
shuffled child is not the same permutation applied twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from recordio import config
from recordio.dataset.order import ms_chains, ms_order
from recordio.dataset.order.shards import block_positions, shard_positions, shard_size
from recordio.dataset.order.shuffle import ADAPTIVE_LIMIT, Ids, Shuffle, epoch_rng, global_order, shuffled_ids
from recordio.dataset.order.permutation import Padded, pick
from recordio.keys import hash_words

__all__ = ["DefaultOrder", "DistributedSampler", "PKSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "SubsetSampler", "split_sampler"]

_CHILD_TAG = 0xC41D


def _check_num_samples(num_samples):
    if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                    or num_samples < 0):
        raise ValueError(f"num_samples exceeds the boundary between 0 and 9223372036854775807(INT64_MAX): "
                         f"num_samples must be None or an int >= 0, got {num_samples!r}")
    return num_samples or None


def _mindspore_orders():
    return config.get_order_mode() == "mindspore"


def _child_seed(seed):
    return int(hash_words(seed, _CHILD_TAG)[0]) >> 1


class Sampler:
    """Base class: ``order(n, seed, epoch, source)`` -> row ids of the epoch, in order.

    A subclass gives its own order of ``n`` rows in ``_own_order`` (and its length in
    ``_own_total``); ``order`` and ``total`` apply it to the child's output when there is a child.
    """

    shards: tuple[int, int] | None = None        # (num_shards, shard_id) for a distributed sampler
    child_sampler: Sampler | None = None
    _takes_child = True                          # False: its order depends on the rows' data
    _ms_operator: str | None = None              # the operator MindSpore makes of it in a chain (ms_chains)

    def __init__(self, num_samples: int | None = None) -> None:
        self.num_samples = _check_num_samples(num_samples)

    # -- MindSpore's chain API -----------------------------------------------------------------------
    def add_child(self, sampler: Sampler | None) -> None:
        """Make ``sampler`` this sampler's child: this one then samples the rows ``sampler`` gives
        (MindSpore's ``add_child``, with its checks and messages)."""
        if self.child_sampler is not None:
            raise RuntimeError("Cannot add child sampler, this sampler already has a child.")
        if sampler is not None and sampler.get_shuffle_mode() == Shuffle.PARTIAL:
            raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the input sampler "
                               "must not be Shuffle.PARTIAL.")
        if self.get_shuffle_mode() not in (Shuffle.GLOBAL, Shuffle.FALSE):
            raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the current sampler "
                               f"must be Shuffle.FALSE or Shuffle.GLOBAL, but got: {self.get_shuffle_mode()}.")
        if sampler is not None and not self._takes_child:
            raise NotImplementedError(f"{type(self).__name__} cannot sample another sampler's output in recordio: "
                                      f"its order comes from the rows' values; make it the child instead")
        if sampler is not None and not isinstance(sampler, Sampler):
            raise TypeError(f"add_child: a sampler is expected, got {type(sampler).__name__}")
        self.child_sampler = sampler

    def get_child(self) -> Sampler | None:
        """The child sampler, or None."""
        return self.child_sampler

    def get_shuffle_mode(self) -> Shuffle:
        """The :class:`Shuffle` mode MindSpore reports for this sampler."""
        return Shuffle.FALSE

    def get_num_samples(self) -> int | None:
        """``num_samples``, the smaller of this sampler's and its child's (MindSpore's rule)."""
        child = None if self.child_sampler is None else self.child_sampler.get_num_samples()
        if self.num_samples is not None and child is not None:
            return min(self.num_samples, child)
        return self.num_samples if self.num_samples is not None else child

    # -- the order ------------------------------------------------------------------------------------
    def order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        """The row ids of epoch ``epoch`` of a source of ``n`` rows, in order (int64)."""
        if self.child_sampler is None:
            return self._own_order(n, seed, epoch, source)
        if _mindspore_orders() and _random_chain(self):
            return ms_chains.chain_order(self, n, seed, epoch, source)
        base = child_output(self.child_sampler, n, _child_seed(seed), epoch, source)
        return pick(base, np.asarray(self._own_order(len(base), seed, epoch, source), dtype=np.int64))

    def total(self, n: int, source: Any) -> int:
        """Length of ``order`` without computing it."""
        if self.child_sampler is None:
            return self._own_total(n, source)
        if _mindspore_orders() and _random_chain(self):
            return ms_chains.chain_total(self, n, source)
        return self._own_total(child_count(self.child_sampler, n, source), source)

    def _own_order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        raise NotImplementedError

    def _own_total(self, n: int, source: Any) -> int:
        return n


def _random_chain(sampler):
    """Whether any sampler of the chain draws randomness (order mode "mindspore" runs such a chain as
    MindSpore does: ``ms_chains``)."""
    while sampler is not None:
        mode = sampler.get_shuffle_mode()
        if mode != Shuffle.FALSE or getattr(sampler, "shuffle", False) is True:
            return True
        sampler = sampler.child_sampler
    return False


def _shard(sampler, total):
    num, sid = sampler.shards
    if getattr(sampler, "by_block", False):
        return block_positions(total, num, sid)
    return shard_positions(total, num, sid)


def child_output(sampler, n, seed, epoch, source):
    """What ``sampler`` gives a parent: its order, its shard's share of it, at most ``num_samples``."""
    ids = sampler.order(n, seed, epoch, source)
    if sampler.shards is not None:
        ids = pick(ids, _shard(sampler, len(ids)))
    ids = np.asarray(ids, dtype=np.int64)
    return ids[:sampler.num_samples] if sampler.num_samples else ids


def child_count(sampler, n, source):
    count = sampler.total(n, source)
    if sampler.shards is not None:
        count = shard_size(count, sampler.shards[0])
    return min(count, sampler.num_samples) if sampler.num_samples else count


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
        if _mindspore_orders():
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
        if _mindspore_orders():
            return _ms_sharded(self, self.shuffle, n, epoch, source)
        if self.shuffle == Shuffle.FALSE:
            return np.arange(n, dtype=np.int64)
        return shuffled_ids(self.shuffle, n, seed, epoch, source)

    def _own_total(self, n: int, source: Any) -> int:
        if _mindspore_orders():
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
        if _mindspore_orders():      # MindSpore's: one shuffle of the indices, the same every epoch
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
            labels = np.asarray(source._class_values(self.class_column))
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
        if _mindspore_orders() and (self.mode is not None or self.shards is not None):
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
        if _mindspore_orders():
            if self.shards is not None:
                return ms_order.dealt_total(self.mode, n, self.shards[0]) + self.num_padded
            if self.num_samples and self.mode is not None:
                return self.num_samples
        return n + self.num_padded


def check_new_sampler(sampler):
    if sampler is None:
        raise TypeError("Input sampler can not be None.")
    if not isinstance(sampler, Sampler):
        raise TypeError("Input sampler is not an instance of a sampler.")
    return sampler
