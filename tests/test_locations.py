"""Row locations: opening reads no row beyond the first block, blocks are checked as they load (with
the errors opening gave), read the same values, and are shared with forked processes."""

import json
import multiprocessing as mp
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import recordio
from recordio import FileReader, FileWriter
from recordio.dataset import MindDataset
from recordio.mindrecord import index
from recordio.mindrecord.read import location_sources, locations, slot_pool
from rowcheck import assert_rows_equal
from conftest import GOLDEN_COPIES

TINY = {"label": {"type": "int32"}, "id": {"type": "int64"}}


def write_tiny(path, n, shards=4, step=200_000):
    w = FileWriter(str(path), shards, fsync=False)
    w.add_schema(TINY)
    for s in range(0, n, step):
        w.write_raw_data([{"label": i % 10, "id": i} for i in range(s, min(n, s + step))])
    w.commit()
    return str(path) + "0"


@pytest.fixture(scope="module")
def million(tmp_path_factory):
    return write_tiny(tmp_path_factory.mktemp("million") / "m.mr", 1_000_000)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return write_tiny(tmp_path_factory.mktemp("small") / "s.mr", 10_000)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of 7 rows and a cache of 5 slots: many blocks load and are evicted."""
    monkeypatch.setattr(locations, "BLOCK_ROWS", 7)
    monkeypatch.setattr(slot_pool, "CACHE_BYTES", 5 * 7 * slot_pool.ROW_BYTES)


def _traced(monkeypatch):
    statements = []
    connect = index.connect_ro

    def traced(path):
        conn = connect(path)
        conn.set_trace_callback(statements.append)
        return conn
    monkeypatch.setattr(index, "connect_ro", traced)
    return statements


@pytest.mark.slow
def test_open_reads_no_row_beyond_the_first_block(million, monkeypatch):
    statements = _traced(monkeypatch)
    with FileReader(million) as reader:
        assert len(reader) == 1_000_000
        assert int(reader[0]["id"]) == 0
        assert reader.shard_set.locations.rows_read <= locations.BLOCK_ROWS
        scans = [s for s in statements if "INDEXES" in s and "MIN(" not in s and "MAX(" not in s]
        assert scans and all(f"ROW_ID >= 0 AND ROW_ID < {locations.BLOCK_ROWS}" in s for s in scans), scans
        assert int(reader[999_999]["id"]) == 999_999          # the last shard's last block, loaded now
        assert reader.shard_set.locations.rows_read <= 2 * locations.BLOCK_ROWS + 1


_OPEN_RSS = textwrap.dedent("""
    import json, sys
    def rss():                  # anonymous memory: the data file's mapped pages are the page cache's
        line = next(x for x in open("/proc/self/status") if x.startswith("RssAnon:"))
        return int(line.split()[1]) * 1024
    import numpy, msgpack, recordio.mindrecord.read.reader
    before = rss()
    r = recordio.FileReader(sys.argv[1])
    r[0]; r[len(r) - 1]
    print(json.dumps({"rows": len(r), "grew": rss() - before}))
""")


def _open_growth(path):
    out = subprocess.run([sys.executable, "-c", _OPEN_RSS, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_opening_a_million_rows_takes_the_memory_of_ten_thousand(million, small):
    big, little = _open_growth(million), _open_growth(small)
    assert (big["rows"], little["rows"]) == (1_000_000, 10_000)
    assert big["grew"] < little["grew"] + (4 << 20), (big, little)     # today: ~100 MB more


def test_reading_everything_loads_each_block_once(small):
    with FileReader(small) as reader:
        ids = [int(r["id"]) for r in reader]
        assert sorted(ids) == list(range(10_000))
        first = reader.shard_set.locations.rows_read
        again = [int(reader[i]["id"]) for i in np.random.default_rng(1).permutation(10_000).tolist()]
        assert sorted(again) == list(range(10_000)) and reader.shard_set.locations.rows_read == first


# --- the same values ---------------------------------------------------------------------------------

def _golden_first(case):
    files = sorted(f for f in os.listdir(GOLDEN_COPIES / case) if ".mindrecord" in f and not f.endswith(".db"))
    return str(GOLDEN_COPIES / case / files[0])


@pytest.mark.parametrize("case", ["matrix_s4_index", "arrays_variable", "all_blob_no_raw", "empty_values"])
def test_small_blocks_read_the_page_walks_values(case, tiny_blocks):
    path = _golden_first(case)
    with FileReader(path, use_index=False) as walk:
        expected = list(walk)
    with FileReader(path) as reader:
        assert reader.shard_set.locations.pool.slots < int(reader.shard_set.locations.block_base[-1]) or len(expected) <= 35
        assert_rows_equal(list(reader), expected)
        order = np.random.default_rng(3).permutation(len(expected))
        assert_rows_equal([reader[int(i)] for i in order], [expected[i] for i in order])
        assert_rows_equal(reader[::-3], expected[::-3])
        assert_rows_equal(reader.__getitems__(order), [expected[i] for i in order])


@pytest.fixture(scope="module")
def multiblock(tmp_path_factory):
    path = tmp_path_factory.mktemp("multi") / "x.mr"
    w = FileWriter(str(path), 3, fsync=False)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema({"id": {"type": "int64"}, "img": {"type": "bytes"}})
    w.write_raw_data([{"id": i, "img": bytes([i % 256]) * (i * 7 % 500)} for i in range(700)])
    w.commit()
    return str(path) + "0"


def _ids(ds, **kw):
    return [int(r["id"]) for r in ds.create_dict_iterator(output_numpy=True, **kw)]


@pytest.mark.parametrize("kw", [dict(shuffle=True), dict(shuffle=False, num_shards=3, shard_id=1),
                                dict(shuffle=True, num_shards=4, shard_id=2)])
def test_small_blocks_give_the_same_pipelines(multiblock, kw, monkeypatch):
    expected = _ids(MindDataset(multiblock, columns_list=["id"], **kw), num_epochs=1)
    monkeypatch.setattr(locations, "BLOCK_ROWS", 7)
    monkeypatch.setattr(slot_pool, "CACHE_BYTES", 5 * 7 * slot_pool.ROW_BYTES)
    assert _ids(MindDataset(multiblock, columns_list=["id"], **kw), num_epochs=1) == expected
    ds = MindDataset(multiblock, columns_list=["id"], **kw)
    it = ds.create_dict_iterator(output_numpy=True, num_epochs=1)
    head = [int(next(it)["id"]) for _ in range(50)]
    state = ds.state_dict()
    resumed = MindDataset(multiblock, columns_list=["id"], **kw)
    resumed.load_state_dict(state)
    assert head + _ids(resumed, num_epochs=1) == expected


def test_bulk_locations_match_row_by_row(multiblock, tiny_blocks):
    with FileReader(multiblock) as reader:
        where = reader.shard_set.locations
        rows = np.random.default_rng(5).integers(0, len(reader), 500)
        shard, local, locs = where.bulk(rows)
        assert locs.tolist() == [where.row(int(k), int(i)) for k, i in zip(shard, local)]
        assert where.bulk(np.zeros(0, np.int64))[2].shape == (0, 4)


def test_verify_reads_with_small_blocks(multiblock, tiny_blocks):
    with FileReader(multiblock, verify=True) as reader, FileReader(multiblock, use_index=False) as walk:
        assert_rows_equal(list(reader), list(walk))


# --- checks on late blocks -----------------------------------------------------------------------------

@pytest.fixture
def db_locations(monkeypatch):
    """Every location read from the ``.db`` (as MindSpore reads them; what remote datasets use): the
    checks below are the ``.db``'s. A local reader walks the data file (tests/test_page_walk.py)."""
    monkeypatch.setenv("RECORDIO_LOCATIONS", "db")


@pytest.fixture
def million_copy(million, tmp_path):
    folder = os.path.dirname(million)
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    return str(tmp_path / os.path.basename(million))


def _sql(db, *statements):
    conn = sqlite3.connect(db)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()


@pytest.mark.slow
def test_a_corrupt_location_in_a_late_block_raises_the_open_error(million_copy, db_locations):
    last = million_copy[:-1] + "3"                           # rows 750,000.. are shard 3's
    _sql(last + ".db", "UPDATE INDEXES SET PAGE_OFFSET_RAW = PAGE_OFFSET_RAW + 1 WHERE ROW_ID = 150000")
    with FileReader(million_copy) as reader:
        reader[0], reader[800_000]                           # other blocks read
        with pytest.raises(recordio.IndexFileError, match=r"INDEXES row 150000 gives locations .* not where "
                                                          r"the page table places row 150000"):
            reader[900_000]
        with pytest.raises(recordio.IndexFileError, match="INDEXES row 150000"):
            list(reader)


def test_a_missing_row_id_in_a_late_block_is_refused(million_copy, db_locations):
    last = million_copy[:-1] + "3"
    _sql(last + ".db", "DELETE FROM INDEXES WHERE ROW_ID = 150000")
    with FileReader(million_copy) as reader:
        with pytest.raises(recordio.IndexFileError, match=r"ROW_ID values are not 0\.\.249999"):
            reader[900_001]


def test_late_block_errors_read_as_the_open_errors_of_a_small_dataset(multiblock, tmp_path, tiny_blocks,
                                                                     db_locations):
    """The same damage gives the same message whether its block loads at open or later."""
    folder = os.path.dirname(multiblock)
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    first = str(tmp_path / os.path.basename(multiblock))
    _sql(first + ".db", "UPDATE INDEXES SET PAGE_ID_RAW = 99 WHERE ROW_ID = 3")
    with pytest.raises(recordio.IndexFileError) as at_open:
        FileReader(first)                                    # row 3 is in the first block
    shutil.copy(multiblock + ".db", first + ".db")
    _sql(first + ".db", "UPDATE INDEXES SET PAGE_ID_RAW = 99 WHERE ROW_ID = 203")
    with FileReader(first) as reader:
        with pytest.raises(recordio.IndexFileError) as late:
            reader[203]
    def shape(text):
        return re.sub(r"\[[0-9, ]*\]", "[...]", re.sub(r"row \d+", "row N", text))
    assert "row 203" in str(late.value) and "row 3 " in str(at_open.value)
    assert shape(str(late.value)) == shape(str(at_open.value))


def test_a_replaced_index_is_refused_when_a_block_loads(multiblock, tmp_path, tiny_blocks, db_locations):
    folder = os.path.dirname(multiblock)
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    first = str(tmp_path / os.path.basename(multiblock))
    with FileReader(first) as reader:
        reader.shard_set.locations.close()                         # the .db is reopened by path when next needed
        shutil.copy(first + ".db", first + ".db.new")
        os.replace(first + ".db.new", first + ".db")
        with pytest.raises(recordio.DatasetChangedError, match="index was replaced"):
            reader[100]


# --- sharing between processes ---------------------------------------------------------------------------

def _load_rows(reader, rows, queue):
    queue.put([int(reader[i]["id"]) for i in rows] + [reader.shard_set.locations.rows_read])


def test_forked_workers_share_the_blocks_they_load(multiblock, tiny_blocks, monkeypatch):
    monkeypatch.setattr(slot_pool, "CACHE_BYTES", 1 << 20)                  # a slot per block
    with FileReader(multiblock) as reader:
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        rows = list(range(300, 340))
        proc = ctx.Process(target=_load_rows, args=(reader, rows, queue))
        proc.start()
        got = queue.get(timeout=60)
        proc.join(60)
        assert got[:-1] == rows and got[-1] > 0                # the child loaded them ...
        before = reader.shard_set.locations.rows_read
        assert [int(reader[i]["id"]) for i in rows] == rows
        assert reader.shard_set.locations.rows_read == before               # ... and the parent finds them loaded


@pytest.mark.slow
def test_threads_share_a_reader_while_connections_are_evicted(tmp_path, tiny_blocks, monkeypatch):
    import concurrent.futures
    monkeypatch.setattr(location_sources, "KEEP_OPEN", 2)            # 8 shards: .db connections opened on demand
    first = write_tiny(tmp_path / "t.mr", 4000, shards=8, step=4000)
    with FileReader(first, use_index=False) as walk:
        expected = [int(r["id"]) for r in walk]
    with FileReader(first) as reader:
        chunks = np.array_split(np.random.default_rng(2).permutation(4000), 16)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda rows: [int(reader[int(i)]["id"]) for i in rows], chunks))
        assert all(g == [expected[int(i)] for i in rows] for g, rows in zip(got, chunks))


def _open_dbs():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return [n for n in names if n.endswith(".db")]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("locations", ["walk", "db"])
def test_close_closes_the_index_connections(small, monkeypatch, locations):
    if locations == "db":
        monkeypatch.setenv("RECORDIO_LOCATIONS", "db")
    before = _open_dbs()
    reader = FileReader(small)
    reader[len(reader) - 1]
    assert len(_open_dbs()) > len(before)          # the .db connections of a dataset of few shards stay open
    reader.close()
    assert _open_dbs() == before
    with pytest.raises(ValueError):
        reader[0]
