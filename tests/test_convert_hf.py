"""Hugging Face datasets <-> MindRecord: every schema type, Image features, widening, refusals (local only)."""

import os

os.environ["HF_DATASETS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from bridge_data import SCHEMA, make_rows, png, read, same, write_dataset  # noqa: E402

import recordio  # noqa: E402
from recordio.converters import from_hf, to_hf  # noqa: E402

datasets = pytest.importorskip("datasets")
pytest.importorskip("PIL")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    rows = make_rows(30)
    for i, row in enumerate(rows):
        row["photo"] = png(i)
    return write_dataset(tmp_path_factory.mktemp("hf") / "all.mindrecord", rows=rows, shard_num=3,
                         schema={**SCHEMA, "photo": {"type": "bytes"}})


def test_features_map_every_schema_type(source, tmp_path):
    hf = to_hf(source, cache_dir=str(tmp_path))
    f = hf.features
    assert isinstance(f["photo"], datasets.Image) and f["blob"] == datasets.Value("binary")
    assert [f[n].dtype for n in ("i32", "i64", "f32", "f64", "text")] == ["int32", "int64", "float32", "float64",
                                                                          "string"]
    assert f["matrix"] == datasets.Array2D(shape=(2, 3), dtype="float32")
    assert f["points"] == datasets.Array2D(shape=(None, 2), dtype="int32")
    assert f["ids"] == datasets.List(datasets.Value("int64"))
    assert f["vector"] == datasets.List(datasets.Value("float64"), length=4)
    first = read(source)[0]
    assert hf[0]["photo"].size == (5, 6) and hf[0]["blob"] == first["blob"]
    assert np.array_equal(np.asarray(hf[0]["points"], np.int32), first["points"])


def test_round_trip_through_hf(source, tmp_path):
    hf = to_hf(source, cache_dir=str(tmp_path / "cache"))
    summary = from_hf(hf, tmp_path / "back.mindrecord", shard_num=2, workers=1, quiet=True)
    assert summary.rows == 30
    same(read(summary.files[0]), read(source))


def test_columns_and_images_kept_as_bytes(source, tmp_path):
    hf = to_hf(source, columns=["photo", "i32"], images=[], cache_dir=str(tmp_path))
    assert list(hf.features) == ["photo", "i32"] and hf.features["photo"] == datasets.Value("binary")


def test_a_later_row_that_is_not_an_image_is_an_error(tmp_path):
    rows = [{"photo": png(i)} for i in range(10)] + [{"photo": b"not an image"}]
    path = write_dataset(tmp_path / "p.mindrecord", rows=rows, shard_num=1, schema={"photo": {"type": "bytes"}})
    with pytest.raises(Exception, match="row 10, field 'photo': expected image bytes"):
        to_hf(path, cache_dir=str(tmp_path / "cache"))


def test_from_hf_widens_narrow_types_and_encodes_images(tmp_path):
    pixels = np.random.default_rng(3).integers(0, 255, (4, 7, 3), np.uint8)
    features = datasets.Features({
        "small": datasets.Value("int8"), "flag": datasets.Value("bool"), "half": datasets.Value("float16"),
        "u16": datasets.List(datasets.Value("uint16"), length=2), "label": datasets.ClassLabel(names=["a", "b"]),
        "image": datasets.Image(), "grid": datasets.List(datasets.List(datasets.Value("int16")), length=2)})
    hf = datasets.Dataset.from_dict({
        "small": [-3, 7], "flag": [True, False], "half": [0.5, -1.25], "u16": [[1, 65535], [2, 3]],
        "label": [1, 0], "image": [pixels, pixels], "grid": [[[1, 2], [3, 4]], [[5], [6]]]}, features=features)
    summary = from_hf(hf, tmp_path / "n.mindrecord", workers=1, quiet=True)
    reader = recordio.FileReader(summary.files[0])
    assert reader.schema == {"small": {"type": "int32"}, "flag": {"type": "int32"}, "half": {"type": "float32"},
                             "u16": {"type": "int32", "shape": [2]}, "label": {"type": "int64"},
                             "image": {"type": "bytes"}, "grid": {"type": "int32", "shape": [2, -1]}}
    rows = list(reader)
    assert [int(r["small"]) for r in rows] == [-3, 7] and [int(r["flag"]) for r in rows] == [1, 0]
    assert rows[1]["half"] == np.float32(-1.25) and rows[0]["u16"].tolist() == [1, 65535]
    assert rows[1]["grid"].tolist() == [[5], [6]]
    from PIL import Image
    import io
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(rows[0]["image"]))), pixels)


@pytest.mark.parametrize("feature,values,message", [
    (datasets.Value("uint64"), [1], "cannot hold"),
    (datasets.Value("int32"), [None], "holds nulls"),
    (datasets.List(datasets.List(datasets.Value("int32")), length=2), [[[1, 2, 3], [4]]], "ragged"),
    (datasets.List(datasets.List(datasets.Value("int32"))), [[[1]]], "at most one variable"),
])
def test_from_hf_refuses_what_mindrecord_cannot_hold(tmp_path, feature, values, message):
    hf = datasets.Dataset.from_dict({"x": values}, features=datasets.Features({"x": feature}))
    with pytest.raises(recordio.RecordIOError, match=message):
        from_hf(hf, tmp_path / "r.mindrecord", workers=1, quiet=True)
    assert not os.path.exists(tmp_path / "r.mindrecord")
