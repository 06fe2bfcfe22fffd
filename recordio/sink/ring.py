"""The ring of host slots the feeder stages batches in before copying them to the device.

Each column has ``size`` byte buffers (pinned on CUDA), used round-robin: batch
``n`` goes to slot ``n % size``. The feeder writes a slot on the host, queues the
asynchronous copy out of it, and records a *copy-done* event for the slot. Before
it writes the slot again it waits for that event on the host: a slot is never
rewritten while a copy still reads it. Buffers only grow (to the largest batch
seen; pinned allocation is slow and synchronising), and :meth:`SlotRing.close`
drains the side stream before dropping them.
"""

import threading

import numpy as np

from recordio.dataset.stopqueue import POLL_S
from recordio.extras import requires

with requires("recordio.DataSink"):
    import torch

__all__ = ["DeviceSlots", "SlotRing", "torch_dtype"]


def torch_dtype(array):
    """The torch dtype for a numeric numpy array, or None if the column is not a tensor column."""
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        return None
    try:
        return torch.from_numpy(np.empty(0, array.dtype.newbyteorder("="))).dtype
    except TypeError:
        return None


class SlotRing:
    """``size`` host slots per column, each reused only after its copy completed."""

    def __init__(self, backend, size):
        self._backend = backend
        self.size = size
        self._buffers = {}              # (column, slot) -> uint8 host tensor
        self._copied = [None] * size    # slot -> copy-done event of its last use
        self._next = 0

    def acquire(self):
        """The next slot, after waiting for the copy that last read it."""
        slot = self._next
        self._next = (slot + 1) % self.size
        event, self._copied[slot] = self._copied[slot], None
        if event is not None:
            self._backend.host_wait(event)
        return slot

    def stage(self, slot, column, array, dtype):
        """``array`` written into ``column``'s buffer of ``slot``; returns the host tensor view."""
        nbytes = array.nbytes
        buffer = self._buffers.get((column, slot))
        if buffer is None or buffer.numel() < nbytes:
            buffer = self._backend.alloc_host(max(nbytes, 1))
            self._buffers[(column, slot)] = buffer
        view = buffer[:nbytes].view(dtype).view(array.shape)
        np.copyto(view.numpy(), array, casting="no" if array.dtype.isnative else "equiv")
        return view

    def release(self, slot, copied):
        """Record the event after which ``slot``'s copies are done."""
        self._copied[slot] = copied

    @property
    def nbytes(self):
        """Host bytes held by the ring."""
        return sum(b.numel() for b in self._buffers.values())

    def close(self):
        """Wait for the side stream, then drop every buffer (also when the wait raises: a sticky CUDA
        error surfaces here, and the caller forwards it)."""
        try:
            self._backend.synchronize()
        finally:
            self._buffers.clear()
            self._copied = [None] * self.size


class DeviceSlots:
    """``static_slots=True``: the batches handed out live in ``size`` fixed device buffers per column.

    Batch ``n`` is written into slot ``n % size``. When the consumer asks for batch ``m``, the sink
    records an event on the consumer's stream and :meth:`release` files it for batch ``m - 1``: the
    consumer has queued everything it does with that batch. Before batch ``n`` is written, the side
    stream waits for the event filed for batch ``n - size`` (:meth:`wait_free`), so a slot is never
    overwritten while the consumer's kernels may still read it. With ``size = prefetch_depth + 2``
    (one batch in the consumer's hands, ``prefetch_depth`` queued, one being filled) the feeder never
    waits for the consumer while the queue has room. Buffers only grow, to the largest batch.
    """

    def __init__(self, backend, size):
        self._backend = backend
        self.size = size
        self._buffers = {}              # (column, slot) -> uint8 device buffer
        self._released = {}             # batch index -> consumer event
        self._cond = threading.Condition()

    def release(self, index, event):
        """The consumer is done with batch ``index`` once ``event`` has completed."""
        with self._cond:
            self._released[index] = event
            self._cond.notify_all()

    def wait_free(self, index, stop):
        """Make the side stream wait until the slot of batch ``index`` is free; False if stopping."""
        previous = index - self.size
        if previous < 0:
            return True
        with self._cond:
            while previous not in self._released:
                if stop.is_set():
                    return False
                self._cond.wait(POLL_S)
            event = self._released.pop(previous)
        self._backend.stream_wait(event)
        return True

    def place(self, index, column, tensor):
        """``tensor`` copied (on the side stream) into ``column``'s buffer of batch ``index``'s slot."""
        key = (column, index % self.size)
        nbytes = tensor.numel() * tensor.element_size()
        buffer = self._buffers.get(key)
        if buffer is None or buffer.numel() < nbytes:
            buffer = self._buffers[key] = self._backend.alloc_device(max(nbytes, 1))
        view = buffer[:nbytes].view(tensor.dtype).view(tensor.shape)
        self._backend.copy_into(view, tensor)
        return view

    @property
    def nbytes(self):
        """Device bytes held by the slots."""
        return sum(b.numel() for b in self._buffers.values())

    def close(self):
        """Drop every buffer (after the side stream drained: called from ``SlotRing.close``'s thread)."""
        self._buffers.clear()
        with self._cond:
            self._released.clear()
