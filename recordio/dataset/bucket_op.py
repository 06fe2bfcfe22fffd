"""``bucket_batch_by_length``: rows grouped into batches by length (MindSpore's).

Each row's length (``element_length_function(*values)``, or the first dimension of the one column;
a scalar counts 1, as MindSpore 2.10 does, although its documentation says 0) picks a bucket:
``[0, b0)``, ``[b0, b1)``, ..., ``[b_last, inf)``. A bucket that holds its batch size is padded and
emitted at once; at the end of the epoch the partial buckets are emitted in bucket order, or
dropped with ``drop_remainder=True`` (MindSpore's contract, the only rows this node drops). Every
column is padded to the batch's largest shape with 0, unless ``pad_info`` says otherwise;
``pad_to_bucket_boundary`` pads a ``pad_info`` column whose shape is ``None`` to ``boundary - 1``
along its first dimension (the last bucket: to its largest).

The batches depend only on the rows' order, so a resume replays the epoch up to where it stopped.
"""

import numpy as np

from recordio.dataset.batch_op import _row_ids, check_pad_info
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.values import pad_column, to_op_input
from recordio.errors import PipelineError, type_check

__all__ = ["BucketBatchDataset"]


def _check_int_list(values, what, plural):
    if not values:
        raise ValueError(f"{what} cannot be empty.")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{what} should be a list of int.")
    if not all(v > 0 for v in values):
        raise ValueError(f"{what} {plural}")


def check_bucket_args(column_names, boundaries, batch_sizes, length_fn, pad_info, to_boundary, drop_remainder):
    """MindSpore's ``check_bucket_batch_by_length``: the same error types and messages."""
    for value, name in ((column_names, "column_names"), (boundaries, "bucket_boundaries"),
                        (batch_sizes, "bucket_batch_sizes")):
        type_check(value, (list,), name)
    for value, name in ((to_boundary, "pad_to_bucket_boundary"), (drop_remainder, "drop_remainder")):
        type_check(value, (bool,), name)
    if not column_names or not all(isinstance(c, str) and c for c in column_names):
        raise TypeError(f"column_names should be a non-empty list of non-empty str, got {column_names!r}.")
    if length_fn is None and len(column_names) != 1:
        raise ValueError("If element_length_function is not specified, exactly one column name should be passed.")
    if length_fn is not None and not callable(length_fn):
        raise TypeError("element_length_function object is not callable.")
    _check_int_list(boundaries, "bucket_boundaries", "must only contain positive numbers.")
    if any(low >= high for low, high in zip(boundaries, boundaries[1:])):
        raise ValueError("bucket_boundaries should be strictly increasing.")
    if len(batch_sizes) != len(boundaries) + 1:
        raise ValueError("bucket_batch_sizes must contain one element more than bucket_boundaries.")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in batch_sizes):
        raise TypeError("bucket_batch_sizes should be a list of int.")
    if not all(v > 0 for v in batch_sizes):
        raise ValueError("bucket_batch_sizes should be a list of positive numbers.")
    return {} if pad_info is None else check_pad_info(pad_info)


@operation
class BucketBatchDataset(Dataset):
    def __init__(self, child, column_names, bucket_boundaries, bucket_batch_sizes, element_length_function=None,
                 pad_info=None, pad_to_bucket_boundary=False, drop_remainder=False):
        super().__init__([child])
        self.pad_info = check_bucket_args(column_names, bucket_boundaries, bucket_batch_sizes,
                                          element_length_function, pad_info, pad_to_bucket_boundary, drop_remainder)
        self.column_names = list(column_names)
        self.boundaries = list(bucket_boundaries)
        self.batch_sizes = list(bucket_batch_sizes)
        self.length_fn = element_length_function
        self.to_boundary = pad_to_bucket_boundary
        self.drop_remainder = drop_remainder

    def _check_inputs(self):
        """Columns the pipeline lacks fail when it runs, as in MindSpore."""
        names = self.children[0]._columns()
        missing = [c for c in self.column_names if c not in names]
        if missing:
            raise PipelineError(f"bucket_batch_by_length: column(s) {missing} not in the pipeline's columns {names}")

    def _positional(self):
        return False

    def _size(self, ctx):
        return None

    def _length(self, item):
        values = [to_op_input(item.cols[c]) for c in self.column_names]
        if self.length_fn is None:
            length = values[0].shape[0] if np.ndim(values[0]) else 1     # a scalar counts 1, as in MindSpore 2.10
        else:
            length = self.length_fn(*values)
        if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)) or length < 0:
            raise PipelineError(f"bucket_batch_by_length: element_length_function returned {length!r} for row "
                                f"{item.row}, expected an int >= 0")
        return int(length)

    def _items(self, ctx, epoch):
        buckets = [[] for _ in self.batch_sizes]
        for item in self.children[0]._items(ctx, epoch):
            k = int(np.searchsorted(self.boundaries, self._length(item), side="right"))
            buckets[k].append(item)
            if len(buckets[k]) == self.batch_sizes[k]:
                yield self._batch(buckets[k], k)
                buckets[k] = []
        if not self.drop_remainder:
            for k, group in enumerate(buckets):
                if group:
                    yield self._batch(group, k)

    def _batch(self, group, k):
        names = list(group[0].cols)
        unknown = [name for name in self.pad_info if name not in names]
        if unknown:
            raise PipelineError(f"bucket_batch_by_length: pad_info names column(s) {unknown} that the rows do "
                                f"not have (columns {names})")
        cols = {}
        for name in names:
            values = [it.cols[name] for it in group]
            shape, value = self.pad_info.get(name) or (None, 0)
            if name in self.pad_info and shape is None and self.to_boundary and k < len(self.boundaries):
                ndim = np.ndim(to_op_input(values[0]))
                shape = [self.boundaries[k] - 1] + [None] * (ndim - 1) if ndim else None
            cols[name] = pad_column(name, values, shape, value)
        return Item(cols, _row_ids(group), group[0].epoch, None)
