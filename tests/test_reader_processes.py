"""Readers cross process boundaries, bound their file descriptors, and work on read-only files."""

import multiprocessing as mp
import os
import pickle
import stat

import pytest

import recordio
from recordio import FileReader, FileWriter


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("procs") / "x.mr"
    w = FileWriter(str(path), 3)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema({"id": {"type": "int64"}, "img": {"type": "bytes"}})
    w.write_raw_data([{"id": i, "img": bytes([i % 256]) * (i * 13 % 2000)} for i in range(90)])
    w.commit()
    return str(path) + "0"


def _ids(reader):
    return [int(r["id"]) for r in reader]


def _child_ids(reader, queue):
    queue.put(_ids(reader))


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_reader_used_in_child_processes(dataset, method):
    reader = FileReader(dataset, verify=True)
    expected = _ids(reader)                     # maps are open in the parent before the fork
    ctx = mp.get_context(method)
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_ids, args=(reader, queue))
    proc.start()
    got = queue.get(timeout=60)
    proc.join(60)
    assert proc.exitcode == 0 and got == expected


def test_pickle_round_trip_carries_no_open_files(dataset):
    reader = FileReader(dataset, columns=["id"])
    list(reader)
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.shard_set.maps == {} and _ids(clone) == _ids(reader)


@pytest.mark.slow
def test_many_shards_bounded_descriptors(tmp_path):
    w = FileWriter(str(tmp_path / "m.mr"), 1000, fsync=False)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema({"id": {"type": "int32"}})
    w.write_raw_data([{"id": i} for i in range(2000)])
    w.commit()
    before = len(os.listdir("/proc/self/fd"))
    with FileReader(str(tmp_path / "m.mr000")) as reader:
        assert _ids(reader) == sorted(_ids(reader)) and len(reader) == 2000
        assert len(os.listdir("/proc/self/fd")) - before <= recordio.mindrecord.read.shard_set.MAX_OPEN_FILES + 4
    assert recordio.count_rows(str(tmp_path / "m.mr999")) == 2000


def test_read_only_files_and_directory(dataset, tmp_path):
    import shutil
    folder = tmp_path / "ro"
    shutil.copytree(os.path.dirname(dataset), folder)
    for p in folder.iterdir():
        p.chmod(stat.S_IRUSR | stat.S_IRGRP)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with FileReader(str(folder / "x.mr0"), verify=True) as reader:
            assert len(_ids(reader)) == 90
        assert recordio.verify(str(folder / "x.mr1")).ok
    finally:
        folder.chmod(stat.S_IRWXU)


def test_file_permissions_follow_umask(tmp_path):
    old = os.umask(0o027)
    try:
        w = FileWriter(str(tmp_path / "p.mr"))
        w.add_schema({"id": {"type": "int32"}})
        w.write_raw_data([{"id": 1}])
        w.commit()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "p.mr").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "p.mr.db").st_mode) == 0o640
