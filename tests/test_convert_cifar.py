"""CIFAR-10/100 conversion from batches built with real pixels, in both published layouts."""

import json

import numpy as np
import pytest
from convert_sources import cifar_pixels, write_cifar

import recordio
from recordio.converters import convert_cifar10, convert_cifar100
from recordio.vision import Decode

N = 120
SPLITS = {"cifar10": {"train": {"python": [f"data_batch_{i}" for i in range(1, 6)],
                                "binary": [f"data_batch_{i}.bin" for i in range(1, 6)]},
                      "test": {"python": ["test_batch"], "binary": ["test_batch.bin"]}},
          "cifar100": {"train": {"python": ["train"], "binary": ["train.bin"]},
                       "test": {"python": ["test"], "binary": ["test.bin"]}}}
CONVERT = {"cifar10": convert_cifar10, "cifar100": convert_cifar100}


@pytest.fixture(scope="module")
def pixels():
    rng = np.random.default_rng(1)
    return cifar_pixels(N), rng.integers(0, 100, N), rng.integers(0, 20, N)


def build(root, kind, layout, split, pixels):
    images, fine, coarse = pixels
    fine = fine % 10 if kind == "cifar10" else fine
    names = SPLITS[kind][split][layout]
    sizes = dict(zip(names, [N // len(names)] * len(names)))
    write_cifar(root, kind, layout, images, fine, coarse if kind == "cifar100" else None, sizes)
    return images, fine, coarse


@pytest.mark.parametrize("layout", ["python", "binary"])
@pytest.mark.parametrize("kind", ["cifar10", "cifar100"])
def test_png_rows_equal_source_pixels(tmp_path, pixels, kind, layout):
    images, fine, coarse = build(tmp_path / "src", kind, layout, "train", pixels)
    summary = CONVERT[kind](tmp_path / "src", tmp_path / "c.mindrecord", shard_num=2, workers=1)
    rows = list(recordio.FileReader(summary.files[0]))
    assert len(rows) == N
    for i, r in enumerate(rows):
        np.testing.assert_array_equal(Decode()(r["image"]), images[i])
        assert r["label"] == fine[i] and r["label"].dtype == np.int32
        if kind == "cifar100":
            assert r["coarse_label"] == coarse[i]
        else:
            assert "coarse_label" not in r
    desc = json.loads(recordio.describe(summary.files[0])["desc"])
    assert desc["layout"] == layout and desc["image"] == "png"
    assert desc["label_names"]["label"][:2] == ["fine_0", "fine_1"]
    if kind == "cifar100":
        assert len(desc["label_names"]["coarse_label"]) == 20


@pytest.mark.parametrize("kind", ["cifar10", "cifar100"])
def test_raw_hwc_bytes_and_test_split(tmp_path, pixels, kind):
    images, fine, _ = build(tmp_path / "src", kind, "binary", "test", pixels)
    batch = tmp_path / "src" / ("cifar-10-batches-bin" if kind == "cifar10" else "cifar-100-binary")
    summary = CONVERT[kind](batch, tmp_path / "c.mindrecord", split="test", raw=True, workers=1)
    rows = list(recordio.FileReader(summary.files[0]))
    got = np.stack([np.frombuffer(r["image"], np.uint8).reshape(32, 32, 3) for r in rows])
    np.testing.assert_array_equal(got, images)
    assert [int(r["label"]) for r in rows] == [int(v) for v in fine]


def test_python_and_binary_layouts_give_the_same_dataset(tmp_path, pixels):
    build(tmp_path / "py", "cifar10", "python", "train", pixels)
    build(tmp_path / "bin", "cifar10", "binary", "train", pixels)
    a = list(recordio.FileReader(convert_cifar10(tmp_path / "py", tmp_path / "a.mindrecord", workers=1).files))
    b = list(recordio.FileReader(convert_cifar10(tmp_path / "bin", tmp_path / "b.mindrecord", workers=2).files))
    assert [(r["image"], int(r["label"])) for r in a] == [(r["image"], int(r["label"])) for r in b]


def test_missing_split_names_the_files(tmp_path, pixels):
    build(tmp_path, "cifar10", "python", "train", pixels)
    with pytest.raises(FileNotFoundError, match="test_batch"):
        convert_cifar10(tmp_path, tmp_path / "c.mindrecord", split="test")


def test_truncated_binary_batch_is_named(tmp_path, pixels):
    folder = tmp_path / "cifar-10-batches-bin"
    build(tmp_path, "cifar10", "binary", "train", pixels)
    path = folder / "data_batch_3.bin"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(recordio.FormatError, match="data_batch_3.bin.*multiple of the 3073-byte record"):
        convert_cifar10(tmp_path, tmp_path / "c.mindrecord", workers=1)
    summary = convert_cifar10(tmp_path, tmp_path / "d.mindrecord", workers=1, skip_bad=True)
    assert summary.rows == N - N // 5
    assert summary.skipped == [(str(path), f"ValueError: size {24 * 3073 - 100} is not a multiple of the 3073-byte record")]


def test_pickle_that_would_run_code_is_refused(tmp_path, pixels):
    folder = tmp_path / "cifar-100-python"
    build(tmp_path, "cifar100", "python", "train", pixels)
    (folder / "train").write_bytes(b"cos\nsystem\n(S'echo pwned'\ntR.")
    with pytest.raises(recordio.FormatError, match="refusing to load global os.system"):
        convert_cifar100(tmp_path, tmp_path / "c.mindrecord", workers=1)


def test_damaged_metadata_is_named(tmp_path, pixels):
    build(tmp_path, "cifar10", "python", "test", pixels)
    (tmp_path / "cifar-10-batches-py" / "batches.meta").write_bytes(b"\x80\x02}q\x00(X")
    with pytest.raises(ValueError, match="batches.meta: unreadable label names"):
        convert_cifar10(tmp_path, tmp_path / "c.mindrecord", split="test")
