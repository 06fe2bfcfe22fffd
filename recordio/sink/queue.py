"""DeviceQueue: what ``Dataset.device_que()`` returns (MindSpore's ``TransferDataset``), over a DataSink.

MindSpore's device queue pushes batches to a queue a compiled network reads from. recordio's training
loop is Python, so the queue is read by iterating it::

    queue = dataset.device_que()          # nothing starts yet
    queue.send(num_epochs=2)              # start prefetching onto the device (a DataSink)
    for epoch in range(2):
        for batch in queue:               # one data epoch: dicts of tensors on the device
            step(batch["image"], batch["label"])
    queue.release()

Iterating without ``send()`` sends first. ``stop_send()`` stops prefetching and keeps the position;
``continue_send()`` goes on from it (a new sink resumed from the old one's ``state_dict``).
``create_dict_iterator``/``create_tuple_iterator`` raise ``RuntimeError``, as in MindSpore: the queue is
read by iterating it. Imports torch when sending.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from recordio.errors import PipelineError, type_check
from recordio.extras import requires

__all__ = ["DeviceQueue"]


class DeviceQueue:
    """The pipeline's batches prefetched onto ``device`` (``None``: ``"cuda"`` when available, else
    ``"cpu"``), ``prefetch_depth`` batches ahead; ``queue_name`` names the sink in its status report."""

    def __init__(self, dataset: Any, send_epoch_end: bool = True, create_data_info_queue: bool = False,
                 queue_name: str = "", device: Any = None, prefetch_depth: int = 2) -> None:
        type_check(send_epoch_end, (bool,), "send_epoch_end")
        type_check(create_data_info_queue, (bool,), "create_data_info_queue")
        type_check(queue_name, (str,), "queue_name")
        self.dataset = dataset
        self.queue_name = queue_name or str(uuid.uuid1())
        self.column_name = dataset.get_col_names()
        self.send_epoch_end = send_epoch_end
        self.device = device
        self.prefetch_depth = prefetch_depth
        self.num_epochs = -1
        self.epochs_read = 0
        self._sink = None
        self._paused_state = None
        self._last = None
        self._batches = None           # batches per epoch

    def send(self, num_epochs: int = -1) -> None:
        """Start prefetching ``num_epochs`` epochs (-1: no limit), from the start (or the state given
        to the dataset's ``load_state_dict``)."""
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or (num_epochs < 1 and num_epochs != -1):
            raise ValueError(f"num_epochs must be -1 or an int > 0, got {num_epochs!r}")
        self.release()
        self.num_epochs, self.epochs_read, self._paused_state = num_epochs, 0, None
        self._start(None)

    def _start(self, state):
        with requires("recordio.DeviceQueue"):
            import torch

        from recordio.sink.datasink import DataSink
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._sink = DataSink(self.dataset, device=device, sink_size=1, prefetch_depth=self.prefetch_depth,
                              channel_name=self.queue_name)
        if state is not None:
            self._sink.load_state_dict(state)
        self._sink._started()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """One epoch of batches (dicts of tensors on the device)."""
        if self._sink is None and self._paused_state is None:
            self.send()
        if self._sink is None:
            raise PipelineError(f"device queue {self.queue_name}: sending is stopped; call continue_send()")
        if self.num_epochs != -1 and self.epochs_read >= self.num_epochs:
            raise PipelineError(f"device queue {self.queue_name}: all {self.num_epochs} epoch(s) sent were read; "
                                f"call send() to send again")
        self.epochs_read += 1
        return self._epoch()

    def _epoch(self):
        """One data epoch, a batch per pass of a one-batch sink epoch (``sink_size=1``), so that a
        ``stop_send``/``continue_send`` in between goes on with the new sink where the old one stopped."""
        if self._batches is None:
            self._batches = self.dataset.get_dataset_size()
        for _ in range(self._batches):
            if self._sink is None:
                raise PipelineError(f"device queue {self.queue_name}: sending is stopped; call continue_send()")
            batch = next(iter(self._sink), None)
            if batch is None:
                return
            self._last = batch
            yield batch

    def stop_send(self) -> None:
        """Stop prefetching; the position after the last batch read is kept for :meth:`continue_send`."""
        if self._sink is not None:
            self._paused_state = self._sink.state_dict()
            self._sink.close()
            self._sink = None

    def continue_send(self) -> None:
        """Prefetch again from where :meth:`stop_send` stopped."""
        if self._sink is None and self._paused_state is not None:
            self._start(self._paused_state)
            self._paused_state = None

    def get_data_info(self) -> tuple[list, list]:
        """The dtypes and shapes of the last batch read."""
        if self._last is None:
            raise RuntimeError("Calling get_data_info with bad state.")
        values = [self._last[c] for c in self.column_name]
        return [getattr(v, "dtype", type(v)) for v in values], [list(getattr(v, "shape", [])) for v in values]

    def state_dict(self) -> dict:
        """The pipeline state after the last batch read (see ``DataSink.state_dict``)."""
        if self._sink is not None:
            return self._sink.state_dict()
        return self._paused_state if self._paused_state is not None else self.dataset.state_dict()

    def release(self) -> None:
        """Stop the sink's threads and free its device buffers."""
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def create_dict_iterator(self, *args, **kwargs):
        raise RuntimeError("TransferDataset is not iterable.")

    def create_tuple_iterator(self, *args, **kwargs):
        raise RuntimeError("TransferDataset is not iterable.")

    def output_shapes(self):
        raise RuntimeError("TransferDataset does not support obtaining output_shapes.")

    def output_types(self):
        raise RuntimeError("TransferDataset does not support obtaining output_types.")
