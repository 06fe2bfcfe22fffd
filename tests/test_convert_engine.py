"""The conversion engine: shard plans, crash-and-rerun resume, bad inputs, targets, options."""

import os
import signal
import subprocess
import sys
import time

import pytest
from convert_sources import make_imagefolder

import recordio
from recordio.converters import convert_imagefolder
from recordio.converters.engine import plan_shards
from conftest import child_pythonpath



@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagefolder")
    make_imagefolder(root, per_photo=2)        # 10 files
    return root


def rows(summary):
    return [(r["file_name"], r["image"], int(r["label"])) for r in recordio.FileReader(summary.files[0])]


@pytest.mark.parametrize("n,k,sizes", [(10, 3, [4, 3, 3]), (3, 3, [1, 1, 1]), (2, 4, [1, 1, 0, 0]),
                                       (0, 2, [0, 0])])
def test_plan_shards_is_contiguous_and_balanced(n, k, sizes):
    plan = plan_shards(list(range(n)), k)
    assert [len(p) for p in plan] == sizes
    assert [u for p in plan for u in p] == list(range(n))


def test_shard_count_is_capped_by_the_inputs(folder, tmp_path):
    summary = convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=64, workers=1)
    assert summary.shards == 10 and len(summary.files) == 10 and summary.rows == 10


def test_existing_dataset_is_refused_before_any_work(folder, tmp_path):
    first = convert_imagefolder(folder, tmp_path / "x.mindrecord", workers=1)
    before = os.stat(first.files[0]).st_mtime_ns
    with pytest.raises(recordio.DatasetExistsError, match="already exist"):
        convert_imagefolder(folder, tmp_path / "x.mindrecord", workers=1)
    assert os.stat(first.files[0]).st_mtime_ns == before
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]        # no leftovers
    again = convert_imagefolder(folder, tmp_path / "x.mindrecord", workers=1, overwrite=True)
    assert rows(again) == rows(first)


@pytest.mark.parametrize("kwargs,message", [({"workers": 0}, "workers"), ({"shard_num": -1}, "shard_num"),
                                            ({"engine": "dask"}, "engine")])
def test_bad_options(folder, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        convert_imagefolder(folder, tmp_path / "x.mindrecord", **kwargs)


def test_failed_run_resumes_from_complete_shards(folder, tmp_path):
    bad = folder / "space" / "rocket_zz.jpg"            # sorts last: only the last shard fails
    bad.write_bytes(b"GIF87a broken")
    try:
        with pytest.raises(recordio.FormatError, match="rocket_zz.jpg"):
            convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=4, workers=1, check="decode")
        assert recordio.missing_shards(tmp_path / "x.mindrecord", 4) == [3]
        (folder / "space" / "rocket_000.jpg").replace(folder / "space" / "keep.tmp")
        bad.write_bytes((folder / "space" / "keep.tmp").read_bytes())
        (folder / "space" / "keep.tmp").replace(folder / "space" / "rocket_000.jpg")
        resumed = convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=4, workers=1, check="decode")
    finally:
        bad.unlink()
    assert resumed.resumed_shards == 3 and resumed.rows == 11
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def test_a_different_conversion_discards_leftover_parts(folder, tmp_path):
    bad = folder / "space" / "rocket_zz.jpg"
    bad.write_bytes(b"not an image")
    try:
        with pytest.raises(recordio.FormatError):
            convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=4, workers=1)
        summary = convert_imagefolder(folder, tmp_path / "x.mindrecord", shard_num=4, workers=1, resize=32,
                                      skip_bad=True)
    finally:
        bad.unlink()
    assert summary.resumed_shards == 0 and summary.rows == 10 and len(summary.skipped) == 1
    assert all(min(recordio.vision.Decode()(r[1]).shape[:2]) == 32 for r in rows(summary))


# The CLI, with the read of one input held back while a marker file exists (the converter refuses
# FIFOs, so a FIFO can no longer stand in for an input that never arrives).
HELD_CLI = """
import os, sys, time
import recordio.converters.imagefolder as imagefolder
from recordio.tools.__main__ import main

read, marker = imagefolder._read_regular, os.environ["RIO_TEST_HOLD"]

def held(path):
    while path.endswith("rocket_zz.jpg") and os.path.exists(marker):
        time.sleep(0.05)
    return read(path)

imagefolder._read_regular = held
sys.exit(main(sys.argv[1:]))
"""


def _start_cli(source, out, *extra, hold=None):
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), RIO_TEST_HOLD=str(hold))
    head = [sys.executable, "-c", HELD_CLI] if hold else [sys.executable, "-m", "recordio.tools"]
    cmd = head + ["convert", "imagefolder", str(source), str(out), *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_killed_conversion_resumes(folder, tmp_path):
    """SIGKILL while the last shard waits on its input, then rerun: complete shards are kept."""
    blocker, bad = folder / "space" / "rocket_zz.jpg", folder / "cat" / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")          # skipped by shard 0
    blocker.write_bytes((folder / "space" / "rocket_000.jpg").read_bytes())
    marker = tmp_path / "hold"                           # reading the blocker waits while it exists
    marker.write_bytes(b"")
    out, args = tmp_path / "x.mindrecord", ("--shards", "4", "--workers", "1", "--quiet", "--skip-bad")
    try:
        proc = _start_cli(folder, out, *args, hold=marker)
        deadline = time.monotonic() + 60
        while recordio.missing_shards(out, 4) != [3]:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()                                 # reaps it and closes its pipes
        assert not os.path.exists(str(out) + "0")         # nothing published
        marker.unlink()
        proc = _start_cli(folder, out, *args)
        stdout, stderr = proc.communicate(timeout=120)
        fresh = convert_imagefolder(folder, tmp_path / "fresh.mindrecord", shard_num=1, workers=1, skip_bad=True)
    finally:
        blocker.unlink()
        bad.unlink()
    assert proc.returncode == 0, stderr.decode()
    stdout = stdout.decode()
    assert "resumed: 3 shard(s) were already complete" in stdout
    assert "skipped 1 unreadable source(s)" in stdout and "bad.png" in stdout
    assert rows(fresh) == [(r["file_name"], r["image"], int(r["label"]))
                           for r in recordio.FileReader(str(out) + "0")]


def test_dead_pool_worker_is_reported_and_the_rerun_resumes(folder, tmp_path):
    from convert_sources import DyingOnceImageFolder

    from recordio.converters import engine

    source = DyingOnceImageFolder(folder, "space/rocket_001.jpg", tmp_path / "died")   # in the last shard
    with pytest.raises(recordio.WorkerError, match="worker died while writing shard"):
        engine.convert(source, tmp_path / "x.mindrecord", shard_num=2, workers=2, quiet=True)
    assert 1 in recordio.missing_shards(tmp_path / "x.mindrecord", 2)    # shard 0 may have finished first
    assert not os.path.exists(tmp_path / "x.mindrecord0")
    summary = engine.convert(source, tmp_path / "x.mindrecord", shard_num=2, workers=2, quiet=True)
    names = [r[0] for r in rows(summary)]
    assert len(names) == len(set(names)) == 10
