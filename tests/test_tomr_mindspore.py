"""MindSpore 2.10's converter classes as the oracle: the same inputs give the same files, byte for byte.

Marked ``mindspore``: MindSpore runs in its own virtualenv (``RECORDIO_MINDSPORE_PYTHON``,
``tests/ms_tomr.py``). Its converters import OpenCV (CIFAR, MNIST) and pandas (CSV), which
that virtualenv may lack: ``RECORDIO_MINDSPORE_PYTHONPATH`` adds a folder that has them (e.g.
``pip install --target DIR opencv-python-headless==<the version recordio's venv has> "pandas<2.3"``);
without them the tier skips. The JPEG bytes are OpenCV's, so both sides need the same OpenCV
version for byte-identical CIFAR/MNIST files (the test says so when they differ).
``TFRecordToMR`` needs TensorFlow on MindSpore's side: compared when it imports, else skipped.

For each class: every data file equal byte for byte, and the ``INDEXES`` and ``SHARD_NAME``
tables of each ``.db`` equal; for bad arguments, the same exception class and MindSpore's
message contained in ours. With ``partition_number > 1`` the inputs are sized so that every
batch of 256 rows divides by it: MindSpore puts the leftover rows of a batch that does not on
files it draws at random (``std::random_device``), so its own files then differ from run to
run (recordio's go to the files holding the fewest rows: docs/porting.md).
"""

import json
import os
import sqlite3
import subprocess

import cv2
import pytest
from tomr_sources import CSV_TEXT, cifar_folder, imagenet_folder, mnist_folder, write_csv, write_tfrecord

from recordio.mindrecord import (Cifar10ToMR, Cifar100ToMR, CsvToMR, FixedLenFeature, ImageNetToMR, MnistToMR,
                                 TFRecordToMR)

pytestmark = pytest.mark.mindspore
ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ms_tomr.py")
CLASSES = {c.__name__: c for c in (Cifar10ToMR, Cifar100ToMR, CsvToMR, ImageNetToMR, MnistToMR, TFRecordToMR)}


def _env():
    return dict(os.environ, PYTHONPATH=os.environ.get("RECORDIO_MINDSPORE_PYTHONPATH", ""))


def _run(python, jobs):
    done = subprocess.run([python, ORACLE, json.dumps(jobs)], capture_output=True, text=True, timeout=900,
                          env=_env())
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise AssertionError(f"MindSpore's converters failed to run:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def oracle(mindspore_python):
    probe = subprocess.run([mindspore_python, "-c", "import cv2, pandas; print(cv2.__version__)"],
                           capture_output=True, text=True, env=_env())
    if probe.returncode != 0:
        pytest.skip("MindSpore's converters need cv2 and pandas in its virtualenv "
                    "(or in RECORDIO_MINDSPORE_PYTHONPATH)")
    return mindspore_python, probe.stdout.strip()


def _db_rows(db, table):
    with sqlite3.connect(db) as conn:
        order = " ORDER BY ROW_ID" if table == "INDEXES" else ""
        return conn.execute(f"SELECT * FROM {table}{order}").fetchall()


def assert_same_files(ours, theirs, names):
    for name in names:
        mine, other = open(ours / name, "rb").read(), open(theirs / name, "rb").read()
        if mine != other:
            at = next((i for i, (x, y) in enumerate(zip(mine, other)) if x != y), min(len(mine), len(other)))
            raise AssertionError(f"{name}: {len(mine)} bytes, MindSpore {len(other)}; first difference at byte "
                                 f"{at}: ours {mine[at:at + 32]!r}, MindSpore {other[at:at + 32]!r}")
        for table in ("INDEXES", "SHARD_NAME"):
            assert _db_rows(ours / f"{name}.db", table) == _db_rows(theirs / f"{name}.db", table), (name, table)


def _written(folder):
    return sorted(n for n in os.listdir(folder) if not n.endswith(".db"))


def _placed(args, folder):
    return [a.replace("@", str(folder)) if isinstance(a, str) else a for a in args]


def compare(oracle, tmp_path, name, args, transform=(), **extra):
    """Run ``name`` on both sides (``args[-1]``-style destinations under ours/ and ms/); compare the files."""
    python, ms_cv2 = oracle
    (tmp_path / "ours").mkdir()
    (tmp_path / "ms").mkdir()
    answer = _run(python, [{"class": name, "args": _placed(args, tmp_path / "ms"), "transform": list(transform),
                            **extra}])[0]
    assert "error" not in answer, answer
    ours_args = _placed(args, tmp_path / "ours")
    if "tf_features" in extra:
        ours_args.insert(2, {k: FixedLenFeature(s, d) for k, (s, d) in extra["tf_features"].items()})
    assert CLASSES[name](*ours_args).transform(*transform) == 0
    assert _written(tmp_path / "ours") == _written(tmp_path / "ms")
    if ms_cv2 != cv2.__version__ and name in ("Cifar10ToMR", "Cifar100ToMR", "MnistToMR"):
        pytest.skip(f"JPEG bytes differ between OpenCV {cv2.__version__} (ours) and {ms_cv2} (MindSpore's)")
    assert_same_files(tmp_path / "ours", tmp_path / "ms", _written(tmp_path / "ours"))


def test_cifar10(oracle, tmp_path):
    cifar_folder(tmp_path / "src", "cifar10", {"data_batch_1": 40, "data_batch_2": 40, "test_batch": 10})
    compare(oracle, tmp_path, "Cifar10ToMR", [str(tmp_path / "src"), "@/cifar10.mindrecord"], [["label"]])


def test_cifar100_without_index_fields(oracle, tmp_path):
    cifar_folder(tmp_path / "src", "cifar100", {"train": 30, "test": 10})
    compare(oracle, tmp_path, "Cifar100ToMR", [str(tmp_path / "src"), "@/cifar100"])


@pytest.mark.parametrize("partitions", [1, 4])
def test_mnist(oracle, tmp_path, partitions):
    mnist_folder(tmp_path / "src", train=300, test=28)
    compare(oracle, tmp_path, "MnistToMR", [str(tmp_path / "src"), "@/mnist", partitions])


@pytest.mark.parametrize("partitions", [1, 4])
def test_imagenet(oracle, tmp_path, partitions):
    map_file, image_dir = imagenet_folder(tmp_path / "src", classes=3, per_class=6)
    compare(oracle, tmp_path, "ImageNetToMR", [map_file, image_dir, "@/imagenet.mindrecord", partitions])


@pytest.mark.parametrize("columns,partitions", [(None, 1), (["Sales", "Name", "Over18"], 4)])
def test_csv(oracle, tmp_path, columns, partitions):
    source = write_csv(tmp_path / "data.csv", CSV_TEXT + "Fay,33,1006,5.5,False,Graz\nGus,61,1007,8,True,Rome\n"
                                                        "Hal,19,1008,0.5,False,Bern\n")    # 8 rows
    compare(oracle, tmp_path, "CsvToMR", [source, "@/csv.mindrecord", columns, partitions])


def test_csv_all_numeric(oracle, tmp_path):
    """pandas gives MindSpore's row loop floats for the int column of an all-numeric file; the
    files are still the same (the writer stores the int64 field's value as an integer)."""
    source = write_csv(tmp_path / "num.csv", "a,b,c\n1,2.5,True\n3,4.0,False\n-7,0.125,True\n")
    compare(oracle, tmp_path, "CsvToMR", [source, "@/num.mindrecord"])


def test_tfrecord(oracle, tmp_path):
    python, _ = oracle
    if subprocess.run([python, "-c", "import tensorflow"], capture_output=True, env=_env()).returncode != 0:
        pytest.skip("MindSpore's TFRecordToMR needs TensorFlow, which its virtualenv lacks")
    write_tfrecord(tmp_path / "data.tfrecord", 300)
    features = {"file_name": [[], "string"], "image_bytes": [[], "string"], "int64_scalar": [[], "int64"],
                "float_scalar": [[], "float32"], "int64_list": [[6], "int64"], "float_list": [[7], "float32"]}
    compare(oracle, tmp_path, "TFRecordToMR", [str(tmp_path / "data.tfrecord"), "@/tf.mindrecord", ["image_bytes"]],
            tf_features=features)


def _bad_calls(tmp_path):
    csv = write_csv(tmp_path / "data.csv")
    digits = write_csv(tmp_path / "digits.csv", "1,b\n2,x\n")
    cifar_folder(tmp_path / "c10", "cifar10", {"data_batch_1": 3})
    map_file, image_dir = imagenet_folder(tmp_path / "in", classes=1, per_class=1)
    out = str(tmp_path / "out")
    return [
        ("CsvToMR", [csv, out + "/not_*ok"], []), ("CsvToMR", [csv, out + "/x", None, None], []),
        ("CsvToMR", [csv, out + "/x", None, 0], []), ("CsvToMR", [csv, out + "/x", ["ssales"]], []),
        ("CsvToMR", [csv, out + "/x", ["Sales", 3]], []), ("CsvToMR", [digits, out + "/x"], []),
        ("CsvToMR", [str(tmp_path / "missing.csv"), out + "/x"], []),
        ("ImageNetToMR", [map_file, image_dir, out + "/path/"], []),
        ("ImageNetToMR", [map_file, image_dir, out + "/ lead"], []),
        ("ImageNetToMR", [map_file, image_dir, out + "/x", "4"], []),
        ("Cifar10ToMR", [str(tmp_path / "c10"), out + "/x"], []),
        ("MnistToMR", [str(tmp_path), out + "/x", 1001], []),
    ]


def test_bad_arguments_raise_what_mindspore_raises(oracle, tmp_path):
    python, _ = oracle
    os.makedirs(tmp_path / "out")
    calls = _bad_calls(tmp_path)
    answers = _run(python, [{"class": c, "args": a, "transform": t} for c, a, t in calls])
    for (name, args, transform), theirs in zip(calls, answers):
        assert "error" in theirs, (name, args, theirs)
        with pytest.raises(Exception) as ours:
            CLASSES[name](*args).transform(*transform)
        assert type(ours.value).__name__ == theirs["error"], (name, args, theirs)
        assert str(ours.value) in theirs["message"], (name, args, str(ours.value), theirs["message"])
