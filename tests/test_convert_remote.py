"""Converters writing to a URL (moto's S3 server on 127.0.0.1): staged locally, uploaded in the order
that keeps readers out of a half-uploaded dataset; ``recordio.write_target`` for other writers."""

import os

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import recordio
from recordio.converters import convert_csv
from recordio.errors import DatasetExistsError
from recordio.tools.remote_servers import moto_server


@pytest.fixture(scope="module")
def s3():
    with moto_server() as server:
        server.bucket("out")
        yield server


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RECORDIO_CACHE_DIR", str(tmp_path / "cache"))


def _csv(path, n):
    with open(path, "w") as f:
        f.write("id,name,score\n")
        for i in range(n):
            f.write(f"{i},row-{i},{i / 4}\n")
    return str(path)


def _rows(url, options):
    with recordio.FileReader(url, storage_options=options) as r:
        return sorted((int(row["id"]), row["name"], float(row["score"])) for row in r)


@pytest.mark.slow
def test_convert_to_s3_reads_back_every_row(s3, tmp_path):
    source = _csv(tmp_path / "in.csv", 120)
    url = "s3://out/csv/data.mindrecord"
    summary = convert_csv(source, url, workers=1, quiet=True, storage_options=s3.options)
    assert summary.destination == url and summary.rows == 120 and summary.files == [url]
    assert _rows(url, s3.options) == [(i, f"row-{i}", i / 4) for i in range(120)]
    staged = os.listdir(tmp_path / "cache" / "uploads") if (tmp_path / "cache" / "uploads").exists() else []
    assert staged == []                                  # the staging folder is gone once uploaded
    with pytest.raises(DatasetExistsError):
        convert_csv(source, url, workers=1, quiet=True, storage_options=s3.options)
    again = convert_csv(_csv(tmp_path / "in2.csv", 7), url, workers=1, quiet=True,
                        overwrite=True, storage_options=s3.options)
    assert again.rows == 7 and _rows(url, s3.options) == [(i, f"row-{i}", i / 4) for i in range(7)]
    fs = s3.bucket("out")
    assert sorted(n.rsplit("/", 1)[-1] for n in fs.ls("out/csv")) == ["data.mindrecord", "data.mindrecord.db"]


def test_write_target_of_a_local_path_is_the_path(tmp_path):
    target = recordio.write_target(tmp_path / "d.mindrecord", 2)
    assert not target.remote and target.path == str(tmp_path / "d.mindrecord")
    assert target.files() == [str(tmp_path / "d.mindrecord0"), str(tmp_path / "d.mindrecord1")]
    target.publish()                                     # nothing to do for a local path
