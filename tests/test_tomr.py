"""MindSpore's converter classes (``recordio.mindrecord.Cifar10ToMR``, ...) on real inputs built here.

What each writes (files, schema, description, index fields, rows in MindSpore's order) and the
argument checks with MindSpore's exception types and wording. The same outputs, byte for byte,
as MindSpore 2.10's classes: ``test_tomr_mindspore.py``.
"""

import os
import subprocess
import sys

import cv2
import numpy as np
import pytest
from tomr_sources import cifar_folder, imagenet_folder, mnist_folder, write_csv, write_tfrecord

import recordio
from recordio.converters.tomr.common import SUCCESS, ParamValueError, PathNotExistsError
from recordio.mindrecord import (Cifar10ToMR, Cifar100ToMR, CsvToMR, FixedLenFeature, ImageNetToMR, MnistToMR,
                                 TFRecordToMR)

TF_FEATURES = {"file_name": FixedLenFeature([], "string"), "image_bytes": FixedLenFeature([], "string"),
               "int64_scalar": FixedLenFeature([], "int64"), "float_scalar": FixedLenFeature([], "float32"),
               "int64_list": FixedLenFeature([6], "int64"), "float_list": FixedLenFeature([7], "float32")}


def rows_of(path):
    reader = recordio.FileReader(path)
    try:
        return list(reader.get_next())
    finally:
        reader.close()


def decoded(jpeg):
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_UNCHANGED)


def test_mindrecord_namespace_resolves_the_classes_lazily():
    code = ("import sys, recordio, recordio.mindrecord as m; heavy = {'cv2', 'pandas', 'google.protobuf', "
            "'recordio.converters'} & set(sys.modules); assert not heavy, heavy; "
            "assert m.Cifar10ToMR.__name__ == 'Cifar10ToMR'; assert 'TFRecordToMR' in dir(m)")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- CIFAR ------------------------------------------------------------------------------------------


def test_cifar10_writes_train_and_test_jpeg_datasets(tmp_path):
    batches = cifar_folder(tmp_path / "c10", "cifar10", {"data_batch_1": 30, "data_batch_2": 20, "test_batch": 12})
    out = str(tmp_path / "cifar10.mindrecord")
    assert Cifar10ToMR(str(tmp_path / "c10"), out).transform(["label"]) == SUCCESS
    train = [batches[n] for n in os.listdir(tmp_path / "c10") if n.startswith("data_batch")]  # MindSpore's order
    for path, parts, desc in ((out, train, "img_train"), (out + "_test", [batches["test_batch"]], "img_test")):
        info = recordio.describe(path)
        assert info["schema"] == {"id": {"type": "int64"}, "label": {"type": "int64"}, "data": {"type": "bytes"}}
        assert (info["desc"], info["index_fields"], len(info["shards"])) == (desc, ["label"], 1)
        images, labels = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        rows = rows_of(path)
        assert [r["id"] for r in rows] == list(range(len(images)))
        assert [r["label"] for r in rows] == labels.tolist()
        for row, image in zip(rows, images):      # JPEG (lossy) of the RGB pixels, stored as BGR by OpenCV
            assert np.abs(decoded(row["data"])[..., ::-1].astype(int) - image).mean() < 12


def test_cifar100_writes_fine_and_coarse_labels(tmp_path):
    batches = cifar_folder(tmp_path / "c100", "cifar100", {"train": 25, "test": 10})
    out = str(tmp_path / "c100.mindrecord")
    assert Cifar100ToMR(str(tmp_path / "c100"), out).transform(["fine_label", "coarse_label"]) == SUCCESS
    for path, name in ((out, "train"), (out + "_test", "test")):
        info = recordio.describe(path)
        assert list(info["schema"]) == sorted(["id", "fine_label", "coarse_label", "data"])
        assert info["index_fields"] == ["fine_label", "coarse_label"]
        rows = rows_of(path)
        assert [(r["fine_label"], r["coarse_label"]) for r in rows] == list(zip(*[v.tolist() for v in
                                                                                   batches[name][1:]]))


def test_cifar_checks_the_folder_and_the_fields(tmp_path):
    cifar_folder(tmp_path / "c10", "cifar10", {"data_batch_1": 4})
    with pytest.raises(PathNotExistsError, match="Invalid path. test_batch"):
        Cifar10ToMR(str(tmp_path / "c10"), str(tmp_path / "x"))
    cifar_folder(tmp_path / "c10", "cifar10", {"test_batch": 2})
    with pytest.raises(ValueError, match="The parameter fields should be None or list"):
        Cifar10ToMR(str(tmp_path / "c10"), str(tmp_path / "x")).transform("label")
    with pytest.raises(PathNotExistsError, match="Invalid path. train"):
        Cifar100ToMR(str(tmp_path / "c10"), str(tmp_path / "y"))


# --- MNIST ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
def test_mnist_writes_two_split_datasets(tmp_path, partitions):
    digits = mnist_folder(tmp_path / "mnist", train=300, test=40)
    MnistToMR(str(tmp_path / "mnist"), str(tmp_path / "mnist"), partitions).transform()
    for split, prefix in (("train", "train"), ("test", "t10k")):
        name = str(tmp_path / f"mnist_{split}.mindrecord")
        info = recordio.describe(name + ("0" if partitions > 1 else ""))
        assert (info["desc"], info["index_fields"], len(info["shards"])) == ("mnist_schema", ["label"], partitions)
        assert (info["header_size"], info["page_size"]) == (1 << 24, 1 << 26)
        assert info["schema"] == {"data": {"type": "bytes"}, "label": {"type": "int64"}}
        rows = rows_of(info["shards"][0]["file"])
        images, labels = digits[prefix]
        if partitions > 1:      # each batch of 256 is split across the files, as MindSpore splits it
            assert sorted(r["label"] for r in rows) == sorted(labels.tolist())
            continue
        assert [r["label"] for r in rows] == labels.tolist()
        assert all(np.abs(decoded(r["data"]).astype(int) - im).mean() < 10 for r, im in zip(rows, images))


def test_mnist_checks_partition_number(tmp_path):
    mnist_folder(tmp_path, train=2, test=2)
    for bad in (None, "2", 2.0, True):
        with pytest.raises(ValueError, match="The parameter partition_number must be int"):
            MnistToMR(str(tmp_path), str(tmp_path / "m"), bad)
    with pytest.raises(ParamValueError, match="Invalid parameter value"):
        MnistToMR(str(tmp_path), str(tmp_path / "m"), 0)


# --- ImageNet ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("partitions", [1, 4])
def test_imagenet_rows_follow_the_map_and_the_folders(tmp_path, partitions):
    map_file, image_dir = imagenet_folder(tmp_path, classes=3, per_class=5)
    out = str(tmp_path / "imagenet.mindrecord")
    assert ImageNetToMR(map_file, image_dir, out, partitions).transform() == SUCCESS
    info = recordio.describe(out + ("0" if partitions > 1 else ""))
    assert info["schema"] == {"file_name": {"type": "string"}, "image": {"type": "bytes"},
                              "label": {"type": "int32"}}
    assert (info["desc"], info["index_fields"]) == ("imagenet_schema", ["label", "file_name"])
    wnids = [line.split()[0] for line in open(map_file)]
    expected = [(os.path.join(image_dir, w, n), label) for label, w in enumerate(wnids)
                for n in os.listdir(os.path.join(image_dir, w))]
    rows = rows_of(info["shards"][0]["file"])
    assert sorted((r["file_name"], r["label"]) for r in rows) == sorted(expected)
    if partitions == 1:       # one file: MindSpore's order, map file then directory listing
        assert [(r["file_name"], r["label"]) for r in rows] == expected
    assert all(r["image"] == open(r["file_name"], "rb").read() for r in rows)


def test_imagenet_reports_what_it_skips_and_refuses_bad_map_lines(tmp_path):
    map_file, image_dir = imagenet_folder(tmp_path, classes=2, per_class=2)
    wnid = open(map_file).readline().split()[0]
    open(os.path.join(image_dir, wnid, "notes.png"), "wb").write(b"\x89PNG")
    open(os.path.join(image_dir, wnid, "empty.JPEG"), "wb").close()
    with open(map_file, "a") as f:
        f.write("n99999999 7\n")
    with pytest.warns(UserWarning, match=r"3 input\(s\) skipped.*notes.png: not a .JPEG/.jpg name"):
        ImageNetToMR(map_file, image_dir, str(tmp_path / "a.mindrecord")).transform()
    assert len(rows_of(str(tmp_path / "a.mindrecord"))) == 4
    with open(map_file, "a") as f:
        f.write("n01440764 zero\n")
    with pytest.raises(ValueError, match=r"map.txt: line 4: expected '<folder> <label>'"):
        ImageNetToMR(map_file, image_dir, str(tmp_path / "b.mindrecord")).transform()


@pytest.mark.parametrize("name,message", [
    ("imagenet_not_*ok", "File name should not contains"), ("path/", "File path can not end with '/'"),
    (" lead", "File name should not start/end with space"), ("", "File path is not allowed None or empty"),
])
def test_destination_names_are_checked_as_mindspore_checks_them(tmp_path, name, message):
    map_file, image_dir = imagenet_folder(tmp_path, classes=1, per_class=1)
    with pytest.raises(ParamValueError, match=message):
        ImageNetToMR(map_file, image_dir, name)


# --- CSV --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns,partitions", [(None, 1), (["Sales", "Name"], 4)])
def test_csv_schema_values_and_index(tmp_path, columns, partitions):
    source = write_csv(tmp_path / "data.csv")
    out = str(tmp_path / "csv.mindrecord")
    assert CsvToMR(source, out, columns, partitions).transform() == SUCCESS
    info = recordio.describe(out + ("0" if partitions > 1 else ""))
    types = {"Name": "string", "Age": "int64", "EmployNumber": "int64", "Sales": "float64", "Over18": "int32",
             "City": "string"}
    names = columns or list(types)
    assert info["schema"] == {n: {"type": types[n]} for n in names}
    assert (info["desc"], info["index_fields"]) == ("csv_schema", names)
    rows = rows_of(info["shards"][0]["file"])
    assert sorted(r["Name"] for r in rows) == sorted(["Ana", "Bo", "Chen", "Dara", "Émile"])
    if partitions == 1:
        assert [r["Over18"] for r in rows] == [1, 0, 1, 0, 1]
        assert [r["City"] for r in rows] == ["Lisbon", "Oslo, Norway", "Beijing", "Cork", "Lyon"]
        assert [r["Sales"] for r in rows] == [1234.5, 0.25, -3.0, 1000.0, 77.125]


def test_csv_refuses_what_mindspore_refuses(tmp_path):
    source = write_csv(tmp_path / "data.csv")
    with pytest.raises(RuntimeError, match="The parameter columns_list is illegal, column ssales does not exist."):
        CsvToMR(source, str(tmp_path / "a"), ["ssales"]).transform()
    with pytest.raises(ValueError, match="The parameter columns_list must be list of str."):
        CsvToMR(source, str(tmp_path / "b"), ["Sales", 3])
    with pytest.raises(ValueError, match="The parameter source must be str."):
        CsvToMR(tmp_path / "data.csv", str(tmp_path / "c"))
    digits = write_csv(tmp_path / "digits.csv", "1,b\n2,x\n")
    with pytest.raises(ValueError, match="The first line content: 1 of the CSV file is used as a column name"):
        CsvToMR(digits, str(tmp_path / "d")).transform()
    with pytest.raises(OSError, match="Csv file .*missing.csv do not exist"):
        CsvToMR(str(tmp_path / "missing.csv"), str(tmp_path / "e")).transform()


def test_csv_empty_cell_is_named_not_stored(tmp_path):
    source = write_csv(tmp_path / "gap.csv", "a,b,c\n1,x,2.5\n2,,3.5\n")
    with pytest.raises(ValueError, match=r"gap.csv: line 3, column 'b': the cell is empty"):
        CsvToMR(source, str(tmp_path / "gap.mindrecord")).transform()
    assert not os.path.exists(tmp_path / "gap.mindrecord")


# --- TFRecord ---------------------------------------------------------------------------------------


@pytest.fixture()
def tfrecord_file(tmp_path):
    rows = write_tfrecord(tmp_path / "data.tfrecord", 300)
    return str(tmp_path / "data.tfrecord"), rows


def test_tfrecord_schema_and_rows(tmp_path, tfrecord_file):
    source, written = tfrecord_file
    out = str(tmp_path / "tf.mindrecord")
    assert TFRecordToMR(source, out, TF_FEATURES, ["image_bytes"]).transform() == SUCCESS
    info = recordio.describe(out)
    assert info["schema"] == {"file_name": {"type": "string"}, "image_bytes": {"type": "bytes"},
                              "int64_scalar": {"type": "int64"}, "float_scalar": {"type": "float32"},
                              "int64_list": {"type": "int64", "shape": [6]},
                              "float_list": {"type": "float32", "shape": [7]}}
    assert info["desc"] == "TFRecord to MindRecord"       # no add_index: every scalar field indexed
    assert info["index_fields"] == ["file_name", "float_scalar", "int64_scalar"]
    rows = rows_of(out)
    assert len(rows) == len(written)
    for got, want in zip(rows, written):
        assert got["file_name"] == want["file_name"] and got["image_bytes"] == want["image_bytes"]
        assert got["int64_scalar"] == want["int64_scalar"] and got["float_scalar"] == want["float_scalar"]
        np.testing.assert_array_equal(got["int64_list"], want["int64_list"])
        np.testing.assert_array_equal(got["float_list"], want["float_list"])


def test_tfrecord_names_are_cast_and_types_given_many_ways(tmp_path, tfrecord_file):
    source, written = tfrecord_file
    features = {"file_name": FixedLenFeature([], bytes), "int64_scalar": FixedLenFeature([], np.int64),
                "float_list": FixedLenFeature([7], np.float32), "missing": FixedLenFeature([], "int64", 42)}
    TFRecordToMR(source, str(tmp_path / "a.mindrecord"), features).transform()
    rows = rows_of(str(tmp_path / "a.mindrecord"))
    assert [r["missing"] for r in rows] == [42] * len(written)
    assert [r["file_name"] for r in rows] == [w["file_name"] for w in written]


@pytest.mark.parametrize("features,bytes_fields,message", [
    ({"a": ("shape", "dtype")}, None, "only support FixedLenFeature"),
    (None, None, "Parameter feature_dict is None or not dict."),
    ({"a": FixedLenFeature([], "int64")}, ["a"], "Parameter bytes_field: a should be tf.string"),
    ({"a": FixedLenFeature([], "string")}, ["b"], "Parameter bytes_fields's item: b is not in feature_dict"),
    ({"a": FixedLenFeature([], "string")}, "a", r"Parameter bytes_fields: a must be list\(str\)."),
    ({"a": FixedLenFeature([2], "string")}, None, "is tf.string which shape\\[0\\] is not None"),
    ({"a": FixedLenFeature([2, 3], "int64")}, None, r"len\(feature_dict\[a\].shape\) should be 1"),
    ({"a": FixedLenFeature([0], "int64")}, None, r"feature_dict\[a\].shape\[0\] should > 0"),
    ({"a": FixedLenFeature([], "int32")}, None, "int32 is not supported"),
    ({"a b": FixedLenFeature([], "int64"), "a_b": FixedLenFeature([], "int64")}, None, "both become the field"),
])
def test_tfrecord_feature_dict_checks(tmp_path, tfrecord_file, features, bytes_fields, message):
    with pytest.raises(ValueError, match=message):
        TFRecordToMR(tfrecord_file[0], str(tmp_path / "x"), features, bytes_fields)


def test_tfrecord_bad_records_are_named(tmp_path, tfrecord_file):
    source, _ = tfrecord_file
    data = bytearray(open(source, "rb").read())
    data[-20] ^= 0xFF                       # inside the last record's data
    open(source, "wb").write(bytes(data))
    with pytest.raises(recordio.ChecksumError, match=r"data.tfrecord: record 299 at byte \d+: data CRC mismatch"):
        TFRecordToMR(source, str(tmp_path / "x"), TF_FEATURES, ["image_bytes"]).transform()
    assert not os.path.exists(tmp_path / "x")
    with pytest.raises(recordio.FormatError, match="record 0: feature 'nope' is missing"):
        TFRecordToMR(source, str(tmp_path / "y"), {"nope": FixedLenFeature([], "int64")}).transform()
    with pytest.raises(recordio.FormatError, match="feature 'image_bytes' is not UTF-8 text"):
        TFRecordToMR(source, str(tmp_path / "z"), {"image_bytes": FixedLenFeature([], "string")}).transform()
    with pytest.raises(recordio.FormatError, match="feature 'int64_list' holds 6 values, .* shape \\[5\\]"):
        TFRecordToMR(source, str(tmp_path / "w"), {"int64_list": FixedLenFeature([5], "int64")}).transform()
