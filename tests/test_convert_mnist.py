"""MNIST-style idx conversion on Debian's Fashion-MNIST files (skipped when absent)."""

import gzip
import json
import shutil

import cv2
import numpy as np
import pytest

import recordio
from recordio.converters import convert_mnist
from recordio.converters.mnist import read_idx

FASHION = "/usr/share/datasets/fashion-mnist"
SUBSET = 600


@pytest.fixture(scope="module")
def fashion():
    import os

    if not os.path.isfile(f"{FASHION}/t10k-images-idx3-ubyte.gz"):
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    return read_idx(f"{FASHION}/t10k-images-idx3-ubyte.gz"), read_idx(f"{FASHION}/t10k-labels-idx1-ubyte.gz")


def idx_bytes(array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


@pytest.fixture
def subset(tmp_path, fashion):
    """The first SUBSET test images as plain (not gzipped) idx files: fast and a second file flavour."""
    images, labels = fashion
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(images[:SUBSET]))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels[:SUBSET]))
    return tmp_path, images[:SUBSET], labels[:SUBSET]


def test_png_rows_equal_the_idx_pixels(subset):
    root, images, labels = subset
    summary = convert_mnist(root, root / "f.mindrecord", split="test", shard_num=2, workers=2)
    rows = list(recordio.FileReader(summary.files[0]))
    assert len(rows) == SUBSET
    for i, r in enumerate(rows):
        grey = cv2.imdecode(np.frombuffer(r["image"], np.uint8), cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(grey, images[i])
        assert r["label"] == labels[i] and r["label"].dtype == np.int32
    desc = json.loads(recordio.describe(summary.files[0])["desc"])
    assert desc == {"source": "mnist", "split": "test", "image": "png", "shape": [28, 28]}


def test_raw_bytes_from_the_gzipped_debian_files(tmp_path, fashion):
    images, labels = fashion
    summary = convert_mnist(FASHION, tmp_path / "f.mindrecord", split="test", raw=True, workers=1)
    reader = recordio.FileReader(summary.files[0])
    assert len(reader) == len(images) == 10000
    for i in (0, 1, 4999, 9999):
        np.testing.assert_array_equal(np.frombuffer(reader[i]["image"], np.uint8).reshape(28, 28), images[i])
        assert reader[i]["label"] == labels[i]


def test_gzip_is_told_by_content_not_name(subset, tmp_path):
    root, images, _ = subset
    other = tmp_path / "renamed"
    other.mkdir()
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (other / name).write_bytes(gzip.compress((root / name).read_bytes()))   # gzipped, no .gz
    summary = convert_mnist(other, tmp_path / "g.mindrecord", split="test", raw=True, workers=1)
    first = recordio.FileReader(summary.files[0])[0]["image"]
    assert first == images[0].tobytes()


def test_mismatched_counts_name_both_files(subset):
    root, images, labels = subset
    (root / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels[:10]))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte holds \(600, 28, 28\).*labels-idx1"):
        convert_mnist(root, root / "f.mindrecord", split="test")


def test_truncated_idx_is_reported(subset):
    root, _, _ = subset
    path = root / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(recordio.FormatError, match="t10k-images-idx3-ubyte.*bytes follow"):
        convert_mnist(root, root / "f.mindrecord", split="test", workers=1)


def test_not_an_idx_file(subset):
    root, _, _ = subset
    shutil.copy(root / "t10k-labels-idx1-ubyte", root / "t10k-images-idx3-ubyte")
    (root / "t10k-images-idx3-ubyte").write_bytes(b"PK\x03\x04" + bytes(20))
    with pytest.raises(ValueError, match="not a uint8 idx file"):
        convert_mnist(root, root / "f.mindrecord", split="test")


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        convert_mnist(tmp_path, tmp_path / "f.mindrecord")
