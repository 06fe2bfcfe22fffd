"""The slot ring: round-robin slots, a wait before each reuse, grow-only buffers."""

import numpy as np
import pytest
import torch

from recordio.sink.backends import CpuBackend
from recordio.sink.ring import SlotRing, torch_dtype


class RecordingBackend(CpuBackend):
    def __init__(self):
        self.waited, self.allocated, self.synchronized = [], [], 0

    def alloc_host(self, nbytes):
        self.allocated.append(nbytes)
        return super().alloc_host(nbytes)

    def host_wait(self, event):
        self.waited.append(event)

    def synchronize(self):
        self.synchronized += 1


def test_a_slot_is_reused_only_after_waiting_for_its_last_copy():
    backend = RecordingBackend()
    ring = SlotRing(backend, 3)
    slots = []
    for n in range(7):
        slots.append(ring.acquire())
        ring.release(slots[-1], f"copied-{n}")
    assert slots == [0, 1, 2, 0, 1, 2, 0]
    assert backend.waited == ["copied-0", "copied-1", "copied-2", "copied-3"]


def test_buffers_grow_to_the_largest_batch_and_are_reused():
    backend = RecordingBackend()
    ring = SlotRing(backend, 2)
    for rows in [4, 4, 2, 8, 8, 3, 8, 8]:
        slot = ring.acquire()
        array = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        view = ring.stage(slot, "x", array, torch.float32)
        assert torch.equal(view, torch.from_numpy(array))
        ring.release(slot, None)
    assert backend.allocated == [48, 48, 96, 96]        # grew once per slot, never shrank
    assert ring.nbytes == 2 * 96
    ring.close()
    assert ring.nbytes == 0 and backend.synchronized == 1


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float32", "float64", ">i4"])
def test_staging_keeps_values_and_dtype(dtype):
    ring = SlotRing(CpuBackend(), 1)
    array = (np.arange(12) % 2 if dtype == "bool" else np.arange(12)).astype(dtype).reshape(2, 6)
    view = ring.stage(ring.acquire(), "c", array, torch_dtype(array))
    np.testing.assert_array_equal(view.numpy(), array)


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([b"x"], dtype=object), ["a", "b"]])
def test_non_numeric_columns_are_not_tensor_columns(value):
    assert torch_dtype(value) is None


def test_an_empty_array_stages():
    ring = SlotRing(CpuBackend(), 1)
    view = ring.stage(ring.acquire(), "c", np.zeros((0, 4), np.float32), torch.float32)
    assert view.shape == (0, 4)
