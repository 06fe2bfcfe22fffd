"""The operations over one child that do not transform values: shuffle (buffer), repeat, project,
rename, filter, take and skip (zip and concat, over several children, are in ``combine.py``)."""

import itertools

from recordio.dataset.order import ms_order, ms_text
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.order.shuffle import epoch_rng
from recordio.dataset.order.sampler_chain import mindspore_orders
from recordio.dataset.values import to_op_input
from recordio.errors import PipelineError

__all__ = ["FilterDataset", "ProjectDataset", "RenameDataset", "RepeatDataset", "ShuffleDataset", "SkipDataset",
           "TakeDataset"]


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
        if mindspore_orders():
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
