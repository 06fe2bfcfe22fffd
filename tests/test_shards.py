"""Per-shard writing: parts written in any order and process, rewritten on retry, finalized atomically."""

import multiprocessing as mp
import os

import pytest

import recordio
from recordio import FileReader, ShardWriter, finalize_shards, missing_shards

SCHEMA = {"id": {"type": "int64"}, "img": {"type": "bytes"}, "label": {"type": "int32"}}


def write_shard(path, i, n, rows_per_shard=7):
    with ShardWriter(path, i, n, SCHEMA, desc="parts", header_size=1 << 14, page_size=1 << 15) as w:
        w.write_raw_data([{"id": i * 100 + k, "img": bytes([k]) * (k * 300), "label": k % 3}
                          for k in range(rows_per_shard)])


def test_parts_from_several_processes_finalize_to_one_dataset(tmp_path):
    path = str(tmp_path / "d.mr")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=write_shard, args=(path, i, 4)) for i in (3, 1, 0, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert missing_shards(path, 4) == []
    finalize_shards(path, 4)
    assert sorted(os.listdir(tmp_path)) == sorted([f"d.mr{i}" for i in range(4)] + [f"d.mr{i}.db" for i in range(4)])
    with FileReader(path + "2") as r:
        assert [int(x["id"]) for x in r] == [i * 100 + k for i in range(4) for k in range(7)]
        assert r.header["shard_addresses"] == [f"d.mr{i}" for i in range(4)]
    report = recordio.verify(path + "0")
    assert report.ok, str(report)


def test_missing_parts_and_retries(tmp_path):
    path = str(tmp_path / "d.mr")
    write_shard(path, 0, 3)
    write_shard(path, 2, 3)
    assert missing_shards(path, 3) == [1]
    with pytest.raises(recordio.FormatError, match=r"shard\(s\) \[1\] of 3 are not written yet"):
        finalize_shards(path, 3)
    write_shard(path, 1, 3, rows_per_shard=2)       # a first attempt...
    write_shard(path, 1, 3, rows_per_shard=5)       # ...retried: the part is replaced, not duplicated
    finalize_shards(path, 3)
    assert recordio.count_rows(path + "0") == 7 + 5 + 7


def test_failed_shard_leaves_no_part(tmp_path):
    path = str(tmp_path / "d.mr")
    with pytest.raises(ValueError):
        with ShardWriter(path, 0, 2, SCHEMA) as w:
            w.write_raw_data([{"id": 1, "img": b"", "label": 0}])
            raise ValueError("worker failed")
    assert missing_shards(path, 2) == [0, 1]


def test_parts_must_agree(tmp_path):
    path = str(tmp_path / "d.mr")
    write_shard(path, 0, 2)
    with ShardWriter(path, 1, 2, dict(SCHEMA, extra={"type": "int32"})) as w:
        w.write_raw_data([{"id": 1, "img": b"", "label": 0, "extra": 1}])
    with pytest.raises(recordio.FormatError, match="differ"):
        finalize_shards(path, 2)
    assert missing_shards(path, 2) == []              # the parts are still there for a fix and rerun


def test_finalize_respects_existing_data(tmp_path):
    path = str(tmp_path / "d.mr")
    for i in range(2):
        write_shard(path, i, 2)
    finalize_shards(path, 2)
    for i in range(2):
        write_shard(path, i, 2, rows_per_shard=1)
    with pytest.raises(recordio.DatasetExistsError):
        finalize_shards(path, 2)
    finalize_shards(path, 2, overwrite=True)
    assert recordio.count_rows(path + "1") == 2


@pytest.mark.parametrize("shard_id,shard_num", [(2, 2), (-1, 2), (0, 0), (0, 1001)])
def test_bad_shard_ids(tmp_path, shard_id, shard_num):
    with pytest.raises(ValueError):
        ShardWriter(str(tmp_path / "d.mr"), shard_id, shard_num, SCHEMA)
