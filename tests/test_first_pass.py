"""A fresh reader's first epoch loads its row locations in runs of blocks (one ``.db`` query per run of
up to ``RUN_BLOCKS`` blocks, not per block), in order or shuffled, and gives exactly the rows of the
page-table walk (``use_index=False``); forked workers find the runs their parent loaded."""

import multiprocessing

import numpy as np
import pytest

import recordio
from recordio.mindrecord.read import locations, slot_pool

ROWS = 41_000                     # 2 shards of 20,500 rows: 81 blocks each, two runs of up to 64


@pytest.fixture(autouse=True)
def db_locations(monkeypatch):
    """Locations from the ``.db`` (RECORDIO_LOCATIONS=db; a remote dataset's path): the runs of `.db` queries is tested
    here; a local reader walks the data file instead (tests/test_page_walk.py)."""
    monkeypatch.setenv("RECORDIO_LOCATIONS", "db")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("first-pass") / "rows.mindrecord")
    rng = np.random.default_rng(7)
    with recordio.FileWriter(path, shard_num=2) as writer:
        writer.add_schema({"id": {"type": "int64"}, "vec": {"type": "float32", "shape": [-1]},
                           "blob": {"type": "bytes"}}, "first pass")
        for start in range(0, ROWS, 4100):
            writer.write_raw_data([{"id": i, "vec": rng.random(i % 5, dtype=np.float32),
                                    "blob": bytes([i % 251]) * (i % 7)} for i in range(start, start + 4100)])
    return path + "0"


def queries(reader):
    return sum(s.queries for s in reader.shard_set.locations.sources)


def epoch(reader, order, batch=256):
    return [reader.read_batch(order[s:s + batch]) for s in range(0, len(order), batch)]


def same_batches(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        assert np.array_equal(a["id"], b["id"])
        assert [bytes(x) for x in a["blob"]] == [bytes(x) for x in b["blob"]]
        assert all(np.array_equal(x, y) for x, y in zip(a["vec"], b["vec"]))


@pytest.mark.parametrize("shuffled", [False, True], ids=["in-order", "shuffled"])
def test_a_first_epoch_queries_per_run_and_reads_the_walks_rows(dataset, shuffled):
    order = np.random.default_rng(3).permutation(ROWS) if shuffled else np.arange(ROWS)
    with recordio.FileReader(dataset) as reader, recordio.FileReader(dataset, use_index=False) as walk:
        assert queries(reader) == 1                               # opening loads one block, no run
        got = epoch(reader, order)
        blocks = 2 * -(-ROWS // 2 // locations.BLOCK_ROWS)
        assert queries(reader) <= 1 + 2 * -(-blocks // 2 // locations.RUN_BLOCKS) + (8 if shuffled else 0)
        assert queries(reader) < blocks // 4
        assert reader.shard_set.locations.rows_read <= ROWS + queries(reader)   # each block fetched once
        same_batches(got, epoch(walk, order))
        before = queries(reader)
        epoch(reader, order)
        assert queries(reader) == before                          # the second epoch finds every block


def test_single_rows_load_runs_too(dataset):
    with recordio.FileReader(dataset) as reader, recordio.FileReader(dataset, use_index=False) as walk:
        picks = [0, 1, 255, 256, 16_383, 16_384, 20_499, 20_500, 40_999, 30_000]
        assert [int(reader[i]["id"]) for i in picks] == [int(walk[i]["id"]) for i in picks]
        assert len({int(reader[i]["id"]) for i in picks}) == len(picks)
        assert queries(reader) <= 1 + len(picks)


def _child_queries(reader, out):
    reader.read_batch(np.arange(ROWS))
    out.put(queries(reader))


def test_a_forked_worker_finds_the_blocks_its_parent_loaded(dataset):
    with recordio.FileReader(dataset) as reader:
        epoch(reader, np.arange(ROWS))
        loaded = queries(reader)
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue()
        child = ctx.Process(target=_child_queries, args=(reader, out))
        child.start()
        assert out.get(timeout=60) == loaded                      # no query of its own
        child.join(60)
        assert child.exitcode == 0


def test_a_cache_smaller_than_the_dataset_loads_block_by_block(dataset, monkeypatch):
    monkeypatch.setattr(slot_pool, "CACHE_BYTES", 16 * locations.BLOCK_ROWS * slot_pool.ROW_BYTES)
    order = np.random.default_rng(5).permutation(ROWS)
    with recordio.FileReader(dataset) as reader, recordio.FileReader(dataset, use_index=False) as walk:
        assert not reader.shard_set.locations._whole
        same_batches(epoch(reader, order), epoch(walk, order))
