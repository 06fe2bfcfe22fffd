"""``batch``: group rows; stack what can be stacked (SPEC §2), pad with ``pad_info``.

``per_batch_map(col1_list, col2_list, ..., batch_info)`` sees the lists of the input columns'
values and returns one list per output column, as in MindSpore.
"""

import itertools
import operator

import numpy as np

from recordio.dataset.node import Dataset, Item
from recordio.dataset.values import collate, pad_column, to_op_input
from recordio.errors import PipelineError

__all__ = ["BatchDataset", "BatchInfo"]


class BatchInfo:
    """What ``per_batch_map`` learns about the batch (MindSpore's ``BatchInfo``)."""

    def __init__(self, batch_num, epoch_num):
        self._batch_num = batch_num
        self._epoch_num = epoch_num

    def get_batch_num(self):
        return self._batch_num

    def get_epoch_num(self):
        return self._epoch_num


class BatchDataset(Dataset):
    def __init__(self, child, batch_size, drop_remainder, per_batch_map, input_columns, output_columns,
                 pad_info):
        super().__init__([child])
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be an int > 0, got {batch_size!r}")
        if per_batch_map is not None and not callable(per_batch_map):
            raise TypeError("per_batch_map must be callable")
        self.batch_size = batch_size
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
        from recordio.dataset.map_op import merge_names
        return merge_names(names, ins, outs, "batch")

    def _block_rows(self):
        rows = self.children[0]._block_rows()
        return None if rows is None else rows * self.batch_size

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        if n is None:
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)

    def _items(self, ctx, epoch):
        bulk = self.children[0]._epoch_rows(ctx, epoch)
        if bulk is not None:
            return self._bulk_batches(bulk)
        return self._item_batches(ctx, epoch)

    def _bulk_batches(self, bulk):
        """Batches built column-wise straight from a source's row dicts (no Item per row), or read as
        columns where the source can (``EpochRows.read_columns``) and nothing is done per row here."""
        if bulk.read_columns is not None and self.per_batch_map is None and not self.pad_info:
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
        """Batches read as columns (``FileReader`` through ``recordio.mindrecord.columns``): the same
        values, dtypes and forms as :meth:`_make` builds from the rows."""
        total = len(bulk)
        for first in range(0, total, self.batch_size):
            end = min(total, first + self.batch_size)
            if end - first < self.batch_size and self.drop_remainder:
                return
            rows = bulk.ids_of(first, end)
            yield Item(bulk.read_columns(rows), rows, bulk.epoch, bulk.position_after(end))

    def _item_batches(self, ctx, epoch):
        items = self.children[0]._items(ctx, epoch)
        try:
            for number in itertools.count():
                group = list(itertools.islice(items, self.batch_size))
                if len(group) < self.batch_size and (self.drop_remainder or not group):
                    return
                lists = {name: [it.cols[name] for it in group] for name in group[0].cols}
                yield self._make(lists, _row_ids(group), group[0].epoch, group[-1].pos, number)
        finally:
            getattr(items, "close", lambda: None)()

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
        from recordio.dataset.map_op import merge_values
        return merge_values(lists, ins, outs, [list(v) for v in out], "batch", first_row)

    def _make(self, lists, rows, epoch, pos, number):
        """One batch :class:`Item` from its columns' value lists and its row ids (int64 array)."""
        cols = {}
        for name, values in self._columns_of(lists, int(rows[0]), number, epoch).items():
            if name in self.pad_info:
                shape, value = self.pad_info[name] if self.pad_info[name] is not None else (None, 0)
                cols[name] = pad_column(name, values, shape, value)
            else:
                cols[name] = collate(values)
        return Item(cols, rows, epoch, pos)


def _row_ids(group):
    """The row ids of a group of items (rows, or batches when batching twice) as one int64 array."""
    if isinstance(group[0].row, np.ndarray):
        return np.concatenate([np.atleast_1d(it.row) for it in group]).astype(np.int64, copy=False)
    return np.fromiter((it.row for it in group), np.int64, len(group))
