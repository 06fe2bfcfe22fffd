"""Writers under faults: a file size limit (``ulimit -f``, which a nearly full disk behaves like) at
every size from nothing written to everything written, for a fresh write, an overwrite and an append.
After the child exits, the dataset at the path is exactly the old one or exactly the new one, and
``commit()`` reported success only for the new one."""

import os
import pickle
import pathlib
import subprocess
import sys

import pytest

import recordio
from fault_child import ROWS, rows, write

CHILD = pathlib.Path(__file__).resolve().parent / "fault_child.py"
LIMITS = list(range(0, 200_000, 7_000)) + [10 ** 9]


def _state(path):
    """The dataset at ``path`` as (ids, blobs), or None when there is none."""
    if not any(p.name.startswith(os.path.basename(path)) for p in pathlib.Path(path).parent.iterdir()
               if not p.name.startswith(".")):
        return None
    report = recordio.verify(path + "0")
    assert report.ok, str(report)
    with recordio.FileReader(path + "0") as reader:
        return sorted((int(r["id"]), r["blob"]) for r in reader)


def _expected(*versions):
    return sorted((int(r["id"]), r["blob"]) for v in versions for r in rows(v))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fresh", "overwrite", "append"])
def test_a_size_limit_leaves_the_old_or_the_new_dataset(tmp_path, mode):
    outcomes = set()
    for limit in LIMITS:
        folder = tmp_path / f"{mode}-{limit}"
        folder.mkdir()
        path = str(folder / "d.mindrecord")
        if mode != "fresh":
            write(path, 1, overwrite=False)
        old = _state(path)
        done = subprocess.run([sys.executable, str(CHILD), mode, path, str(limit)], capture_output=True, text=True,
                              timeout=120, cwd=folder)
        assert done.returncode == 0, done.stderr[-2000:]
        committed = done.stdout.strip().endswith("COMMITTED")
        new = _expected(1, 2) if mode == "append" else _expected(2)
        got = _state(path)
        if committed:
            assert got == new, f"limit {limit}: commit() succeeded but the dataset is not the new one"
        else:
            assert got == old, f"limit {limit}: commit() failed ({done.stdout.strip()}) and the old dataset changed"
        outcomes.add(committed)
    assert outcomes == {True, False}                 # the sweep covers both failing and passing limits


def _short_pwrite(real, at_most):
    def pwrite(fd, data, offset):
        return real(fd, bytes(memoryview(data)[:at_most]), offset)
    return pwrite


def test_short_writes_are_completed(tmp_path, monkeypatch):
    from recordio.mindrecord import fileio
    monkeypatch.setattr(fileio.os, "pwrite", _short_pwrite(os.pwrite, 100))   # every write stops after 100 bytes
    path = str(tmp_path / "d.mindrecord")
    write(path, 1, overwrite=False)
    monkeypatch.undo()
    assert _state(path) == _expected(1)


def test_a_write_that_makes_no_progress_fails_and_publishes_nothing(tmp_path, monkeypatch):
    from recordio.mindrecord import fileio
    calls = []

    def stuck(fd, data, offset):
        calls.append(offset)
        return 0 if len(calls) > 3 else os.pwrite(fd, data, offset)

    monkeypatch.setattr(fileio.os, "pwrite", stuck)
    path = str(tmp_path / "d.mindrecord")
    with pytest.raises(OSError, match="no progress"):
        write(path, 1, overwrite=False)
    monkeypatch.undo()
    assert _state(path) is None and not [p for p in tmp_path.iterdir() if p.name != "d.mindrecord"]


def test_a_writer_that_failed_refuses_to_commit(tmp_path, monkeypatch):
    from recordio.mindrecord import fileio
    w = recordio.FileWriter(str(tmp_path / "x.mindrecord"))
    w.add_schema({"id": {"type": "int64"}, "blob": {"type": "bytes"}}, "x")
    monkeypatch.setattr(fileio.os, "pwrite", lambda fd, data, offset: 0)
    with pytest.raises(OSError):
        w.write_raw_data(rows(1)[:3])
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="an earlier write failed"):
        w.commit()
    assert not list(tmp_path.iterdir())


# --- two writers on one path ------------------------------------------------------------------------


def _writer_job(path, version, overwrite, barrier=None):
    """Write version ``version`` at ``path``; returns "ok" or the error's class name."""
    if barrier is not None:
        barrier.wait()
    try:
        write(path, version, overwrite)
        return "ok"
    except recordio.DatasetExistsError:
        return "exists"


def _process_job(args):
    return _writer_job(*args)


def _check_outcome(path, results, overwrite):
    winners = [v for v, r in results.items() if r == "ok"]
    assert set(results.values()) <= {"ok", "exists"}
    if not overwrite:
        assert len(winners) == 1, results
    assert winners, results
    got = _state(path)
    assert got in [_expected(v) for v in winners], "the dataset mixes two writers"
    assert not [p for p in pathlib.Path(path).parent.iterdir() if ".rio" in p.name]    # no lock or staging left


@pytest.mark.parametrize("overwrite", [False, True])
def test_two_threads_on_one_path_never_mix(tmp_path, overwrite):
    import threading
    for trial in range(20):
        path = str(tmp_path / f"t{trial}" / "d.mindrecord")
        os.makedirs(os.path.dirname(path))
        barrier, results = threading.Barrier(2), {}

        def run(version):
            results[version] = _writer_job(path, version, overwrite, barrier)

        threads = [threading.Thread(target=run, args=(v,)) for v in (3, 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        _check_outcome(path, results, overwrite)


@pytest.mark.parametrize("overwrite", [False, True])
def test_two_processes_on_one_path_never_mix(tmp_path, overwrite):
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        for trial in range(20):
            path = str(tmp_path / f"p{trial}" / "d.mindrecord")
            os.makedirs(os.path.dirname(path))
            outcomes = pool.map(_process_job, [(path, v, overwrite) for v in (3, 4)])
            _check_outcome(path, dict(zip((3, 4), outcomes)), overwrite)


# --- readers whose dataset is replaced --------------------------------------------------------------


def test_a_reader_keeps_reading_the_version_it_opened(tmp_path):
    path = str(tmp_path / "d.mindrecord")
    write(path, 1, overwrite=False)
    reader = recordio.FileReader(path + "0")
    clone = pickle.loads(pickle.dumps(reader))      # a copy (a worker's) reopens the files by path
    write(path, 2, overwrite=True)
    assert sorted((int(r["id"]), r["blob"]) for r in reader) == _expected(1)
    reader.close()
    with pytest.raises(ValueError, match="closed FileReader"):
        reader[0]
    with pytest.raises(recordio.DatasetChangedError, match="replaced"):
        clone[0]                                    # reopening by path finds another file
    assert _state(path) == _expected(2)


def _read_all(reader):
    return sorted(int(r["id"]) for r in reader)


def test_a_pickled_reader_refuses_a_replaced_dataset(tmp_path):
    import multiprocessing
    path = str(tmp_path / "d.mindrecord")
    write(path, 1, overwrite=False)
    reader = recordio.FileReader(path + "0")
    write(path, 2, overwrite=True)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        with pytest.raises(recordio.DatasetChangedError):
            pool.apply(_read_all, (reader,))
    same = recordio.FileReader(path + "0")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_read_all, (same,)) == sorted(1000 * 2 + i for i in range(ROWS))


def test_large_datasets_refuse_files_replaced_before_they_are_mapped(tmp_path, monkeypatch):
    from recordio.mindrecord.read import shard_set
    monkeypatch.setattr(shard_set, "KEEP_OPEN", 1)        # files are opened on demand
    path = str(tmp_path / "d.mindrecord")
    write(path, 1, overwrite=False)
    reader = recordio.FileReader(path + "0")
    write(path, 2, overwrite=True)
    with pytest.raises(recordio.DatasetChangedError):
        list(reader)


@pytest.mark.slow
def test_a_reader_looping_during_overwrites_and_appends_never_returns_a_wrong_row(tmp_path):
    import threading
    path = str(tmp_path / "d.mindrecord")
    write(path, 1, overwrite=False)
    stop, errors = threading.Event(), []

    def churn():
        version = 2
        try:
            while not stop.is_set():
                if version % 3:
                    write(path, version % 200, overwrite=True)
                else:
                    append_rows(path, version % 200)
                version += 1
        except Exception as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=churn)
    thread.start()
    reads = 0
    try:
        import time
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                with recordio.FileReader(path + "0") as reader:
                    for row in reader:
                        version, i = divmod(int(row["id"]), 1000)
                        assert row["blob"] == bytes([version, i % 256]) * (300 + 17 * i), "a wrong row"
                        reads += 1
            except (recordio.DatasetChangedError, recordio.FormatError, FileNotFoundError):
                pass                                  # refused, never wrong
    finally:
        stop.set()
        thread.join(60)
    assert not errors and reads > 0


def append_rows(path, version):
    with recordio.FileWriter.open_for_append(path + "0") as w:
        w.write_raw_data(rows(version)[:6])


@pytest.fixture
def small_filesystem(tmp_path):
    """A real filesystem that fills up: a tmpfs of a given size (needs root; skipped otherwise)."""
    mounted = []

    def make(size_kb):
        folder = tmp_path / f"fs{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield make
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.mark.parametrize("mode", ["fresh", "overwrite", "append"])
def test_a_full_filesystem_leaves_the_old_or_the_new_dataset(small_filesystem, mode):
    outcomes = set()
    for size_kb in (64, 96, 128, 160, 192, 256, 384, 1024):
        folder = small_filesystem(size_kb)
        path = str(folder / "d.mindrecord")
        old = None
        if mode != "fresh":
            try:
                write(path, 1, overwrite=False)
            except OSError:
                continue                                   # the old dataset alone does not fit
            old = _state(path)
        try:
            if mode == "append":
                append_rows_all(path, 2)
            else:
                write(path, 2, overwrite=(mode == "overwrite"))
            committed = True
        except OSError:
            committed = False
        new = _expected(1, 2) if mode == "append" else _expected(2)
        assert _state(path) == (new if committed else old), f"{size_kb} KiB, committed={committed}"
        outcomes.add(committed)
    assert outcomes == {True, False}


def append_rows_all(path, version):
    with recordio.FileWriter.open_for_append(path + "0") as w:
        for k in range(0, ROWS, 6):
            w.write_raw_data(rows(version)[k:k + 6])
