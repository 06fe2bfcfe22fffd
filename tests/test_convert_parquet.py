"""Parquet -> records: the type mapping, round trips through to_arrow, refusals of types and nulls."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import recordio
from recordio.converters import convert_parquet, to_arrow

N = 500


def example_table(n=N):
    i = np.arange(n)
    return pa.table({
        "i8": pa.array((i % 200 - 100).astype(np.int8)), "u16": pa.array(i.astype(np.uint16)),
        "i32": pa.array(i.astype(np.int32) * -3), "u32": pa.array(i.astype(np.uint32) * 7),
        "i64": pa.array(i.astype(np.int64) << 33), "f16": pa.array((i / 4).astype(np.float16)),
        "f32": pa.array((i / 3).astype(np.float32)), "f64": pa.array(i / 7 + np.where(i == 5, np.nan, 0)),
        "flag": pa.array(i % 3 == 0), "name": pa.array([f"row {k} é" for k in i]),
        "big": pa.array([f"r{k}" for k in i], pa.large_string()), "blob": pa.array([bytes([k % 256]) * (k % 5) for k in i]),
        "cat": pa.array(["a", "b", "c", "d"] * (n // 4)).dictionary_encode(),
        "vec": pa.array([list(range(k % 4)) for k in i], pa.list_(pa.int64())),
        "emb": pa.array([[k, k + 0.5, -k] for k in i], pa.list_(pa.float32(), 3)),
        "boxes": pa.array([[[k, 1, 2, 3]] * (k % 3) for k in i], pa.list_(pa.list_(pa.float64(), 4))),
    })


@pytest.fixture
def parquet_dir(tmp_path):
    table = example_table()
    (tmp_path / "in").mkdir()
    pq.write_table(table.slice(0, 300), tmp_path / "in" / "part-0.parquet", row_group_size=120)
    pq.write_table(table.slice(300), tmp_path / "in" / "part-1.parquet", row_group_size=120)
    return tmp_path / "in", table


def test_schema_mapping(parquet_dir, tmp_path):
    folder, _ = parquet_dir
    summary = convert_parquet(folder, tmp_path / "t.mindrecord", shard_num=3, workers=2)
    schema = recordio.describe(summary.files[0])["schema"]
    assert {k: (v["type"], v.get("shape")) for k, v in schema.items()} == {
        "i8": ("int32", None), "u16": ("int32", None), "i32": ("int32", None), "u32": ("int64", None),
        "i64": ("int64", None), "f16": ("float32", None), "f32": ("float32", None), "f64": ("float64", None),
        "flag": ("int32", None), "name": ("string", None), "big": ("string", None), "blob": ("bytes", None),
        "cat": ("string", None), "vec": ("int64", [-1]), "emb": ("float32", [3]), "boxes": ("float64", [-1, 4])}
    assert summary.rows == N


def test_rows_equal_the_table(parquet_dir, tmp_path):
    folder, table = parquet_dir
    summary = convert_parquet(folder, tmp_path / "t.mindrecord", workers=1)
    expected = table.to_pylist()
    for got, want in zip(recordio.FileReader(summary.files[0]), expected, strict=True):
        for name, value in want.items():
            if name in ("vec", "emb", "boxes"):
                np.testing.assert_array_equal(got[name], np.asarray(value).reshape(got[name].shape))
            elif name == "f64" and np.isnan(value):
                assert np.isnan(got[name])
            else:
                assert got[name] == value, name


def test_round_trip_through_to_arrow(parquet_dir, tmp_path):
    folder, table = parquet_dir
    summary = convert_parquet(folder, tmp_path / "t.mindrecord", workers=1)
    scalars = to_arrow(summary.files[0])
    assert scalars.column_names == ["big", "cat", "f16", "f32", "f64", "flag", "i32", "i64", "i8", "name",
                                    "u16", "u32"]            # the schema's (sorted) order; no bytes or arrays
    for name in scalars.column_names:
        want = table.column(name)
        if name == "cat":
            want = want.cast(pa.string())
        assert scalars.column(name).type == want.type, name
        if name == "f64":                                     # NaN != NaN for equals()
            np.testing.assert_array_equal(scalars.column(name).to_numpy(), want.to_numpy())
        else:
            assert scalars.column(name).equals(want), name
    extra = to_arrow(summary.files[0], columns=["blob", "vec", "i8"])
    assert extra.column("blob").equals(table.column("blob"))
    assert extra.column("vec").to_pylist() == table.column("vec").to_pylist()


def test_columns_and_index(parquet_dir, tmp_path):
    folder, _ = parquet_dir
    summary = convert_parquet(folder, tmp_path / "t.mindrecord", columns=["i32", "name"], index_fields=["i32"])
    info = recordio.describe(summary.files[0])
    assert sorted(info["schema"]) == ["i32", "name"] and info["index_fields"] == ["i32"]
    assert json.loads(info["desc"]) == {"source": "parquet", "arrow_types": {"i32": "int32", "name": "string"}}


@pytest.mark.parametrize("column,message", [
    (pa.array([1, 2], pa.uint64()), "uint64 does not fit"),
    (pa.array([0, 1], pa.timestamp("ms")), "cast it to int64"),
    (pa.array([{"x": 1}, {"x": 2}]), "flatten it"),
    (pa.array([["a"], ["b"]]), "arrays must hold numbers"),
    (pa.array([[[1]], [[2]]], pa.list_(pa.list_(pa.int32()))), "only the outermost list"),
    (pa.array([None, None], pa.null()), "drop it"),
])
def test_types_mindrecord_cannot_hold(tmp_path, column, message):
    pq.write_table(pa.table({"ok": [1, 2], "bad": column}), tmp_path / "t.parquet")
    with pytest.raises(recordio.SchemaError, match=f"column 'bad' has Arrow type .*{message}"):
        convert_parquet(tmp_path / "t.parquet", tmp_path / "t.mindrecord")


@pytest.mark.parametrize("column,message", [
    (pa.array([1, None, 3]), "column 'x' row 1 of the file is null"),
    (pa.array([[1.0], [2.0, None], []]), "column 'x' has a null inside a list"),
])
def test_nulls_are_refused_with_file_and_row(tmp_path, column, message):
    pq.write_table(pa.table({"x": column}), tmp_path / "t.parquet")
    with pytest.raises(recordio.FormatError, match=f"t.parquet \\[row group 0\\].*{message}"):
        convert_parquet(tmp_path / "t.parquet", tmp_path / "t.mindrecord", workers=1)


def test_files_must_share_the_schema(tmp_path):
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": ["1", "2"]}), tmp_path / "b.parquet")
    with pytest.raises(recordio.SchemaError, match="b.parquet: column 'x' is string, but int64"):
        convert_parquet(tmp_path, tmp_path / "t.mindrecord")


def test_bad_names(tmp_path):
    pq.write_table(pa.table({"my col": [1, 2]}), tmp_path / "a.parquet")
    with pytest.raises(recordio.SchemaError, match="my col"):
        convert_parquet(tmp_path / "a.parquet", tmp_path / "t.mindrecord")
    with pytest.raises(recordio.SchemaError, match="no column.*'nope'"):
        convert_parquet(tmp_path / "a.parquet", tmp_path / "t.mindrecord", columns=["nope"])


def test_arrow_ipc_files_convert_like_parquet(parquet_dir, tmp_path):
    import pyarrow.feather as feather

    _, table = parquet_dir
    (tmp_path / "ipc").mkdir()
    feather.write_feather(table, tmp_path / "ipc" / "t.feather", chunksize=200)   # 3 record batches
    a = convert_parquet(tmp_path / "ipc", tmp_path / "a.mindrecord", shard_num=3, workers=1)
    b = convert_parquet(parquet_dir[0], tmp_path / "b.mindrecord", workers=1)
    assert a.shards == 3 and a.rows == N
    assert to_arrow(a.files[0], ["i8", "name", "blob", "vec"]).equals(to_arrow(b.files[0], ["i8", "name", "blob", "vec"]))


def test_null_in_an_ipc_record_batch_names_it(tmp_path):
    import pyarrow.feather as feather

    feather.write_feather(pa.table({"x": [1, 2, None, 4]}), tmp_path / "t.arrow", chunksize=2)
    with pytest.raises(recordio.FormatError, match=r"t.arrow \[record batch 1\].*column 'x' row 2 of the file is null"):
        convert_parquet(tmp_path / "t.arrow", tmp_path / "t.mindrecord", workers=1)
