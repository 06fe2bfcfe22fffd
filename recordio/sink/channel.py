"""The running part of a sink: a host thread, a feeder thread and two bounded queues.

::

    host thread:   dataset.iter_host_batches() ──► host queue (bounded)
    feeder thread: take host batch → wait for a free slot → stage it in the slot
                   → [side stream] copy to device → offloaded tail → record ready-event
                   ──► device queue (bounded, prefetch_depth)
    consumer:      Channel.take() → DeviceBatch (the sink waits on its event)

Every put and get polls a stop flag, so :meth:`Channel.close` ends both threads
promptly. A stage that fails puts a :class:`Failure` into its output queue, after
the batches it already produced, and stops; the consumer re-raises the original
exception. The threads hold this channel, never the sink, so a dropped sink can be
garbage-collected and its finalizer closes the channel.
"""

import dataclasses
import logging
import queue
import threading
import time

from recordio.errors import PipelineError
from recordio.dataset.stopqueue import StopQueue
from recordio.extras import requires
from recordio.sink.ring import DeviceSlots, SlotRing, torch_dtype
from recordio.sink.status import PushLog, diagnose

with requires("recordio.DataSink"):
    import torch

__all__ = ["Channel", "DeviceBatch", "END", "Failure", "on_device"]

log = logging.getLogger("recordio.sink.datasink")

JOIN_S = 5.0           # how long close() waits for each thread
END = "end of data"    # queue marker: the host pipeline ended


@dataclasses.dataclass
class Failure:
    """An exception raised by a stage, carried across the queues to the consumer."""

    stage: str
    error: BaseException
    batch: int


@dataclasses.dataclass
class DeviceBatch:
    """A batch on the device, valid on the consumer's stream once ``ready`` has completed."""

    columns: dict
    rows: object
    epoch: int
    ready: object
    state: dict | None = None      # the pipeline state after this batch


class Channel:
    """Threads, queues and the push log of one sink (started by :meth:`start`)."""

    def __init__(self, name, backend, source, tail, seed, depth, host_depth, static=False):
        self.name = name
        self.backend = backend
        self.host_queue = StopQueue(host_depth)
        self.device_queue = StopQueue(depth)
        self.ring = SlotRing(backend, depth + 2)
        self.slots = DeviceSlots(backend, depth + 2) if static else None
        self.handed = 0                 # batches given to the consumer
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.log = PushLog()
        self.stages = {"host": "not started", "feeder": "not started"}
        self.failure = None
        self.ended = False
        self.started = None
        self._source, self._tail, self._seed = source, tail, seed
        self._threads = []

    def start(self):
        self.started = time.monotonic()
        self._threads = [
            threading.Thread(target=_host_loop, args=(self, self._source), daemon=True,
                             name=f"recordio-sink-host-{self.name}"),
            threading.Thread(target=_feeder_loop, args=(self, self._tail, self._seed), daemon=True,
                             name=f"recordio-sink-feeder-{self.name}"),
        ]
        self._source = None   # the host thread owns the generator now
        for thread in self._threads:
            thread.start()

    @property
    def threads(self):
        return list(self._threads)

    def set_stage(self, stage, state):
        self.stages[stage] = state

    def put(self, q, item):
        """Put ``item`` into ``q``, giving up (False) once the channel is stopping."""
        return q.put_unless(self.stop, item)

    def get(self, q, deadline=None):
        """The next item of ``q``; None when stopping or past ``deadline`` (monotonic)."""
        return q.get_unless(self.stop, deadline)

    def take(self, timeout, warn_after=None):
        """The next device batch, a :class:`Failure`, :data:`END`, or None after ``timeout`` s.

        While it waits, the status report is logged as a warning every ``warn_after`` s.
        """
        t0 = time.monotonic()
        deadline = None if timeout is None else t0 + timeout
        if self.slots is not None and self.handed:
            self.slots.release(self.handed - 1, self.backend.consumer_event())
        warn_at = None if warn_after is None else t0 + warn_after
        while True:
            limit = deadline if warn_at is None else warn_at if deadline is None else min(deadline, warn_at)
            item = self.get(self.device_queue, limit)
            if item is not None or warn_at is None or self.stop.is_set() or limit == deadline:
                break
            status = self.status()
            log.warning("DataSink %s: no batch for %.0f s; %s\n%s", self.name, time.monotonic() - t0,
                        diagnose(status), status)
            warn_at += warn_after
        if isinstance(item, DeviceBatch):
            self.handed += 1
            with self.lock:
                self.log.taken(time.monotonic() - t0)
        return item

    def status(self):
        with self.lock:
            last = self.failure
            error = None if last is None else f"{last.stage}: {type(last.error).__name__}: {last.error}"
            return self.log.snapshot(self.name, self.stages, error, self.started)

    def close(self):
        """Stop both threads, drop queued batches, join (bounded). Safe to call twice."""
        self.stop.set()
        _drain(self.device_queue)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(JOIN_S)
        _drain(self.device_queue)
        _drain(self.host_queue)


def _drain(q):
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def _host_loop(channel, source):
    """Run the host pipeline into the host queue until stopped, exhausted or failed."""
    produced = 0
    try:
        channel.set_stage("host", "running the data pipeline for batch 0")
        for host_batch in source:
            produced += 1
            with channel.lock:
                channel.log.produced = produced
            channel.set_stage("host", f"waiting to put batch {produced - 1} (host queue full)")
            if not channel.put(channel.host_queue, host_batch):
                return
            channel.set_stage("host", f"running the data pipeline for batch {produced}")
        channel.put(channel.host_queue, END)
        channel.set_stage("host", "data exhausted")
    except BaseException as exc:   # noqa: BLE001 - carried to the consumer and re-raised there
        channel.set_stage("host", f"failed on batch {produced}")
        channel.put(channel.host_queue, Failure("data processing", exc, produced))
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
        if channel.stop.is_set():
            channel.set_stage("host", "stopped")


def _feeder_loop(channel, tail, seed):
    """Move host batches to the device queue: slot, copy, tail, ready-event."""
    sent = 0
    try:
        channel.backend.prepare_thread()
        while True:
            channel.set_stage("feeder", f"waiting for host batch {sent}")
            item = channel.get(channel.host_queue)
            if item is None:
                return
            if not isinstance(item, Failure) and item is not END:
                with channel.lock:
                    channel.log.push_started(channel.host_queue.qsize())
                item = _to_device(channel, item, tail, seed, sent)
                if item is None:        # stopped while waiting for a free device slot
                    return
            if not isinstance(item, DeviceBatch):          # the end or a failure: clean up first, so that
                error = _close_device_state(channel)     # an error of the device reaches the consumer
                if error is not None and not isinstance(item, Failure):
                    item = Failure("device cleanup", error, sent)
            channel.set_stage("feeder", f"waiting to put batch {sent} (device queue full)")
            if not channel.put(channel.device_queue, item):
                return
            if not isinstance(item, DeviceBatch):
                channel.set_stage("feeder", "done")
                return
            with channel.lock:
                channel.log.push_ended(channel.device_queue.qsize())
            sent += 1
    except BaseException as exc:   # noqa: BLE001 - carried to the consumer and re-raised there
        channel.set_stage("feeder", f"failed on batch {sent}")
        channel.put(channel.device_queue, Failure("host->device copy", exc, sent))
    finally:
        error = _close_device_state(channel)
        if error is not None and not channel.stop.is_set():
            channel.put(channel.device_queue, Failure("device cleanup", error, sent))
        if channel.stop.is_set():
            channel.set_stage("feeder", "stopped")


def _close_device_state(channel):
    """Close the ring and the static slots, both whatever happens; returns the first error (a sticky
    CUDA error re-raised by the final synchronize), or None. Safe to call twice."""
    error = None
    closers = [channel.ring.close] + ([channel.slots.close] if channel.slots is not None else [])
    for close in closers:
        try:
            close()
        except BaseException as exc:   # noqa: BLE001 - forwarded to the consumer
            error = error or exc
    return error


def _to_device(channel, host_batch, tail, seed, index):
    """Stage, copy and transform one host batch on the side stream; its ready-event last.

    None if the channel stopped while waiting for a free device slot (static slots)."""
    backend, ring, slots = channel.backend, channel.ring, channel.slots
    channel.set_stage("feeder", f"waiting for a free slot for batch {index}")
    slot = ring.acquire()
    with backend.stream():
        if slots is not None:
            channel.set_stage("feeder", f"waiting for the consumer to release the device slot of batch {index}")
            if not slots.wait_free(index, channel.stop):
                return None
        channel.set_stage("feeder", f"copying batch {index}")
        direct = slots is not None and tail is None       # host slot -> device slot, one copy
        columns = {}
        for name, value in host_batch.columns.items():
            dtype = torch_dtype(value)
            if dtype is None:
                columns[name] = value
                continue
            staged = ring.stage(slot, name, value, dtype)
            columns[name] = slots.place(index, name, staged) if direct else backend.to_device(staged)
        copied = backend.new_event()
        backend.record(copied)
        ring.release(slot, copied)
        if tail is not None:
            channel.set_stage("feeder", f"running the offloaded tail on batch {index}")
            columns = tail(columns, host_batch.rows, host_batch.epoch, seed)
        if slots is not None and not direct:
            columns = {name: slots.place(index, name, value) if on_device(value, backend) else value
                       for name, value in columns.items()}
        ready = backend.new_event()
        backend.record(ready)
    return DeviceBatch(columns, host_batch.rows, host_batch.epoch, ready, host_batch.state)


def on_device(value, backend):
    """Whether ``value`` is a tensor on the sink's device."""
    return isinstance(value, torch.Tensor) and value.device == backend.device


def raise_failure(failure, channel_name):
    """Re-raise a stage's exception in the consumer: its own type, its original traceback."""
    error = failure.error
    note = f"raised in the {failure.stage} stage of DataSink {channel_name} (batch {failure.batch})"
    if hasattr(error, "add_note") and note not in getattr(error, "__notes__", ()):
        error.add_note(note)
    if isinstance(error, BaseException):
        raise error.with_traceback(error.__traceback__)
    raise PipelineError(note)
