"""The operations that do not transform values: shuffle (buffer), repeat, project, rename,
filter, take, skip, zip and concat."""

import itertools

import numpy as np

from recordio.dataset.batch_op import BatchDataset
from recordio.dataset.generator import GeneratorDataset
from recordio.dataset.mind_dataset import MindDataset
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.order import Shuffle, epoch_rng
from recordio.dataset import ms_order, ms_text
from recordio.dataset.samplers import DistributedSampler, RandomSampler, SubsetSampler, _mindspore_orders
from recordio.dataset.values import to_op_input
from recordio.errors import PipelineError, type_check

__all__ = ["ConcatDataset", "FilterDataset", "ProjectDataset", "RenameDataset", "RepeatDataset",
           "ShuffleDataset", "SkipDataset", "TakeDataset", "ZipDataset", "zip_datasets"]


def _names(value, what):
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{what} must be a column name or a list of them, got {value!r}")
    return names


def _count(value, what, allow_all=True):
    if isinstance(value, bool) or not isinstance(value, int) or value < (-1 if allow_all else 0):
        raise ValueError(f"{what} must be an int >= {-1 if allow_all else 0}, got {value!r}")
    return value


@operation
class ShuffleDataset(Dataset):
    """A shuffle buffer of ``buffer_size`` rows, keyed by (seed, epoch, node position). Under
    ``config.set_order_mode("mindspore")``, MindSpore 2.10's ``ShuffleOp``: one ``mt19937_64`` seeded with
    the configured seed, drawn on across epochs, one draw per row out (``ms_text.shuffle_stream``)."""

    def __init__(self, child, buffer_size):
        super().__init__([child])
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"buffer_size must be an int >= 2, got {buffer_size!r}")
        self.buffer_size = buffer_size
        self._engines = ms_text.Engines()
        self._ms_next = None             # (seed, next epoch, engine) after an epoch run to its end

    def _positional(self):
        return False

    def _items(self, ctx, epoch):
        if _mindspore_orders():
            return self._mindspore_items(ctx, epoch)
        return self._keyed_items(ctx, epoch)

    def _mindspore_items(self, ctx, epoch):
        """The engine has drawn once for every row of the data epochs before this one: it goes on
        from where the last epoch run to its end left it, else it is drawn forward by the epochs' rows
        (their number must then be known without iterating them)."""
        engine = self._ms_engine(ctx, epoch)
        yield from ms_text.shuffle_stream(self.children[0]._items(ctx, epoch), self.buffer_size, engine)
        self._ms_next = (ctx.seed, epoch + 1, ms_text.copy_engine(engine))

    def _ms_engine(self, ctx, epoch):
        seed, after, engine = self._ms_next or (None, None, None)
        if (seed, after) == (ctx.seed, epoch):
            return ms_text.copy_engine(engine)
        if epoch == 0:
            return self._engines.at(ctx.seed, 0, 0)
        size = self.children[0]._size(ctx)
        if size is None:
            ms_order.refuse("Dataset.shuffle", f"starting at epoch {epoch} without the epochs before it over rows "
                                               f"whose number only iterating tells (filter, a callable batch "
                                               f"size, an iterable source)")
        return self._engines.at(ctx.seed, 0, epoch * size)

    def _keyed_items(self, ctx, epoch):
        rng = epoch_rng(ctx.seed, epoch, ctx.node_uid(self))
        buffer = []
        for item in self.children[0]._items(ctx, epoch):
            if len(buffer) < self.buffer_size:
                buffer.append(item)
                continue
            k = int(rng.integers(len(buffer)))
            buffer[k], item = item, buffer[k]
            yield item
        while buffer:
            k = int(rng.integers(len(buffer)))
            buffer[k], buffer[-1] = buffer[-1], buffer[k]
            yield buffer.pop()


@operation
class RepeatDataset(Dataset):
    """``count`` data epochs per epoch (``None``/-1: endless); data epoch = epoch * count + j."""

    def __init__(self, child, count):
        super().__init__([child])
        self.count = None if count in (None, -1) else _count(count, "repeat count", False)

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        return None if n is None or self.count is None else n * self.count

    def _items(self, ctx, epoch):
        reps = itertools.count() if self.count is None else range(self.count)
        for j in reps:
            data_epoch = j if self.count is None else epoch * self.count + j
            yield from self.children[0]._items(ctx, data_epoch)


@operation
class ProjectDataset(Dataset):
    def __init__(self, child, columns):
        super().__init__([child])
        self.columns = _names(columns, "project columns")
        missing = [c for c in self.columns if c not in child._columns()]
        if missing:
            raise PipelineError(f"project: column(s) {missing} not in {child._columns()}")

    def _block_rows(self):
        return self.children[0]._block_rows()

    def _columns(self):
        return list(self.columns)

    def _items(self, ctx, epoch):
        for item in self.children[0]._items(ctx, epoch):
            yield Item({c: item.cols[c] for c in self.columns}, item.row, item.epoch, item.pos)


@operation
class RenameDataset(Dataset):
    def __init__(self, child, input_columns, output_columns):
        super().__init__([child])
        ins, outs = _names(input_columns, "input_columns"), _names(output_columns, "output_columns")
        if len(ins) != len(outs):
            raise ValueError(f"rename: {len(ins)} input column(s) but {len(outs)} output column(s)")
        self.mapping = dict(zip(ins, outs))

    def _block_rows(self):
        return self.children[0]._block_rows()

    def _columns(self):
        return [self.mapping.get(c, c) for c in self.children[0]._columns()]

    def _items(self, ctx, epoch):
        for item in self.children[0]._items(ctx, epoch):
            yield Item({self.mapping.get(c, c): v for c, v in item.cols.items()}, item.row, item.epoch,
                       item.pos)


@operation
class FilterDataset(Dataset):
    """Keep the rows for which ``predicate(*input values)`` is true."""

    def __init__(self, child, predicate, input_columns):
        super().__init__([child])
        if not callable(predicate):
            raise TypeError("filter: predicate must be callable")
        self.predicate = predicate
        self.input_columns = None if input_columns is None else _names(input_columns, "input_columns")

    def _size(self, ctx):
        return None

    def _items(self, ctx, epoch):
        for item in self.children[0]._items(ctx, epoch):
            names = self.input_columns or list(item.cols)
            if bool(self.predicate(*[to_op_input(item.cols[c]) for c in names])):
                yield item


@operation
class TakeDataset(Dataset):
    def __init__(self, child, count):
        super().__init__([child])
        self.count = _count(count, "take count")

    def _positional(self):
        return False

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        if self.count == -1:
            return n
        return None if n is None else min(n, self.count)

    def _items(self, ctx, epoch):
        items = self.children[0]._items(ctx, epoch)
        yield from (items if self.count == -1 else itertools.islice(items, self.count))


@operation
class SkipDataset(Dataset):
    def __init__(self, child, count):
        super().__init__([child])
        self.count = _count(count, "skip count", False)

    def _positional(self):
        return False

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        return None if n is None else max(0, n - self.count)

    def _items(self, ctx, epoch):
        yield from itertools.islice(self.children[0]._items(ctx, epoch), self.count, None)


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
