"""``batch``: group rows; stack what can be stacked (SPEC §2), pad with ``pad_info``.

``per_batch_map(col1_list, col2_list, ..., batch_info)`` sees the lists of the input columns'
values and returns one list per output column, as in MindSpore.
"""

import inspect
import itertools
import operator

import numpy as np

from recordio.dataset.map_op import merge_names, merge_values
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.values import collate, pad_column, to_op_input
from recordio.errors import PipelineError, check_range, type_check

__all__ = ["BatchDataset", "BatchInfo", "check_batch_size", "check_pad_info"]


class BatchInfo:
    """What ``per_batch_map`` learns about the batch (MindSpore's ``BatchInfo``)."""

    def __init__(self, batch_num, epoch_num):
        self._batch_num = batch_num
        self._epoch_num = epoch_num

    def get_batch_num(self):
        return self._batch_num

    def get_epoch_num(self):
        return self._epoch_num


def check_batch_size(batch_size):
    """MindSpore's checks: an int in [1, 2**31 - 1], or a callable of one parameter (a :class:`BatchInfo`)."""
    if callable(batch_size):
        if len(inspect.signature(batch_size).parameters) != 1:
            raise ValueError("callable batch_size should take one parameter (BatchInfo).")
        return batch_size
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size should either be an int or a callable, got {batch_size!r}.")
    if not 1 <= batch_size <= 2 ** 31 - 1:
        raise ValueError(f"Input batch_size is not within the required interval of [1, 2147483647], got {batch_size}.")
    return batch_size


def check_pad_info(pad_info):
    """MindSpore's ``check_pad_info`` on each entry: ``{column: (shape list or None, value) or None}``."""
    type_check(pad_info, (dict,), "pad_info")
    for key, value in pad_info.items():
        type_check(key, (str,), "key in pad_info")
        if value is None:
            continue
        if len(value) != 2:
            raise ValueError("value of pad_info should be a tuple of size 2.")
        type_check(value, (tuple,), "value in pad_info")
        if value[0] is not None:
            type_check(value[0], (list,), "shape in pad_info")
            for dim in value[0]:
                if dim is not None:
                    type_check(dim, (int,), "dim of shape in pad_info")
                    check_range(dim, 1, 2 ** 31 - 1, "dim of shape in pad_info")
        if value[1] is not None:
            type_check(value[1], (int, float, str, bytes), "pad_value")
    return dict(pad_info)


@operation
class BatchDataset(Dataset):
    """``batch_size`` rows per batch; a callable ``batch_size(BatchInfo)`` gives each batch's size
    (numbered from 0 in each epoch, as MindSpore's). ``pad_all`` (``padded_batch``): columns not in
    ``pad_info`` are padded to the batch's largest shape with 0."""

    @classmethod
    def padded(cls, child, batch_size, drop_remainder, pad_info):
        """``child.padded_batch(...)``: MindSpore's checks, then every column padded with a dict
        ``pad_info`` (nothing padded without one)."""
        check_batch_size(batch_size)
        type_check(drop_remainder, (bool,), "drop_remainder")
        pad = None if pad_info is None else check_pad_info(pad_info)
        return cls(child, batch_size, drop_remainder, None, None, None, pad, pad_all=pad is not None)

    def __init__(self, child, batch_size, drop_remainder, per_batch_map, input_columns, output_columns,
                 pad_info, pad_all=False):
        super().__init__([child])
        check_batch_size(batch_size)
        if per_batch_map is not None and not callable(per_batch_map):
            raise TypeError("per_batch_map must be callable")
        self.batch_size = batch_size
        self.pad_all = pad_all
        self.drop_remainder = bool(drop_remainder)
        self.per_batch_map = per_batch_map
        self.input_columns = [input_columns] if isinstance(input_columns, str) else input_columns
        self.output_columns = [output_columns] if isinstance(output_columns, str) else output_columns
        self.pad_info = dict(pad_info or {})
        self._columns()                  # output names that clash fail here, not mid-iteration

    def _columns(self):
        names = self.children[0]._columns()
        if self.per_batch_map is None:
            return names
        ins = self.input_columns or names
        outs = self.output_columns or ins
        return merge_names(names, ins, outs, "batch")

    def _positional(self):
        """A callable ``batch_size`` or a ``per_batch_map`` sees each batch's number in its epoch, which a
        resume at a position would restart at 0: those resume by replaying the epoch instead."""
        if callable(self.batch_size) or self.per_batch_map is not None:
            return False
        return self.children[0]._positional()

    def _block_rows(self):
        rows = self.children[0]._block_rows()
        return None if rows is None or callable(self.batch_size) else rows * self.batch_size

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        if n is None or callable(self.batch_size):
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)

    def _items(self, ctx, epoch):
        if callable(self.batch_size):
            return self._item_batches(ctx, epoch)
        bulk = self.children[0]._epoch_rows(ctx, epoch)
        if bulk is not None:
            return self._bulk_batches(bulk)
        return self._item_batches(ctx, epoch)

    def _bulk_batches(self, bulk):
        """Batches built column-wise straight from a source's row dicts (no Item per row), or read as
        columns where the source can (``EpochRows.read_columns``) and nothing is done per row here."""
        if bulk.read_columns is not None and self.per_batch_map is None and not self.pad_info and not self.pad_all:
            yield from self._column_batches(bulk)
            return
        delivered = 0
        for number in itertools.count():
            group = list(itertools.islice(bulk.rows, self.batch_size))
            if len(group) < self.batch_size and (self.drop_remainder or not group):
                return
            end = delivered + len(group)
            rows = bulk.ids_of(delivered, end)
            lists = {name: list(map(operator.itemgetter(name), group)) for name in group[0]}
            yield self._make(lists, rows, bulk.epoch, bulk.position_after(end), number)
            delivered = end

    def _column_batches(self, bulk):
        """Batches read as columns (``FileReader`` through ``recordio.mindrecord.read.columns``): the same
        values, dtypes and forms as :meth:`_make` builds from the rows."""
        total = len(bulk)
        for first in range(0, total, self.batch_size):
            end = min(total, first + self.batch_size)
            if end - first < self.batch_size and self.drop_remainder:
                return
            rows = bulk.ids_of(first, end)
            yield Item(bulk.read_columns(rows), rows, bulk.epoch, bulk.position_after(end))

    def _item_batches(self, ctx, epoch):
        if not callable(self.batch_size) and self.per_batch_map is None:
            ctx.offer_batch_slots(self.children[0], self.batch_size)
        items = self.children[0]._items(ctx, epoch)
        try:
            for number in itertools.count():
                size = self._size_of(number, epoch)
                group = list(itertools.islice(items, size))
                if len(group) < size and (self.drop_remainder or not group):
                    return
                lists = {name: [it.cols[name] for it in group] for name in group[0].cols}
                yield self._make(lists, _row_ids(group), group[0].epoch, group[-1].pos, number)
        finally:
            getattr(items, "close", lambda: None)()

    def _size_of(self, number, epoch):
        if not callable(self.batch_size):
            return self.batch_size
        size = self.batch_size(BatchInfo(number, epoch))
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
            raise PipelineError(f"batch: the callable batch_size returned {size!r} for batch {number} of epoch "
                                f"{epoch}, expected an int > 0")
        return int(size)

    def _columns_of(self, lists, first_row, number, epoch):
        if self.per_batch_map is None:
            return lists
        names = list(lists)
        ins = self.input_columns or names
        outs = self.output_columns or ins
        args = [[to_op_input(v) for v in lists[c]] for c in ins]
        out = self.per_batch_map(*args, BatchInfo(number, epoch))
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != len(outs):
            raise PipelineError(f"batch: per_batch_map returned {len(out)} column(s), expected {len(outs)} "
                                f"(output_columns={outs})")
        return merge_values(lists, ins, outs, [list(v) for v in out], "batch", first_row)

    def _make(self, lists, rows, epoch, pos, number):
        """One batch :class:`Item` from its columns' value lists and its row ids (int64 array)."""
        cols = {}
        batch = self._columns_of(lists, int(rows[0]), number, epoch)
        unknown = [name for name in self.pad_info if name not in batch]
        if unknown:
            raise PipelineError(f"batch: pad_info names column(s) {unknown} that the batch does not have "
                                f"(columns {list(batch)})")
        for name, values in batch.items():
            if name in self.pad_info or self.pad_all:
                shape, value = self.pad_info.get(name) or (None, 0)
                cols[name] = pad_column(name, values, shape, value)
            else:
                cols[name] = collate(values)
        return Item(cols, rows, epoch, pos)


def _row_ids(group):
    """The row ids of a group of items (rows, or batches when batching twice) as one int64 array."""
    if isinstance(group[0].row, np.ndarray):
        return np.concatenate([np.atleast_1d(it.row) for it in group]).astype(np.int64, copy=False)
    return np.fromiter((it.row for it in group), np.int64, len(group))
