"""The sink's slot discipline on a fake asynchronous device (OFFLOAD.md section 4.4, item 6).

"Streams" are threads that run queued callables in order; a "copy" sleeps 1-5 ms
on the side stream before it writes its destination; an event completes when its
stream reaches it; ``consumer_wait`` queues a wait on the consumer stream instead
of blocking the host. Device buffers come from a caching allocator that reuses a
buffer as soon as its tensor is garbage-collected, unless ``hand_over`` recorded
the consumer stream on it; then reuse waits until the consumer stream has passed
a mark. So the consumer's host thread runs ahead of its stream, as on a GPU, and a
missing wait, an early slot reuse or a missing ``record_stream`` turns into wrong
bytes that the checks queued on the consumer stream see.

The ``wait``, ``slot_wait`` and ``record`` switches each remove one discipline,
to prove that the checks catch its absence; the real backend code paths keep all three.
"""

import queue
import random
import threading
import time
import weakref
import zlib

import numpy as np
import pytest
import torch

from recordio import GeneratorDataset
from recordio.sink.datasink import DataSink
from recordio.sink.backends import DeviceBackend

ROWS, WIDTH, BATCH = 96, 64, 2
SCHEDULES = {   # delays of the side stream's copies and of the consumer stream's checks, in ms
    "late copies": ((3, 6), (0, 0.5)),
    "late consumer": ((0.5, 1.5), (4, 8)),
}


class FakeEvent:
    def __init__(self):
        self._done = threading.Event()

    def set(self):
        self._done.set()

    def synchronize(self):
        self._done.wait()

    def query(self):
        return self._done.is_set()


class FakeStream:
    """A thread running queued callables in order, each after a random delay (ms range)."""

    def __init__(self, name, seed, delay_ms):
        self._queue = queue.Queue()
        self._rng = random.Random(seed)
        self._delay = (delay_ms[0] / 1000, delay_ms[1] / 1000)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self):
        for fn in iter(self._queue.get, None):
            fn()

    def enqueue(self, fn, delayed=True):
        pause = self._rng.uniform(*self._delay) if delayed else 0.0
        self._queue.put(lambda: (time.sleep(pause), fn()))

    def mark(self):
        event = FakeEvent()
        self.enqueue(event.set, delayed=False)
        return event

    def close(self):
        self.mark().synchronize()
        self._queue.put(None)
        self._thread.join()


class FakeAllocator:
    """Buffers reused once their tensor is gone and every stream recorded on it passed a mark."""

    def __init__(self):
        self._lock = threading.Lock()
        self._free = []             # (buffer, mark event or None)
        self._streams = {}          # id(tensor) -> streams recorded on it

    def alloc(self, nbytes):
        with self._lock:
            for i, (buffer, mark) in enumerate(self._free):
                if buffer.numel() >= nbytes and (mark is None or mark.query()):
                    del self._free[i]
                    return buffer
        return torch.full((max(nbytes, 1),), 0xAB, dtype=torch.uint8)

    def track(self, tensor, buffer):
        streams = self._streams[id(tensor)] = []
        weakref.finalize(tensor, self._release, id(tensor), buffer, streams)

    def record_stream(self, tensor, stream):
        self._streams[id(tensor)].append(stream)

    def _release(self, key, buffer, streams):
        mark = streams[-1].mark() if streams else None
        with self._lock:
            self._streams.pop(key, None)
            self._free.append((buffer, mark))


class FakeAsyncBackend(DeviceBackend):
    """A device whose copies complete late, on another thread."""

    def __init__(self, schedule, seed=0, wait=True, slot_wait=True, record=True, release_wait=True):
        side_ms, consumer_ms = SCHEDULES[schedule]
        self.side = FakeStream("fake-side-stream", seed, side_ms)
        self.consumer = FakeStream("fake-consumer-stream", seed + 1, consumer_ms)
        self.allocator = FakeAllocator()
        self.hazards = []           # copies whose source slot changed while in flight
        self._wait, self._slot_wait, self._record = wait, slot_wait, record
        self._release_wait = release_wait
        self._host_storages = set()

    def to_device(self, host_tensor):
        nbytes = host_tensor.numel() * host_tensor.element_size()
        buffer = self.allocator.alloc(nbytes)
        dst = buffer[:nbytes].view(host_tensor.dtype).view(host_tensor.shape)
        self.allocator.track(dst, buffer)
        queued_crc = zlib.crc32(host_tensor.numpy().tobytes())
        target = dst.view(-1)       # like a raw pointer: does not keep ``dst`` alive

        def copy():
            if zlib.crc32(host_tensor.numpy().tobytes()) != queued_crc:
                self.hazards.append("host slot rewritten while its copy was in flight")
            target.copy_(host_tensor.reshape(-1))

        self.side.enqueue(copy)
        return dst

    def new_event(self):
        return FakeEvent()

    def record(self, event):
        self.side.enqueue(event.set, delayed=False)

    def host_wait(self, event):
        if self._slot_wait:
            event.synchronize()

    def consumer_wait(self, event):
        if self._wait:
            self.consumer.enqueue(event.synchronize, delayed=False)

    def hand_over(self, tensor):
        if self._record and id(tensor) in self.allocator._streams:     # static slots are never recycled
            self.allocator.record_stream(tensor, self.consumer)

    def alloc_device(self, nbytes):
        return torch.full((nbytes,), 0xAB, dtype=torch.uint8)

    def alloc_host(self, nbytes):
        buffer = super().alloc_host(nbytes)
        self._host_storages.add(buffer.untyped_storage().data_ptr())
        return buffer

    def copy_into(self, dst, src):
        from_host = src.untyped_storage().data_ptr() in self._host_storages
        queued_crc = zlib.crc32(src.numpy().tobytes()) if from_host else None
        target, source = dst.view(-1), src.reshape(-1)

        def copy():
            if from_host and zlib.crc32(src.numpy().tobytes()) != queued_crc:
                self.hazards.append("host slot rewritten while its copy was in flight")
            target.copy_(source)

        self.side.enqueue(copy)

    def consumer_event(self):
        return self.consumer.mark()

    def stream_wait(self, event):
        if self._release_wait:
            self.side.enqueue(event.synchronize, delayed=False)

    def synchronize(self):
        self.side.mark().synchronize()

    def close(self):
        self.side.close()
        self.consumer.close()


def expected_row(i):
    return np.arange(WIDTH, dtype=np.int64) * 1_000 + i


def pipeline():
    rows = [(expected_row(i),) for i in range(ROWS)]
    return GeneratorDataset(rows, ["x"], shuffle=False).batch(BATCH)


def run_on_fake_device(backend, depth, static_slots=False):
    """Consume every batch; the checks run on the consumer stream, after the host moved on."""
    bad = []
    with DataSink(pipeline(), device=backend, prefetch_depth=depth, static_slots=static_slots) as sink:
        for n, batch in enumerate(sink):
            seen = batch["x"].view(-1)     # a raw view, as a kernel would read it
            want = torch.from_numpy(np.stack([expected_row(n * BATCH + k) for k in range(BATCH)]).ravel())
            backend.consumer.enqueue(lambda n=n, seen=seen, want=want:
                                     None if torch.equal(seen, want) else bad.append(n))
    backend.consumer.mark().synchronize()
    backend.close()
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("static_slots", [False, True], ids=["fresh", "static"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_every_batch_is_intact_on_a_late_device(schedule, depth, seed, static_slots):
    backend = FakeAsyncBackend(schedule, seed)
    bad = run_on_fake_device(backend, depth, static_slots)
    assert bad == []
    assert backend.hazards == []


@pytest.mark.parametrize("broken, schedule, catches", [
    ({"wait": False}, "late copies", "a missing wait on the ready event"),
    ({"slot_wait": False}, "late copies", "a host slot reused before its copy finished"),
    ({"record": False}, "late consumer", "a device buffer recycled while the consumer stream reads it"),
    ({"release_wait": False}, "late consumer", "a static slot rewritten while the consumer stream reads it"),
    ({"slot_wait": False, "static": True}, "late copies", "a host slot reused before its direct copy finished"),
])
def test_the_fake_device_catches(broken, schedule, catches):
    broken = dict(broken)
    static_slots = broken.pop("static", False) or "release_wait" in broken
    backend = FakeAsyncBackend(schedule, seed=7, **broken)
    bad = run_on_fake_device(backend, depth=1, static_slots=static_slots)
    assert bad, f"{catches} went unnoticed"
    if "slot_wait" in broken:
        assert backend.hazards
