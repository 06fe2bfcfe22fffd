"""``recordio convert``: every format's command line, its output, exit codes and progress bar."""

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from convert_sources import cifar_pixels, make_imagefolder, write_cifar

import recordio
from recordio.tools.__main__ import main
from conftest import child_pythonpath

N = 150     # two units of 100 images / two row groups: enough for two shards


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    base = tmp_path_factory.mktemp("sources")
    make_imagefolder(base / "folder", per_photo=1)
    images, labels = cifar_pixels(N), np.arange(N) % 10
    write_cifar(base / "c10", "cifar10", "binary", images, labels, split_sizes={"test_batch.bin": N})
    write_cifar(base / "c100", "cifar100", "python", images, labels, labels % 20, split_sizes={"train": N})
    (base / "mnist").mkdir()
    grey = images[..., 0]
    (base / "mnist" / "train-images-idx3-ubyte").write_bytes(b"\0\0\x08\x03" + b"".join(
        d.to_bytes(4, "big") for d in grey.shape) + grey.tobytes())
    (base / "mnist" / "train-labels-idx1-ubyte").write_bytes(b"\0\0\x08\x01" + N.to_bytes(4, "big")
                                                            + labels.astype(np.uint8).tobytes())
    pq.write_table(pa.table({"label": labels.astype(np.int32), "text": [f"t{i}" for i in range(N)]}),
                   base / "t.parquet", row_group_size=100)
    return base


CASES = {
    "imagefolder": (["folder"], 5, {"image", "label", "file_name"}),
    "cifar10": (["c10", "--split", "test"], N, {"image", "label"}),
    "cifar100": (["c100", "--raw"], N, {"image", "label", "coarse_label"}),
    "mnist": (["mnist"], N, {"image", "label"}),
    "parquet": (["t.parquet", "--index", "label"], N, {"label", "text"}),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_each_format(sources, tmp_path, capsys, fmt):
    args, rows, fields = CASES[fmt]
    out = tmp_path / f"{fmt}.mindrecord"
    argv = ["convert", fmt, str(sources / args[0]), str(out), *args[1:], "--workers", "1", "--shards", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"wrote {rows} rows in 2 shard(s) to {out} (")
    assert f"{out}0\n" in text and f"{out}1\n" in text
    assert set(recordio.FileReader(f"{out}0").schema) == fields
    assert recordio.count_rows(f"{out}1") == rows


def test_imagefolder_prints_its_label_map(sources, tmp_path, capsys):
    assert main(["convert", "imagefolder", str(sources / "folder"), str(tmp_path / "x.mindrecord")]) == 0
    assert "labels: 0 cat, 1 people, 2 space\n" in capsys.readouterr().out


def test_json_summary(sources, tmp_path, capsys):
    out = tmp_path / "x.mindrecord"
    assert main(["convert", "cifar10", str(sources / "c10"), str(out), "--split", "test", "--json",
                 "--shards", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == N and summary["files"] == [str(out)] and summary["skipped"] == []
    assert json.loads(summary["desc"])["layout"] == "binary"


def test_skip_bad_is_counted_in_the_summary(sources, tmp_path, capsys):
    folder = tmp_path / "folder"
    make_imagefolder(folder, per_photo=1)
    (folder / "people" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 cut short")
    assert main(["convert", "imagefolder", str(folder), str(tmp_path / "a.mindrecord")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("recordio: error: ") and "broken.jpg" in err and "--skip-bad" in err
    assert main(["convert", "imagefolder", str(folder), str(tmp_path / "a.mindrecord"), "--skip-bad"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("wrote 5 rows") and "skipped 1 unreadable source(s):" in text
    assert f"{folder / 'people' / 'broken.jpg'}: ValueError: truncated JPEG" in text


@pytest.mark.parametrize("argv,code,message", [
    (["convert"], 2, "FORMAT"),
    (["convert", "avro", "a", "b"], 2, "invalid choice: 'avro'"),
    (["convert", "imagefolder", "{src}/folder"], 2, "the following arguments are required: out"),
    (["convert", "imagefolder", "{src}/folder", "{tmp}/x", "--worker", "2"], 2, "unrecognized arguments"),
    (["convert", "mnist", "{src}/mnist", "{tmp}/x", "--split", "val"], 2, "invalid choice: 'val'"),
    (["convert", "cifar10", "{src}/c10", "{tmp}/x"], 1, "no cifar10 train batches found"),
    (["convert", "imagefolder", "{src}/folder", "{tmp}/x", "--workers", "0"], 1, "workers must be"),
    (["convert", "parquet", "{src}/nothing.parquet", "{tmp}/x"], 1, "no such file or folder"),
])
def test_errors_and_exit_codes(sources, tmp_path, capsys, argv, code, message):
    argv = [a.format(src=sources, tmp=tmp_path) for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err
    if code == 1:
        assert err.startswith("recordio: error: ")


def test_existing_output_exits_1(sources, tmp_path, capsys):
    argv = ["convert", "mnist", str(sources / "mnist"), str(tmp_path / "m.mindrecord"), "--shards", "1"]
    assert main(argv) == 0
    assert main(argv) == 1
    assert "already exist" in capsys.readouterr().err
    assert main(argv + ["--overwrite"]) == 0


@pytest.mark.parametrize("fmt", ["", *sorted(CASES)])
def test_help_has_an_example(capsys, fmt):
    assert main(["convert", *([fmt] if fmt else []), "--help"]) == 0
    assert f"example:\n  recordio convert {fmt}" in capsys.readouterr().out


def _run_on_a_terminal(argv):
    """Run the CLI with stderr on a pseudo-terminal; returns (exit code, what the terminal got)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))   # a 120-column terminal
    proc = subprocess.Popen([sys.executable, "-m", "recordio.tools", *argv], stdout=subprocess.DEVNULL,
                            stderr=follower, env=dict(os.environ, PYTHONPATH=child_pythonpath()))
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_progress_bar_on_a_terminal_only(sources, tmp_path, capsys):
    argv = ["convert", "cifar100", str(sources / "c100"), str(tmp_path / "a.mindrecord"), "--workers", "1"]
    code, terminal = _run_on_a_terminal(argv)
    assert code == 0 and "cifar100: 100%" in terminal and "rows/s" in terminal and f"{N}/{N}" in terminal
    code, terminal = _run_on_a_terminal(argv[:3] + [str(tmp_path / "b.mindrecord"), "--quiet"])
    assert code == 0 and terminal == ""
    assert main(argv[:3] + [str(tmp_path / "c.mindrecord")]) == 0       # not a terminal: no bar
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_every_command_on_a_converted_dataset(sources, tmp_path, capsys):
    """convert -> info, count, count --where, head, verify, export; then a flipped byte fails verify."""
    out = tmp_path / "x.mindrecord"
    assert main(["convert", "imagefolder", str(sources / "folder"), str(out), "--shards", "2"]) == 0
    first = f"{out}0"
    capsys.readouterr()
    assert main(["info", first]) == 0
    info = capsys.readouterr().out
    assert "label: int32 (indexed)" in info and "rows: 5 in 2 shard(s)" in info and "label_map" in info
    assert main(["count", first]) == 0 and capsys.readouterr().out == "5\n"
    assert main(["count", first, "--where", "label=1"]) == 0 and capsys.readouterr().out == "2\n"
    assert main(["head", first, "-n", "1", "--columns", "label,file_name"]) == 0
    assert capsys.readouterr().out == "[0] label=0  file_name=cat/chelsea_000.jpg\n"   # the asked order
    assert main(["verify", first]) == 0
    capsys.readouterr()
    assert main(["export", "arrow", first, str(tmp_path / "x.parquet")]) == 0
    assert pq.read_table(tmp_path / "x.parquet").column("label").to_pylist() == [0, 1, 1, 2, 2]
    capsys.readouterr()
    data = bytearray(Path(f"{out}1").read_bytes())
    header_size = recordio.describe(first)["header_size"]
    data[header_size + 100] ^= 0xFF                     # inside the first data page of shard 1
    Path(f"{out}1").write_bytes(bytes(data))
    assert main(["verify", first]) == 1
    assert f"{out}1" in capsys.readouterr().out
