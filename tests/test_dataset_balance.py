"""WeightedClassSampler: exact per-class counts per epoch, from the .db (never a scan), split and resumed."""

import collections

import numpy as np
import pytest

import recordio
from recordio.dataset import MindDataset, WeightedClassSampler
from recordio.errors import PipelineError
from recordio.mindrecord.read.reader import FileReader

SIZES = {0: 40, 1: 10, 2: 5}          # 55 rows, imbalanced


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("balance") / "d.mindrecord"
    labels = [c for c, n in SIZES.items() for _ in range(n)]
    order = np.random.default_rng(0).permutation(len(labels))
    with recordio.FileWriter(str(path), shard_num=2) as w:
        w.add_schema({"id": {"type": "int64"}, "label": {"type": "int32"}})
        w.add_index(["label"])
        w.write_raw_data([{"id": np.int64(i), "label": np.int32(labels[i])} for i in order])
    return str(path) + "0"


def epochs(ds, n):
    it = ds.create_dict_iterator(num_epochs=n, output_numpy=True)
    return [[(int(r["id"]), int(r["label"])) for r in it] for _ in range(n)]


def build(path, **kw):
    shards = {k: kw.pop(k) for k in ("num_shards", "shard_id") if k in kw}
    return MindDataset(path, ["id", "label"], sampler=WeightedClassSampler("label", **kw, **shards))


def test_balanced_gives_every_class_the_same_count(dataset):
    ds = build(dataset)
    assert ds.get_dataset_size() == 55
    assert ds.sampler.classes(ds) == (["0", "1", "2"], [40, 10, 5], [19, 18, 18])
    runs = epochs(ds, 3)
    for rows in runs:
        assert collections.Counter(label for _, label in rows) == {0: 19, 1: 18, 2: 18}
    zeros = [i for rows in runs for i, label in rows if label == 0]
    assert len(set(zeros[:40])) == 40                 # a pass over class 0 before any repeat
    assert runs[0] != runs[1]


def test_class_weights_weigh_each_row(dataset):
    ds = build(dataset, class_weights={0: 1, 1: 4, 2: 0}, epoch_size=30)
    assert ds.sampler.classes(ds)[2] == [15, 15, 0] and ds.get_dataset_size() == 30
    for rows in epochs(ds, 2):
        assert collections.Counter(label for _, label in rows) == {0: 15, 1: 15}


def test_replacement_keeps_the_counts(dataset):
    for rows in epochs(build(dataset, replacement=True), 2):
        assert collections.Counter(label for _, label in rows) == {0: 19, 1: 18, 2: 18}


def test_counts_come_from_the_index_not_a_scan(dataset, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the data was scanned")
    monkeypatch.setattr(FileReader, "index_column", refuse)
    monkeypatch.setattr(FileReader, "__iter__", refuse)
    ds = build(dataset)
    assert ds.get_dataset_size() == 55 and len(ds.sampler.order(55, 1, 0, ds)) == 55


def test_shards_split_it_without_duplicates(dataset):
    reference = epochs(build(dataset), 1)[0]
    shards = [epochs(build(dataset, num_shards=5, shard_id=s), 1)[0] for s in range(5)]
    assert [shards[i % 5][i // 5] for i in range(55)] == reference


def test_resume_continues_the_epoch(dataset):
    reference = epochs(build(dataset), 2)
    it = build(dataset).create_dict_iterator(num_epochs=2, output_numpy=True)
    head = [(int(r["id"]), int(r["label"])) for _, r in zip(range(20), it)]
    state = it.state_dict()
    it.close()
    ds = build(dataset)
    ds.load_state_dict(state)
    rest = epochs_from(ds, state)
    assert head + rest[0] == reference[0] and rest[1] == reference[1]


def epochs_from(ds, state):
    it = ds.create_dict_iterator(num_epochs=2, output_numpy=True)
    return [[(int(r["id"]), int(r["label"])) for r in it] for _ in range(state["epoch"], 2)]


def test_errors(dataset, tmp_path):
    with pytest.raises(PipelineError, match="'id' is not an indexed field"):
        MindDataset(dataset, sampler=WeightedClassSampler("id")).get_dataset_size()
    with pytest.raises(ValueError, match=r"missing \['2'\]"):
        build(dataset, class_weights={0: 1, 1: 1}).get_dataset_size()
    with pytest.raises(ValueError, match="'balanced' or a dict"):
        WeightedClassSampler("label", class_weights="uniform")
