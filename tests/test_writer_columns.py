"""FileWriter.write_columns: the same files as write_raw_data of the rows the columns stand for, and the
same errors for the same bad values (the columnar write is a fast path of the row write)."""

import os

import numpy as np
import pytest
from test_writer import new_writer

from recordio import FileReader, FileWriter, SchemaError
from recordio.mindrecord import codec
from recordio.mindrecord.write import columns as columnar
from recordio.mindrecord.read.columns import BytesColumn
from recordio.mindrecord.format import entry_prefix
from recordio.mindrecord.schema import Schema
from recordio.mindrecord.write.shard_writer import ShardWriter, finalize_shards

SCHEMA = {"i": {"type": "int32"}, "l": {"type": "int64"}, "f": {"type": "float32"}, "d": {"type": "float64"},
          "t": {"type": "string"}, "raw": {"type": "bytes"}, "ids": {"type": "int64", "shape": [-1]},
          "tok": {"type": "int32", "shape": [-1]}, "xy": {"type": "int32", "shape": [-1, 2]},
          "m": {"type": "float32", "shape": [2, 3]}}


def columns_of(n, seed=0, first=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 3000, n)
    raw = [rng.integers(0, 256, s, np.uint8).tobytes() for s in sizes]
    return {"i": rng.integers(-2**31, 2**31, n).astype(np.int32), "l": rng.integers(-2**62, 2**62, n),
            "f": rng.standard_normal(n).astype(np.float32), "d": np.append(rng.standard_normal(n - 1), np.nan),
            "t": [f"text {first + k} ü" for k in range(n)], "raw": raw,
            "ids": [rng.integers(-2**40, 2**40, k % 5) for k in range(n)],
            "tok": [rng.integers(0, 70000, k % 7).astype(np.int32) for k in range(n)],
            "xy": [rng.integers(0, 99, (k % 3, 2)).astype(np.int32) for k in range(n)],
            "m": [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(n)]}


def as_bytes_column(values):
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    return BytesColumn(np.frombuffer(b"".join(values) or b"", np.uint8), offsets)


def dataset_bytes(path, shards):
    names = [path] if shards == 1 else [f"{path}{k}" for k in range(shards)]
    return [open(name + suffix, "rb").read() for name in names for suffix in ("", ".db")]


def write_both(tmp_path, calls, shards=1, schema=SCHEMA, index=None, parallel=False):
    """The dataset written with ``calls`` (lists of columns) by write_columns and by write_raw_data."""
    out = []
    for how in ("columns", "rows"):
        os.makedirs(tmp_path / how)
        path = str(tmp_path / how / "x.mindrecord")
        w = new_writer(path, shards, schema)
        if index:
            w.add_index(index)
        for columns in calls:
            n = columnar.column_length(columns)
            if how == "columns":
                w.write_columns(columns, parallel_writer=parallel)
            else:
                w.write_raw_data(columnar.rows_of(Schema(schema), columns, n), parallel_writer=parallel)
        w.commit()
        out.append(dataset_bytes(path, shards))
    return out


@pytest.mark.parametrize("shards,parallel,index", [(1, False, None), (3, False, ["t", "i"]), (2, True, ["d"])])
@pytest.mark.parametrize("bytes_form", ["list", "column"])
def test_columns_write_the_bytes_the_rows_write(tmp_path, shards, parallel, index, bytes_form):
    calls = [columns_of(n, seed, first) for seed, (n, first) in enumerate([(7, 0), (40, 7), (1, 47), (25, 48)])]
    if bytes_form == "column":
        for columns in calls:
            columns["raw"] = as_bytes_column(columns["raw"])
    mine, rows = write_both(tmp_path, calls, shards, index=index, parallel=parallel)
    assert mine == rows


@pytest.mark.parametrize("schema,columns", [
    ({"n": {"type": "int64"}}, {"n": np.arange(300, dtype=np.int16)}),              # raw fields only
    ({"b": {"type": "bytes"}}, {"b": as_bytes_column([bytes([k % 256]) * k for k in range(300)])}),   # blob only
    ({"b": {"type": "bytes"}, "c": {"type": "bytes"}},                              # two blob parts a row
     {"b": as_bytes_column([b"x" * k for k in range(50)]), "c": [b"y" * (k % 4) for k in range(50)]}),
    ({"f": {"type": "float32"}, "u": {"type": "int32"}}, {"f": np.array([0.1, 1e38, np.inf, -0.0]),
                                                            "u": np.array([0, 1, 2**31 - 1, 5], np.uint32)}),
], ids=["raw only", "blob only", "two blobs", "wider dtypes"])
def test_columns_of_other_layouts_write_the_same_bytes(tmp_path, schema, columns):
    mine, rows = write_both(tmp_path, [columns], schema=schema)
    assert mine == rows


def test_a_bytes_column_offset_into_its_buffer_and_sliced(tmp_path):
    values = [bytes([k]) * (k * 37 % 101) for k in range(60)]
    whole = as_bytes_column([b"head"] + values)
    column = BytesColumn(whole.buffer, whole.offsets[1:])             # offsets that do not start at 0
    assert column[10:20].tolist() == values[10:20] and column[5:2].tolist() == []
    mine, rows = write_both(tmp_path, [{"raw": column}], schema={"raw": {"type": "bytes"}})
    assert mine == rows


BAD = [
    ("int32 out of range", "i", lambda c: c.update(i=np.arange(8) << 36), "expected an int32 in"),
    ("float array into int32", "i", lambda c: c.update(i=c["i"].astype(np.float64)), "found float"),
    ("bool array into int32", "i", lambda c: c.update(i=c["i"] > 0), "found bool"),
    ("uint64 past int64", "l", lambda c: c.update(l=np.full(len(c["l"]), 2**63, np.uint64)), "expected an int64 in"),
    ("int array into float64", "d", lambda c: c.update(d=np.arange(len(c["d"]))), "expected float"),
    ("float32 out of range", "f", lambda c: c.update(f=np.full(len(c["f"]), 1e300)), "out of the float32 range"),
    ("bytes into string", "t", lambda c: c["t"].__setitem__(3, b"x"), "expected str"),
    ("a lone surrogate", "t", lambda c: c["t"].__setitem__(3, "a\ud800"), "UTF-8 encodable"),
    ("str into bytes", "raw", lambda c: c["raw"].__setitem__(2, "x"), "expected bytes"),
    ("int64 array into int32 array", "tok", lambda c: c["tok"].__setitem__(5, np.arange(3)), "expected dtype int32"),
    ("a list for an array", "ids", lambda c: c["ids"].__setitem__(5, [1, 2]), "expected np.ndarray"),
    ("odd element count", "xy", lambda c: c["xy"].__setitem__(5, np.zeros(3, np.int32)), r"expected shape \[-1, 2\]"),
    ("missing column", "m", lambda c: c.pop("m"), "field 'm' is missing"),
]


@pytest.mark.parametrize("name,field,spoil,message", BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_raises_the_row_error_and_writes_nothing(tmp_path, name, field, spoil, message):
    columns = columns_of(8)
    spoil(columns)
    rows = columnar.rows_of(Schema(SCHEMA), columns, 8)
    w = new_writer(tmp_path / "rows.mr", schema=SCHEMA)
    with pytest.raises(SchemaError) as by_rows:
        w.write_raw_data(rows)
    w = new_writer(tmp_path / "cols.mr", schema=SCHEMA)
    with pytest.raises(SchemaError, match=message) as by_columns:
        w.write_columns(columns)
    assert str(by_columns.value) == str(by_rows.value)
    assert f"field '{field}'" in str(by_columns.value) and "row " in str(by_columns.value)
    w.write_columns(columns_of(3))                  # the failed call wrote nothing; the writer goes on
    w.commit()
    assert len(FileReader(str(tmp_path / "cols.mr"))) == 3


def test_a_row_larger_than_a_page_is_refused_as_a_row_is(tmp_path):
    columns = {"raw": as_bytes_column([b"x", b"y" * (1 << 15)])}
    w = new_writer(tmp_path / "big.mr", schema={"raw": {"type": "bytes"}})
    with pytest.raises(SchemaError, match="row 1: its blob of 32768 bytes does not fit in a page"):
        w.write_columns(columns)


@pytest.mark.parametrize("columns,message", [
    ({"i": np.arange(3), "t": ["a", "b"]}, "differ in length"),
    ({}, "non-empty dict"),
    ({"raw": BytesColumn(np.zeros(4, np.uint8), np.array([0, 3, 2]))}, "non-decreasing"),
    ({"raw": BytesColumn(np.zeros(4, np.uint8), np.array([0, 5]))}, "within it"),
    ({"i": np.arange(0)}, "the columns are empty"),
])
def test_malformed_columns_are_refused(tmp_path, columns, message):
    w = new_writer(tmp_path / "x.mr", schema=SCHEMA)
    with pytest.raises(SchemaError, match=message):
        w.write_columns(columns)


def test_extra_columns_warn_once(tmp_path):
    w = new_writer(tmp_path / "x.mr", schema={"i": {"type": "int32"}})
    with pytest.warns(UserWarning, match=r"\['other'\] are not in the schema") as caught:
        w.write_columns({"i": np.arange(3), "other": ["a", "b", "c"]})
    assert len(caught) == 1


def test_a_shard_writer_writes_columns(tmp_path):
    path = str(tmp_path / "s.mindrecord")
    for shard in range(2):
        with ShardWriter(path, shard, 2, {"n": {"type": "int64"}, "b": {"type": "bytes"}}) as w:
            w.write_columns({"n": np.arange(5) + 5 * shard, "b": [b"x"] * 5})
            assert w.rows == 5
    finalize_shards(path, 2)
    assert [int(r["n"]) for r in FileReader(path + "0")] == list(range(10))


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_page_entries_are_prefixed_values(monkeypatch, compiled):
    if not compiled:
        monkeypatch.setattr(codec, "_codec", None)
    values = [b"", b"a", b"bc" * 300, bytes(range(256))]
    column = as_bytes_column([b"skip"] + values)
    want = b"".join(entry_prefix(len(v)) + v for v in values)
    assert bytes(codec.page_entries(column.buffer, column.offsets[1:])) == want
    assert bytes(codec.page_entries(column.buffer, column.offsets[:1])) == b""


def test_a_file_writer_for_many_shards_takes_columns_per_call(tmp_path):
    w = FileWriter(str(tmp_path / "m.mr"), 4)
    w.add_schema({"n": {"type": "int32"}})
    w.write_columns({"n": np.arange(10, dtype=np.int32)})
    w.commit()
    assert sorted(int(r["n"]) for r in FileReader(str(tmp_path / "m.mr0"))) == list(range(10))


def test_an_append_takes_columns_as_it_takes_rows(tmp_path):
    for how in ("columns", "rows"):
        os.makedirs(tmp_path / how)
        path = str(tmp_path / how / "a.mindrecord")
        w = new_writer(path, 2, SCHEMA)
        w.write_raw_data(columnar.rows_of(Schema(SCHEMA), columns_of(30), 30))
        w.commit()
        w = FileWriter.open_for_append(path + "0")
        more = columns_of(20, seed=5, first=30)
        if how == "columns":
            w.write_columns(more)
        else:
            w.write_raw_data(columnar.rows_of(Schema(SCHEMA), more, 20))
        w.commit()
    assert dataset_bytes(str(tmp_path / "columns" / "a.mindrecord"), 2) == \
        dataset_bytes(str(tmp_path / "rows" / "a.mindrecord"), 2)
