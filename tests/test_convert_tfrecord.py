"""TFRecord -> MindRecord: the framing and its CRCs, Example parsing, ``convert_tfrecord`` and its CLI.

The files are written by the ``tfrecord`` package (a maintained TFRecord writer); its own
reader (which checks no CRC) is the second opinion on what the records hold.
"""

import json
import os
import struct

import numpy as np
import pytest
from tomr_sources import write_tfrecord

import recordio
from recordio.converters import FixedLenFeature, convert_tfrecord
from recordio.converters import tfrecord as tfrecord_source
from recordio.converters.tfrecord import infer_features
from recordio.converters.tfrecord_io import frame, masked_crc, parse_example, read_records, scan
from recordio.tools.__main__ import main

SCHEMA = {"file_name": {"type": "string"}, "image_bytes": {"type": "bytes"}, "int64_scalar": {"type": "int64"},
          "float_scalar": {"type": "float32"}, "int64_list": {"type": "int64", "shape": [6]},
          "float_list": {"type": "float32", "shape": [7]}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    base = tmp_path_factory.mktemp("tfrecords")
    written = {name: write_tfrecord(base / name, n, seed=k) for k, (name, n) in
               enumerate((("a.tfrecord", 400), ("b.tfrecord", 150)))}
    return base, written


def rows_of(path):
    with recordio.FileReader(path) as reader:
        return list(reader)


def assert_rows(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g["file_name"], g["image_bytes"], g["int64_scalar"], g["float_scalar"]) == (
            w["file_name"], w["image_bytes"], w["int64_scalar"], w["float_scalar"])
        np.testing.assert_array_equal(g["int64_list"], w["int64_list"])
        np.testing.assert_array_equal(g["float_list"], w["float_list"])


def test_framing_and_crcs_agree_with_the_tfrecord_package(files):
    import tfrecord

    base, written = files
    offsets, problem = scan(base / "a.tfrecord")
    assert problem is None and len(offsets) == 400
    payload = b"any bytes"
    assert struct.pack("<I", masked_crc(payload)) == tfrecord.TFRecordWriter.masked_crc(payload)
    records = list(read_records(base / "a.tfrecord", offsets[10], 3, 10))
    assert [i for i, _ in records] == [10, 11, 12]
    theirs = [bytes(view) for view in tfrecord.tfrecord_iterator(str(base / "a.tfrecord"))][10:13]  # a reused buffer
    assert [bytes(d) for _, d in records] == theirs
    assert frame(bytes(theirs[0])) == open(base / "a.tfrecord", "rb").read()[offsets[10]:offsets[11]]


def test_examples_parse_as_the_tfrecord_package_parses_them(files):
    import tfrecord

    base, written = files
    loader = tfrecord.tfrecord_loader(str(base / "b.tfrecord"), None, None)
    for (_, data), theirs, row in zip(read_records(base / "b.tfrecord", 0, 150), loader, written["b.tfrecord"]):
        ours = parse_example(data)
        assert set(ours) == set(theirs)
        assert ours["image_bytes"] == ("bytes", [row["image_bytes"]])
        np.testing.assert_array_equal(np.asarray(ours["float_list"][1], np.float32), theirs["float_list"])
        np.testing.assert_array_equal(ours["int64_list"][1], theirs["int64_list"])


def test_features_are_inferred_from_the_first_record(files):
    base, _ = files
    features, bytes_fields = infer_features(base / "a.tfrecord")
    assert features == {"file_name": FixedLenFeature([], "string"), "float_list": FixedLenFeature([7], "float32"),
                        "float_scalar": FixedLenFeature([], "float32"), "image_bytes": FixedLenFeature([], "string"),
                        "int64_list": FixedLenFeature([6], "int64"), "int64_scalar": FixedLenFeature([], "int64")}
    assert bytes_fields == ["image_bytes"]


@pytest.mark.parametrize("shards,workers", [(1, 1), (3, 2)])
def test_convert_keeps_every_record_in_order(files, tmp_path, shards, workers):
    base, written = files
    summary = convert_tfrecord([base / "a.tfrecord", base / "b.tfrecord"], tmp_path / "t.mindrecord",
                               shard_num=shards, workers=workers, quiet=True)
    assert (summary.rows, summary.shards, summary.skipped) == (550, shards, [])
    info = recordio.describe(summary.files[0])
    assert info["schema"] == SCHEMA and json.loads(info["desc"])["files"] == ["a.tfrecord", "b.tfrecord"]
    assert_rows(rows_of(summary.files[0]), written["a.tfrecord"] + written["b.tfrecord"])


def _damaged(base, tmp_path):
    """A copy of the two files: record 5 of a with a bad data CRC, b cut inside record 100."""
    folder = tmp_path / "damaged"
    folder.mkdir()
    a = bytearray((base / "a.tfrecord").read_bytes())
    offsets, _ = scan(base / "a.tfrecord")
    a[offsets[5] + 40] ^= 0x01
    (folder / "a.tfrecord").write_bytes(bytes(a))
    offsets, _ = scan(base / "b.tfrecord")
    (folder / "b.tfrecord").write_bytes((base / "b.tfrecord").read_bytes()[:offsets[100] + 30])
    return folder


def test_bad_records_fail_the_conversion_naming_file_and_record(files, tmp_path):
    folder = _damaged(files[0], tmp_path)
    with pytest.raises(recordio.FormatError, match=r"a.tfrecord: record 5 at byte \d+: data CRC mismatch"):
        convert_tfrecord(folder, tmp_path / "x.mindrecord", workers=1, quiet=True)
    with pytest.raises(recordio.FormatError, match=r"b.tfrecord: record 100 at byte \d+: truncated"):
        convert_tfrecord(folder / "b.tfrecord", tmp_path / "y.mindrecord", workers=1, quiet=True)


def test_skip_bad_leaves_out_and_counts_only_the_bad_records(files, tmp_path):
    base, written = files
    folder = _damaged(base, tmp_path)
    summary = convert_tfrecord(folder, tmp_path / "x.mindrecord", shard_num=2, workers=2, skip_bad=True, quiet=True)
    assert [where for where, _ in summary.skipped] == [f"{folder}/a.tfrecord: record 5", f"{folder}/b.tfrecord "
                                                       "[record 100 on]"]
    assert "data CRC mismatch" in summary.skipped[0][1] and "truncated" in summary.skipped[1][1]
    keep = written["a.tfrecord"][:5] + written["a.tfrecord"][6:] + written["b.tfrecord"][:100]
    assert summary.rows == len(keep)
    assert_rows(rows_of(summary.files[0]), keep)


def test_a_failed_shard_is_resumed(files, tmp_path, monkeypatch):
    base, written = files
    real_read = tfrecord_source.TFRecordSource.read

    def failing(self, unit):
        if unit[3] == 256:                      # the second unit of a.tfrecord: shard 1 of 3 fails
            raise OSError("disk went away")
        return real_read(self, unit)

    monkeypatch.setattr(tfrecord_source.TFRecordSource, "read", failing)
    with pytest.raises(recordio.FormatError, match=r"a.tfrecord \[records 256:400\]: unreadable source"):
        convert_tfrecord(base, tmp_path / "r.mindrecord", shard_num=3, workers=1, quiet=True)
    monkeypatch.setattr(tfrecord_source.TFRecordSource, "read", real_read)
    summary = convert_tfrecord(base, tmp_path / "r.mindrecord", shard_num=3, workers=1, quiet=True)
    assert (summary.resumed_shards, summary.rows) == (1, 550)
    assert_rows(rows_of(summary.files[0]), written["a.tfrecord"] + written["b.tfrecord"])


def test_cli_with_declared_features(files, tmp_path, capsys):
    base, written = files
    out = tmp_path / "cli.mindrecord"
    code = main(["convert", "tfrecord", str(base / "b.tfrecord"), str(out), "--features",
                 "image_bytes:string,int64_list:int64:6,file_name:string", "--bytes-fields", "image_bytes",
                 "--json", "--workers", "1"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 150
    rows = rows_of(out)
    assert set(rows[0]) == {"image_bytes", "int64_list", "file_name"}
    assert [r["file_name"] for r in rows] == [w["file_name"] for w in written["b.tfrecord"]]


@pytest.mark.parametrize("argv,message", [
    (["--features", "a:int64:x"], "expected NAME:TYPE or NAME:TYPE:N"),
    (["--features", "nope:int64"], "record 0: feature 'nope' is missing"),
    (["--features", "file_name:string:3"], "is tf.string which shape"),
])
def test_cli_errors(files, tmp_path, capsys, argv, message):
    base, _ = files
    assert main(["convert", "tfrecord", str(base / "b.tfrecord"), str(tmp_path / "e.mindrecord"), "-q",
                 "--workers", "1"] + argv) != 0
    err = capsys.readouterr().err
    assert err.startswith("recordio: error:") and message in err
    assert not os.path.exists(tmp_path / "e.mindrecord")
