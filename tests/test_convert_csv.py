"""CSV -> MindRecord: ``convert_csv`` (MindSpore's CsvToMR types) and ``recordio convert csv``."""

import json

import pandas as pd
import pytest
from tomr_sources import CSV_TEXT, write_csv

import recordio
from recordio.converters import convert_csv
from recordio.converters.csv import CsvSource
from recordio.tools.__main__ import main

TYPES = {"Name": "string", "Age": "int64", "EmployNumber": "int64", "Sales": "float64", "Over18": "int32",
         "City": "string"}


def rows_of(path):
    with recordio.FileReader(path) as reader:
        return list(reader)


@pytest.fixture()
def big_csv(tmp_path):
    """25,000 rows (three units), every column type; pandas writes it."""
    n = 25_000
    frame = pd.DataFrame({"id": range(n), "score": [i / 8 for i in range(n)], "ok": [i % 3 == 0 for i in range(n)],
                          "tag": [f"t{i % 97}, \"q\"" for i in range(n)]})
    frame.to_csv(tmp_path / "big.csv", index=False)
    return tmp_path / "big.csv", frame


@pytest.mark.slow
@pytest.mark.parametrize("shards,workers", [(1, 1), (3, 2)])
def test_every_row_in_order_with_its_type(big_csv, tmp_path, shards, workers):
    path, frame = big_csv
    summary = convert_csv(path, tmp_path / "c.mindrecord", shard_num=shards, workers=workers, quiet=True)
    info = recordio.describe(summary.files[0])
    assert info["schema"] == {"id": {"type": "int64"}, "score": {"type": "float64"}, "ok": {"type": "int32"},
                              "tag": {"type": "string"}}
    assert info["index_fields"] == ["id", "score", "ok", "tag"]
    rows = rows_of(summary.files[0])
    assert [r["id"] for r in rows] == frame["id"].tolist()
    assert [r["score"] for r in rows] == frame["score"].tolist()
    assert [r["ok"] for r in rows] == frame["ok"].astype(int).tolist()
    assert [r["tag"] for r in rows] == frame["tag"].tolist()


def test_columns_and_index_choice(tmp_path):
    source = write_csv(tmp_path / "d.csv")
    summary = convert_csv(source, tmp_path / "d.mindrecord", columns=["Sales", "Name"], index_fields=["Name"],
                          quiet=True)
    info = recordio.describe(summary.files[0])
    assert info["schema"] == {"Sales": {"type": "float64"}, "Name": {"type": "string"}}
    assert info["index_fields"] == ["Name"]


def test_empty_cells_fail_or_are_skipped_one_row_each(tmp_path):
    source = write_csv(tmp_path / "gap.csv", "a,b\n1,x\n2,\n3,z\n,w\n")
    with pytest.raises(recordio.FormatError, match=r"gap.csv: line 3, column 'b': the cell is empty"):
        convert_csv(source, tmp_path / "g.mindrecord", workers=1, quiet=True)
    summary = convert_csv(source, tmp_path / "g.mindrecord", workers=1, skip_bad=True, quiet=True)
    assert [w for w, _ in summary.skipped] == [f"{source}: line 3", f"{source}: line 5"]
    assert rows_of(summary.files[0]) == [{"a": 1.0, "b": "x"}, {"a": 3.0, "b": "z"}]  # 'a' has a gap: float64


def test_source_checks(tmp_path):
    source = write_csv(tmp_path / "d.csv")
    with pytest.raises(recordio.SchemaError, match="column Nope does not exist"):
        CsvSource(source, ["Nope"])
    with pytest.raises(ValueError, match="The first line content: 7 of the CSV file"):
        CsvSource(write_csv(tmp_path / "n.csv", "7,b\n1,2\n"))
    with pytest.raises(FileNotFoundError, match="no such CSV file"):
        CsvSource(tmp_path / "missing.csv")


def test_cli(tmp_path, capsys):
    source = write_csv(tmp_path / "d.csv", CSV_TEXT)
    out = tmp_path / "cli.mindrecord"
    assert main(["convert", "csv", source, str(out), "--columns", "Name,Over18,City", "--index", "City",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 5 and json.loads(summary["desc"])["columns"] == ["Name", "Over18", "City"]
    info = recordio.describe(out)
    assert info["schema"] == {n: {"type": TYPES[n]} for n in ("Name", "Over18", "City")}
    assert info["index_fields"] == ["City"]
    assert main(["convert", "csv", source, str(tmp_path / "e.mindrecord"), "--columns", "Bad", "-q"]) != 0
    assert "recordio: error: The parameter columns_list is illegal, column Bad" in capsys.readouterr().err
