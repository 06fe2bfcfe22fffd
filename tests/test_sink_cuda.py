"""DataSink on a real GPU: pinned slots, side stream, events and record_stream (skipped without CUDA)."""

import numpy as np
import pytest
import torch

from recordio import GeneratorDataset, vision
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
            torch.cuda._sleep(1_000_000)
            sums.append(batch["x"].sum(dim=(1, 2)))
            del batch
    consumer.synchronize()
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
