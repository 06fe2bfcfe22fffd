"""Device backends of the sink: the few device operations the sink needs, per device kind.

The sink's feeder and consumer call only these methods, so the same queueing,
slot, status, timeout, error and shutdown code runs on every device:

==================  =========================================================
``alloc_host(n)``   an ``n``-byte uint8 host buffer (pinned on CUDA)
``stream()``        context manager making the sink's side stream current
``to_device(t)``    copy a host tensor to the device, asynchronously on the side stream
``new_event()``     an event; ``record(e)`` records it on the side stream
``host_wait(e)``    block the calling host thread until ``e`` has completed
``consumer_wait(e)``  make the consumer's current stream wait for ``e`` (no host block)
``hand_over(t)``    make ``t`` safe to use on the consumer's current stream (``record_stream``)
``synchronize()``   block until everything queued on the side stream has run
``prepare_thread()``  called once in the feeder thread before its first batch
``bind()``          fix the device when iteration starts (``"cuda"``: the current device then)
==================  =========================================================

and, for ``static_slots=True`` (fixed device buffers, see ``sink_ring.DeviceSlots``):

======================  =====================================================
``alloc_device(n)``     an ``n``-byte uint8 buffer on the device
``copy_into(dst, src)``  copy ``src`` (host or device) into ``dst`` on the side stream
``consumer_event()``    an event recorded on the consumer's current stream
``stream_wait(e)``      make the side stream wait for ``e`` (no host block)
======================  =====================================================

:class:`CudaBackend` follows the design in ``docs/sink.md`` (pinned ring, side stream,
per-slot events, ``wait_event`` + ``record_stream``). :class:`CpuBackend` has no
pinning, streams or events; its "copy" is a real copy (``clone``) so that a batch
handed out never aliases a host slot that the feeder will overwrite. The test
suite adds a fake asynchronous backend whose copies complete late on another thread.
"""

import contextlib

from recordio.errors import PipelineError
from recordio.extras import requires

with requires("recordio.DataSink"):
    import torch

__all__ = ["CpuBackend", "CudaBackend", "DeviceBackend", "make_backend"]


class _Done:
    """An event that has always completed (devices without streams)."""

    def synchronize(self):
        return None

    def query(self):
        return True


class DeviceBackend:
    """Base class: a synchronous device where every operation completes at once."""

    device = torch.device("cpu")

    def bind(self):
        return None

    def alloc_host(self, nbytes):
        return torch.empty(nbytes, dtype=torch.uint8)

    def stream(self):
        return contextlib.nullcontext()

    def to_device(self, host_tensor):
        return host_tensor.clone()

    def new_event(self):
        return _Done()

    def record(self, event):
        return None

    def host_wait(self, event):
        event.synchronize()

    def consumer_wait(self, event):
        return None

    def hand_over(self, tensor):
        return None

    def synchronize(self):
        return None

    def prepare_thread(self):
        return None

    def alloc_device(self, nbytes):
        return torch.empty(nbytes, dtype=torch.uint8, device=self.device)

    def copy_into(self, dst, src):
        dst.copy_(src)

    def consumer_event(self):
        return _Done()

    def stream_wait(self, event):
        return None


class CpuBackend(DeviceBackend):
    """``device="cpu"``: no pinning, no streams; the tail runs in the feeder thread."""


class CudaBackend(DeviceBackend):
    """One CUDA device: pinned host slots, a side stream for copies and the tail, events."""

    def __init__(self, device):
        self._asked = torch.device(device)
        self._bound = None
        self._stream = None

    @property
    def device(self):
        """``cuda:N`` as asked; plain ``"cuda"`` is the current device (under DDP, the one the process
        selected with ``torch.cuda.set_device``), fixed by :meth:`bind` when iteration starts."""
        if self._bound is not None:
            return self._bound
        index = self._asked.index
        return torch.device("cuda", torch.cuda.current_device() if index is None else index)

    def bind(self):
        if self._bound is None:
            self._bound = self.device
            self._stream = torch.cuda.Stream(self._bound)

    def alloc_host(self, nbytes):
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def stream(self):
        return torch.cuda.stream(self._stream)

    def to_device(self, host_tensor):
        if not host_tensor.is_pinned():
            # a non_blocking copy from pageable memory silently synchronises
            raise PipelineError("DataSink: a host slot is not pinned; the copy would not be asynchronous")
        return host_tensor.to(self.device, non_blocking=True)

    def new_event(self):
        return torch.cuda.Event(blocking=True)      # a host wait on it sleeps instead of spinning a core

    def record(self, event):
        event.record(self._stream)

    def consumer_wait(self, event):
        torch.cuda.current_stream(self.device).wait_event(event)

    def hand_over(self, tensor):
        tensor.record_stream(torch.cuda.current_stream(self.device))

    def synchronize(self):
        self._stream.synchronize()

    def prepare_thread(self):
        torch.cuda.set_device(self.device)

    def copy_into(self, dst, src):
        if src.device.type == "cpu" and not src.is_pinned():
            raise PipelineError("DataSink: a host slot is not pinned; the copy would not be asynchronous")
        dst.copy_(src, non_blocking=True)

    def consumer_event(self):
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        return event

    def stream_wait(self, event):
        self._stream.wait_event(event)


def make_backend(device):
    """The backend for ``device``: a device string or ``torch.device``, or a backend object."""
    if isinstance(device, DeviceBackend):
        return device
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise PipelineError(f"DataSink: device must be 'cpu', 'cuda' or 'cuda:N', found {device!r}") from exc
    if device.type == "cpu":
        return CpuBackend()
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise PipelineError("DataSink: device 'cuda' asked for but CUDA is not available; "
                                "use device='cpu'")
        return CudaBackend(device)
    raise PipelineError(f"DataSink: device must be 'cpu' or 'cuda', found {device.type!r}")
