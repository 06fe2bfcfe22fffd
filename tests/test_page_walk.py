"""A local reader locates rows by walking the data file's length prefixes (recordio/mindrecord/read/page_walk.py):
the same locations as the ``.db`` on every golden file MindSpore wrote, in any block order and with
evictions; no ``.db`` row fetched per block; a damaged prefix is a FormatError naming the row; a ``.db``
that disagrees is refused on the first block and under ``verify``; C and Python walks agree."""

import os
import shutil
import struct

import numpy as np
import pytest

import recordio
from recordio import FileReader, FileWriter
from recordio.mindrecord import codec
from recordio.mindrecord.read import location_sources, locations, slot_pool
from recordio.mindrecord.read import page_walk
from rowcheck import assert_rows_equal
from conftest import GOLDEN_COPIES
from test_untrusted import edit_header, sql

CASES = sorted(p.name for p in GOLDEN_COPIES.iterdir() if p.is_dir())


def _first(folder):
    names = sorted(n for n in os.listdir(folder) if ".mindrecord" in n and not n.endswith(".db"))
    return str(folder / names[0]) if names else None


def _copy(tmp_path, case):
    shutil.copytree(GOLDEN_COPIES / case, tmp_path / case)
    return _first(tmp_path / case)


@pytest.fixture(scope="module")
def multigroup(tmp_path_factory):
    """3 shards of 32 KiB pages: many row groups a shard, rows of varying sizes, groups of varying rows."""
    path = tmp_path_factory.mktemp("walk") / "w.mr"
    rng = np.random.default_rng(11)
    w = FileWriter(str(path), 3, fsync=False)
    w.set_page_size(1 << 15)
    w.add_schema({"id": {"type": "int64"}, "name": {"type": "string"}, "blob": {"type": "bytes"}})
    for start in range(0, 6000, 1000):
        w.write_raw_data([{"id": i, "name": "n" * int(rng.integers(0, 40)),
                          "blob": bytes(int(rng.integers(0, 200)))} for i in range(start, start + 1000)])
    w.commit()
    return str(path) + "0"


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 7 rows, a cache of 5 slots: blocks load out of order and are evicted."""
    monkeypatch.setattr(locations, "BLOCK_ROWS", 7)
    monkeypatch.setattr(slot_pool, "CACHE_BYTES", 5 * 7 * slot_pool.ROW_BYTES)


def _both(path):
    with FileReader(path) as walked:
        sources = walked.shard_set.locations.sources
        assert all(isinstance(s, page_walk.WalkBlocks) for s in sources)
        got = [s._walked(0, s.shard.count) for s in sources]
        for s, g in zip(sources, got):                    # without the .db (use_index=False, verify)
            assert np.array_equal(page_walk.walk_shard(s.shard), g)
        listed = [s.db.load(0, s.shard.count) if s.shard.count else np.zeros((0, 4), np.int64) for s in sources]
    return got, listed


@pytest.mark.parametrize("case", CASES)
def test_the_walk_gives_the_db_locations_of_every_golden_file(case):
    path = _first(GOLDEN_COPIES / case)
    if path is None:
        pytest.skip(f"{case} has no data file")
    got, listed = _both(path)
    for a, b in zip(got, listed):
        assert np.array_equal(a, b)


def test_the_walk_gives_the_db_locations_across_many_groups(multigroup):
    got, listed = _both(multigroup)
    assert sum(len(x) for x in got) == 6000
    for a, b in zip(got, listed):
        assert np.array_equal(a, b)


def test_blocks_in_any_order_with_evictions_read_the_rows_of_the_db(multigroup, small_blocks, monkeypatch):
    with FileReader(multigroup) as walked:
        order = np.random.default_rng(5).permutation(len(walked))
        got = [walked[int(i)] for i in order] + walked.__getitems__(order[:500])
        walks = sum(s.walked for s in walked.shard_set.locations.sources)
        loads = sum(s.loads for s in walked.shard_set.locations.sources)
    monkeypatch.setenv("RECORDIO_LOCATIONS", "db")
    with FileReader(multigroup) as listed:
        assert not isinstance(listed.shard_set.locations.sources[0], page_walk.WalkBlocks)
        want = [listed[int(i)] for i in order] + listed.__getitems__(order[:500])
    assert_rows_equal(got, want)
    # marks: a block is walked from the nearest block start a walk passed, so each row is walked on the
    # way to another block at most once; the rest is each load's own rows (blob and raw entries)
    assert loads > 1000 and walks <= 2 * (6000 + 7 * loads), (walks, loads)


def test_a_late_block_walks_from_the_nearest_mark(multigroup, small_blocks):
    with FileReader(multigroup) as reader:
        opened = reader.shard_set.locations.sources[0]
        source = page_walk.WalkBlocks(opened.shard, opened.db, 7)       # no block walked yet
        source.fd = opened.fd
        g = source.groups
        big = int(np.argmax(g.end - g.start))              # the group with the most rows
        start, end = int(g.start[big]), int(g.end[big])
        first = -(-start // 7) * 7 + 7 * 3
        assert first + 14 < end
        before = source.walked
        source.load(first, first + 7)
        from_start = source.walked - before
        assert from_start == 2 * (first + 7 - start)       # blob and raw, from the group's first row
        before = source.walked
        source.load(first + 7, first + 14)
        assert source.walked - before == 2 * 7              # from the mark the last walk left


def test_a_first_epoch_fetches_one_db_block_per_shard(multigroup):
    with FileReader(multigroup) as reader:
        list(reader.read_batch(slice(0, len(reader))).values())
        queries = [s.queries for s in reader.shard_set.locations.sources]
        rows_read = reader.shard_set.locations.rows_read
    assert queries == [1, 1, 1] and rows_read <= 3 * locations.BLOCK_ROWS


def _copied(path, tmp_path):
    """A copy of the dataset of data file ``path`` in ``tmp_path``; its first data file."""
    folder = os.path.dirname(path)
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    return str(tmp_path / os.path.basename(path))


def test_a_db_that_disagrees_on_the_first_block_is_refused_at_open(tmp_path):
    first = _copy(tmp_path, "matrix_s1_index")
    sql(first + ".db", "UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = PAGE_OFFSET_BLOB_END - 1 WHERE ROW_ID = 0",
         "UPDATE INDEXES SET PAGE_OFFSET_BLOB = PAGE_OFFSET_BLOB - 1 WHERE ROW_ID = 1")
    with pytest.raises(recordio.IndexFileError, match=r"INDEXES row 0 gives the byte ranges .* but the data "
                                                      r"file's pages put that row at"):
        FileReader(first)


def test_a_late_damaged_db_row_is_not_read_and_verify_still_refuses_it(multigroup, tmp_path):
    first = _copied(multigroup, tmp_path)
    with FileReader(first) as reader:
        want = list(reader)
    sql(first + ".db", "UPDATE INDEXES SET PAGE_OFFSET_RAW = PAGE_OFFSET_RAW + 1 WHERE ROW_ID = 1500")
    with FileReader(first) as reader:
        assert_rows_equal(list(reader), want)            # the rows are the data file's
    with pytest.raises(recordio.IndexFileError, match="INDEXES row 1500"):
        with FileReader(first, verify=True) as reader:
            list(reader)
    assert not recordio.verify(first).ok


def _prefix_at(path, row, which):
    with FileReader(path) as reader:
        locs = reader.shard_set.locations.sources[0].load(0, reader.shard_set.locations.sources[0].shard.count)
    return int(locs[row, 0 if which == "raw" else 2]) - 8


@pytest.mark.parametrize("which", ["raw", "blob"])
def test_a_length_prefix_past_its_page_names_the_row(multigroup, tmp_path, which):
    first = _copied(multigroup, tmp_path)
    at = _prefix_at(first, 1234, which)
    with open(first, "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<Q", 1 << 40))
    name = "raw record" if which == "raw" else "blob"
    with FileReader(first) as reader:
        assert int(reader[0]["id"]) == 0
        with pytest.raises(recordio.FormatError, match=rf"row 1234: its {name} entry at byte {at} runs past "
                                                      rf"the used bytes of page \d+"):
            list(reader)


def test_a_row_group_offset_past_its_page_is_refused_at_open(tmp_path):
    first = _copy(tmp_path, "matrix_s1_index")
    edit_header(first, lambda h: next(p for p in h["page"] if p["page_type"] == "RAW_DATA")
                ["row_group_ids"][0].update(offset=1 << 30))
    with pytest.raises(recordio.FormatError, match="places row group 0 at offset 1073741824, outside its"):
        FileReader(first)


def test_a_pickled_reader_walks_again_in_its_new_process(multigroup):
    import pickle
    with FileReader(multigroup) as reader:
        want = list(reader)
        clone = pickle.loads(pickle.dumps(reader))
    assert clone.shard_set.locations.sources[0]._mm is None
    assert_rows_equal(list(clone), want)
    clone.close()


# --- the walk itself: compiled and Python agree, every bound checked ---------------------------------

def _entries(lengths):
    return b"".join(struct.pack("<Q", n) + bytes([n % 256]) * n for n in lengths)


def _python_walk(buf, start, count, limit, monkeypatch):
    monkeypatch.setattr(codec, "_codec", None)
    try:
        return codec.walk_entries(buf, start, count, limit)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(40))
def test_compiled_and_python_walks_agree(seed, monkeypatch):
    if codec._codec is None:
        pytest.skip("the compiled codec is not built here")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 50, size=int(rng.integers(0, 30))).tolist()
    data = bytes(int(rng.integers(0, 20))) + _entries(lengths) + bytes(int(rng.integers(0, 20)))
    if rng.random() < 0.3 and len(data) > 16:                  # a prefix made absurd
        at = int(rng.integers(0, len(data) - 8))
        data = data[:at] + struct.pack("<Q", int(rng.integers(0, 1 << 63))) + data[at + 8:]
    start = int(rng.integers(0, len(data) + 1))
    limit = int(rng.integers(start, len(data) + 1))
    count = int(rng.integers(0, 35))
    pos_c, bad_c = codec.walk_entries(data, start, count, limit)
    pos_p, bad_p = _python_walk(data, start, count, limit, monkeypatch)
    assert bad_c == bad_p
    upto = count + 1 if bad_c < 0 else bad_c + 1
    assert np.array_equal(pos_c[:upto], pos_p[:upto])


def test_the_walk_stops_exactly_at_its_limit():
    data = _entries([3, 0, 5])
    pos, bad = codec.walk_entries(data, 0, 3, len(data))
    assert bad == -1 and pos.tolist() == [0, 11, 19, 32]
    assert codec.walk_entries(data, 0, 3, len(data) - 1)[1] == 2
    assert codec.walk_entries(data, 0, 4, len(data))[1] == 3
    assert codec.walk_entries(data, 0, 0, 0)[1] == -1
    if codec._codec is not None:
        with pytest.raises(ValueError, match="walk_entries"):
            codec._codec.walk_entries(data, 0, 1, len(data) + 1, np.zeros(2, np.int64))


def test_locations_from_the_db_when_asked(multigroup, monkeypatch):
    monkeypatch.setenv("RECORDIO_LOCATIONS", "db")
    with FileReader(multigroup) as reader:
        assert isinstance(reader.shard_set.locations.sources[0], location_sources.DbBlocks)
        reader.read_batch(slice(0, len(reader)))
        assert reader.shard_set.locations.rows_read >= len(reader)


@pytest.mark.parametrize("scattered", [True, False], ids=["shuffled", "in-order"])
def test_a_scattered_batch_loads_only_its_own_blocks_a_run_of_rows_loads_runs(multigroup, scattered):
    """A walk loads a block cheaply (from the mark at its start), so a batch whose rows lie in many blocks
    (a shuffled one) loads those blocks and no run after each; a batch of neighbouring rows still loads a
    run of blocks ahead. Either way the rows are the ``.db``'s."""
    ids = (np.sort(np.random.default_rng(2).choice(6000, 24, replace=False)) if scattered
           else np.arange(3000, 3024))
    with FileReader(multigroup) as walked, FileReader(multigroup, use_index=False) as listed:
        where = walked.shard_set.locations
        before = int(np.frombuffer(where._ready, np.uint8).sum())
        got = walked.read_batch(ids)
        loaded = int(np.frombuffer(where._ready, np.uint8).sum()) - before
        shard = np.searchsorted(where.starts, ids, side="right") - 1
        needed = len(set((where.block_base[shard] + (ids - where.starts[shard]) // where.block).tolist()))
        assert needed >= locations.SCATTERED if scattered else needed <= 2
        assert loaded == needed if scattered else loaded > 4 * needed, (loaded, needed)
        want = listed.read_batch(ids)
        assert got["id"].tolist() == want["id"].tolist()
        assert [bytes(b) for b in got["blob"]] == [bytes(b) for b in want["blob"]]
