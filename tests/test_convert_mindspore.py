"""MindSpore 2.10 reads what the converters write (marked ``mindspore``; skipped without its virtualenv)."""

import os
import pickle
import subprocess

import numpy as np
import pytest
from convert_sources import cifar_pixels, make_imagefolder, write_cifar
from ms_oracle import from_plain

import recordio
from recordio.converters import convert_cifar100, convert_imagefolder

pytestmark = pytest.mark.mindspore
ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ms_oracle.py")


@pytest.fixture(scope="module")
def mindspore_python():
    python = os.environ.get("RECORDIO_MINDSPORE_PYTHON")
    if not python:
        pytest.skip("RECORDIO_MINDSPORE_PYTHON is not set (no MindSpore 2.10 virtualenv)")
    return python


def mindspore_reads(python, path, folder):
    """Rows of ``path`` as MindSpore's FileReader and MindDataset give them."""
    request, response = folder / "request.pkl", folder / "response.pkl"
    job = {"op": "read", "source": str(path), "columns": None, "readers": ["FileReader", "MindDataset"]}
    with open(request, "wb") as f:
        pickle.dump({"jobs": [job]}, f, protocol=4)
    done = subprocess.run([python, ORACLE, str(request), str(response)], capture_output=True, text=True,
                          timeout=600)
    with open(response, "rb") as f:
        pickle.load(f)                                  # versions
        try:
            return from_plain(pickle.load(f))
        except EOFError:
            raise AssertionError(f"MindSpore oracle failed:\n{done.stderr[-3000:]}") from None


def plain(value):
    """A value as plain Python, whichever reader gave it (MindDataset gives numpy arrays)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "SU" or isinstance(value, np.generic):
        value = value[()] if isinstance(value, np.ndarray) else value.item()
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value.tobytes()
    return value


def assert_same_rows(ours, theirs, reader):
    assert not isinstance(theirs, dict), theirs
    assert len(theirs) == len(ours), reader
    for i, (mine, other) in enumerate(zip(ours, theirs)):
        assert {k: plain(v) for k, v in mine.items()} == {k: plain(v) for k, v in other.items()}, (reader, i)


@pytest.mark.parametrize("shard_num", [1, 3])
@pytest.mark.parametrize("kind", ["imagefolder", "cifar100"])
def test_mindspore_reads_converted_datasets(mindspore_python, tmp_path, kind, shard_num):
    if kind == "imagefolder":
        make_imagefolder(tmp_path / "src", per_photo=2)
        summary = convert_imagefolder(tmp_path / "src", tmp_path / "x.mindrecord", shard_num=shard_num,
                                      workers=2)
    else:
        images, fine = cifar_pixels(250), np.arange(250) % 100
        write_cifar(tmp_path / "src", "cifar100", "binary", images, fine, fine % 20, split_sizes={"train.bin": 250})
        summary = convert_cifar100(tmp_path / "src", tmp_path / "x.mindrecord", shard_num=shard_num, workers=2)
    ours = list(recordio.FileReader(summary.files[0]))
    theirs = mindspore_reads(mindspore_python, summary.files[-1], tmp_path)
    assert theirs["MindDataset_size"] == len(ours)
    for reader in ("FileReader", "MindDataset"):
        assert_same_rows(ours, theirs[reader], reader)
