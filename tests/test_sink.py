"""DataSink on the CPU backend with the real pipeline: order, sink epochs, errors, timeouts, shutdown."""

import gc
import multiprocessing
import os
import signal
import threading
import time
import traceback

import numpy as np
import pytest
import torch

from recordio import GeneratorDataset, PipelineError, SinkTimeoutError, WorkerError, vision
from recordio.sink.datasink import DataSink
from recordio.sink.backends import CpuBackend

ROWS, BATCH = 20, 4          # 5 batches per data epoch


def source(n=ROWS):
    return [(np.int64(i), np.full((3, 2), i, dtype=np.float32), f"row-{i}") for i in range(n)]


def pipeline(n=ROWS, batch=BATCH, **map_kwargs):
    ds = GeneratorDataset(source(n), ["x", "image", "name"], shuffle=False)
    if map_kwargs:
        ds = ds.map(input_columns=["x"], **map_kwargs)
    return ds.batch(batch)


def first_rows(batches):
    return [int(b["x"][0]) for b in batches]


def sink_threads():
    return [t for t in threading.enumerate() if t.name.startswith("recordio-")]


@pytest.fixture
def no_leaks():
    """Fail if the test leaves new sink or pipeline threads, or worker processes, behind."""
    threads_before = set(sink_threads())
    children_before = set(multiprocessing.active_children())

    def leaked():
        return (set(sink_threads()) - threads_before, set(multiprocessing.active_children()) - children_before)

    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while any(leaked()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert leaked() == (set(), set())


# -- order, completeness, values ------------------------------------------------------------------

@pytest.mark.slow
def test_every_batch_once_in_order(no_leaks):
    with DataSink(pipeline(), device="cpu") as sink:
        for _ in range(3):
            batches = list(sink)
            assert first_rows(batches) == [0, 4, 8, 12, 16]
    x = torch.cat([b["x"] for b in batches])
    assert x.tolist() == list(range(ROWS))


def test_batches_are_dicts_of_tensors_with_strings_passed_through(no_leaks):
    with DataSink(pipeline(), device="cpu") as sink:
        batch = next(iter(sink))
    assert isinstance(batch["x"], torch.Tensor) and batch["x"].dtype == torch.int64
    assert batch["image"].shape == (BATCH, 3, 2) and batch["image"].dtype == torch.float32
    assert torch.equal(batch["image"][:, 0, 0], torch.arange(BATCH, dtype=torch.float32))
    assert [str(s) for s in batch["name"]] == [f"row-{i}" for i in range(BATCH)]


def test_a_short_last_batch_keeps_its_size(no_leaks):
    with DataSink(pipeline(n=10, batch=4), device="cpu") as sink:
        assert [len(b["x"]) for b in sink] == [4, 4, 2]


def slow_batch(x):
    time.sleep(0.03)
    return x


@pytest.mark.slow
def test_the_pipeline_runs_while_the_loop_computes(no_leaks):
    """20 batches that take 30 ms each to make, a step of 30 ms: 1.2 s in series, ~0.6 s overlapped
    (two map threads, so the pipeline keeps ahead of the loop)."""
    ds = GeneratorDataset(source(80), ["x", "image", "name"], shuffle=False).batch(BATCH)
    ds = ds.map(slow_batch, input_columns=["x"], num_parallel_workers=2)
    with DataSink(ds, device="cpu") as sink:
        t0 = time.monotonic()
        for _ in sink:
            time.sleep(0.03)
        elapsed = time.monotonic() - t0
    assert elapsed < 0.9, f"{elapsed:.3f} s: data and step did not overlap"


# -- sink epochs ------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sink_size, expected", [
    (3, [[0, 4, 8], [12, 16, 0], [4, 8, 12], [16, 0, 4]]),       # continues and wraps around
    (5, [[0, 4, 8, 12, 16]] * 4),
    (7, [[0, 4, 8, 12, 16, 0, 4], [8, 12, 16, 0, 4, 8, 12], [16, 0, 4, 8, 12, 16, 0], [4, 8, 12, 16, 0, 4, 8]]),
    (-1, [[0, 4, 8, 12, 16]] * 4),
])
def test_sink_epochs_continue_where_the_last_stopped(sink_size, expected, no_leaks):
    with DataSink(pipeline(), device="cpu", sink_size=sink_size) as sink:
        assert len(sink) == len(expected[0])
        assert [first_rows(sink) for _ in range(4)] == expected
        assert sink.status().have_sent >= 4 * len(expected[0])


def test_data_epochs_count_on_across_sink_epochs(no_leaks):
    """The data epoch (not the sink epoch) keys the randomness: 3 sink epochs of 5 batches over
    a 4-batch dataset see data epochs 0..3, each with its own flips."""
    def flips(x, image):
        return x, vision.RandomHorizontalFlip(0.5)(image)

    ds = GeneratorDataset([(np.int64(i), np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) for i in range(8)],
                          ["x", "image"], shuffle=False)
    ds = ds.map(flips, input_columns=["x", "image"], output_columns=["x", "image"]).batch(2)
    epochs = ds.create_dict_iterator(num_epochs=4, output_numpy=True)
    reference = [b["image"] for _ in range(4) for b in epochs]
    assert len(reference) == 16
    with DataSink(ds, device="cpu", sink_size=5) as sink:
        got = [b["image"].numpy() for _ in range(3) for b in sink]
    assert len(got) == 15
    assert any(not np.array_equal(a, b) for a, b in zip(reference[:4], reference[4:8]))
    for mine, theirs in zip(got, reference):
        np.testing.assert_array_equal(mine, theirs)


def offloadable(offload):
    images = [(np.arange(48, dtype=np.uint8).reshape(4, 4, 3) + 10 * i,) for i in range(8)]
    ops = [vision.RandomHorizontalFlip(0.5), vision.Rescale(1 / 255, -0.5), vision.HWC2CHW()]
    ds = GeneratorDataset(images, ["image"], shuffle=False)
    return ds.map(ops, input_columns=["image"], offload=offload).batch(4)


def test_the_offloaded_tail_runs_in_the_sink_as_on_the_host(no_leaks):
    ds = offloadable(True)
    assert ds.offload_plan().tail
    epochs = offloadable(False).create_dict_iterator(num_epochs=3, output_numpy=True)
    host = [b["image"] for _ in range(3) for b in epochs]
    with DataSink(ds, device="cpu", sink_size=3) as sink:
        got = [b["image"].numpy() for _ in range(2) for b in sink]     # 6 batches: 3 data epochs
    assert [g.shape for g in got] == [(4, 3, 4, 4)] * 6
    assert not np.array_equal(host[0], host[2])
    for mine, theirs in zip(got, host):
        np.testing.assert_allclose(mine, theirs, atol=1e-6)


def test_the_offloaded_tail_takes_the_seed_of_a_loaded_state(no_leaks):
    from recordio.dataset import config
    before = config.get_seed()
    try:
        _check_the_sink_uses_the_state_seed(config)
    finally:
        config.set_seed(before)


def _check_the_sink_uses_the_state_seed(config):
    host_ds = offloadable(False)
    config.set_seed(7)
    state = host_ds.state_dict()                  # seed 7, nothing consumed
    host = [b["image"] for b in host_ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    config.set_seed(8)
    other = [b["image"] for b in offloadable(False).create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert any(not np.array_equal(a, b) for a, b in zip(host, other))    # the seeds draw differently
    ds = offloadable(True)
    ds.load_state_dict(state)                     # config says 8, the state says 7
    with DataSink(ds, device="cpu") as sink:
        got = [b["image"].numpy() for b in sink]
    for mine, theirs in zip(got, host, strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-6)


def test_break_ends_the_sink_epoch_and_the_next_continues(no_leaks):
    with DataSink(pipeline(), device="cpu", sink_size=4) as sink:
        for n, batch in enumerate(sink):
            if n == 1:
                break
        assert first_rows(sink) == [8, 12, 16, 0]


def test_an_empty_dataset_gives_empty_sink_epochs(no_leaks):
    with DataSink(pipeline(n=0), device="cpu") as sink:
        assert list(sink) == []
        assert list(sink) == []


# -- errors from every stage ------------------------------------------------------------------------

def fail_on_row_9(x):
    if int(x) == 9:
        raise ZeroDivisionError("row 9 is bad")
    return x


def die_on_row_6(x):
    if int(x) == 6:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_a_map_error_reaches_the_loop_with_its_own_type_and_traceback(no_leaks):
    got = []
    with pytest.raises(ZeroDivisionError, match="row 9 is bad") as info:
        with DataSink(pipeline(operations=fail_on_row_9, num_parallel_workers=1), device="cpu") as sink:
            for batch in sink:
                got.append(int(batch["x"][0]))
    text = "".join(traceback.format_exception(info.value))
    assert "fail_on_row_9" in text                         # the original frame
    assert "data processing stage of DataSink" in text     # where the sink met it
    assert got == [0, 4][:len(got)]                        # batches before the error came, in order


def test_the_error_is_raised_again_on_the_next_epoch(no_leaks):
    with DataSink(pipeline(operations=fail_on_row_9, num_parallel_workers=1), device="cpu") as sink:
        for _ in range(2):
            with pytest.raises(ZeroDivisionError):
                list(sink)


@pytest.mark.slow
def test_a_killed_worker_process_raises_instead_of_hanging(no_leaks):
    ds = pipeline(operations=die_on_row_6, num_parallel_workers=2, python_multiprocessing=True)
    t0 = time.monotonic()
    with pytest.raises(WorkerError):
        with DataSink(ds, device="cpu", timeout=30) as sink:
            list(sink)
    assert time.monotonic() - t0 < 20


class FailingDevice(CpuBackend):
    """A device whose third copy fails, as an asynchronous CUDA error would surface."""

    def __init__(self):
        self.copies = 0

    def to_device(self, host_tensor):
        self.copies += 1
        if self.copies == 2 * 2 + 1:        # two tensor columns ("x", "image") per batch: batch 2
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return super().to_device(host_tensor)


def test_a_device_error_reaches_the_loop(no_leaks):
    got = []
    with pytest.raises(RuntimeError, match="illegal memory access") as info:
        with DataSink(pipeline(), device=FailingDevice()) as sink:
            for batch in sink:
                got.append(int(batch["x"][0]))
    assert got == [0, 4]                   # the batches copied before the failure
    assert "host->device copy stage" in "".join(traceback.format_exception(info.value))


# -- timeouts and the status report -----------------------------------------------------------------

STALL_BATCH = 64     # the pipeline fetches rows in chunks of 64: stall on a chunk boundary


class Stalling:
    """A random-access source whose rows from ``stall_at`` on wait for ``release``."""

    def __init__(self, stall_at):
        self.stall_at = stall_at
        self.release = threading.Event()

    def __len__(self):
        return 5 * STALL_BATCH

    def __getitem__(self, i):
        if i >= self.stall_at:
            self.release.wait()
        return (np.int64(i),)


@pytest.fixture
def stalling():
    made = []

    def make(stall_at):
        made.append(Stalling(stall_at))
        return made[-1]

    yield make
    for src in made:
        src.release.set()


def stalled_sink(src, **kwargs):
    ds = GeneratorDataset(src, ["x"], shuffle=False, num_parallel_workers=1).batch(STALL_BATCH)
    return DataSink(ds, device="cpu", timeout=0.3, **kwargs)


@pytest.mark.slow
def test_nothing_produced_times_out_with_the_report(no_leaks, stalling):
    src = stalling(0)
    with stalled_sink(src, channel_name="chan-0") as sink:
        with pytest.raises(SinkTimeoutError) as info:
            next(iter(sink))
        src.release.set()
    err = info.value
    assert isinstance(err, TimeoutError)
    assert "nothing sent at all" in str(err)
    assert err.report.have_sent == 0 and err.report.host_queue == ()
    report = err.report.report()
    assert report.splitlines()[:4] == ["channel_name: chan-0", "have_sent: 0;", "host_queue: ;", "device_queue: ;"]
    assert "-1 -> -1" in report


@pytest.mark.slow
def test_a_slow_pipeline_times_out_naming_data_processing(no_leaks, stalling):
    src = stalling(3 * STALL_BATCH)
    with stalled_sink(src) as sink:
        it = iter(sink)
        got = [int(next(it)["x"][0]) for _ in range(3)]
        with pytest.raises(SinkTimeoutError, match="data processing is slow") as info:
            next(it)
        status = sink.status()
        src.release.set()
    assert got == [0, 64, 128]
    assert info.value.report.have_sent == 3 == status.have_sent
    assert len(status.host_queue) == len(status.device_queue) == len(status.pushes) == 3
    assert all(start <= end for start, end in status.pushes)
    assert status.push_first == status.pushes[0]
    assert status.consumed == 3


class StallingDevice(CpuBackend):
    """A device whose copies hang after the first batch until released."""

    def __init__(self):
        self.release = threading.Event()
        self.copies = 0

    def to_device(self, host_tensor):
        self.copies += 1
        if self.copies > 1:
            self.release.wait()
        return super().to_device(host_tensor)


@pytest.mark.slow
def test_a_stalled_copy_times_out_naming_the_copy(no_leaks):
    device = StallingDevice()
    ds = GeneratorDataset([(np.int64(i),) for i in range(ROWS)], ["x"], shuffle=False).batch(BATCH)
    try:
        with DataSink(ds, device=device, timeout=0.3) as sink:
            it = iter(sink)
            next(it)
            with pytest.raises(SinkTimeoutError, match="copy is stalled") as info:
                next(it)
            device.release.set()
    finally:
        device.release.set()
    report = info.value.report
    assert report.have_sent == 1 and report.pushes[-1][1] is None
    assert report.report().splitlines()[-1].rstrip().endswith("->")    # a push still in progress


def test_status_before_the_first_batch(no_leaks):
    sink = DataSink(pipeline(), device="cpu", channel_name="idle")
    status = sink.status()
    assert status.channel_name == "idle" and status.have_sent == 0 and status.push_first == (None, None)
    assert sink.threads == []          # nothing starts before the first iteration
    sink.close()


# -- shutdown ------------------------------------------------------------------------------------

def test_break_out_of_a_dropped_sink_stops_everything(no_leaks):
    for batch in DataSink(pipeline(), device="cpu"):
        break
    del batch


def test_close_is_prompt_idempotent_and_final(no_leaks):
    sink = DataSink(pipeline(), device="cpu")
    next(iter(sink))
    threads = sink.threads
    t0 = time.monotonic()
    sink.close()
    sink.close()
    assert time.monotonic() - t0 < 2
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(PipelineError, match="closed"):
        iter(sink)


def test_close_stops_worker_processes(no_leaks):
    ds = pipeline(operations=lambda x: x, num_parallel_workers=2, python_multiprocessing=True)
    with DataSink(ds, device="cpu") as sink:
        next(iter(sink))


@pytest.mark.slow
def test_garbage_collection_of_a_running_sink_stops_it(no_leaks):
    sink = DataSink(pipeline(), device="cpu")
    next(iter(sink))
    threads = sink.threads
    del sink
    gc.collect()
    assert not any(t.is_alive() for t in threads)


# -- arguments ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"sink_size": 0}, "sink_size"), ({"sink_size": -2}, "sink_size"), ({"sink_size": 1.5}, "sink_size"),
    ({"prefetch_depth": 0}, "prefetch_depth"), ({"timeout": 0}, "timeout"), ({"timeout": "1"}, "timeout"),
    ({"warn_after": 0}, "warn_after"), ({"warn_after": True}, "warn_after"), ({"static_slots": 1}, "static_slots"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataSink(pipeline(), device="cpu", **kwargs)


def test_cuda_without_cuda_is_refused():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(PipelineError, match="CUDA is not available"):
        DataSink(pipeline())


def test_an_unknown_device_is_refused():
    with pytest.raises(PipelineError, match="device"):
        DataSink(pipeline(), device="tpu")


# -- static device slots ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 3])
def test_static_slots_give_the_same_batches_from_fixed_buffers(depth, no_leaks):
    """Used before the next batch is asked for, static batches equal the fresh-tensor ones; they
    come from prefetch_depth + 2 buffers, reused in turn."""
    with DataSink(pipeline(), device="cpu", sink_size=12, prefetch_depth=depth) as dynamic:
        want = [(b["x"].clone(), b["image"].clone(), b["name"]) for b in dynamic]
    got, pointers = [], []
    with DataSink(pipeline(), device="cpu", sink_size=12, prefetch_depth=depth, static_slots=True) as sink:
        for batch in sink:
            got.append((batch["x"].clone(), batch["image"].clone(), batch["name"]))
            pointers.append(batch["image"].data_ptr())
    assert len(got) == len(want) == 12
    for (x, image, name), (wx, wimage, wname) in zip(got, want):
        assert torch.equal(x, wx) and torch.equal(image, wimage) and name == wname
    slots = depth + 2
    assert len(set(pointers)) == slots
    assert pointers == [pointers[k % slots] for k in range(12)]


def test_static_slots_with_an_offloaded_tail_equal_the_dynamic_sink(no_leaks):
    def tail_pipeline():
        ds = GeneratorDataset([(np.full((4, 4, 3), i, np.uint8),) for i in range(12)], ["image"], shuffle=False)
        return ds.map([vision.RandomHorizontalFlip(), vision.Rescale(1 / 255, 0)], input_columns="image",
                      offload=True).batch(3)
    with DataSink(tail_pipeline(), device="cpu") as dynamic:
        want = [b["image"].clone() for b in dynamic]
    with DataSink(tail_pipeline(), device="cpu", static_slots=True) as sink:
        got = [b["image"].clone() for b in sink]
    assert len(got) == 4 and all(torch.equal(g, w) for g, w in zip(got, want))
    assert got[0].dtype == torch.float32


@pytest.mark.slow
def test_a_waiting_consumer_logs_the_status_report(no_leaks, stalling, caplog):
    src = stalling(0)
    with stalled_sink(src, channel_name="chan-w", warn_after=0.1) as sink:
        sink.timeout = 0.45
        with caplog.at_level("WARNING", logger="recordio.sink.datasink"):
            with pytest.raises(SinkTimeoutError):
                next(iter(sink))
        src.release.set()
    warnings = [r.getMessage() for r in caplog.records if "no batch for" in r.getMessage()]
    assert 3 <= len(warnings) <= 5
    assert all("chan-w" in w and "nothing sent at all" in w and "have_sent: 0;" in w for w in warnings)


def test_no_warning_while_batches_keep_coming(no_leaks, caplog):
    with caplog.at_level("WARNING", logger="recordio.sink.datasink"):
        with DataSink(pipeline(), device="cpu", warn_after=5.0) as sink:
            assert len(list(sink)) == 5
    assert not [r for r in caplog.records if "no batch for" in r.getMessage()]


class _StickyError(CpuBackend):
    """A device that fails on the third copy, and whose every later synchronize re-raises the error,
    as CUDA does with a sticky error."""

    def __init__(self):
        self.copies = 0

    def _count(self):
        self.copies += 1
        if self.copies == 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered (sticky)")

    def to_device(self, host_tensor):
        self._count()
        return super().to_device(host_tensor)

    def copy_into(self, dst, src):
        self._count()
        return super().copy_into(dst, src)

    def synchronize(self):
        if self.copies >= 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered (sticky)")


@pytest.mark.slow
def test_a_sticky_device_error_reaches_the_loop_and_cleanup_still_runs(no_leaks):
    sink = DataSink(pipeline(), device=_StickyError(), static_slots=True)
    with pytest.raises(RuntimeError, match="sticky"):
        list(sink)
    channel = sink._channel
    for thread in sink.threads:
        thread.join(5)
    assert channel.ring.nbytes == 0 and not channel.slots._buffers     # both closed despite the error
    sink.close()
