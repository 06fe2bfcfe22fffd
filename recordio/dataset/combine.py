"""The operations over several children: zip (rows side by side) and concat (one child after another,
shardable and shuffled as a whole through ``use_sampler``)."""

import itertools

import numpy as np

from recordio.dataset.batch_op import BatchDataset
from recordio.dataset.generator import GeneratorDataset
from recordio.dataset.mind_dataset import MindDataset
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.order.shuffle import Shuffle, epoch_rng
from recordio.dataset.order.samplers import DistributedSampler, RandomSampler, SubsetSampler
from recordio.errors import PipelineError, type_check

__all__ = ["ConcatDataset", "ZipDataset", "concat_share", "zip_datasets"]


@operation
class ZipDataset(Dataset):
    """Rows side by side, until the shortest child ends; column names must not clash."""

    def _mixes_sources(self):
        return True

    def __init__(self, datasets):
        super().__init__(datasets)
        names = [c for d in datasets for c in d._columns()]
        dupes = sorted({c for c in names if names.count(c) > 1})
        if dupes:
            raise PipelineError(f"zip: column(s) {dupes} appear in more than one dataset; rename them first")

    def _positional(self):
        return False

    def _columns(self):
        return [c for d in self.children for c in d._columns()]

    def _size(self, ctx):
        sizes = [d._size(ctx) for d in self.children]
        return None if None in sizes else min(sizes)

    def _items(self, ctx, epoch):
        for items in zip(*[d._items(ctx, epoch) for d in self.children]):
            cols = {}
            for it in items:
                cols.update(it.cols)
            yield Item(cols, items[0].row, items[0].epoch, None)


def zip_datasets(datasets):
    """``mindspore.dataset.zip``: the datasets of a tuple side by side (``ds.zip((a, b))``)."""
    type_check(datasets, (tuple,), "datasets")
    if len(datasets) <= 1:
        raise ValueError("Can't zip empty or just one dataset!")
    for dataset in datasets:
        if not isinstance(dataset, Dataset):
            raise TypeError(f"Invalid dataset, expected Dataset object, but got {type(dataset)}!")
    return ZipDataset(list(datasets))


@operation
class ConcatDataset(Dataset):
    """The children one after another; row ids of child ``k`` are offset by ``k << 40``.

    :meth:`use_sampler` shards or shuffles the concatenation as a whole (MindSpore's).
    """

    def _mixes_sources(self):
        return True

    def __init__(self, datasets):
        datasets = list(datasets)
        if len(datasets) < 2:
            raise ValueError("concat needs at least two datasets")
        super().__init__(datasets)
        first = datasets[0]._columns()
        for d in datasets[1:]:
            if d._columns() != first:
                raise PipelineError(f"concat: column names differ: {first} vs {d._columns()}")
        self.split = None            # (num_shards, shard_id) after use_sampler(DistributedSampler)
        self.interleave = False      # True after use_sampler(RandomSampler)
        self.by_row = []             # per child: True when it takes its own share of a split
        self._sizes = None

    def use_sampler(self, sampler):
        """Shard the concatenation as MindSpore's ``ConcatDataset.use_sampler`` does
        (``DistributedSampler(n, s, shuffle=False)``), or interleave the children at random, each in
        its own order (``RandomSampler()``).

        Sharding, MindSpore's way: a child read by row (MindDataset, a random-access
        GeneratorDataset or PaddedDataset) takes its own share, as a ``DistributedSampler`` with
        ``offset`` = the rows before it modulo ``n`` would: a MindDataset a contiguous block of its
        rows, the others every ``n``-th row; the other children's rows are dealt round robin, counting
        on across children and epochs (see :func:`concat_share`)."""
        if not isinstance(sampler, (DistributedSampler, RandomSampler)):
            raise TypeError(f"The parameter {sampler} of concat must be DistributedSampler or RandomSampler!")
        if isinstance(sampler, RandomSampler):
            if sampler.replacement:
                raise ValueError("The parameter replacement of RandomSampler must be False!")
            if sampler.num_samples is not None:
                raise ValueError("The parameter num_samples of RandomSampler is not support to be set!")
            for node in self._nodes():
                if isinstance(node, ConcatDataset):
                    node.interleave, node.split = True, None
            return
        self._check_split(sampler)
        self._shard_children(sampler.num_shards, sampler.shard_id)
        self.split, self.interleave = (sampler.num_shards, sampler.shard_id), False

    def add_sampler(self, sampler):
        """As :meth:`use_sampler` (a concatenation has no sampler to chain onto; MindSpore 2.10's
        ``ConcatDataset.add_sampler`` crashes the process)."""
        self.use_sampler(sampler)

    def _full_sizes(self):
        """Each child's size before any ``use_sampler`` (MindSpore's ``children_sizes_``; 0 for an
        iterable GeneratorDataset), measured once."""
        if self._sizes is None:
            self._sizes = [d.get_dataset_size() if _by_row(d) is not False else 0 for d in self.children]
        return self._sizes

    def _shard_children(self, num, sid):
        self.by_row, offset = [], 0
        for child, size in zip(self.children, self._full_sizes()):
            kind = _by_row(child)
            self.by_row.append(bool(kind) and size > 0)
            if self.by_row[-1]:
                child.use_sampler(SubsetSampler(concat_share(kind, size, num, sid, offset)))
            offset = (offset + size) % num

    def _check_split(self, sampler):
        if sampler.get_shuffle_mode() != Shuffle.FALSE:
            raise ValueError("The parameter shuffle of DistributedSampler must be False!")
        if sampler.num_samples is not None:
            raise ValueError("The parameter num_samples of DistributedSampler is not support to be set!")
        for child in self.children:
            if getattr(getattr(child, "sampler", None), "num_samples", None) is not None:
                raise ValueError(f"The parameter NumSamples of {child} is not support to be set!")
            if isinstance(child, BatchDataset):
                raise TypeError(f"The parameter {child} of concat must not be BatchDataset or PaddedBatchDataset!")

    def _positional(self):
        return False

    def _size(self, ctx):
        sizes = [d._size(ctx) for d in self.children]
        if None in sizes:
            return None
        if self.split is None:
            return sum(sizes)
        num, sid = self.split
        count, dealt = 0, self._dealt_before(ctx, 0)
        for k, size in enumerate(sizes):
            if self.by_row[k]:
                count, dealt = count + size, dealt + self._full_sizes()[k]
            else:
                count, dealt = count + len(range((sid - dealt) % num, size, num)), dealt + size
        return count

    def _dealt_before(self, ctx, epoch):
        """MindSpore's count of rows dealt before data epoch ``epoch`` (its ConcatOp never resets it):
        per epoch, the rows of the children dealt round robin and the full size of the others but
        the last child (whose end starts the next epoch before it is counted); 0 when a size is
        unknown."""
        if not epoch:
            return 0
        per = 0
        for k, child in enumerate(self.children):
            if self.by_row[k] and k == len(self.children) - 1:
                break
            size = self._full_sizes()[k] if self.by_row[k] else child._size(ctx)
            if size is None:
                return 0
            per += size
        return epoch * per

    def _items(self, ctx, epoch):
        parts = [self._offset(k, d._items(ctx, epoch)) for k, d in enumerate(self.children)]
        if self.interleave:
            sizes = [d._size(ctx) for d in self.children]
            yield from _interleaved(parts, sizes, epoch_rng(ctx.seed, epoch, ctx.node_uid(self)))
            return
        if self.split is None:
            yield from itertools.chain.from_iterable(parts)
            return
        num, sid = self.split
        if ctx.fast_restart:         # MindSpore rebuilt its pipeline at the step: the count restarts
            epoch -= ctx.__dict__.setdefault("concat_first", {}).setdefault(id(self), epoch)
        dealt = self._dealt_before(ctx, epoch)
        for k, part in enumerate(parts):
            if self.by_row[k]:           # the child took its own share
                yield from part
                dealt += self._full_sizes()[k]
                continue
            for item in part:
                if dealt % num == sid:
                    yield item
                dealt += 1

    @staticmethod
    def _offset(k, items):
        for it in items:
            yield Item(it.cols, it.row + (k << 40), it.epoch, None)


def _by_row(child):
    """"mindrecord" / "rows" for a child MindSpore's concat shards by its own sampler (a MindDataset; a
    GeneratorDataset over a random-access source, PaddedDataset included), False for an iterable
    GeneratorDataset (MindSpore counts it as 0 rows), None for the other children (dealt round robin)."""
    if isinstance(child, MindDataset):
        return "mindrecord"
    if isinstance(child, GeneratorDataset):
        return "rows" if child.random_access else False
    return None


def concat_share(kind, n, num, sid, offset):
    """The positions of a child's ``n`` rows that shard ``sid`` of ``num`` reads when ``offset`` rows
    (modulo ``num``) come before it: MindSpore's ``DistributedSampler(num, sid, offset=offset)``.
    Shard ``x`` takes the rows ``j`` in ``[offset, offset + n)`` with ``j % num == x`` (shifted by
    ``offset``); a MindDataset (``ShardSample``) takes as many rows as a contiguous block, shards in
    order, a GeneratorDataset (``DistributedSamplerRT``) those very rows."""
    if kind != "mindrecord":
        return np.arange((sid - offset) % num, n, num, dtype=np.int64)
    counts = [len(range((x - offset) % num, n, num)) for x in range(max(num, sid + 1))]
    start = sum(counts[:sid])
    return np.arange(start, start + counts[sid], dtype=np.int64)


def _interleaved(parts, sizes, rng):
    """The children's items merged in a random order that keeps each child's own order: the next item
    comes from a child drawn in proportion to the items it has left (children of unknown size:
    after the others, in turn)."""
    left = [0 if n is None else n for n in sizes]
    while sum(left):
        k = int(rng.choice(len(left), p=np.asarray(left) / sum(left)))
        left[k] -= 1
        item = next(parts[k], None)
        if item is None:
            left[k] = 0
            continue
        yield item
    for part in parts:
        yield from part
