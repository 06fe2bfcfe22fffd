"""WebDataset tar shards <-> MindRecord: samples grouped by key, every schema type round trips, errors named."""

import json
import os
import tarfile

import numpy as np
import pytest
from bridge_data import make_rows, png, read, same, write_dataset

import recordio
from recordio.converters import convert_webdataset, to_webdataset
from recordio.converters.webdataset import field_of
from recordio.tools.__main__ import main

webdataset = pytest.importorskip("webdataset")


def write_tar(path, samples):
    with webdataset.TarWriter(str(path)) as tar:
        for sample in samples:
            tar.write(sample)


def photos_tar(path, first, n):
    write_tar(path, [{"__key__": f"img{i:04d}", "jpg": png(i), "cls": i % 3, "meta.json": {"i": i},
                      "seg.png": png(i + 100)} for i in range(first, first + n)])


@pytest.mark.parametrize("ext,expected", [("label.npy", ("label", "npy")), ("cls", ("cls", "cls")),
                                          ("seg.png", ("seg_png", None)), ("Caption.TXT", ("Caption", "txt")),
                                          ("jpg", ("jpg", None))])
def test_field_of(ext, expected):
    assert field_of(ext) == expected


def test_round_trip_every_schema_type(tmp_path):
    source = write_dataset(tmp_path / "all.mindrecord", n=40, shard_num=3)
    os.makedirs(tmp_path / "wds")
    tars = to_webdataset(source, str(tmp_path / "wds" / "part-%03d.tar"), maxcount=15)
    assert [os.path.basename(t) for t in tars] == ["part-000.tar", "part-001.tar", "part-002.tar"]
    summary = convert_webdataset(tmp_path / "wds", tmp_path / "back.mindrecord", key_field=None, shard_num=2,
                                 workers=1, quiet=True)
    assert summary.rows == 40
    same(read(summary.files[0]), read(source))


def test_samples_grouped_by_key_with_the_key_kept(tmp_path):
    photos_tar(tmp_path / "a.tar", 0, 5)
    photos_tar(tmp_path / "b.tar", 5, 4)
    summary = convert_webdataset([tmp_path / "a.tar", tmp_path / "b.tar"], tmp_path / "p.mindrecord",
                                 index_fields=["cls"], workers=1, quiet=True)
    reader = recordio.FileReader(summary.files[0])
    assert reader.schema == {"jpg": {"type": "bytes"}, "cls": {"type": "int64"}, "meta": {"type": "string"},
                             "seg_png": {"type": "bytes"}, "__key__": {"type": "string"}}
    rows = list(reader)
    assert [r["__key__"] for r in rows] == [f"img{i:04d}" for i in range(9)]
    assert [int(r["cls"]) for r in rows] == [i % 3 for i in range(9)]
    assert rows[7]["jpg"] == png(7) and rows[7]["seg_png"] == png(107) and json.loads(rows[7]["meta"]) == {"i": 7}
    tars = to_webdataset(summary.files[0], str(tmp_path / "again-%d.tar"))       # the keys come back
    with tarfile.open(tars[0]) as tar:
        names = sorted(tar.getnames())
    assert names[:4] == ["img0000.cls.npy", "img0000.jpg", "img0000.meta.txt", "img0000.seg_png"]


def test_a_sample_missing_a_file_names_the_tar_and_key(tmp_path):
    photos_tar(tmp_path / "a.tar", 0, 3)
    write_tar(tmp_path / "b.tar", [{"__key__": "lonely", "jpg": png(1), "cls": 1, "meta.json": {}}])
    with pytest.raises(recordio.FormatError, match=r"b.tar: unreadable source: .*sample 'lonely'.*seg_png"):
        convert_webdataset(tmp_path, tmp_path / "x.mindrecord", workers=1, quiet=True)
    summary = convert_webdataset(tmp_path, tmp_path / "x.mindrecord", workers=1, quiet=True, skip_bad=True)
    assert summary.rows == 3 and summary.skipped[0][0] == str(tmp_path / "b.tar")


def test_a_key_split_across_the_tar_is_an_error(tmp_path):
    write_tar(tmp_path / "a.tar", [{"__key__": "k1", "txt": "a"}, {"__key__": "k2", "txt": "b"},
                                   {"__key__": "k1", "txt": "c"}])
    with pytest.raises(recordio.FormatError, match="sample 'k1': the key appears twice"):
        convert_webdataset(tmp_path / "a.tar", tmp_path / "x.mindrecord", workers=1, quiet=True)


def test_npy_of_an_unsupported_dtype_is_refused(tmp_path):
    write_tar(tmp_path / "a.tar", [{"__key__": "k", "x.npy": np.array([1], np.uint64)}])
    with pytest.raises(recordio.SchemaError, match="dtype uint64"):
        convert_webdataset(tmp_path / "a.tar", tmp_path / "x.mindrecord", workers=1, quiet=True)


def test_cli_convert_and_export(tmp_path, capsys):
    photos_tar(tmp_path / "a.tar", 0, 6)
    out = tmp_path / "cli.mindrecord"
    assert main(["convert", "webdataset", str(tmp_path / "a.tar"), str(out), "--shards", "1", "--workers", "1",
                 "--no-key", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 6
    assert "__key__" not in recordio.FileReader(str(out)).schema
    assert main(["export", "webdataset", str(out), str(tmp_path / "e-%02d.tar"), "--maxcount", "4"]) == 0
    assert "wrote 2 tar file(s)" in capsys.readouterr().out
    back = convert_webdataset(tmp_path / "e-01.tar", tmp_path / "e.mindrecord", workers=1, quiet=True)
    assert [r["__key__"] for r in read(back.files[0])] == ["000000004", "000000005"]
    assert main(["export", "webdataset", "--help"]) == 0 and "example:" in capsys.readouterr().out


def test_export_refuses_bad_patterns_and_keys(tmp_path):
    path = write_dataset(tmp_path / "k.mindrecord", rows=[{"__key__": k} for k in ("a", "b", "a")], shard_num=1,
                         schema={"__key__": {"type": "string"}})
    with pytest.raises(ValueError, match="needs one %d"):
        to_webdataset(path, str(tmp_path / "out.tar"))
    with pytest.raises(recordio.FormatError, match="row 2: key 'a' was already written"):
        to_webdataset(path, str(tmp_path / "out-%d.tar"))
