"""``recordio export arrow`` and ``to_arrow`` on datasets written by FileWriter."""

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import recordio
from recordio.converters import to_arrow
from recordio.tools.__main__ import main

SCHEMA = {"label": {"type": "int32"}, "score": {"type": "float64"}, "name": {"type": "string"},
          "image": {"type": "bytes"}, "box": {"type": "float32", "shape": [-1, 4]}, "ids": {"type": "int64", "shape": [-1]}}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "d.mindrecord"
    rows = [{"label": np.int32(i % 7), "score": i / 3, "name": f"n{i}", "image": bytes([i]) * 3,
             "box": np.full((i % 3, 4), i, np.float32), "ids": np.arange(i % 4, dtype=np.int64)} for i in range(40)]
    with recordio.FileWriter(path, shard_num=2) as w:
        w.add_schema(SCHEMA, "export test")
        w.write_raw_data(rows)
    return str(path) + "0", rows


def test_to_arrow_takes_scalars_by_default(dataset):
    path, rows = dataset
    table = to_arrow(path)
    assert table.schema == pa.schema([("label", pa.int32()), ("name", pa.string()), ("score", pa.float64())])
    assert table.column("label").to_pylist() == [int(r["label"]) for r in rows]
    assert table.column("name").to_pylist() == [r["name"] for r in rows]
    assert table.column("score").to_pylist() == [r["score"] for r in rows]


def test_to_arrow_named_bytes_and_1d_arrays(dataset):
    path, rows = dataset
    table = to_arrow(path, columns=["image", "ids"])
    assert table.column("image").to_pylist() == [r["image"] for r in rows]
    assert table.column("ids").type == pa.list_(pa.int64())
    assert table.column("ids").to_pylist() == [r["ids"].tolist() for r in rows]


@pytest.mark.parametrize("columns,message", [(["box"], "shape \\[-1, 4\\]"), (["nope"], "no field 'nope'")])
def test_to_arrow_refusals(dataset, columns, message):
    with pytest.raises(recordio.SchemaError, match=message):
        to_arrow(dataset[0], columns=columns)


@pytest.mark.parametrize("suffix,read", [(".parquet", pq.read_table), (".feather", feather.read_table),
                                         (".arrow", feather.read_table)])
def test_cli_export_files(dataset, tmp_path, capsys, suffix, read):
    out = tmp_path / f"labels{suffix}"
    assert main(["export", "arrow", dataset[0], str(out), "--columns", "label,name"]) == 0
    assert capsys.readouterr().out == f"wrote 40 rows x 2 columns (label, name) to {out}\n"
    assert read(out).equals(to_arrow(dataset[0], ["label", "name"]))


@pytest.mark.parametrize("argv,message", [
    (["export", "arrow", "{path}", "{tmp}/x.csv"], "unknown output format '.csv'"),
    (["export", "arrow", "{tmp}/missing.mindrecord", "{tmp}/x.parquet"], "missing.mindrecord"),
    (["export", "arrow", "{path}", "{tmp}/x.parquet", "--columns", "box"], "to_arrow exports scalars"),
])
def test_cli_export_errors(dataset, tmp_path, capsys, argv, message):
    argv = [a.format(path=dataset[0], tmp=tmp_path) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("recordio: error: ") and message in err


def test_cli_export_needs_a_format(capsys):
    assert main(["export"]) == 2
    assert "FORMAT" in capsys.readouterr().err
