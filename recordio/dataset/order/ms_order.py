"""MindSpore 2.10's own row orders for MindDataset, reproduced (``config.set_order_mode("mindspore")``).

MindSpore's MindRecord reader orders an epoch in C++ (``mindspore/ccsrc/minddata/mindrecord``:
``ShardShuffle``, ``ShardSample``, ``ShardTaskList``). Its randomness is the C++ standard library
of GCC: ``std::default_random_engine`` (``minstd_rand0``: ``x = 16807 x mod 2^31 - 1``) driven through
``std::shuffle`` (libstdc++'s, which draws two swap positions from one number while ``n^2`` fits
the engine's range) and ``std::uniform_int_distribution`` (division with rejection), and, for
draws with replacement, ``std::mt19937`` (Lemire's multiply-shift). This module is those
algorithms, step for step, and the way MindSpore applies them:

* the shuffle of epoch ``e`` (0-based) seeds its engine with ``seed + 1 + e``;
* without shards, each epoch reshuffles the previous epoch's list (GLOBAL: the whole list;
  FILES: the files' segments; INFILE: each file's segment), and ``num_samples`` keeps the
  first rows of it, so the next epoch shuffles those;
* with shards (a ``DistributedSampler``, or ``num_shards``), each epoch shuffles the dataset
  order afresh, and the shard takes every ``num_shards``-th position (or a block with
  ``MS_DEV_MINDRECORD_SHARD_BY_BLOCK``);
* PARTIAL: the files in a shuffled order, then the shard's positions in that layout, shuffled
  within each window of 1 million;
* replacement: draw ``i`` of epoch ``e`` is one ``mt19937(seed + 1 + e + i)`` draw over the
  previous epoch's list.

These orders are arrays (a permutation per epoch, as MindSpore holds: the mode is exempt from
recordio's O(1) order memory), computed in Python, about a second per million rows and epoch.
Ranks and DataLoader workers take their positions of the same array, as in the default mode.
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.order.shuffle import ADAPTIVE_LIMIT, Shuffle

__all__ = ["Cumulative", "MT19937", "MinStd0", "distributed_order", "draws", "files", "infile", "partial",
           "random_order", "refuse", "shuffle_kind", "shuffle_list", "shuffled", "uniform"]

_M = 2147483647            # minstd_rand0's modulus
PARTIAL_WINDOW = 1_000_000  # ShardTaskList's ShuffleSize


class MinStd0:
    """``std::minstd_rand0`` (GCC's ``std::default_random_engine``)."""

    min, max = 1, _M - 1

    def __init__(self, seed: int) -> None:
        s = (int(seed) & 0xFFFFFFFF) % _M         # MindSpore's seeds are uint32: seed + 1 wraps at 2^32
        self.x = 1 if s == 0 else s

    def __call__(self) -> int:
        self.x = self.x * 16807 % _M
        return self.x


class MT19937:
    """``std::mt19937``."""

    min, max = 0, 0xFFFFFFFF

    def __init__(self, seed: int) -> None:
        mt = [int(seed) & 0xFFFFFFFF]
        for i in range(1, 624):
            mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
        self.mt, self.i = mt, 624

    def _twist(self):
        mt = self.mt
        for k in range(624):
            y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7FFFFFFF)
            mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        self.i = 0

    def __call__(self) -> int:
        if self.i >= 624:
            self._twist()
        y = self.mt[self.i]
        self.i += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)


def uniform(g, a: int, b: int) -> int:
    """libstdc++'s ``uniform_int_distribution(a, b)(g)`` for ``b - a`` below the engine's range."""
    urange = b - a
    span = g.max - g.min
    if span == 0xFFFFFFFF:                      # a full 32-bit engine: Lemire's multiply-shift
        uerange = urange + 1
        product = (g() - g.min) * uerange
        low = product & 0xFFFFFFFF
        if low < uerange:
            threshold = (-uerange & 0xFFFFFFFF) % uerange
            while low < threshold:
                product = (g() - g.min) * uerange
                low = product & 0xFFFFFFFF
        return (product >> 32) + a
    scaling = span // (urange + 1)
    past = (urange + 1) * scaling
    while True:
        r = g() - g.min
        if r < past:
            return r // scaling + a


def shuffle_list(items: list, seed: int, engine=MinStd0) -> list:
    """``std::shuffle(items, std::default_random_engine(seed))`` in place (libstdc++); returns it.
    ``engine``: another engine class (``MT19937``: ``std::shuffle`` with ``std::mt19937(seed)``)."""
    n = len(items)
    if n < 2:
        return items
    g = engine(seed)
    span = g.max - g.min
    if span // n >= n:                            # two positions from one draw
        i = 1
        if n % 2 == 0:
            j = uniform(g, 0, 1)
            items[1], items[j] = items[j], items[1]
            i = 2
        while i < n:
            bound = i + 1
            x = uniform(g, 0, bound * (bound + 1) - 1)
            j, k = x // (bound + 1), x % (bound + 1)
            items[i], items[j] = items[j], items[i]
            items[i + 1], items[k] = items[k], items[i + 1]
            i += 2
        return items
    for i in range(1, n):
        j = uniform(g, 0, i)
        items[i], items[j] = items[j], items[i]
    return items


def _segments(counts):
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int).tolist()
    return list(zip(starts[:-1], starts[1:]))


def files(items: list, counts, seed: int) -> list:
    """Shuffle.FILES: the files' segments of ``items`` in a shuffled file order."""
    segments = _segments(counts)
    return [x for k in shuffle_list(list(range(len(segments))), seed) for x in items[slice(*segments[k])]]


def infile(items: list, counts, seed: int) -> list:
    """Shuffle.INFILE: each file's segment of ``items`` shuffled, each with a fresh engine."""
    return [x for a, b in _segments(counts) for x in shuffle_list(items[a:b], seed)]


def shuffled(mode: str, items: list, counts, seed: int) -> list:
    """One epoch's shuffle of ``items`` (GLOBAL, FILES or INFILE)."""
    if mode == "files":
        return files(items, counts, seed)
    if mode == "infile":
        return infile(items, counts, seed)
    return shuffle_list(list(items), seed)


def _mt_first_two(seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two outputs of ``mt19937(seed)`` for each seed, vectorised: they need the state's
    words 0..398 only (a twist of words 0 and 1)."""
    mask = np.uint64(0xFFFFFFFF)
    state = [seeds.astype(np.uint64) & mask]
    for i in range(1, 399):
        prev = state[-1]
        state.append((np.uint64(1812433253) * (prev ^ (prev >> np.uint64(30))) + np.uint64(i)) & mask)

    def twisted(k):
        y = (state[k] & np.uint64(0x80000000)) | (state[k + 1] & np.uint64(0x7FFFFFFF))
        return state[k + 397] ^ (y >> np.uint64(1)) ^ np.where(y & np.uint64(1), np.uint64(0x9908B0DF), np.uint64(0))

    def temper(y):
        y = y ^ (y >> np.uint64(11))
        y = y ^ ((y << np.uint64(7)) & np.uint64(0x9D2C5680))
        y = y ^ ((y << np.uint64(15)) & np.uint64(0xEFC60000))
        return y ^ (y >> np.uint64(18))
    return temper(twisted(0)), temper(twisted(1))


def draws(items: list, count: int, seed: int, chunk: int = 1 << 14) -> list:
    """``count`` draws with replacement from ``items``: draw ``i`` is
    ``uniform_int_distribution(0, len - 1)(mt19937(seed + i))`` (Lemire's method), vectorised."""
    span = len(items)
    threshold = ((1 << 32) - span) % span
    picks = []
    for start in range(0, count, chunk):
        seeds = (seed + np.arange(start, min(count, start + chunk), dtype=np.int64)) & 0xFFFFFFFF
        first, second = _mt_first_two(seeds)
        product = first * np.uint64(span)
        redo = (product & np.uint64(0xFFFFFFFF)) < np.uint64(threshold)
        product[redo] = second[redo] * np.uint64(span)
        again = np.flatnonzero(redo & ((product & np.uint64(0xFFFFFFFF)) < np.uint64(threshold)))
        index = (product >> np.uint64(32)).astype(np.int64)
        for k in again:                          # a third draw: rarer than 1 in 2^60 rows
            index[k] = uniform(MT19937(int(seeds[k])), 0, span - 1)
        picks.append(index)
    index = np.concatenate(picks) if picks else np.zeros(0, np.int64)
    return np.asarray(items, dtype=np.int64)[index].tolist()


def partial(counts, seed: int, positions=None) -> np.ndarray:
    """Shuffle.PARTIAL: the files laid out in a shuffled order; ``positions`` of that layout (all
    by default; a shard's otherwise), shuffled within each window of 1 million; as row ids."""
    segments = _segments(counts)
    layout = np.concatenate([np.arange(*segments[k], dtype=np.int64)
                             for k in shuffle_list(list(range(len(segments))), seed)] or [np.zeros(0, np.int64)])
    pos = list(range(len(layout))) if positions is None else [int(p) for p in positions]
    out = []
    for start in range(0, len(pos), PARTIAL_WINDOW):
        out += shuffle_list(pos[start:start + PARTIAL_WINDOW], seed)
    return layout[np.asarray(out, dtype=np.int64)] if out else np.zeros(0, np.int64)


class Cumulative:
    """The lists of successive epochs where each epoch transforms the previous one (MindSpore's
    task list without shards): ``step(items, epoch)`` makes epoch ``epoch`` from epoch
    ``epoch - 1``'s list. Holds the latest epoch's list, so epoch after epoch costs one step."""

    def __init__(self, n: int, step) -> None:
        self.n, self.step = n, step
        self.epoch, self.items = -1, list(range(n))

    def at(self, epoch: int) -> np.ndarray:
        if epoch < self.epoch:
            self.epoch, self.items = -1, list(range(self.n))
        while self.epoch < epoch:
            self.epoch += 1
            self.items = self.step(self.items, self.epoch)
        return np.asarray(self.items, dtype=np.int64)


# --- the samplers' orders in this mode ------------------------------------------------------------

def _check_source(source, what):
    if not getattr(source, "has_mindspore_orders", False):       # a MindDataset (its class says so)
        raise NotImplementedError(f"order mode 'mindspore' reproduces MindDataset's orders only; {what} over "
                                  f"{type(source).__name__} has no MindSpore order here (set_order_mode('recordio'))")


def shuffle_kind(mode, n):
    if mode in (None, False, Shuffle.FALSE):
        return None
    if mode == Shuffle.ADAPTIVE:
        mode = Shuffle.GLOBAL if n <= ADAPTIVE_LIMIT else Shuffle.PARTIAL
    return mode.value


def refuse(what, why):
    raise NotImplementedError(f"order mode 'mindspore': {what}: {why} is not reproduced (set_order_mode('recordio'))")


def random_order(sampler, shuffle, n, seed, epoch, source, replacement=False, num_samples=None):
    """A ``RandomSampler`` (or a MindDataset shuffled without shards) in MindSpore's order: each
    epoch transforms the previous epoch's list."""
    _check_source(source, type(sampler).__name__)
    mode = shuffle_kind(shuffle, n)
    counts = list(source.file_counts())
    if mode is None:
        return np.arange(n, dtype=np.int64)
    if mode == "partial" and not replacement:
        return partial(counts, seed + 1 + epoch, range(min(n, num_samples or n)))
    if num_samples and mode in ("files", "infile") and not replacement:
        refuse(type(sampler).__name__, f"Shuffle.{mode.upper()} with num_samples")
    if replacement:
        def step(items, e):
            return draws(items, num_samples or n, seed + 1 + e)
    else:
        def step(items, e):
            return shuffled(mode, items, counts, seed + 1 + e)[:num_samples or None]
    cache = sampler.__dict__.setdefault("_ms_orders", {})
    key = (n, seed, mode, replacement, num_samples)
    if key not in cache:
        cache[key] = Cumulative(n, step)
    return cache[key].at(epoch)


def _slots(total, num, shard, by_block):
    per = -(-total // num)
    if by_block:
        return shard * per + np.arange(per), np.arange(shard * per, (shard + 1) * per) % max(total, 1)
    return shard + num * np.arange(per), (shard + num * np.arange(per)) % max(total, 1)


def distributed_order(shuffle, n, seed, epoch, source, num_shards, by_block, padded=0):
    """A sharded MindDataset's epoch in MindSpore's order (each epoch shuffles the dataset order
    afresh; the source takes the shard's positions of it). PARTIAL deals each shard's rows into
    the slots the source reads (an array of ``num_shards * ceil(n / num_shards)``)."""
    _check_source(source, "DistributedSampler")
    total = n + padded
    mode = shuffle_kind(shuffle, n)
    if mode is None:
        return np.arange(total, dtype=np.int64)
    if padded and mode != "global":
        refuse("padded samples", f"Shuffle.{mode.upper()} with num_padded")
    counts = list(source.file_counts())
    if mode != "partial":
        return np.asarray(shuffled(mode, list(range(total)), counts, seed + 1 + epoch), dtype=np.int64)
    per = -(-n // num_shards)
    dealt = np.zeros(per * num_shards, dtype=np.int64)
    for shard in range(num_shards):
        slots, positions = _slots(n, num_shards, shard, by_block)
        dealt[slots] = partial(counts, seed + 1 + epoch, positions)
    return dealt


def dealt_total(shuffle, n, num_shards):
    """The length of :func:`distributed_order`'s array."""
    return -(-n // num_shards) * num_shards if shuffle_kind(shuffle, n) == "partial" else n
