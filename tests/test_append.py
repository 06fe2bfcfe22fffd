"""open_for_append continues MindSpore's page algorithm: appending equals writing all calls at once."""

import json
import os
import shutil

import numpy as np
import pytest

import recordio
from recordio import FileReader, FileWriter
from rowcheck import assert_rows_equal
from conftest import GOLDEN_COPIES

SCHEMA = {"id": {"type": "int64"}, "img": {"type": "bytes"}, "vec": {"type": "int32", "shape": [-1]},
          "name": {"type": "string"}}


def calls(n_calls, size):
    rng = np.random.default_rng(3)
    return [[{"id": c * 1000 + i, "img": rng.bytes(int(rng.integers(0, 6000))), "name": f"r{c}-{i}",
              "vec": rng.integers(-300, 300, int(rng.integers(0, 6))).astype(np.int32)} for i in range(size)]
            for c in range(n_calls)]


def writer(path, shards):
    w = FileWriter(str(path), shards)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema(SCHEMA, "append test")
    return w


@pytest.mark.parametrize("shards", [1, 3])
def test_append_equals_one_writer(tmp_path, shards):
    data = calls(6, 9 * shards)
    w = writer(tmp_path / "one.mr", shards)
    for call in data:
        w.write_raw_data(call)
    w.commit()
    w = writer(tmp_path / "app.mr", shards)
    w.write_raw_data(data[0])
    w.commit()
    suffix = "1" if shards > 1 else ""
    for call in data[1:]:
        a = FileWriter.open_for_append(str(tmp_path / "app.mr") + suffix)
        a.write_raw_data(call)
        a.commit()
    names = ["one.mr", "app.mr"] if shards == 1 else [f"one.mr{i}" for i in range(shards)]
    for name in names:
        if shards > 1:
            other = name.replace("one", "app")
        else:
            other = "app.mr"
        once, app = (tmp_path / name).read_bytes(), (tmp_path / other).read_bytes()
        # identical pages; headers equal but for the names and compression_size, which is stored
        # clamped at 0, so an append cannot know a negative total of the earlier calls
        n_once, n_app = (int.from_bytes(b[:8], "little") for b in (once, app))
        h_once, h_app = json.loads(once[8:8 + n_once]), json.loads(app[8:8 + n_app])
        h_once.pop("compression_size"), h_app.pop("compression_size")
        assert json.dumps(h_once).replace("one.mr", "app.mr") == json.dumps(h_app)
        assert once[1 << 14:] == app[1 << 14:]
    assert recordio.verify(str(tmp_path / ("app.mr" + ("0" if shards > 1 else "")))).ok


def _indexes(db):
    import sqlite3
    with sqlite3.connect(db) as conn:
        return (conn.execute("SELECT * FROM INDEXES ORDER BY ROW_ID").fetchall(),
                conn.execute("SELECT * FROM SHARD_NAME").fetchall())


@pytest.mark.parametrize("keep_db", [True, False])
def test_appended_index_equals_one_writers(tmp_path, keep_db):
    """The .db of an append keeps the old rows before the last row group, rewrites that group (the raw-page
    shift may move it) and adds the new rows: its INDEXES equal a one-go write's. Without the .db files
    (lost), the append walks the page table and writes them whole."""
    data = calls(7, 21)
    w = writer(tmp_path / "one.mr", 3)
    for call in data:
        w.write_raw_data(call)
    w.commit()
    w = writer(tmp_path / "app.mr", 3)
    w.write_raw_data(data[0])
    w.commit()
    for call in data[1:]:
        if not keep_db:
            for i in range(3):
                os.unlink(tmp_path / f"app.mr{i}.db")
        a = FileWriter.open_for_append(str(tmp_path / "app.mr2"))
        a.write_raw_data(call)
        a.commit()
    for i in range(3):
        once, app = _indexes(tmp_path / f"one.mr{i}.db"), _indexes(tmp_path / f"app.mr{i}.db")
        assert once[0] == app[0]
        assert app[1] == [(f"app.mr{i}",)]
    assert recordio.verify(str(tmp_path / "app.mr0")).ok
    assert_rows_equal(list(FileReader(str(tmp_path / "app.mr0"))), list(FileReader(str(tmp_path / "one.mr0"))))


def test_append_reads_only_the_last_row_group_of_the_index(tmp_path, monkeypatch):
    """What an append reads of the old .db: the rows of each shard's last BLOB page, however many come
    before them."""
    from recordio.mindrecord import format as fmt
    from recordio.mindrecord.read import location_sources, locations

    w = writer(tmp_path / "big.mr", 2)
    for call in calls(40, 40):
        w.write_raw_data(call)
    w.commit()
    firsts = [[p for p in fmt.FileHeader.read(str(tmp_path / f"big.mr{i}")).pages if p.kind == fmt.BLOB][-1].start_row
              for i in range(2)]
    loaded = []
    original = location_sources.DbBlocks.load
    monkeypatch.setattr(location_sources.DbBlocks, "load",
                        lambda self, a, b: loaded.append((os.path.basename(self.shard.path), a, b)) or
                        original(self, a, b))
    a = FileWriter.open_for_append(str(tmp_path / "big.mr0"))
    a.write_raw_data(calls(1, 6)[0])
    a.commit()
    for i, first in enumerate(firsts):
        mine = [(a_, b_) for name, a_, b_ in loaded if name == f"big.mr{i}"]
        assert mine and min(a_ for a_, _ in mine) >= first - locations.BLOCK_ROWS, (first, mine)
        assert first > locations.BLOCK_ROWS           # the test means something: earlier blocks exist


def test_append_to_mindspore_written_dataset(tmp_path):
    shutil.copytree(GOLDEN_COPIES / "matrix_s4_index", tmp_path / "ms")
    first = str(tmp_path / "ms" / "matrix_s4_index.mindrecord0")
    before = list(FileReader(first))
    rows = [dict(before[i % len(before)], id=100 + i) for i in range(8)]
    rows = [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in rows]
    a = FileWriter.open_for_append(first)
    a.write_raw_data(rows)
    a.commit()
    after = list(FileReader(first))
    assert len(after) == len(before) + 8
    assert sorted(int(r["id"]) for r in after) == sorted([int(r["id"]) for r in before] + list(range(100, 108)))
    report = recordio.verify(first)
    assert report.ok, str(report)


def test_append_abort_leaves_dataset_as_it_was(tmp_path):
    w = writer(tmp_path / "x.mr", 2)
    w.write_raw_data(calls(1, 10)[0])
    w.commit()
    before = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)}
    with pytest.raises(RuntimeError):
        with FileWriter.open_for_append(str(tmp_path / "x.mr0")) as a:
            a.write_raw_data(calls(2, 10)[1])
            raise RuntimeError("stop")
    assert {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)} == before


def test_readers_see_old_rows_while_an_append_is_open(tmp_path):
    w = writer(tmp_path / "x.mr", 1)
    w.write_raw_data(calls(1, 10)[0])
    w.commit()
    a = FileWriter.open_for_append(str(tmp_path / "x.mr"))
    a.write_raw_data(calls(3, 30)[2])
    with FileReader(str(tmp_path / "x.mr"), verify=True) as r:
        assert len(r) == 10 and len(list(r)) == 10
    a.commit()
    with FileReader(str(tmp_path / "x.mr"), verify=True) as r:
        assert len(list(r)) == 40


def test_parallel_writer_independent_files(tmp_path):
    w = FileWriter(str(tmp_path / "p.mr"), 3)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema(SCHEMA)
    data = calls(5, 4)
    for call in data:
        w.write_raw_data(call, parallel_writer=True)
    w.commit()
    per_file = [list(FileReader(str(tmp_path / f"p.mr{i}"))) for i in range(3)]
    assert [len(rows) for rows in per_file] == [8, 8, 4]        # whole calls, round robin
    assert [int(r["id"]) for r in per_file[1]] == [c["id"] for c in data[1] + data[4]]
    header = FileReader(str(tmp_path / "p.mr2")).header
    assert header["shard_addresses"] == ["p.mr2"] and header["page_size"] == 1 << 15
    with pytest.raises(RuntimeError, match="The parameter `parallel_writer` must be consistent during use."):
        w2 = FileWriter(str(tmp_path / "q.mr"))
        w2.add_schema(SCHEMA)
        w2.write_raw_data(data[0], parallel_writer=True)
        w2.write_raw_data(data[1])
