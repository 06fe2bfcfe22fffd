"""DataSink on a real GPU: pinned slots, side stream, events and record_stream (skipped without CUDA)."""

import numpy as np
import pytest
import torch

from recordio import GeneratorDataset, vision
from recordio.errors import PipelineError
from recordio.sink.backends import CudaBackend
from recordio.sink.datasink import DataSink

pytestmark = pytest.mark.gpu


def blocks(n=64, shape=(64, 1024)):
    """Batches of 4 rows; row i is filled with i (so each row's sum is known)."""
    rows = [(np.full(shape, i, dtype=np.float32), np.int64(i)) for i in range(n)]
    return GeneratorDataset(rows, ["x", "i"], shuffle=False).batch(4)


def offloadable():
    images = [(np.random.default_rng(i).integers(0, 256, (16, 16, 3), dtype=np.uint8),) for i in range(32)]
    ops = [vision.RandomHorizontalFlip(0.5), vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1 / 255, 0.0),
           vision.HWC2CHW()]
    ds = GeneratorDataset(images, ["image"], shuffle=False)
    return ds.map(ops, input_columns=["image"], offload=True).batch(8)


def test_batches_land_on_the_gpu_from_pinned_slots():
    with DataSink(blocks(), device="cuda") as sink:
        batch = next(iter(sink))
        assert batch["x"].device.type == "cuda" and batch["i"].tolist() == [0, 1, 2, 3]
        assert all(b.is_pinned() for b in sink._channel.ring._buffers.values())


def test_the_offloaded_tail_on_the_gpu_equals_the_cpu_sink():
    with DataSink(offloadable(), device="cpu", sink_size=3) as sink:
        on_cpu = [b["image"] for _ in range(2) for b in sink]
    with DataSink(offloadable(), device="cuda", sink_size=3) as sink:
        on_gpu = [b["image"].cpu() for _ in range(2) for b in sink]
    for a, b in zip(on_cpu, on_gpu):
        torch.testing.assert_close(a, b, atol=5e-3, rtol=0)    # one uint8 step after Rescale(1/255)


@pytest.mark.parametrize("static_slots", [False, True], ids=["fresh", "static"])
@pytest.mark.parametrize("depth", [1, 2, 4])
def test_a_lagging_consumer_stream_reads_intact_batches(depth, static_slots):
    """The consumer runs on its own stream and lags behind the host (a sleep kernel before each
    read) and drops each batch at once: without wait_event and record_stream (or, with static
    slots, the side stream's wait on the consumer's release event) the reads would see unfinished
    copies or recycled memory."""
    consumer = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(consumer), DataSink(blocks(), device="cuda", prefetch_depth=depth,
                                               static_slots=static_slots) as sink:
        for batch in sink:
            torch.cuda._sleep(20_000_000)                    # ~10 ms: the consumer falls many batches behind
            sums.append(batch["x"].sum(dim=(1, 2)))
            del batch
    consumer.synchronize()
    got = torch.cat(sums).cpu()
    want = torch.arange(64, dtype=torch.float32) * 64 * 1024
    torch.testing.assert_close(got, want)


class SlowSideStream(CudaBackend):
    """Each copy to the device waits behind a sleep kernel on the side stream, so the side stream
    lags far behind the host thread that fills the pinned slots."""

    def to_device(self, host_tensor):
        torch.cuda._sleep(2_000_000)
        return super().to_device(host_tensor)

    def copy_into(self, dst, src):
        torch.cuda._sleep(2_000_000)
        super().copy_into(dst, src)


@pytest.mark.parametrize("static_slots", [False, True], ids=["fresh", "static"])
@pytest.mark.parametrize("depth", [1, 2, 4])
def test_a_lagging_side_stream_hands_out_complete_batches(depth, static_slots):
    """The side stream lags and the consumer reads each batch at once: without the consumer's
    wait on the ready event it would read before the copy ran, and without the host's wait on a
    slot's copy-done event the next batch would overwrite pinned memory a queued copy still reads."""
    sums = []
    with DataSink(blocks(), device=SlowSideStream("cuda"), prefetch_depth=depth,
                  static_slots=static_slots) as sink:
        for batch in sink:
            sums.append(batch["x"].sum(dim=(1, 2)))
    got = torch.cat(sums).cpu()
    want = torch.arange(64, dtype=torch.float32) * 64 * 1024
    torch.testing.assert_close(got, want)


def test_many_epochs_keep_host_memory_bounded():
    with DataSink(blocks(), device="cuda", prefetch_depth=2) as sink:
        for _ in range(3):
            for _ in sink:
                pass
        ring = sink._channel.ring
        assert ring.nbytes <= ring.size * 2 * (4 * 64 * 1024 * 4)


# --- the bugs the GPU path is known for: each test can catch one --------------------------------------


def _tail_batch(n=64, side=224, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, side, side, 3), dtype=np.uint8)


@pytest.mark.parametrize("rounding", ["per_op", "none"])
def test_the_cuda_tail_equals_the_cpu_tail_exactly_on_large_batches(rounding):
    from recordio.offload.tail import OffloadTail
    ops = [(1, vision.RandomHorizontalFlip(0.5)), (2, vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)),
           (3, vision.RandomSharpness((0.1, 1.9))), (4, vision.Normalize([123.7, 116.3, 103.5], [58.4, 57.1, 57.4])),
           (5, vision.HWC2CHW())]
    batch, rows = _tail_batch(), np.arange(64)
    cpu = OffloadTail({"image": ops}, rounding)({"image": torch.from_numpy(batch)}, rows, 0, 1)["image"]
    gpu = OffloadTail({"image": ops}, rounding)({"image": torch.from_numpy(batch).cuda()}, rows, 0, 1)["image"]
    assert torch.equal(cpu, gpu.cpu())


def test_the_tail_makes_no_host_sync():
    from recordio.offload.tail import OffloadTail
    ops = [(1, vision.RandomHorizontalFlip(0.5)), (2, vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)),
           (3, vision.Rescale(1 / 255, 0.0)), (4, vision.Normalize([0.5] * 3, [0.25] * 3)), (5, vision.HWC2CHW())]
    tail = OffloadTail({"image": ops})
    x = torch.from_numpy(_tail_batch(8, 32)).cuda()
    tail({"image": x}, np.arange(8), 0, 1)                    # constants are made (and cached) once
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        tail({"image": x}, np.arange(8, 16), 0, 1)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_sink_iteration_makes_no_host_sync_on_the_consumer():
    with DataSink(offloadable(), device="cuda", prefetch_depth=2) as sink:
        it = iter(sink)
        next(it)
        torch.cuda.set_sync_debug_mode("error")
        try:
            for _ in range(3):
                next(it)
        finally:
            torch.cuda.set_sync_debug_mode("default")


def test_device_memory_returns_to_its_baseline_after_close():
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    sink = DataSink(offloadable(), device="cuda", sink_size=4, static_slots=True)
    for _ in range(3):
        for batch in sink:
            del batch
    sink.close()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == baseline


def test_close_with_work_in_flight_is_prompt_and_clean():
    sink = DataSink(blocks(256, (256, 1024)), device="cuda", prefetch_depth=4)
    it = iter(sink)
    next(it)
    sink.close()                                              # copies still queued on the side stream
    assert not any(t.is_alive() for t in sink.threads)
    torch.cuda.synchronize()


def test_an_error_in_the_gpu_tail_reaches_the_consumer():
    images = [(np.zeros((8, 8, 4), np.uint8),) for _ in range(8)]
    ds = GeneratorDataset(images, ["image"], shuffle=False)
    ops = [vision.Normalize([0.0] * 3, [1.0] * 3)]             # 3 values for 4 channels: fails in the tail
    ds = ds.map(ops, input_columns=["image"], offload=True).batch(4)
    with DataSink(ds, device="cuda") as sink, pytest.raises(PipelineError, match="Normalize") as info:
        next(iter(sink))
    assert "DataSink" in " ".join(getattr(info.value, "__notes__", []))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_plain_cuda_sink_follows_the_device_set_before_iteration():
    sink = DataSink(blocks(), device="cuda")                  # built while cuda:0 is current
    torch.cuda.set_device(1)
    try:
        assert next(iter(sink))["x"].device == torch.device("cuda", 1)
    finally:
        sink.close()
        torch.cuda.set_device(0)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_cuda_1_gets_its_batches():
    with DataSink(offloadable(), device="cuda:1") as sink:
        assert next(iter(sink))["image"].device == torch.device("cuda", 1)
