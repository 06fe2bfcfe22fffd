"""GeneratorDataset: random-access and iterable sources."""

import math

import numpy as np
import pytest

from recordio.dataset import GeneratorDataset
from numbered import ids_of
from recordio.errors import PipelineError


class Squares:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.int64(i), np.int64(i * i)


def gen(n):
    def source():
        for i in range(n):
            yield np.int64(i), np.int64(i * i)
    return source


def run(ds, epochs=1):
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [ids_of(it) for _ in range(epochs)]


def test_random_access_source_shuffles_by_default():
    a, b = run(GeneratorDataset(Squares(30), ["id", "sq"]), epochs=2)
    assert sorted(a) == list(range(30)) and a != list(range(30)) and a != b
    assert run(GeneratorDataset(Squares(30), ["id", "sq"], shuffle=False)) == [list(range(30))]


@pytest.mark.parametrize("num_shards", [2, 4])
def test_random_access_source_shards(num_shards):
    shards = [run(GeneratorDataset(Squares(30), ["id", "sq"], num_shards=num_shards, shard_id=s))[0]
              for s in range(num_shards)]
    assert {len(s) for s in shards} == {math.ceil(30 / num_shards)}
    assert set(i for s in shards for i in s) == set(range(30))


@pytest.mark.parametrize("source", [gen(12), gen(12)(), [(np.int64(i), np.int64(i * i)) for i in range(12)]],
                         ids=["callable", "generator", "list"])
def test_iterable_kinds_keep_their_order(source):
    ds = GeneratorDataset(source if not isinstance(source, list) else iter(source), ["id", "sq"])
    rows = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [int(r["id"]) for r in rows] == list(range(12))
    assert all(int(r["sq"]) == int(r["id"]) ** 2 for r in rows)


def test_callable_source_restarts_each_epoch():
    assert run(GeneratorDataset(gen(5), ["id", "sq"]), epochs=2) == [list(range(5))] * 2


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"num_shards": 2, "shard_id": 0}])
def test_shuffling_an_iterable_source_is_an_error(kwargs):
    with pytest.raises(PipelineError, match="random-access"):
        GeneratorDataset(gen(5), ["id", "sq"], **kwargs)


def test_sizes():
    assert GeneratorDataset(Squares(10), ["id", "sq"], num_shards=3, shard_id=2).get_dataset_size() == 4
    assert GeneratorDataset(gen(7), ["id", "sq"]).get_dataset_size() == 7
    assert GeneratorDataset(gen(7), ["id", "sq"], num_samples=3).get_dataset_size() == 3


def test_a_single_column_may_yield_bare_values():
    ds = GeneratorDataset(lambda: iter(range(3)), "x")
    assert [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == [0, 1, 2]


def test_wrong_number_of_values_names_the_row():
    ds = GeneratorDataset(Squares(3), ["id"], shuffle=False)
    with pytest.raises(PipelineError, match=r"source\[0\] has 2 values, expected 1"):
        list(ds.create_dict_iterator(num_epochs=1))


@pytest.mark.parametrize("processes", [False, True])
def test_parallel_source_workers_keep_the_order(processes):
    ds = GeneratorDataset(Squares(200), ["id", "sq"], num_parallel_workers=2,
                          python_multiprocessing=processes, shuffle=False)
    assert run(ds) == [list(range(200))]


class Broken(Squares):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError("no row 13 here")
        return super().__getitem__(i)


@pytest.mark.parametrize("processes", [False, True])
def test_source_errors_name_the_row(processes):
    ds = GeneratorDataset(Broken(40), ["id", "sq"], shuffle=False, num_parallel_workers=2,
                          python_multiprocessing=processes)
    with pytest.raises(KeyError, match="no row 13") as info:
        list(ds.create_dict_iterator(num_epochs=1))
    assert info.value.recordio_row == 13 and "source[13]" in info.value.__notes__[0]


def test_map_after_batch_sees_lists_of_unstackable_values():
    ds = GeneratorDataset([(b"ab",), (b"c",)], ["raw"], shuffle=False).batch(2)
    ds = ds.map(lambda raw: np.array([len(r) for r in raw]), input_columns="raw")
    assert next(iter(ds.create_dict_iterator(num_epochs=1, output_numpy=True)))["raw"].tolist() == [2, 1]
