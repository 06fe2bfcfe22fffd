"""More of ``mindspore.dataset.Dataset``'s methods: ``padded_batch``, ``bucket_batch_by_length``,
``apply``, ``device_que``, ``num_classes`` and ``get_repeat_count``.

A base of :class:`recordio.dataset.node.Dataset`; the node classes are imported when a method runs
(their modules import ``node``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__all__ = ["MoreBuilders"]


class MoreBuilders:
    """The methods above, on every pipeline node."""

    if TYPE_CHECKING:          # given by recordio.dataset.node.Dataset
        children: list[Any]

        def _nodes(self) -> list[Any]: ...

    def padded_batch(self, batch_size: int | Callable, drop_remainder: bool = False,
                     num_parallel_workers: int | None = None, pad_info: dict | None = None) -> Any:
        """``batch`` that pads (MindSpore's ``padded_batch``): with ``pad_info`` a dict, every column is
        padded to the batch's largest shape with 0, except that ``pad_info={column: (shape, value)}``
        pads that column to ``shape`` (``None`` entries: the largest) with ``value`` (cast to the
        column's dtype). ``pad_info=None`` pads nothing (a plain ``batch``). A row larger than
        ``shape`` raises instead of being cut. ``batch_size`` may be a callable of a ``BatchInfo``."""
        from recordio.dataset.batch_op import (
            BatchDataset,
            check_batch_size,
            check_pad_info,
        )
        from recordio.errors import type_check
        check_batch_size(batch_size)
        type_check(drop_remainder, (bool,), "drop_remainder")
        pad = None if pad_info is None else check_pad_info(pad_info)
        return BatchDataset(self, batch_size, drop_remainder, None, None, None, pad, pad_all=pad is not None)

    def bucket_batch_by_length(self, column_names: list[str], bucket_boundaries: list[int],
                               bucket_batch_sizes: list[int], element_length_function: Callable | None = None,
                               pad_info: dict | None = None, pad_to_bucket_boundary: bool = False,
                               drop_remainder: bool = False) -> Any:
        """Batch rows of similar length together (MindSpore's ``bucket_batch_by_length``): a row's
        length (``element_length_function(*values of column_names)``, or the first dimension of the
        one column) picks bucket ``i`` of ``[0, b0), [b0, b1), ..., [b_last, inf)``; a bucket that
        holds ``bucket_batch_sizes[i]`` rows becomes a padded batch. The partial buckets follow at the
        epoch's end, in bucket order (dropped with ``drop_remainder=True``). See
        ``recordio.dataset.bucket_op``."""
        from recordio.dataset.bucket_op import BucketBatchDataset
        return BucketBatchDataset(self, column_names, bucket_boundaries, bucket_batch_sizes,
                                  element_length_function, pad_info, pad_to_bucket_boundary, drop_remainder)

    def apply(self, apply_func: Callable[[Any], Any]) -> Any:
        """``apply_func(self)``, which must return a dataset (MindSpore's ``apply``)."""
        from recordio.dataset.node import Dataset
        if not callable(apply_func):
            raise TypeError("apply_func must be a function.")
        dataset = apply_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError(f"apply_func must return a dataset, got {type(dataset).__name__}.")
        return dataset

    def device_que(self, send_epoch_end: bool = True, create_data_info_queue: bool = False,
                   queue_name: str = "", device: Any = None) -> Any:
        """A :class:`recordio.sink.queue.DeviceQueue` (MindSpore's ``TransferDataset``): ``send()`` starts
        prefetching batches onto ``device`` through a ``DataSink``, and iterating it gives one epoch
        of them. Nothing starts until then."""
        # DeviceQueue belongs to the sink layer, above this one: it is reached through the public name
        # map (``recordio.DeviceQueue``), as a user would, not by importing recordio.sink from here.
        import recordio
        return recordio.DeviceQueue(self, send_epoch_end, create_data_info_queue, queue_name, device)

    def num_classes(self) -> int | None:
        """The number of classes of the pipeline's source, where it knows one (MindSpore's image
        folder sources do); ``None`` for MindRecord and Python sources, as in MindSpore."""
        for node in reversed(self._nodes()):
            count = getattr(node, "_num_classes", None)
            if count is not None:
                return count
        return None

    def get_repeat_count(self) -> int:
        """The count of the outermost ``repeat`` (-1: endless; 1 without one), as MindSpore's."""
        from recordio.dataset.ops import RepeatDataset
        node = self
        while True:
            if isinstance(node, RepeatDataset):
                return -1 if node.count is None else node.count
            if not node.children:
                return 1
            node = node.children[0]
