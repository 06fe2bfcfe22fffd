"""FileWriter: validation of every kind of bad row, sizes, naming, existing data, round trips."""

import math
import os
import warnings

import numpy as np
import pytest

from recordio import DatasetExistsError, FileReader, FileWriter, SchemaError
from recordio.errors import MRMGetMetaError, ParamTypeError
from rowcheck import assert_rows_equal

SCHEMA = {"label": {"type": "int32"}, "big": {"type": "int64"}, "f": {"type": "float32"},
          "d": {"type": "float64"}, "name": {"type": "string"}, "img": {"type": "bytes"},
          "arr": {"type": "float32", "shape": [2, 3]}, "ids": {"type": "int64", "shape": [-1]}}


def good_row(i=0):
    return {"label": i, "big": 2 ** 40 + i, "f": 1.5, "d": 0.1, "name": f"n{i}", "img": bytes([i % 256]) * 3,
            "arr": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.arange(i, dtype=np.int64)}


def new_writer(path, shards=1, schema=SCHEMA, **kw):
    w = FileWriter(str(path), shards, **kw)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema(schema, "test")
    return w


def stored(row):
    """What a reader returns for a row written with SCHEMA's Python values."""
    return {"label": np.int32(row["label"]), "big": np.int64(row["big"]), "f": np.float32(row["f"]),
            "d": np.float64(row["d"]), "name": row["name"], "img": row["img"], "arr": row["arr"],
            "ids": row["ids"]}


BAD = [
    ("missing field", lambda r: r.pop("label"), "field 'label' is missing"),
    ("str into int32", lambda r: r.update(label="7"), "expected int or np.int32"),
    ("float into int32", lambda r: r.update(label=7.0), "found float"),
    ("bool into int32", lambda r: r.update(label=True), "found bool"),
    ("np.int16 into int32", lambda r: r.update(label=np.int16(5)), "found int16"),
    ("np.int64 into int32", lambda r: r.update(label=np.int64(5)), "found int64"),
    ("int32 out of range", lambda r: r.update(label=2 ** 40 + 5), "expected an int32 in"),
    ("int64 out of range", lambda r: r.update(big=2 ** 63), "expected an int64 in"),
    ("int into float32", lambda r: r.update(f=1), "expected float or np.float32"),
    ("float32 out of range", lambda r: r.update(f=1e300), "out of the float32 range"),
    ("np.float64 into float32", lambda r: r.update(f=np.float64(1.0)), "found float64"),
    ("bytes into string", lambda r: r.update(name=b"x"), "expected str"),
    ("str into bytes", lambda r: r.update(img="x"), "expected bytes"),
    ("list instead of array", lambda r: r.update(arr=[1.0] * 6), "expected np.ndarray"),
    ("float64 array into float32", lambda r: r.update(arr=np.zeros((2, 3))), "expected dtype float32"),
    ("float array into int64", lambda r: r.update(ids=np.zeros(3, dtype=np.float32)), "expected dtype int64"),
    ("uint64 array into int64", lambda r: r.update(ids=np.array([1 << 63], dtype=np.uint64)),
     "expected dtype int64, found uint64"),
    ("int32 array into int64", lambda r: r.update(ids=np.arange(3, dtype=np.int32)), "expected dtype int64, found int32"),
    ("wrong element count", lambda r: r.update(arr=np.zeros(7, dtype=np.float32)), r"expected shape \[2, 3\]"),
    ("not a dict", None, "expect dict type"),
]


@pytest.mark.parametrize("name,mutate,message", BAD, ids=[b[0] for b in BAD])
def test_bad_row_raises_and_writes_nothing(tmp_path, name, mutate, message):
    w = new_writer(tmp_path / "x.mr")
    rows = [good_row(i) for i in range(3)]
    if mutate is None:
        rows[1] = ["not", "a", "dict"]
    else:
        mutate(rows[1])
    with pytest.raises((SchemaError, ParamTypeError), match=message) as info:   # MindSpore's type for a non-dict
        w.write_raw_data(rows)
    assert "row 1" in str(info.value)
    w.write_raw_data([good_row(7)])          # later calls still work
    w.commit()
    with FileReader(str(tmp_path / "x.mr")) as r:
        assert_rows_equal(list(r), [stored(good_row(7))])


def test_same_element_count_other_shape_is_accepted(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    row = good_row(1)
    row["arr"] = np.arange(6, dtype=np.float32).reshape(3, 2)
    w.write_raw_data([row])
    w.commit()
    with FileReader(str(tmp_path / "x.mr")) as r:
        assert r[0]["arr"].shape == (2, 3)


def test_extra_field_is_dropped_with_one_warning(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    rows = [dict(good_row(i), extra=i) for i in range(3)]
    with pytest.warns(UserWarning, match="extra") as record:
        w.write_raw_data(rows)
    assert len(record) == 1
    w.commit()
    assert "extra" not in FileReader(str(tmp_path / "x.mr"))[0]


def test_row_larger_than_page(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    row = good_row(1)
    row["img"] = b"x" * 40000
    with pytest.raises(SchemaError, match="row 0: its blob of .* does not fit in a page of 32768"):
        w.write_raw_data([row])


@pytest.mark.parametrize("schema,message", [
    ({"a": {"type": "uint8"}}, "not one of"),
    ({"a": {"type": "bool"}}, "not one of"),
    ({"a": {"type": "bytes", "shape": [2]}}, "arrays must be one of"),
    ({"a": {"type": "string", "shape": [2]}}, "arrays must be one of"),
    ({"a": {"type": "int32", "shape": [-1, -1]}}, "at most one -1"),
    ({"a": {"type": "int32", "shape": [0, 3]}}, "positive ints"),
    ({"a-b": {"type": "int32"}}, "should be composed of"),
    ({}, "non-empty dict"),
])
def test_bad_schema(tmp_path, schema, message):
    w = FileWriter(str(tmp_path / "x.mr"))
    with pytest.raises(SchemaError, match=message):
        w.add_schema(schema)


def test_schema_twice_and_index_rules(tmp_path):
    w = FileWriter(str(tmp_path / "x.mr"))
    with pytest.raises(MRMGetMetaError, match="add_schema first"):      # a SchemaError too
        w.add_index(["label"])
    w.add_schema(SCHEMA)
    with pytest.raises(SchemaError, match="already added"):
        w.add_schema(SCHEMA)
    for fields, message in [(["img"], "only scalar"), (["arr"], "only scalar"), (["nope"], "can not found in schema"),
                            ([], "non-empty list"), (["label", "label"], "repeatedly")]:
        with pytest.raises(SchemaError, match=message):
            w.add_index(fields)


def test_index_fields_differing_only_in_case(tmp_path):
    w = FileWriter(str(tmp_path / "x.mr"))
    w.add_schema({"H": {"type": "int32"}, "h": {"type": "int32"}})
    with pytest.raises(SchemaError, match="differ only in case"):
        w.write_raw_data([{"H": 1, "h": 2}])
    w.add_index(["h"])
    w.write_raw_data([{"H": 1, "h": 2}])
    w.commit()
    assert FileReader(str(tmp_path / "x.mr"))[0] == {"H": 1, "h": 2}


@pytest.mark.parametrize("setter,value,message", [
    ("set_page_size", 1000, "should be in range"), ("set_header_size", 16386, "divided by four"),
    ("set_page_size", 1 << 29, "should be in range"), ("set_header_size", 1 << 13, "should be in range"),
])
def test_size_limits(tmp_path, setter, value, message):
    with pytest.raises(ValueError, match=message):
        getattr(FileWriter(str(tmp_path / "x.mr")), setter)(value)


@pytest.mark.parametrize("shard_num,name,message", [
    (1001, "x.mr", "between 1 and 1000"), (0, "x.mr", "between 1 and 1000"), (1, "a;b.mr", "should not contains"),
    (1, " x.mr", "should not start/end with space"),
])
def test_bad_names(tmp_path, shard_num, name, message):
    with pytest.raises(ValueError, match=message):
        FileWriter(str(tmp_path / name), shard_num)


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        FileWriter(str(tmp_path / "nodir" / "x.mr"))


@pytest.mark.parametrize("shards,names", [(1, ["x.mr"]), (4, [f"x.mr{i}" for i in range(4)]),
                                          (11, [f"x.mr{i:02d}" for i in range(11)])])
def test_shard_file_names(tmp_path, shards, names):
    w = new_writer(tmp_path / "x.mr", shards)
    w.write_raw_data([good_row(i) for i in range(shards)])
    w.commit()
    assert sorted(os.listdir(tmp_path)) == sorted(names + [n + ".db" for n in names])


def test_leftover_rows_go_to_first_shards(tmp_path):
    w = new_writer(tmp_path / "x.mr", 4)
    w.write_raw_data([good_row(i) for i in range(6)])
    w.commit()
    with FileReader(str(tmp_path / "x.mr0")) as r:
        assert r.file_row_counts == [2, 2, 1, 1]
        assert [int(row["label"]) for row in r] == list(range(6))


def test_existing_dataset_needs_overwrite(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    w.write_raw_data([good_row(1)])
    w.commit()
    before = (tmp_path / "x.mr").read_bytes()
    with pytest.raises(DatasetExistsError, match="'overwrite' parameter to True"):
        FileWriter(str(tmp_path / "x.mr"))
    os.unlink(tmp_path / "x.mr")            # only the .db is left: still refused
    with pytest.raises(FileExistsError):
        FileWriter(str(tmp_path / "x.mr"))
    w = new_writer(tmp_path / "x.mr", overwrite=True)
    w.write_raw_data([good_row(2), good_row(3)])
    w.commit()
    assert len(FileReader(str(tmp_path / "x.mr"))) == 2
    assert before != (tmp_path / "x.mr").read_bytes()


def test_write_after_commit_and_commit_without_schema(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    w.commit()
    assert len(FileReader(str(tmp_path / "x.mr"))) == 0
    with pytest.raises(RuntimeError, match="committed"):
        w.write_raw_data([good_row(1)])
    with pytest.raises(SchemaError, match="add_schema"):
        FileWriter(str(tmp_path / "y.mr")).commit()


def test_context_manager_commits_or_publishes_nothing(tmp_path):
    with new_writer(tmp_path / "ok.mr") as w:
        w.write_raw_data([good_row(1)])
    assert len(FileReader(str(tmp_path / "ok.mr"))) == 1
    with pytest.raises(KeyError):
        with new_writer(tmp_path / "bad.mr") as w:
            w.write_raw_data([good_row(1)])
            raise KeyError("boom")
    assert sorted(os.listdir(tmp_path)) == ["ok.mr", "ok.mr.db"]


def test_header_too_big_publishes_nothing(tmp_path):
    w = new_writer(tmp_path / "x.mr", schema={"img": {"type": "bytes"}, "i": {"type": "int32"}})
    for i in range(120):
        w.write_raw_data([{"img": b"x" * 30000, "i": i}])
    with pytest.raises(ValueError, match="shard header is too big"):
        w.commit()
    assert os.listdir(tmp_path) == []


def test_nan_and_inf_in_indexed_float_fields(tmp_path):
    schema = {"d": {"type": "float64"}, "f": {"type": "float32"}}
    w = new_writer(tmp_path / "x.mr", schema=schema)
    values = [math.nan, math.inf, -math.inf, 0.0]
    w.write_raw_data([{"d": v, "f": v} for v in values])
    w.commit()
    got = list(FileReader(str(tmp_path / "x.mr")))
    assert [r["d"] for r in got][1:] == values[1:] and math.isnan(got[0]["d"]) and math.isnan(got[0]["f"])
    import sqlite3
    assert sqlite3.connect(str(tmp_path / "x.mr.db")).execute(
        "SELECT d_0 FROM INDEXES ORDER BY ROW_ID").fetchall()[0] == (None,)


def test_strings_with_nul_kept_whole_in_db(tmp_path):
    import sqlite3
    w = new_writer(tmp_path / "x.mr", schema={"s": {"type": "string"}})
    w.write_raw_data([{"s": "a\x00b"}])
    w.commit()
    assert FileReader(str(tmp_path / "x.mr"))[0]["s"] == "a\x00b"
    assert sqlite3.connect(str(tmp_path / "x.mr.db")).execute("SELECT s_0 FROM INDEXES").fetchone() == ("a\x00b",)


def test_encrypt_tail_warns(tmp_path):
    w = new_writer(tmp_path / "x.mr", schema={"s": {"type": "string"}})
    w.write_raw_data([{"s": "ENCRYPT"}])
    with pytest.warns(UserWarning, match="MindSpore will take it for an encrypted file"):
        w.commit()
    assert FileReader(str(tmp_path / "x.mr"))[0]["s"] == "ENCRYPT"


def test_numpy_scalars_accepted(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    row = dict(good_row(2), label=np.int32(5), big=np.int64(-3), f=np.float32(0.25), d=np.float64(2.5))
    w.write_raw_data([row])
    w.commit()
    got = FileReader(str(tmp_path / "x.mr"))[0]
    assert (got["label"], got["big"], got["f"], got["d"]) == (5, -3, 0.25, 2.5)
    assert got["f"].dtype == np.float32


def test_uncommitted_writer_leaves_nothing(tmp_path):
    w = new_writer(tmp_path / "x.mr")
    w.write_raw_data([good_row(1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        del w
    import gc
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_field_starting_with_a_digit_is_stored_but_not_indexed(tmp_path):
    w = FileWriter(str(tmp_path / "x.mr"))
    w.add_schema({"1a": {"type": "int32"}, "b": {"type": "int32"}})
    with pytest.raises(SchemaError, match="starts with a digit"):
        w.add_index(["1a"])
    w.write_raw_data([{"1a": 1, "b": 2}])
    w.commit()
    reader = FileReader(str(tmp_path / "x.mr"))
    assert reader.index_fields == ["b"] and reader[0] == {"1a": 1, "b": 2}


def _shard_rows(path, shard_num):
    import recordio
    width = len(str(shard_num - 1))
    return [recordio.count_rows([f"{path}{str(i).rjust(width, '0')}"]) for i in range(shard_num)]


def test_one_row_calls_fill_every_shard(tmp_path):
    import recordio
    path = str(tmp_path / "one.mindrecord")
    with recordio.FileWriter(path, shard_num=4) as w:
        w.add_schema({"x": {"type": "int32"}}, "one row per call")
        for i in range(10):
            w.write_raw_data([{"x": i}])
    assert _shard_rows(path, 4) == [3, 3, 2, 2]
    with recordio.FileWriter.open_for_append(path + "0") as w:     # appends continue from the counts
        for i in range(3):
            w.write_raw_data([{"x": 10 + i}])
    assert _shard_rows(path, 4) == [4, 3, 3, 3]
    assert sorted(int(r["x"]) for r in recordio.FileReader(path + "0")) == list(range(13))


def test_leftovers_go_to_the_shards_holding_the_fewest_rows(tmp_path):
    import recordio
    from recordio.mindrecord.write.shard_files import split_counts
    assert split_counts(5, 4) == [2, 1, 1, 1]
    assert split_counts(5, 4, [2, 1, 1, 1]) == [1, 2, 1, 1]
    assert split_counts(8, 4, [5, 0, 3, 1]) == [2, 2, 2, 2]          # multiples split evenly, as MindSpore
    path = str(tmp_path / "left.mindrecord")
    with recordio.FileWriter(path, shard_num=4) as w:
        w.add_schema({"x": {"type": "int32"}}, "leftovers")
        w.write_raw_data([{"x": i} for i in range(5)])
        w.write_raw_data([{"x": i} for i in range(5, 10)])
    assert _shard_rows(path, 4) == [3, 3, 2, 2]


def test_index_columns_sqlite_cannot_take_are_refused_before_any_row(tmp_path):
    import recordio
    schema = {f"f{i}": {"type": "int32"} for i in range(1200)}
    w = recordio.FileWriter(str(tmp_path / "wide.mindrecord"))
    w.add_schema(schema, "too many index columns")
    with pytest.raises(recordio.SchemaError, match="SQLite"):
        w.add_index(list(schema))
    w.add_index([f"f{i}" for i in range(900)])          # 7 + 2 * 900 columns fit
    w.write_raw_data([{name: 1 for name in schema}])
    w.commit()
    case = recordio.FileWriter(str(tmp_path / "case.mindrecord"))
    case.add_schema({"label": {"type": "int32"}, "Label": {"type": "int32"}}, "case clash")
    with pytest.raises(recordio.SchemaError, match="differ only in case"):
        case.add_index(["label", "Label"])
    case.abort()


_WRITE_N = """
import sys
from recordio import FileWriter
w = FileWriter(sys.argv[1], 4, fsync=False)
w.add_schema({"label": {"type": "int32"}, "id": {"type": "int64"}})
for s in range(0, int(sys.argv[2]), 10_000):
    w.write_raw_data([{"label": i % 10, "id": i} for i in range(s, s + 10_000)])
w.commit()
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024)
"""


def _writer_peak_mb(path, rows):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WRITE_N, path, str(rows)], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_writing_two_million_rows_takes_no_more_memory_than_a_hundred_thousand(tmp_path):
    """Index entries go to the staged .db as row groups become final, and the entry lengths of the rows
    of a group that is not final yet (all 2M here: tiny rows, 32 MB pages) wait in a file, not in memory
    (before: ~480 MB here, then +30 MB). The peak is this process's VmHWM: ru_maxrss would include the
    parent's RSS at fork."""
    small = _writer_peak_mb(str(tmp_path / "small.mr"), 100_000)
    peak_mb = _writer_peak_mb(str(tmp_path / "big.mr"), 2_000_000)
    assert peak_mb < small + 12, f"writer peak RSS {peak_mb} MB at 2M rows, {small} MB at 100k"
    with FileReader(str(tmp_path / "big.mr0")) as reader:
        assert len(reader) == 2_000_000
        assert [int(reader[i]["id"]) for i in (0, 2499, 2500, 1_999_999)] == [0, 2499, 10_000, 1_999_999]


def test_the_streamed_index_is_the_one_shot_index(tmp_path):
    """Rows inserted as their row groups become final give the bytes of one insert at commit."""
    import sqlite3
    from recordio.mindrecord import index_write
    from recordio.mindrecord.checksums import ALGORITHM
    w = FileWriter(str(tmp_path / "s.mr"), 2, fsync=False)
    w.set_header_size(1 << 17)
    w.set_page_size(1 << 15)
    w.add_schema({"id": {"type": "int64"}, "name": {"type": "string"}, "f": {"type": "float64"},
                  "img": {"type": "bytes"}})
    for s in range(0, 20_000, 999):
        w.write_raw_data([{"id": i, "name": "n" * (i % 41), "f": math.nan if i % 13 == 0 else i / 3,
                           "img": b"x" * (i % 700)} for i in range(s, min(20_000, s + 999))])
    w.commit()
    for k in range(2):
        db = str(tmp_path / f"s.mr{k}.db")
        conn = sqlite3.connect(db)
        rows = conn.execute("SELECT * FROM INDEXES ORDER BY rowid").fetchall()
        sums = conn.execute("SELECT PAGE_ID, NBYTES, ROW_START, ROW_END, DIGEST FROM RECORDIO_CHECKSUMS "
                            "ORDER BY rowid").fetchall()
        meta = dict(conn.execute("SELECT KEY, VALUE FROM RECORDIO_META").fetchall())
        conn.close()
        assert len(rows) == 10_000 and len({r[2] for r in rows}) > 10           # many RAW pages
        one_shot = str(tmp_path / f"one{k}.db")
        index_write.create_index(one_shot, f"s.mr{k}", [("f", "float64"), ("id", "int64"), ("name", "string")],
                           rows, checksums=(ALGORITHM, sums), meta=meta)
        with open(db, "rb") as a, open(one_shot, "rb") as b:
            assert a.read() == b.read()
