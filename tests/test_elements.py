"""Element (token) counts of array fields: recorded by the writers, scanned for MindSpore's files."""

import glob
import json
import sqlite3

import numpy as np
import pytest

import recordio as rio
from recordio import FileReader, FileWriter
from recordio.errors import FormatError, IndexFileError
from recordio.tools.__main__ import main as cli
from conftest import GOLDEN_COPIES

SCHEMA = {"ids": {"type": "int32", "shape": [-1]}, "mask": {"type": "int64", "shape": [-1]},
          "weights": {"type": "float32", "shape": [-1, 2]}, "fixed": {"type": "int32", "shape": [3]},
          "text": {"type": "bytes"}, "label": {"type": "int64"}}


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(0, 40))
        out.append({"ids": rng.integers(-2**31, 2**31 - 1, size=k, dtype=np.int64).astype(np.int32),
                    "mask": rng.integers(0, 300, size=int(rng.integers(0, 9))).astype(np.int64),
                    "weights": rng.random((int(rng.integers(0, 5)), 2), dtype=np.float32),
                    "fixed": np.arange(3, dtype=np.int32) + i, "text": bytes(rng.integers(0, 256, size=k % 7)),
                    "label": i})
    return out


def _expected(rows):
    return {"fixed": {"elements": 3 * len(rows), "source": "schema"},
            "ids": sum(r["ids"].size for r in rows), "mask": sum(r["mask"].size for r in rows),
            "weights": sum(r["weights"].size for r in rows)}


def _check(found, rows, source):
    want = _expected(rows)
    assert found["fixed"] == want.pop("fixed")
    assert {k: found[k] for k in want} == {k: {"elements": v, "source": source} for k, v in want.items()}
    assert list(found) == sorted(found)


def _write(path, rows, shard_num=3, calls=3):
    with FileWriter(path, shard_num=shard_num) as w:
        w.add_schema(SCHEMA)
        for part in np.array_split(np.arange(len(rows)), calls):
            w.write_raw_data([rows[i] for i in part])
    return sorted(f for f in glob.glob(path + "*") if not f.endswith(".db"))


def _forget_elements(files):
    """What MindSpore's .db files look like here: no recorded element totals."""
    for f in files:
        with sqlite3.connect(f + ".db") as conn:
            conn.execute("DELETE FROM RECORDIO_META WHERE KEY = 'elements'")


def test_writer_records_each_shards_totals(tmp_path):
    rows = _rows(97)
    files = _write(str(tmp_path / "t.mindrecord"), rows)
    _check(rio.count_elements(files[1]), rows, "index")
    per_shard = []
    for f in files:
        with sqlite3.connect(f + ".db") as conn:
            per_shard.append(json.loads(conn.execute("SELECT VALUE FROM RECORDIO_META WHERE KEY='elements'")
                                        .fetchone()[0]))
        with FileReader([f]) as r:                  # each shard's totals are its own rows'
            assert per_shard[-1] == {n: sum(row[n].size for row in r) for n in ("ids", "mask", "weights")}


def test_scan_equals_recorded_totals(tmp_path):
    rows = _rows(64, seed=1)
    files = _write(str(tmp_path / "t.mindrecord"), rows)
    _forget_elements(files[:1])                     # one shard scanned, the others from their .db
    _check(rio.count_elements(files[0]), rows, "scan")
    _forget_elements(files)
    _check(rio.count_elements(files[0]), rows, "scan")


def test_append_adds_to_the_totals_and_unknown_stays_unknown(tmp_path):
    rows, more = _rows(40, seed=2), _rows(13, seed=3)
    files = _write(str(tmp_path / "t.mindrecord"), rows)
    w = FileWriter.open_for_append(files[0])
    w.write_raw_data(more)
    w.commit()
    _check(rio.count_elements(files[0]), rows + more, "index")
    _forget_elements(files[1:2])
    w = FileWriter.open_for_append(files[0])
    w.write_raw_data(more)
    w.commit()
    _check(rio.count_elements(files[0]), rows + more + more, "scan")


def test_shard_writer_parts_keep_their_totals(tmp_path):
    rows = _rows(30, seed=4)
    path = str(tmp_path / "p.mindrecord")
    for i, part in enumerate(np.array_split(np.arange(len(rows)), 2)):
        with rio.ShardWriter(path, shard_id=i, shard_num=2, schema=SCHEMA) as w:
            w.write_raw_data([rows[j] for j in part])
    rio.finalize_shards(path, shard_num=2)
    _check(rio.count_elements(path + "0"), rows, "index")


@pytest.mark.parametrize("case", ["arrays_variable", "arrays_fixed", "arrays_200"])
def test_mindspore_written_files_are_scanned(case):
    files = sorted(f for f in glob.glob(str(GOLDEN_COPIES / case / "*.mindrecord*")) if not f.endswith(".db"))
    found = rio.count_elements(files[0])
    with FileReader(files[0]) as reader:
        rows = list(reader)
        arrays = {n: s for n, s in reader.schema.items() if "shape" in s and s["type"] != "bytes"}
    assert set(found) == set(arrays)
    for name, spec in arrays.items():
        assert found[name]["elements"] == sum(np.asarray(r[name]).size for r in rows), name
        assert found[name]["source"] == ("scan" if -1 in spec["shape"] else "schema")


def test_corrupt_count_prefix_names_file_row_and_field(tmp_path):
    rows = _rows(20, seed=5)
    path = str(tmp_path / "c.mindrecord")
    with FileWriter(path) as w:
        w.add_schema({"ids": {"type": "int32", "shape": [-1]}})
        w.write_raw_data([{"ids": r["ids"]} for r in rows])
    _forget_elements([path])
    with FileReader(path) as reader:
        start = int(reader.shard_set.locations.row(0, 7)[2])
    with open(path, "r+b") as f:                     # row 7 now claims more elements than its bytes hold
        f.seek(start)
        f.write((10**6).to_bytes(4, "big"))
    with pytest.raises(FormatError, match=r"c\.mindrecord: row 7: field 'ids'"):
        rio.count_elements(path)


def test_malformed_recorded_totals_are_refused(tmp_path):
    files = _write(str(tmp_path / "m.mindrecord"), _rows(10, seed=6), shard_num=1, calls=1)
    with sqlite3.connect(files[0] + ".db") as conn:
        conn.execute("UPDATE RECORDIO_META SET VALUE = '{\"ids\": -5}' WHERE KEY = 'elements'")
    with pytest.raises(IndexFileError, match=r"m\.mindrecord\.db: RECORDIO_META 'elements'"):
        rio.count_elements(files[0])


def test_info_prints_the_token_count(tmp_path, capsys):
    rows = _rows(25, seed=7)
    files = _write(str(tmp_path / "i.mindrecord"), rows)
    assert cli(["info", files[0]]) == 0
    out = capsys.readouterr().out
    assert f"ids: {sum(r['ids'].size for r in rows):,} elements (recorded in the .db files)" in out
    assert cli(["info", files[0], "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["elements"]["mask"]["elements"] == sum(r["mask"].size for r in rows)
    assert cli(["info", files[0], "--json", "--no-elements"]) == 0
    assert "elements" not in json.loads(capsys.readouterr().out)
