"""The sampler contract (:class:`Sampler`) and chains of samplers (``add_child``, ``Dataset.add_sampler``
/ ``use_sampler``).

A sampler gives the global order of an epoch (``order(n, seed, epoch, source)``: row ids); a
distributed one also names this process's shard (``shards``). MindSpore's samplers are in
``recordio.dataset.order.samplers``.

A chain, as in MindSpore: a sampler with a child samples the rows the child gives, not the
dataset's. The child's whole output (its order, its own shard, its ``num_samples``) is computed
first, as an array (a chain holds one permutation per epoch); the parent's order of that many
positions picks from it, and the parent's shard and ``num_samples`` apply as for a sampler alone.
The child draws its randomness from a seed derived from the chain's, so a shuffled parent over a
shuffled child is not the same permutation applied twice.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recordio import config
from recordio.dataset.order import ms_chains
from recordio.dataset.order.permutation import pick
from recordio.dataset.order.shards import block_positions, shard_positions, shard_size
from recordio.dataset.order.shuffle import Ids, Shuffle
from recordio.keys import hash_words

__all__ = ["Sampler", "check_new_sampler", "child_count", "child_output", "mindspore_orders"]

_CHILD_TAG = 0xC41D


def _check_num_samples(num_samples):
    if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                    or num_samples < 0):
        raise ValueError(f"num_samples exceeds the boundary between 0 and 9223372036854775807(INT64_MAX): "
                         f"num_samples must be None or an int >= 0, got {num_samples!r}")
    return num_samples or None


def mindspore_orders():
    """Whether orders follow MindSpore 2.10's (``config.set_order_mode("mindspore")``)."""
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
        if mindspore_orders() and _random_chain(self):
            return ms_chains.chain_order(self, n, seed, epoch, source)
        base = child_output(self.child_sampler, n, _child_seed(seed), epoch, source)
        return pick(base, np.asarray(self._own_order(len(base), seed, epoch, source), dtype=np.int64))

    def total(self, n: int, source: Any) -> int:
        """Length of ``order`` without computing it."""
        if self.child_sampler is None:
            return self._own_total(n, source)
        if mindspore_orders() and _random_chain(self):
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


def check_new_sampler(sampler):
    """``sampler`` for ``Dataset.add_sampler``/``use_sampler``: a :class:`Sampler` (MindSpore's messages)."""
    if sampler is None:
        raise TypeError("Input sampler can not be None.")
    if not isinstance(sampler, Sampler):
        raise TypeError("Input sampler is not an instance of a sampler.")
    return sampler
