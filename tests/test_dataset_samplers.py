"""Every sampler of recordio.dataset.order.samplers, over MindDataset and GeneratorDataset."""

import math

import numpy as np
import pytest

from recordio.dataset import (DistributedSampler, GeneratorDataset, MindDataset, PKSampler, RandomSampler,
                              SequentialSampler, SubsetRandomSampler, SubsetSampler)
from numbered import ids_of, write_numbered
from recordio.errors import PipelineError

N = 20


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("samplers") / "d.mindrecord", N, shard_num=2)


def ids(path, sampler, epochs=1):
    it = MindDataset(path, sampler=sampler).create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [ids_of(it) for _ in range(epochs)]


def test_sequential(dataset):
    assert ids(dataset, SequentialSampler()) == [list(range(N))]
    assert ids(dataset, SequentialSampler(start_index=5, num_samples=3)) == [[5, 6, 7]]


def test_random_without_and_with_replacement(dataset):
    a, b = ids(dataset, RandomSampler(), epochs=2)
    assert sorted(a) == sorted(b) == list(range(N)) and a != b
    drawn = ids(dataset, RandomSampler(replacement=True, num_samples=50))[0]
    assert len(drawn) == 50 and set(drawn) <= set(range(N)) and len(set(drawn)) < 50


@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed(dataset, shuffle):
    shards = [ids(dataset, DistributedSampler(3, s, shuffle=shuffle))[0] for s in range(3)]
    assert all(len(s) == math.ceil(N / 3) for s in shards)
    assert set(i for s in shards for i in s) == set(range(N))
    assert MindDataset(dataset, sampler=DistributedSampler(3, 0)).get_dataset_size() == 7


def test_subset_and_subset_random(dataset):
    picks = [7, 3, 11, 3]
    assert ids(dataset, SubsetSampler(picks)) == [picks]
    a, b = ids(dataset, SubsetRandomSampler(picks), epochs=2)
    assert sorted(a) == sorted(b) == sorted(picks)
    with pytest.raises(IndexError, match="out of range"):
        ids(dataset, SubsetSampler([N]))


@pytest.mark.parametrize("shuffle", [False, True])
def test_pk_sampler_reads_classes_from_the_index(dataset, shuffle):
    got = ids(dataset, PKSampler(3, shuffle=shuffle, class_column="label"))[0]
    labels = [i % 5 for i in got]
    assert len(got) == 15
    assert sorted(np.bincount(labels).tolist()) == [3] * 5
    if not shuffle:
        assert labels == sorted(labels)


def test_pk_sampler_is_refused_by_generator_dataset():
    ds = GeneratorDataset([(np.int32(i),) for i in range(4)], ["label"], sampler=PKSampler(1))
    with pytest.raises(PipelineError, match="PKSampler"):
        list(ds.create_dict_iterator(num_epochs=1))


def test_sampler_excludes_shuffle_and_shards(dataset):
    with pytest.raises(PipelineError, match="sampler"):
        MindDataset(dataset, sampler=SequentialSampler(), shuffle=True)


def test_samplers_work_for_random_access_generators():
    src = [(np.int64(i),) for i in range(10)]
    ds = GeneratorDataset(src, ["id"], sampler=SubsetSampler([4, 2]))
    assert ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == [4, 2]
