"""ImageFolder conversion on real photos: pixels, labels, label map, re-encode, bad files."""

import json

import cv2
import numpy as np
import pytest
from convert_sources import CLASSES, make_imagefolder

import recordio
from recordio.converters import convert_imagefolder, label_map
from recordio.vision import Decode


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagefolder")
    pixels = make_imagefolder(root, per_photo=3)
    (root / "notes.txt").write_text("not a class")           # a file at the top is not a class
    (root / "cat" / "README.md").write_text("not an image")  # nor is a non-image file
    return root, pixels


def rows(summary):
    return list(recordio.FileReader(summary.files[0]))


def test_rows_labels_and_pixels(folder, tmp_path):
    root, pixels = folder
    summary = convert_imagefolder(root, tmp_path / "x.mindrecord", shard_num=2, workers=1)
    got = rows(summary)
    assert [r["file_name"] for r in got] == sorted(pixels)
    names = sorted(CLASSES)
    for r in got:
        assert r["label"] == names.index(r["file_name"].split("/")[0])
        assert r["label"].dtype == np.int32
        assert r["image"] == (root / r["file_name"]).read_bytes()          # the original file bytes
        np.testing.assert_array_equal(Decode()(r["image"]), pixels[r["file_name"]])
    assert summary.rows == len(pixels) and summary.shards == 2 and not summary.skipped


def test_label_map_in_desc(folder, tmp_path):
    root, _ = folder
    summary = convert_imagefolder(root, tmp_path / "x.mindrecord", workers=1)
    desc = json.loads(recordio.describe(summary.files[0])["desc"])
    assert desc["label_map"] == {"cat": 0, "people": 1, "space": 2} == label_map(root)
    assert recordio.describe(summary.files[0])["index_fields"] == ["label"]


def test_workers_and_shards_give_the_same_rows(folder, tmp_path):
    root, _ = folder
    one = rows(convert_imagefolder(root, tmp_path / "a.mindrecord", shard_num=1, workers=1))
    many = rows(convert_imagefolder(root, tmp_path / "b.mindrecord", shard_num=3, workers=2))
    assert [(r["file_name"], r["image"]) for r in one] == [(r["file_name"], r["image"]) for r in many]


@pytest.mark.parametrize("encode,lossless", [("png", True), ("jpeg", False)])
def test_resize_and_reencode(folder, tmp_path, encode, lossless):
    root, pixels = folder
    summary = convert_imagefolder(root, tmp_path / "x.mindrecord", resize=40, encode=encode, workers=1)
    for r in rows(summary):
        image = Decode()(r["image"])
        assert min(image.shape[:2]) == 40
        src = pixels[r["file_name"]]
        ref = cv2.resize(src, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_AREA)
        err = np.abs(image.astype(int) - ref).mean()
        assert err == 0 if lossless else err < 4
        assert r["image"][:4] == (b"\x89PNG" if encode == "png" else b"\xff\xd8\xff\xe0")


def test_bad_image_fails_with_its_path(folder, tmp_path):
    root, _ = folder
    bad = root / "space" / "zz_truncated.jpg"
    bad.write_bytes((root / "space" / "rocket_000.jpg").read_bytes()[:3000])
    try:
        with pytest.raises(recordio.FormatError, match="zz_truncated.jpg.*truncated JPEG"):
            convert_imagefolder(root, tmp_path / "x.mindrecord", workers=1)
        assert not list(tmp_path.glob("x.mindrecord*"))
        summary = convert_imagefolder(root, tmp_path / "y.mindrecord", workers=1, skip_bad=True)
        assert [w for w, _ in summary.skipped] == [str(bad)]
        assert "zz_truncated.jpg" not in {r["file_name"] for r in rows(summary)}
    finally:
        bad.unlink()


def test_decode_check_catches_what_the_header_check_misses(tmp_path):
    make_imagefolder(tmp_path / "src", per_photo=1)
    bad = tmp_path / "src" / "cat" / "scrambled.jpg"
    app0, sos = b"\xff\xe0\x00\x10" + bytes(14), b"\xff\xda\x00\x0c" + bytes(10)
    bad.write_bytes(b"\xff\xd8" + app0 + sos + bytes(50) + b"\xff\xd9")   # well-formed markers, no image
    assert convert_imagefolder(tmp_path / "src", tmp_path / "a.mindrecord", workers=1).rows == 6
    summary = convert_imagefolder(tmp_path / "src", tmp_path / "b.mindrecord", workers=1, check="decode",
                                  skip_bad=True)
    assert summary.rows == 5 and summary.skipped[0][0] == str(bad)


@pytest.mark.parametrize("kwargs,message", [
    ({"resize": 0}, "resize"), ({"encode": "gif"}, "encode"), ({"check": "maybe"}, "check"),
])
def test_bad_options(folder, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        convert_imagefolder(folder[0], tmp_path / "x.mindrecord", **kwargs)


def test_not_an_imagefolder(tmp_path):
    with pytest.raises(ValueError, match="no class folders"):
        convert_imagefolder(tmp_path, tmp_path / "x.mindrecord")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        convert_imagefolder(tmp_path / "missing", tmp_path / "x.mindrecord")


def test_nested_folders_follow_torchvision_order(tmp_path):
    """Files of a folder come before those of its subfolders (torchvision sorts os.walk by folder)."""
    src = make_imagefolder(tmp_path / "src", per_photo=1)
    one = next(iter(src))
    for rel in ("cat/b/c.jpg", "cat/z.jpg", "cat/.hidden.jpg", "cat/b/.git/x.jpg"):
        (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / rel).write_bytes((tmp_path / "src" / one).read_bytes())
    summary = convert_imagefolder(tmp_path / "src", tmp_path / "x.mindrecord", workers=1)
    names = [r["file_name"] for r in rows(summary)]
    assert names[:3] == ["cat/chelsea_000.jpg", "cat/z.jpg", "cat/b/c.jpg"]
    assert len(names) == 7
