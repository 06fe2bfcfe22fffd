"""MindSpore 2.10's row orders for TextFileDataset, reproduced (``config.set_order_mode("mindspore")``).

TextFileDataset is a non-mappable source in MindSpore (``TextFileOp`` on ``NonMappableLeafOp``);
its order comes from four steps, each reproduced here:

* the files, sorted by name, in an order shuffled at the start of every epoch when ``shuffle`` is
  ``Shuffle.GLOBAL`` (the default) or ``Shuffle.FILES`` (``NonMappableLeafOp::ShuffleKeys``):
  ``std::shuffle`` with ``std::mt19937``, applied to the previous epoch's file order; its seed is
  ``config.get_seed()`` every epoch without shards, ``e + 1`` in epoch ``e`` (0-based) with shards
  (a counter of the op's own, the same on every shard);
* the shard: ``ceil(N / num_shards)`` consecutive rows of the files in that order, from row
  ``shard_id * ceil(N / num_shards)``, wrapping to the first file at the end
  (``NeedPushFileToBlockQueue``, ``FillIOBlockQueue``); each file's part is an I/O block, dealt to
  the ``num_parallel_workers`` workers in turn;
* the workers' rows, taken one at a time from each worker in turn, a worker dropping out when it
  has read its blocks (``JaggedConnector::Pop``); at most ``num_samples`` of them;
* with ``Shuffle.GLOBAL``, a ``ShuffleOp`` over that stream: a buffer of
  ``max(4 * rows per shard // files, 10000)`` rows; each row out is the buffer's slot
  ``mt19937_64() % size``, the slot taking the buffer's last row and the last slot the stream's
  next row; one engine, seeded ``config.get_seed()`` when the pipeline is built, draws on across
  epochs (``ShuffleOp::SelfReset`` reseeds it only when it does not reshuffle each epoch).

The order therefore depends on ``num_parallel_workers`` (as MindSpore's does), whose default here
is ``config.get_num_parallel_workers()``; MindSpore's default is its own config's
``num_parallel_workers``, which follows the machine's CPU count: give ``num_parallel_workers`` to
reproduce an order across machines.
"""

from __future__ import annotations

import itertools

import numpy as np

from recordio import config
from recordio.dataset.order import ms_order
from recordio.dataset.order.sampler_chain import mindspore_orders
from recordio.dataset.order.samplers import DefaultOrder
from recordio.dataset.order.shuffle import Shuffle

__all__ = ["Engines", "MT19937_64", "TextOrder", "epoch_rows", "file_orders", "shard_rows", "shuffle_buffer"]

SHUFFLE_MIN = 10_000          # ComputeShuffleSize's shuffle_max
FILES_MULTIPLIER = 4          # ComputeShuffleSize's average_files_multiplier
_M64 = (1 << 64) - 1


class MT19937_64:
    """``std::mt19937_64``."""

    def __init__(self, seed: int) -> None:
        mt = [int(seed) & _M64]
        for i in range(1, 312):
            mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & _M64)
        self.mt, self.i = mt, 312

    def _twist(self):
        mt = self.mt
        for k in range(312):
            y = (mt[k] & 0xFFFFFFFF80000000) | (mt[(k + 1) % 312] & 0x7FFFFFFF)
            mt[k] = mt[(k + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
        self.i = 0

    def __call__(self) -> int:
        if self.i >= 312:
            self._twist()
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return y ^ (y >> 43)


def file_orders(num_files: int, shuffle_files: bool, sharded: bool, seed: int, epochs: int) -> list:
    """The file order of each of ``epochs`` epochs (each epoch shuffles the previous one's)."""
    keys, out = list(range(num_files)), []
    for e in range(epochs):
        if shuffle_files:
            keys = ms_order.shuffle_list(keys, (e + 1) if sharded else seed, ms_order.MT19937)
        out.append(list(keys))
    return out


def shard_rows(counts, keys, num_shards: int, shard_id: int, workers: int, num_samples=None) -> np.ndarray:
    """Row ids (numbered in file-name order) shard ``shard_id`` reads, in the order its workers'
    rows come out, with files in the order ``keys``."""
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(starts[-1])
    per = -(-total // num_shards)
    begin, end = shard_id * per, (shard_id + 1) * per
    blocks, pre = [], 0
    while True:
        for f in keys:
            count = int(counts[f])
            lo, hi = max(begin, pre), min(end, pre + count)
            if lo < hi or (pre <= begin < pre + count):
                blocks.append(np.arange(starts[f] + lo - pre, starts[f] + max(lo, hi) - pre, dtype=np.int64))
            pre += count
        if pre >= end or total == 0:
            break
    streams = [np.concatenate(blocks[w::workers]) if blocks[w::workers] else np.zeros(0, np.int64)
               for w in range(workers)]
    longest = max((len(s) for s in streams), default=0)
    rows: list[int] = []
    for r in range(longest):                        # one row of each live worker in turn
        rows.extend(int(s[r]) for s in streams if r < len(s))
    out = np.asarray(rows, dtype=np.int64)
    return out[:num_samples] if num_samples else out


def shuffle_buffer(rows, size: int, g) -> list:
    """MindSpore's ``ShuffleOp`` over the rows ``rows`` with a buffer of ``size`` rows, drawing from the
    engine ``g`` (one draw per row out)."""
    return list(shuffle_stream(rows, size, g))


_END = object()


def shuffle_stream(rows, size: int, g):
    """:func:`shuffle_buffer` over an iterable, a row at a time (``Dataset.shuffle`` in order mode
    "mindspore"): the buffer is filled first; each row out is drawn from it and its slot refilled from
    upstream while rows come, then the buffer is drained."""
    upstream = iter(rows)
    buffer = list(itertools.islice(upstream, size))
    active = len(buffer) == size
    last = len(buffer) - 1
    while last >= 0:
        slot = g() % (last + 1)
        yield buffer[slot]
        buffer[slot] = buffer[last]
        if active:
            nxt = next(upstream, _END)
            if nxt is _END:
                active = False
            else:
                buffer[last] = nxt
        if not active:
            last -= 1


class Engines:
    """Each shard's ``ShuffleOp`` engine: ``mt19937_64(seed)``, made once and drawn on across epochs
    (``ShuffleOp::SelfReset`` does not reseed it when it reshuffles each epoch). Keeps the latest
    state, so epoch after epoch costs that epoch's draws only."""

    def __init__(self) -> None:
        self._states: dict = {}

    def at(self, seed: int, shard: int, draws: int) -> MT19937_64:
        """The engine of ``(seed, shard)`` after ``draws`` draws (a copy)."""
        done, g = self._states.get((seed, shard), (0, None))
        if g is None or done > draws:
            done, g = 0, MT19937_64(seed)
        for _ in range(draws - done):
            g()
        self._states[(seed, shard)] = (draws, g)
        return copy_engine(g)


def copy_engine(g: MT19937_64) -> MT19937_64:
    """An engine in ``g``'s state that draws on independently of it."""
    copy = MT19937_64.__new__(MT19937_64)
    copy.mt, copy.i = list(g.mt), g.i
    return copy


def buffer_size(total: int, num_files: int, num_shards: int) -> int:
    per = -(-total // num_shards)
    return max(per // num_files * FILES_MULTIPLIER, SHUFFLE_MIN)


def epoch_rows(counts, mode, workers, num_shards, shard_id, num_samples, seed, epoch, keys,
               engines: Engines | None = None) -> np.ndarray:
    """Shard ``shard_id``'s rows of epoch ``epoch`` (``mode``: None, "files" or "global"), the
    files in the order ``keys``."""
    rows = shard_rows(counts, keys, num_shards, shard_id, workers, num_samples)
    if mode == "global":
        size = buffer_size(int(sum(counts)), len(counts), num_shards)
        g = (engines or Engines()).at(seed, shard_id, epoch * len(rows))     # every epoch draws len(rows)
        rows = np.asarray(shuffle_buffer(rows.tolist(), size, g), dtype=np.int64)
    return rows


class TextOrder(DefaultOrder):
    """TextFileDataset's order: the default one, or under ``config.set_order_mode("mindspore")``
    MindSpore's (:func:`epoch_rows`): each shard's rows are dealt into the positions the source reads for
    that shard, so the source's usual shard split gives MindSpore's shard."""

    def __init__(self, mode, num_shards, shard_id, num_samples, counts, workers):
        super().__init__(mode, num_shards, shard_id, 0, num_samples)
        self.counts, self.workers = list(counts), workers
        self._engines = Engines()

    def _ms_mode(self):
        if self.mode is None:
            return None
        if self.mode in (Shuffle.GLOBAL, Shuffle.ADAPTIVE):
            return "global"
        if self.mode != Shuffle.FILES:
            ms_order.refuse("TextFileDataset", f"{self.mode} (MindSpore's TextFileDataset takes Shuffle.GLOBAL, "
                                               f"Shuffle.FILES or shuffle=False)")
        return "files"

    def _ms_shape(self):
        num, _ = self.shards or (1, 0)
        per = -(-sum(self.counts) // num)
        return num, min(per, self.num_samples) if self.num_samples else per

    def _own_order(self, n, seed, epoch, source):
        if not mindspore_orders():
            return super()._own_order(n, seed, epoch, source)
        mode = self._ms_mode()
        num, per = self._ms_shape()
        keys = file_orders(len(self.counts), mode is not None, num > 1, seed, epoch + 1)[epoch]
        workers = self.workers or config.get_num_parallel_workers()
        dealt = np.zeros(num * per, dtype=np.int64)
        for shard in range(num):
            rows = epoch_rows(self.counts, mode, workers, num, shard, self.num_samples, seed, epoch, keys,
                              self._engines)
            dealt[shard::num] = rows
        return dealt

    def _own_total(self, n, source):
        if not mindspore_orders():
            return super()._own_total(n, source)
        num, per = self._ms_shape()
        return num * per
