"""The common half of random-access sources: order the epoch, take this shard's share, fetch.

A source fetches rows in chunks of :data:`CHUNK` ids (one ``__getitems__`` call per chunk for a
MindDataset); with several workers the chunks are fetched in parallel and delivered in order.
An epoch's rows come as an :class:`EpochRows`: the row dicts, with their row ids and resume
points computed in bulk, so that ``batch`` can build its columns without an ``Item`` per row.
"""

import copy
import itertools
import weakref

import numpy as np

from recordio.dataset.order import shards as _shards
from recordio.dataset.order.samplers import split_sampler
from recordio.dataset.order.shuffle import epoch_rng
from recordio.dataset.node import Dataset, Item
from recordio.dataset.order.permutation import pick
from recordio.errors import PipelineError
from recordio.dataset.workers import effective_workers

__all__ = ["CHUNK", "EpochRows", "SampledSource"]

CHUNK = 64


class SampledSource(Dataset):
    """A source whose rows can be read by id; ``sampler`` decides the order and the shard."""

    def __init__(self, sampler, num_parallel_workers, python_multiprocessing):
        super().__init__()
        self.sampler = sampler
        self.num_parallel_workers = num_parallel_workers
        self._fetch_workers = num_parallel_workers or 1
        self.python_multiprocessing = python_multiprocessing

    # subclasses: _num_rows(), _fetch(ids) -> list of column dicts, _columns()
    def _num_rows(self) -> int:
        raise NotImplementedError
    def _shard_split(self, ctx):
        return self._split(ctx)

    def _rank_split(self, ctx):
        """``(num_shards, shard_id)`` of this rank: the sampler's, else torch.distributed's."""
        shards = self.sampler.shards
        if shards is None and getattr(self.sampler, "auto_shard", False):
            shards = ctx.world and (ctx.world[0], ctx.world[1])
        return shards or (1, 0)

    def _split(self, ctx):
        """The rank's split times the DataLoader workers' (rows dealt one by one)."""
        num, sid = self._rank_split(ctx)
        if ctx.shards is not None:
            extra, extra_id = ctx.shards
            num, sid = num * extra, sid * extra + extra_id
        return num, sid

    def _size(self, ctx):
        num, _ = self._rank_split(ctx)
        per = _shards.shard_size(self.sampler.total(self._num_rows(), self), num)
        per = min(per, self.sampler.num_samples) if self.sampler.num_samples else per
        if ctx.shards is not None:
            per = len(_shards.worker_blocks(per, *ctx.shards, ctx.block))
        return per

    def _block_rows(self):
        return 1

    def split(self, sizes: list, randomize: bool = True) -> tuple:
        """Non-overlapping datasets of ``sizes`` rows (ints summing to the size, or fractions summing
        to 1, rounded as MindSpore does); with ``randomize`` the rows are dealt from one fixed random
        order of ``config.get_seed()``. Each split reads its rows in the same order every epoch (as
        MindSpore's); ``use_sampler`` on a part samples the part's rows."""
        if self.sampler.shards is not None:
            raise PipelineError("split: the dataset should not be sharded before split")
        absolute = split_sizes(sizes, self._num_rows())
        ids = np.arange(self._num_rows(), dtype=np.int64)
        if randomize:
            from recordio import config
            ids = epoch_rng(config.get_seed(), 0, _SPLIT_TAG).permutation(ids)
        starts = np.concatenate([[0], np.cumsum(absolute)[:-1]])
        return tuple(self._with_sampler(split_sampler(ids[s:s + n])) for s, n in zip(starts, absolute))

    def _with_sampler(self, sampler):
        clone = copy.copy(self)
        clone.sampler = sampler
        clone.children, clone._consumers = [], weakref.WeakSet()
        clone._state = clone._pending_state = clone._final_state = None
        return clone

    def _positional(self):
        return not getattr(self.sampler, "by_block", False)     # blocks resume by replaying the epoch

    def _shard_positions(self, total, num, sid, start, same_split):
        if getattr(self.sampler, "by_block", False):
            return _shards.block_positions(total, num, sid)
        return _shards.shard_positions(total, num, sid, start, same_split)

    def _fetch_runner(self, ctx):
        workers = effective_workers(self._fetch_workers, self.num_parallel_workers is not None, type(self).__name__)
        processes = self.python_multiprocessing and workers > 1
        return ctx.runner(self, self._fetch, workers, processes, 2 * workers)

    def _items(self, ctx, epoch):
        ep = self._epoch_rows(ctx, epoch)
        return map(Item, ep.rows, ep.row_ids(), itertools.repeat(epoch), ep.positions_after())

    def _epoch_rows(self, ctx, epoch):
        """This shard's rows of ``epoch`` as an :class:`EpochRows` (no :class:`Item` per row)."""
        start = ctx.start_of(epoch)
        if start is None:
            return EpochRows(epoch, iter(()), np.zeros(0, np.int64), 0, 1, 0)
        ids = self.sampler.order(self._num_rows(), ctx.seed, epoch, self)
        num, sid = self._rank_split(ctx)
        total = len(ids)
        if self.sampler.num_samples and self._positional():
            # each shard reads at most num_samples: the epoch is the first num * num_samples positions,
            # so a resumed epoch ends where the uninterrupted one ends
            total = min(total, num * self.sampler.num_samples)
        positions = self._shard_positions(total, num, sid, start, ctx.same_split)
        if self.sampler.num_samples:
            positions = positions[:self.sampler.num_samples]
        index = None
        if ctx.shards is not None:         # DataLoader workers: blocks of the rank's positions
            first = start // num if ctx.same_split else 0     # a worker's own state, or a fresh deal
            index = _shards.worker_blocks(len(positions), *ctx.shards, ctx.block, first)
            positions = positions[index]
        mine = pick(ids, positions)
        read = self._column_reader()
        if index is None and self._reads_everything_in_order(mine, len(ids)):
            return EpochRows(epoch, self._scan_rows(), None, 0, 1, len(ids), read_columns=read)
        rows = _started_on_use(self._by_id, ctx, mine) if read is not None else self._by_id(ctx, mine)
        return EpochRows(epoch, rows, mine, start, num, len(ids), index, read)

    def _column_reader(self):
        """A function from an int64 array of row ids to those rows as one batch's columns (what
        ``batch`` would build from the rows), where the source can read columns directly; else None."""
        return None

    def _by_id(self, ctx, ids):
        """Rows read by id, a chunk of :data:`CHUNK` ids at a time, the first row alone (a shuffled
        epoch's first row then pays for one row's locations and checks, not for the farthest of a
        chunk's); the chunks still end at multiples of :data:`CHUNK`."""
        cuts = [0, 1, *range(CHUNK, len(ids), CHUNK), len(ids)] if len(ids) > 1 else [0, len(ids)]
        chunks = (ids[a:b] for a, b in zip(cuts, cuts[1:]) if b > a)
        return itertools.chain.from_iterable(self._fetch_runner(ctx).imap(chunks))

    def _reads_everything_in_order(self, mine, total):
        n = self._num_rows()
        return (self._scan_rows is not None and len(mine) == n == total and isinstance(mine, np.ndarray)
                and np.array_equal(mine, np.arange(n)))

    _scan_rows = None      # a source that can stream all its rows in order faster than by id


class EpochRows:
    """One shard's rows of one data epoch: ``rows`` (an iterator of column dicts), their row ids
    and the resume point after each, computed in bulk.

    ``ids``: the row ids in delivery order (``None``: ``0, 1, 2, ...``, the sequential scan).
    ``read_columns``: where the source reads columns directly, a function from an int64 array of row
    ids to those rows as one batch's columns (``batch`` then never iterates ``rows``).
    ``index``: the shard's position index of each row delivered (``None``: ``0, 1, 2, ...``; a
    DataLoader worker reads blocks of them). After the row of index ``k``, the epoch's global order
    is consumed up to ``min(total, start + num * (k + 1))`` (ranks in lockstep).
    """

    def __init__(self, epoch, rows, ids, start, num, total, index=None, read_columns=None):
        self.epoch, self.rows, self.ids = epoch, rows, ids
        self.start, self.num, self.total = start, num, total
        self.index = index
        self.read_columns = read_columns

    def __len__(self):
        """Rows delivered in this epoch."""
        return self.total if self.ids is None else len(self.ids)

    def ids_of(self, first, end):
        """Row ids of the rows ``first .. end - 1`` delivered, as an int64 array."""
        if self.ids is None:
            return np.arange(first, end, dtype=np.int64)
        return self.ids[first:end].copy()          # a batch owns its ids

    def position_after(self, delivered):
        if self.index is not None and delivered:
            delivered = int(self.index[delivered - 1]) + 1
        return self.epoch, _shards.consumed_after(self.start, self.num, delivered, self.total)

    def row_ids(self):
        return itertools.count() if self.ids is None else _shards.iter_chunks(self.ids)

    def positions_after(self):
        if self.ids is None:
            return zip(itertools.repeat(self.epoch), itertools.count(1))
        consumed = _shards.consumed_chunks(self.start, self.num, self.total, len(self.ids), self.index)
        return zip(itertools.repeat(self.epoch), consumed)


def _started_on_use(make, *args):
    """``make(*args)``'s iterator, made when first iterated (not at all when never iterated)."""
    yield from make(*args)


_SPLIT_TAG = 0x5B117


def split_sizes(sizes, total):
    """MindSpore's absolute split sizes: ints as given (they must sum to ``total``), else fractions
    rounded, the difference going to the first split (or taken from the first that can give it)."""
    if not isinstance(sizes, list) or not sizes:
        raise PipelineError(f"split: sizes must be a non-empty list, got {sizes!r}")
    if all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        if any(s <= 0 for s in sizes) or sum(sizes) != total:
            raise PipelineError(f"split: sizes {sizes} must be positive and sum to the dataset size {total}")
        return list(sizes)
    if not all(isinstance(s, float) and 0 < s <= 1 for s in sizes) or abs(sum(sizes) - 1) > 1e-6:
        raise ValueError(f"split: sizes must be all ints or all floats in (0, 1] summing to 1, got {sizes}")
    absolute = [int(round(s * total)) for s in sizes]
    if 0 in absolute:
        raise PipelineError(f"split: percentage {sizes[absolute.index(0)]} is too small for {total} rows")
    difference = total - sum(absolute)
    if difference > 0:
        absolute[0] += difference
    else:
        k = next(i for i, n in enumerate(absolute) if n + difference > 0)
        absolute[k] += difference
    return absolute


def check_sampler_args(sampler, shuffle, num_shards):
    if sampler is not None and (shuffle is not None or num_shards is not None):
        raise PipelineError("sampler and shuffle cannot be specified at the same time. A sampler cannot be "
                            "combined with shuffle or num_shards/shard_id "
                            "(give them to the sampler instead)")
    return sampler
