"""SIGKILL a writer at random moments: the path holds the old dataset, the new one, or nothing that opens."""

import os
import signal
import subprocess
import sys
import time

import pytest

import recordio
from recordio.mindrecord.write.recovery import repair
from conftest import TESTS

CHILD = str(TESTS / "crash_child.py")


def run_child(mode, path, shards, start, n, wait=None):
    """Run the child; kill it after ``wait`` seconds, or right after it starts committing."""
    proc = subprocess.Popen([sys.executable, CHILD, mode, str(path), str(shards), str(start), str(n)],
                            stdout=subprocess.PIPE, text=True, cwd=TESTS)
    lines = []
    if isinstance(wait, tuple):              # ("commit", delay): kill inside commit
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("COMMIT-START"):
                time.sleep(wait[1])
                break
    elif wait is not None:
        time.sleep(wait)
    if wait is not None:
        proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    lines += out.split()
    return "COMMIT-START" in lines, "COMMITTED" in lines


def read_ids(first):
    """Row ids of the dataset at ``first``, or None when it does not open."""
    try:
        with recordio.FileReader(first) as reader:
            ids = sorted(int(r["id"]) for r in reader)
    except (recordio.RecordIOError, FileNotFoundError):
        return None
    assert recordio.verify(first).ok, "a dataset that opens must verify clean"
    return ids


def first_file(path, shards):
    return str(path) + ("0" if shards > 1 else "")


MOMENTS = [0.0, 0.1, 0.2, 0.3] + [("commit", d) for d in (0, 0.002, 0.005, 0.01, 0.03)]


@pytest.mark.slow
@pytest.mark.parametrize("shards", [1, 4])
def test_killed_fresh_write(tmp_path, shards):
    for trial, moment in enumerate(MOMENTS):
        path = tmp_path / f"t{trial}.mr"
        _, committed = run_child("fresh", path, shards, 0, 60, wait=moment)
        ids = read_ids(first_file(path, shards))
        assert ids in (None, list(range(60))), f"moment {moment}: partial dataset {ids}"
        if committed:
            assert ids == list(range(60))


@pytest.mark.slow
@pytest.mark.parametrize("shards", [1, 4])
def test_killed_overwrite_keeps_old_or_new(tmp_path, shards):
    for trial, moment in enumerate(MOMENTS):
        path = tmp_path / f"t{trial}.mr"
        assert run_child("fresh", path, shards, 1000, 30)[1]
        started, committed = run_child("overwrite", path, shards, 0, 60, wait=moment)
        ids = read_ids(first_file(path, shards))
        assert ids in (None, list(range(1000, 1030)), list(range(60))), f"moment {moment}: mix {ids}"
        if committed:
            assert ids == list(range(60))
        if not started:
            assert ids == list(range(1000, 1030)), f"moment {moment}: old dataset damaged before commit"


@pytest.mark.slow
@pytest.mark.parametrize("shards", [1, 4])
def test_killed_append_keeps_old_rows(tmp_path, shards):
    for trial, moment in enumerate(MOMENTS):
        path = tmp_path / f"t{trial}.mr"
        assert run_child("fresh", path, shards, 0, 40)[1]
        _, committed = run_child("append", first_file(path, shards), shards, 40, 50, wait=moment)
        ids = read_ids(first_file(path, shards))
        if ids is None:
            ids = repair_interrupted_commit(tmp_path, first_file(path, shards))
        assert ids in (list(range(40)), list(range(90))), f"moment {moment}: {ids}"
        if committed:
            assert ids == list(range(90))
        # the dataset can be appended to again after a crash
        assert run_child("append", first_file(path, shards), shards, 1000, 10)[1]
        assert read_ids(first_file(path, shards))[-10:] == list(range(1000, 1010))


def snapshot(folder):
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


def repair_interrupted_commit(folder, first):
    """A writer killed inside its commit: readers refuse the dataset and change nothing (reading never
    writes); ``repair`` finishes the commit. Returns the row ids after the repair."""
    before = snapshot(folder)
    for read in (recordio.FileReader, recordio.count_rows):
        with pytest.raises(recordio.FormatError, match="recordio repair"):
            read(first)
    assert not recordio.verify(first).ok
    assert snapshot(folder) == before
    assert repair(first)
    return read_ids(first)


def test_stale_files_of_a_killed_writer_are_hidden_and_cleaned(tmp_path):
    run_child("fresh", tmp_path / "x.mr", 4, 0, 60, wait=("commit", 0))
    names = os.listdir(tmp_path)
    assert all(n.startswith(".") or n.startswith("x.mr") for n in names)
    w = recordio.FileWriter(str(tmp_path / "other.mr"))
    w.add_schema({"a": {"type": "int32"}})
    w.write_raw_data([{"a": 1}])
    w.commit()
    assert not [n for n in os.listdir(tmp_path) if ".rio-" in n]


def test_live_writer_files_are_not_cleaned(tmp_path):
    live = recordio.FileWriter(str(tmp_path / "live.mr"))
    live.add_schema({"a": {"type": "int32"}})
    live.write_raw_data([{"a": 1}])
    other = recordio.FileWriter(str(tmp_path / "other.mr"))
    other.add_schema({"a": {"type": "int32"}})
    other.write_raw_data([{"a": 2}])
    other.commit()
    live.write_raw_data([{"a": 3}])
    live.commit()
    assert [int(r["a"]) for r in recordio.FileReader(str(tmp_path / "live.mr"))] == [1, 3]


def _write_many(folder, worker):
    for k in range(15):
        w = recordio.FileWriter(f"{folder}/w{worker}_{k}.mr", 2, fsync=False)
        w.add_schema({"a": {"type": "int32"}})
        w.write_raw_data([{"a": j} for j in range(10)])
        w.commit()
        assert recordio.count_rows(f"{folder}/w{worker}_{k}.mr0") == 10


def test_concurrent_writers_in_one_directory_never_clean_each_other(tmp_path):
    import multiprocessing as mp
    procs = [mp.get_context("fork").Process(target=_write_many, args=(str(tmp_path), i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    assert not [n for n in os.listdir(tmp_path) if "rio-" in n]


DIE_AFTER_JOURNAL = """
import os, sys
import recordio.mindrecord.write.recovery as recovery
import crash_child

original = recovery.remove_journal

def remove_then_die(*args):
    original(*args)
    os._exit(9)                 # killed after the journal is gone, before the spools are removed

recovery.remove_journal = remove_then_die
crash_child.main("append", sys.argv[1], 1, 40, 50)
"""


def test_an_append_killed_after_removing_its_journal_is_complete_and_its_spool_is_cleaned(tmp_path):
    """The journal goes before the spools it reads, so no crash leaves a journal without its spool
    (which would make the dataset unopenable); the leftover spool is a stale file for the next writer."""
    path = tmp_path / "t.mr"
    assert run_child("fresh", path, 1, 0, 40)[1]
    proc = subprocess.run([sys.executable, "-c", DIE_AFTER_JOURNAL, str(path)], cwd=TESTS, capture_output=True,
                          text=True)
    assert proc.returncode == 9, proc.stderr
    assert [n for n in os.listdir(tmp_path) if n.endswith(".journal")] == []
    assert [n for n in os.listdir(tmp_path) if ".spool." in n], "the append should have spooled page continuations"
    assert read_ids(str(path)) == list(range(90))
    assert run_child("append", str(path), 1, 1000, 10)[1]
    assert read_ids(str(path))[-10:] == list(range(1000, 1010))
    assert not [n for n in os.listdir(tmp_path) if ".rio-" in n]
