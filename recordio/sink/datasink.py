"""DataSink: a device-side prefetch queue that keeps the training step fed (MindSpore's data sink).

::

    sink = DataSink(ds, device="cuda", sink_size=1000, prefetch_depth=2, timeout=600.0)
    for epoch in range(10):
        for batch in sink:          # one pass = one sink epoch: sink_size batches
            loss = step(batch["image"], batch["label"])
    sink.close()

Iterating the sink once is one *sink epoch*: ``sink_size`` batches, continuing
where the previous sink epoch stopped and running on into the next data epoch as
MindSpore does (total batches = epochs * sink_size), or one whole data epoch when
``sink_size=-1``. Batches are dicts of tensors on ``device``, with the pipeline's
offloaded tail already applied; columns that are not numeric arrays (strings,
bytes, ragged lists) are passed through unchanged.

Background threads start on the first iteration. ``close()``, leaving a ``with``
block, or dropping the last reference to the sink stops them (a ``break`` out of
``for batch in DataSink(ds)`` does all three). See docs/sink.md for the design,
the status report and how to read it.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from recordio.dataset.resume import check_state, initial_state
from recordio.errors import PipelineError, SinkTimeoutError
from recordio.sink.backends import make_backend
from recordio.sink.channel import END, Channel, DeviceBatch, Failure, on_device, raise_failure
from recordio.sink.status import SinkStatus, diagnose

if TYPE_CHECKING:
    from recordio.dataset.node import Dataset

__all__ = ["DataSink"]

log = logging.getLogger("recordio.sink.datasink")

HOST_QUEUE_DEPTH = 2   # host batches waiting for the feeder


def _check_args(sink_size, prefetch_depth, timeout):
    if isinstance(sink_size, bool) or not isinstance(sink_size, int) or not (sink_size == -1 or sink_size > 0):
        raise ValueError(f"DataSink: sink_size must be -1 or an int greater than 0, found {sink_size!r}")
    if isinstance(prefetch_depth, bool) or not isinstance(prefetch_depth, int) or prefetch_depth < 1:
        raise ValueError(f"DataSink: prefetch_depth must be an int of at least 1, found {prefetch_depth!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        raise ValueError(f"DataSink: timeout must be a positive number of seconds or None, found {timeout!r}")


class DataSink:
    """Prefetch a dataset's batches onto ``device`` ahead of the training loop.

    ``dataset``: a pipeline (``MindDataset``/``GeneratorDataset`` after ``map``/``batch``...).
    ``device``: ``"cuda"``, ``"cuda:N"``, ``"cpu"`` or a ``torch.device`` (or a backend object,
    see ``recordio.sink.backends``). ``sink_size``: batches per sink epoch, -1 for the whole
    dataset. ``prefetch_depth``: batches kept ready on the device. ``timeout``: seconds the
    consumer waits for one batch before :class:`SinkTimeoutError` (None waits forever).
    ``channel_name``: the name in the status report (a fresh uuid by default).
    ``static_slots``: hand out batches that live in ``prefetch_depth + 2`` fixed device buffers
    instead of fresh tensors (a steady device-memory footprint, no allocation per batch); the
    buffers are used in turn, so a captured CUDA graph must copy each batch into its own static
    input tensors (``static_x.copy_(batch["x"])``, a device-to-device copy); such a batch stays
    valid until the next batch is asked for (``.clone()`` what you keep longer).
    ``warn_after``: while the consumer waits, log the status report as a warning every
    ``warn_after`` seconds (None: never).
    """

    def __init__(self, dataset: Dataset, device: Any = "cuda", sink_size: int = -1, prefetch_depth: int = 2,
                 timeout: float | None = 600.0, channel_name: str | None = None, static_slots: bool = False,
                 warn_after: float | None = 60.0) -> None:
        _check_args(sink_size, prefetch_depth, timeout)
        if warn_after is not None and (isinstance(warn_after, bool) or not isinstance(warn_after, (int, float))
                                       or warn_after <= 0):
            raise ValueError(f"DataSink: warn_after must be a positive number of seconds or None, "
                             f"found {warn_after!r}")
        if not isinstance(static_slots, bool):
            raise ValueError(f"DataSink: static_slots must be True or False, found {static_slots!r}")
        self._dataset = dataset
        self._backend = make_backend(device)
        self.sink_size = sink_size
        self.prefetch_depth = prefetch_depth
        self.timeout = timeout
        self.static_slots = static_slots
        self.warn_after = warn_after
        self.channel_name = channel_name or str(uuid.uuid1())
        self._channel = None
        self._finalizer = None
        self._closed = False
        self._dataset_size = None
        self._state: dict | None = None      # after the last batch handed to the consumer
        self._seed_at_start = 0               # the seed the running channel's pipeline started from

    def _size(self):
        if self._dataset_size is None:
            self._dataset_size = self._dataset.get_dataset_size()
        return self._dataset_size

    def __len__(self) -> int:
        """Batches per sink epoch."""
        return self.sink_size if self.sink_size > 0 else self._size()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """One sink epoch: ``len(self)`` batches, dicts of tensors on ``device``."""
        if self._closed:
            raise PipelineError(f"DataSink {self.channel_name} is closed")
        return self._sink_epoch(len(self))

    def _sink_epoch(self, steps):
        if steps == 0:      # an endless stream of empty epochs would never yield: start nothing
            return
        channel = self._started()
        for _ in range(steps):
            batch = self._next_batch(channel)
            if batch is None:
                return
            yield batch

    def _started(self):
        if self._channel is None:
            self._channel = self._new_channel()
            self._finalizer = weakref.finalize(self, self._channel.close)
            self._channel.start()
        return self._channel

    @property
    def device(self) -> Any:
        """The device batches go to (plain ``"cuda"``: the current device when iteration starts)."""
        return self._backend.device

    def _new_channel(self):
        self._backend.bind()
        size = self._size()
        if self.sink_size > 0 and size and size % self.sink_size:
            log.info("DataSink %s: dataset size %d is not a multiple of sink_size %d; sink epochs will "
                     "straddle data epochs (pad or drop to align them)", self.channel_name, size, self.sink_size)
        source = self._dataset.iter_host_batches(num_epochs=None)
        self._seed_at_start = source.seed
        return Channel(self.channel_name, self._backend, source, source.tail_module(self.device), source.seed,
                       self.prefetch_depth, HOST_QUEUE_DEPTH, self.static_slots)

    def _next_batch(self, channel):
        """The next batch, safe on the consumer's current stream; None when the data ended."""
        if channel.failure is not None:
            raise_failure(channel.failure, self.channel_name)
        if channel.ended:
            return None
        item = channel.take(self.timeout, self.warn_after)
        if isinstance(item, DeviceBatch):
            return self._hand_over(item)
        if isinstance(item, Failure):
            channel.failure = item
            raise_failure(item, self.channel_name)
        if item == END:
            channel.ended = True
            return None
        self._raise_timeout_or_closed(channel)

    def _hand_over(self, item):
        self._backend.consumer_wait(item.ready)
        for value in item.columns.values():
            if on_device(value, self._backend):
                self._backend.hand_over(value)
        self._state = item.state
        return dict(item.columns)

    def state_dict(self) -> dict:
        """The pipeline state after the last batch the consumer received (batches prefetched into
        the queues and never handed out are produced again after a resume, identically)."""
        if self._state is not None:
            return dict(self._state)
        return self._dataset.state_dict() if self._channel is None else initial_state(self._seed_at_start)

    def load_state_dict(self, state: dict) -> None:
        """Start the sink where ``state`` says (a state of a sink, an iterator or a TorchDataset); only
        before the sink's first batch."""
        if self._channel is not None:
            raise PipelineError(f"DataSink {self.channel_name}: load_state_dict after iteration started; "
                                f"build a new DataSink to resume")
        self._dataset.load_state_dict(state)
        self._state = check_state(state)

    def _raise_timeout_or_closed(self, channel):
        if channel.stop.is_set():
            raise PipelineError(f"DataSink {self.channel_name} was closed while waiting for a batch")
        status = channel.status()
        message = (f"DataSink {self.channel_name}: no batch within {self.timeout} s; {diagnose(status)}\n"
                   f"{status}")
        raise SinkTimeoutError(message, report=status)

    def status(self) -> SinkStatus:
        """A :class:`~recordio.sink.status.SinkStatus`; ``str()`` of it is the MindSpore-shaped report."""
        if self._channel is None:
            return Channel(self.channel_name, self._backend, None, None, 0, 1, 1).status()
        return self._channel.status()

    @property
    def threads(self) -> list[threading.Thread]:
        """The sink's background threads (empty before the first iteration)."""
        return [] if self._channel is None else self._channel.threads

    def close(self) -> None:
        """Stop the threads and release the slots; safe to call twice."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
