"""MindDataset (recordio.dataset.mind_dataset) over MindSpore-written golden files: every value
as SPEC §2 says, the index-only path equal to the general one, sizes from the index, pickling."""

import json
import pathlib
import pickle

import numpy as np
import pytest

from recordio.dataset import MindDataset
from recordio.dataset.values import to_numpy
from recordio.mindrecord.read.reader import FileReader

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"     # the copies carried in the repo
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
CASES = sorted(c for c in MANIFEST if not c.startswith("_") and (GOLDEN / c).is_dir())


def first_file(case):
    return str(GOLDEN / case / MANIFEST[case]["files"][0])


def expected(case):
    with open(GOLDEN / case / "expected.pkl", "rb") as f:
        return pickle.load(f)


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("case", CASES)
def test_golden_rows_through_the_pipeline(case):
    ds = MindDataset(first_file(case), shuffle=False)
    assert ds.get_dataset_size() == MANIFEST[case]["expected_row_count"]
    got = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    want = expected(case)
    assert len(got) == len(want)
    for row, ref in zip(got, want):
        assert sorted(row) == sorted(ref)
        for field, value in ref.items():
            assert same(row[field], to_numpy(value)), (case, field)


def indexed_scalars(path):
    reader = FileReader(path)
    return [f for f in reader.index_fields
            if "shape" not in reader.schema[f] and reader.schema[f]["type"] != "bytes"]


@pytest.mark.parametrize("case", [c for c in CASES if indexed_scalars(first_file(c))])
def test_index_only_columns_equal_the_data_file(case):
    fields = indexed_scalars(first_file(case))
    fast = MindDataset(first_file(case), columns_list=fields, shuffle=False)
    assert fast._index_columns() is not None
    got = list(fast.create_dict_iterator(num_epochs=1, output_numpy=True))
    for row, ref in zip(got, expected(case)):
        assert list(row) == fields
        for field in fields:
            assert same(row[field], to_numpy(ref[field])), (case, field)


def test_explicit_file_list_reads_those_files():
    case = "matrix_s4_index"
    files = [str(GOLDEN / case / name) for name in MANIFEST[case]["files"]]
    whole = MindDataset(files[0], shuffle=False).get_dataset_size()
    assert MindDataset(files[:2], shuffle=False).get_dataset_size() < whole
    assert MindDataset(files, shuffle=False).get_dataset_size() == whole


def test_a_pipeline_pickles_and_runs_in_the_other_process():
    ds = MindDataset(first_file("arrays_fixed"), shuffle=False)
    ds = ds.map(np.negative, input_columns="af32").batch(5)
    list(ds.create_dict_iterator(num_epochs=1))          # opened and used before pickling
    clone = pickle.loads(pickle.dumps(ds))
    a = [b["af32"] for b in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    b = [b["af32"] for b in clone.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert len(a) == 3 and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("case", ["scalar_types", "arrays_variable", "matrix_s4_index", "multi_blob"])
def test_reading_by_id_equals_the_sequential_scan(case):
    from recordio.dataset import SubsetSampler
    n = MANIFEST[case]["expected_row_count"]
    backwards = MindDataset(first_file(case), sampler=SubsetSampler(list(reversed(range(n)))))
    got = list(backwards.create_dict_iterator(num_epochs=1, output_numpy=True))[::-1]
    scanned = list(MindDataset(first_file(case), shuffle=False).create_dict_iterator(num_epochs=1,
                                                                                    output_numpy=True))
    assert len(got) == len(scanned) == n
    for a, b in zip(got, scanned):
        assert all(same(a[f], b[f]) for f in b)


def test_a_missing_file_fails_when_the_dataset_is_made(tmp_path):
    with pytest.raises(FileNotFoundError):
        MindDataset(str(tmp_path / "nothing.mindrecord"))


def test_a_shuffled_epoch_reads_its_first_row_alone_then_chunks(tmp_path, monkeypatch):
    """The first row of a shuffled epoch is fetched by itself (it pays for one row's locations and
    checks, not for the farthest of a chunk's), then chunks that end at multiples of CHUNK; every row once."""
    from recordio import FileWriter
    from recordio.dataset.source import CHUNK

    path = str(tmp_path / "s.mindrecord")
    with FileWriter(path) as w:
        w.add_schema({"id": {"type": "int64"}})
        w.write_raw_data([{"id": i} for i in range(300)])
    asked = []
    getitems = FileReader.__getitems__
    monkeypatch.setattr(FileReader, "__getitems__", lambda self, ids: asked.append(len(ids)) or getitems(self, ids))
    ids = [int(r["id"]) for r in MindDataset(path, shuffle=True).create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert sorted(ids) == list(range(300)) and ids != list(range(300))
    assert asked == [1, CHUNK - 1] + [CHUNK] * (300 // CHUNK - 1) + [300 % CHUNK]
