"""Workers (recordio.dataset.workers, shm): errors, a killed worker, shutdown, bounded memory."""

import gc
import glob
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest

from recordio.dataset import GeneratorDataset, config
from recordio.dataset import shm
from recordio.errors import WorkerError
from conftest import child_pythonpath


class Rows:
    def __init__(self, n, size=16):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.int64(i), np.full(self.size, i % 251, np.uint8)


class BadRow(ValueError):
    pass


def fail_on_7(i, img):
    if int(i) == 7:
        raise BadRow("row seven is bad")
    return i, img


def die_on_5(i, img):
    if int(i) == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return i, img


def pipeline(fn, processes, workers=2, n=40):
    ds = GeneratorDataset(Rows(n), ["id", "img"], shuffle=False)
    return ds.map(fn, input_columns=["id", "img"], num_parallel_workers=workers,
                  python_multiprocessing=processes)


def my_shm_files():
    return glob.glob(os.path.join(shm.SHM_DIR, f"rio-{os.getpid()}-*"))


def children():
    path = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    with open(path) as f:
        return [int(p) for p in f.read().split()]


@pytest.mark.parametrize("processes", [False, True])
def test_worker_error_keeps_its_type_traceback_and_row(processes):
    it = pipeline(fail_on_7, processes).create_dict_iterator(num_epochs=1, output_numpy=True)
    with pytest.raises(BadRow, match="row seven") as info:
        list(it)
    err = info.value
    assert err.recordio_row == 7
    assert any("row 7" in note for note in err.__notes__)
    assert "recordio: map #0 was given column(s) ['id', 'img'] of that row" in err.__notes__
    text = "".join(traceback.format_exception(err))
    assert "fail_on_7" in text


def test_a_killed_worker_is_reported():
    it = pipeline(die_on_5, True).create_dict_iterator(num_epochs=1, output_numpy=True)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="died"):
        list(it)
    assert time.monotonic() - start < 30
    assert not my_shm_files()


def _die_on_first(chunk):
    if chunk[0] == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk


@pytest.mark.slow
def test_a_worker_dead_before_the_next_chunk_is_handed_out_is_reported():
    """The pool broke while the consumer was still handing out chunks: the hand-out reports it too."""
    from recordio.dataset.workers import ProcessRunner

    def chunks():
        yield [0]
        time.sleep(1.0)                  # the worker is dead by now
        yield [1]

    runner = ProcessRunner(_die_on_first, 1, 2)
    try:
        with pytest.raises(WorkerError, match="died"):
            list(runner.imap(chunks()))
    finally:
        runner.close()


@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True])
def test_break_and_garbage_collection_leave_nothing_behind(processes):
    threads = threading.active_count()
    before = set(children())          # a fork server or resource tracker an earlier test started stays
    it = pipeline(lambda i, img: (i, img), processes, n=2000).create_dict_iterator(num_epochs=1)
    for k, _ in enumerate(it):
        if k == 10:
            break
    del it
    gc.collect()
    deadline = time.monotonic() + 10
    while (threading.active_count() > threads or set(children()) - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads
    assert not set(children()) - before
    assert not my_shm_files()


def test_shm_round_trip_sends_arrays_out_of_band(tmp_path):
    big = np.arange(1 << 16, dtype=np.float64)
    path = str(tmp_path / "x")
    shm.dump({"a": big, "b": "text"}, path)
    assert os.path.getsize(path) < big.nbytes + 1024
    back = shm.load(path)
    assert np.array_equal(back["a"], big) and back["b"] == "text" and not os.path.exists(path)


def test_result_slots_are_reused_and_loads_are_copies(tmp_path, monkeypatch):
    monkeypatch.setattr(shm, "_KEPT", {})
    slots = shm.Slots(str(tmp_path / "rio-slots-"))
    first = slots.take()
    small = [np.full((3, 4), 7, np.float32), "label"]
    back = slots.load(*shm.dump_slot(small, first), first)
    assert np.array_equal(back[0], small[0]) and back[1] == "label" and back[0].flags.writeable
    again = slots.take()
    assert again == first                                     # freed on load, handed out again
    big = {"image": np.arange(3 << 20, dtype=np.uint8), "n": 5}   # grows the file past its first MiB
    kind, path = shm.dump_slot(big, again)
    assert kind == "slot" and os.path.getsize(path) >= (3 << 20)
    got = slots.load(kind, path, again)
    assert np.array_equal(got["image"], big["image"]) and got["n"] == 5
    assert np.array_equal(back[0], small[0])                  # an earlier load is its own copy
    third = slots.take()
    kind, path = shm.dump_slot(small, third)                   # smaller again: the same file, kept map
    assert slots.load(kind, path, third)[1] == "label"
    slots.close()


def test_a_slot_that_cannot_be_reserved_falls_back_to_a_one_off_file(tmp_path, monkeypatch):
    import errno

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(shm, "_KEPT", {})
    monkeypatch.setattr(os, "posix_fallocate", full)
    slots = shm.Slots(shm.prefix_for("slot-test"))
    slot = slots.take()
    kind, path = shm.dump_slot([np.ones(10)], slot)
    assert kind == "file" and path != slot and os.path.exists(path)
    assert np.array_equal(slots.load(kind, path, slot)[0], np.ones(10)) and not os.path.exists(path)
    assert slots.take() == slot
    slots.close()
    shm.sweep(shm.prefix_for("slot-test"))


def test_process_map_results_of_changing_sizes_come_back_exact():
    from recordio.dataset import GeneratorDataset
    rows = [(np.int64(i),) for i in range(300)]
    ds = GeneratorDataset(rows, "x", shuffle=False).map(
        lambda x: np.full(int(x) * 997 % 5000, int(x), np.int32), "x", num_parallel_workers=2,
        python_multiprocessing=True)
    for k, row in enumerate(ds.create_dict_iterator(num_epochs=1, output_numpy=True)):
        assert row["x"].shape == (k * 997 % 5000,) and (row["x"] == k).all()
    assert k == 299
    assert not my_shm_files()


def rss_anon_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no RssAnon in /proc/self/status")


@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True])
def test_memory_stays_bounded_over_a_large_dataset(processes):
    # 1600 rows of 256 KiB (400 MiB) through map + batch to a slow consumer: anonymous memory must
    # stay bounded (unbounded queues would hold most of the 400 MiB); file-backed pages do not count
    old = config.get_prefetch_size()
    config.set_prefetch_size(2)
    try:
        ds = GeneratorDataset(Rows(1600, 1 << 18), ["id", "img"], shuffle=False).map(
            lambda img: img + 1, input_columns="img", num_parallel_workers=2,
            python_multiprocessing=processes).batch(8)
        before = rss_anon_mb()
        samples = []
        for k, batch in enumerate(ds.create_dict_iterator(num_epochs=1, output_numpy=True)):
            time.sleep(0.005)                      # a consumer slower than the pipeline
            if k % 10 == 0:
                samples.append(rss_anon_mb())
    finally:
        config.set_prefetch_size(old)
    assert k == 199
    growth = max(samples) - before
    assert growth < 150, f"anonymous RSS grew by {growth:.0f} MiB: {samples}"


EXIT_SCRIPT = """
import numpy as np, os, sys
from recordio.dataset import GeneratorDataset, config
ds = GeneratorDataset([(np.full(64, i % 200, np.uint8),) for i in range(5000)], ["x"], shuffle=False)
it = ds.map(lambda x: x + 1, input_columns="x", num_parallel_workers=2, python_multiprocessing=True)
it = it.create_dict_iterator(num_epochs=-1, output_numpy=True)
next(it)
print(os.getpid())
"""


def test_interpreter_exit_with_a_live_iterator():
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    pid = done.stdout.split()[-1]
    assert not glob.glob(os.path.join(shm.SHM_DIR, f"rio-{pid}-*"))
    assert "leaked" not in done.stderr and "Traceback" not in done.stderr


class Unpicklable(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def raise_unpicklable(i, img):
    if int(i) == 3:
        raise Unpicklable("this", "that")
    return i, img


def test_an_unpicklable_worker_error_still_reaches_the_consumer():
    it = pipeline(raise_unpicklable, True).create_dict_iterator(num_epochs=1, output_numpy=True)
    with pytest.raises(WorkerError, match=r"Unpicklable: this and that[\s\S]*row 3"):
        list(it)


_PARENT_ONLY = []                    # filled in the test's process: a forked worker inherits it, a spawned one not


def _inherited(i, img):
    return np.int64(len(_PARENT_ONLY)), img


@pytest.mark.parametrize("method, inherited", [("fork", 1), ("spawn", 0)])
def test_worker_processes_start_as_the_config_says(method, inherited):
    """``config.set_multiprocessing_start_method``: worker processes fork by default, start afresh with
    ``"spawn"`` (the rows' values the same either way)."""
    _PARENT_ONLY.append(1)
    old = config.get_multiprocessing_start_method()
    config.set_multiprocessing_start_method(method)
    try:
        data = GeneratorDataset(Rows(12), ["i", "img"], shuffle=False)
        data = data.map(_inherited, input_columns=["i", "img"], num_parallel_workers=2, python_multiprocessing=True)
        rows = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    finally:
        config.set_multiprocessing_start_method(old)
        _PARENT_ONLY.clear()
    assert [int(r[0]) for r in rows] == [inherited] * 12
    assert [int(r[1][0]) for r in rows] == list(range(12))


def test_a_later_map_does_not_claim_an_earlier_maps_failure():
    it = pipeline(fail_on_7, False).map(lambda x: x, input_columns="id").create_dict_iterator(num_epochs=1)
    with pytest.raises(BadRow) as info:
        list(it)
    notes = info.value.__notes__
    assert [n for n in notes if "was given column(s)" in n] == ["recordio: map #0 was given column(s) ['id', 'img'] "
                                                                 "of that row"]
