"""``batch``: group rows; stack what can be stacked (SPEC §2), pad with ``pad_info``.

``per_batch_map(col1_list, col2_list, ..., batch_info)`` sees the lists of the input columns'
values and returns one list per output column, as in MindSpore.
"""

import itertools

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

    def _columns(self):
        names = self.children[0]._columns()
        if self.per_batch_map is None:
            return names
        ins = self.input_columns or names
        outs = self.output_columns or ins
        from recordio.dataset.map_op import merge_names
        return merge_names(names, ins, outs)

    def _size(self, ctx):
        n = self.children[0]._size(ctx)
        if n is None:
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)

    def _items(self, ctx, epoch):
        items = self.children[0]._items(ctx, epoch)
        try:
            for number in itertools.count():
                group = list(itertools.islice(items, self.batch_size))
                if len(group) < self.batch_size and (self.drop_remainder or not group):
                    return
                yield self._make(group, number, epoch)
        finally:
            getattr(items, "close", lambda: None)()

    def _columns_of(self, group, number, epoch):
        names = list(group[0].cols)
        lists = {n: [it.cols[n] for it in group] for n in names}
        if self.per_batch_map is None:
            return lists
        ins = self.input_columns or names
        outs = self.output_columns or ins
        args = [[to_op_input(v) for v in lists[c]] for c in ins]
        out = self.per_batch_map(*args, BatchInfo(number, epoch))
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != len(outs):
            raise PipelineError(f"batch: per_batch_map returned {len(out)} column(s), expected {len(outs)} "
                                f"(output_columns={outs})")
        from recordio.dataset.map_op import merge_values
        return merge_values(lists, ins, outs, [list(v) for v in out], "batch", group[0].row)

    def _make(self, group, number, epoch):
        cols = {}
        for name, values in self._columns_of(group, number, epoch).items():
            if name in self.pad_info:
                shape, value = self.pad_info[name] if self.pad_info[name] is not None else (None, 0)
                cols[name] = pad_column(name, values, shape, value)
            else:
                cols[name] = collate(values)
        if isinstance(group[0].row, np.ndarray):
            rows = np.concatenate([np.atleast_1d(it.row) for it in group]).astype(np.int64, copy=False)
        else:
            rows = np.fromiter((it.row for it in group), np.int64, len(group))
        return Item(cols, rows, group[0].epoch, group[-1].pos)
