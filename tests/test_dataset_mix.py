"""recordio.mix: exact proportions per epoch, passes without repeats, and the same rows whatever the
world size, batch size, workers or resume."""

import collections

import numpy as np
import pytest
from numbered import write_numbered

import recordio
from recordio.dataset import GeneratorDataset, MindDataset, mix
from recordio.dataset.order.mix import apportion, occurrences
from recordio.errors import PipelineError

SIZES = (10, 30, 5)             # sources: ids 0..9, 100..129, 200..204
WEIGHTS = (0.5, 0.3, 0.2)
EPOCH = 60                      # counts 30, 18, 12


def source(k, n=None):
    n = SIZES[k] if n is None else n
    return GeneratorDataset([(np.int64(100 * k + i), np.full(2, i, np.float32)) for i in range(n)], ["id", "vec"])


def build(**kw):
    kw.setdefault("num_samples", EPOCH)
    return mix([source(k) for k in range(3)], weights=WEIGHTS, **kw)


def epochs_of(ds, epochs):
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [[int(r["id"]) for r in it] for _ in range(epochs)]


@pytest.mark.parametrize("total,weights,expected", [(60, WEIGHTS, [30, 18, 12]), (10, (1, 1, 1), [4, 3, 3]),
                                                    (7, (0, 1), [0, 7]), (5, (0.7, 0.2, 0.1), [4, 1, 0])])
def test_apportion_is_exact(total, weights, expected):
    assert apportion(total, weights).tolist() == expected


def test_occurrences():
    assert occurrences([3, 1, 3, 3, 1, 2]).tolist() == [0, 0, 1, 2, 1, 0]


def test_every_epoch_has_the_exact_counts():
    ds = build()
    assert ds.counts == [30, 18, 12] and ds.get_dataset_size() == EPOCH
    epochs = epochs_of(ds, 5)
    for ids in epochs:
        assert collections.Counter(i // 100 for i in ids) == {0: 30, 1: 18, 2: 12}
        assert collections.Counter(i for i in ids if i < 100) == {i: 3 for i in range(10)}   # 3 whole passes
    b_rows = [i for ids in epochs for i in ids if 100 <= i < 200]
    assert sorted(b_rows[:30]) == list(range(100, 130))          # every row before any repeats
    assert collections.Counter(b_rows) == {i: 3 for i in range(100, 130)}
    assert epochs[0] != epochs[1]                                 # a new interleave each epoch


def test_the_order_is_keyed_by_the_seed():
    recordio.config.set_seed(7)
    first = epochs_of(build(), 2)
    assert epochs_of(build(), 2) == first
    recordio.config.set_seed(8)
    try:
        assert epochs_of(build(), 2) != first
    finally:
        recordio.config.set_seed(5489)


def test_without_shuffle_sources_are_spread_evenly():
    ids = epochs_of(build(shuffle=False), 1)[0]
    assert ids[:4] == [0, 100, 200, 1]
    counts = np.cumsum([[i // 100 == k for k in range(3)] for i in ids], axis=0)
    share = np.arange(1, EPOCH + 1)[:, None] * np.array([30, 18, 12]) / EPOCH
    assert np.abs(counts - share).max() <= 1                     # every prefix holds its share, +-1
    assert [i for i in ids if i < 100] == list(range(10)) * 3


def test_replacement_draws_independently_with_exact_counts():
    ids = epochs_of(build(replacement=True), 3)
    for epoch in ids:
        assert collections.Counter(i // 100 for i in epoch) == {0: 30, 1: 18, 2: 12}
    assert len(set(i for i in ids[0] if 100 <= i < 200)) < 18 or ids[0] != ids[1]


def test_copies_of_a_row_get_their_own_row_ids():
    from recordio.dataset.context import RunContext

    ds = mix([source(2)], [1], num_samples=10)
    rows = [item.row for item in ds._items(RunContext(None, 1), 0)]
    assert len(set(rows)) == 10 and sorted({r & ((1 << 40) - 1) for r in rows}) == list(range(5))


@pytest.mark.parametrize("world", [2, 3, 4])
def test_ranks_split_the_mixed_order_without_duplicates(world):
    reference = epochs_of(build(), 2)
    shards = [epochs_of(build(num_shards=world, shard_id=s), 2) for s in range(world)]
    assert build(num_shards=world, shard_id=0).get_dataset_size() == EPOCH // world
    for e in range(2):
        merged = [shards[i % world][e][i // world] for i in range(EPOCH)]
        assert merged == reference[e]


def test_batch_size_does_not_change_the_rows():
    reference = [i for epoch in epochs_of(build(), 2) for i in epoch]
    for size in (1, 7, 60):
        it = build().batch(size).create_dict_iterator(num_epochs=2, output_numpy=True)
        assert [int(i) for _ in range(2) for b in it for i in b["id"]] == reference


def test_resume_under_another_world_size():
    reference = collections.Counter(epochs_of(build(), 1)[0])
    head, states = [], []
    for s in range(2):
        it = build(num_shards=2, shard_id=s).create_dict_iterator(num_epochs=1, output_numpy=True)
        head += [int(next(it)["id"]) for _ in range(9)]
        states.append(it.state_dict())
        it.close()
    assert states[0]["source"] == {"epoch": 0, "consumed": 18}          # 42 left: 14 for each of 3 ranks
    tail = []
    for s in range(3):
        ds = build(num_shards=3, shard_id=s)
        ds.load_state_dict(states[0])
        tail += [int(r["id"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert collections.Counter(head + tail) == reference


def test_dataloader_workers_give_the_same_rows():
    torch = pytest.importorskip("torch")
    from recordio.dataset import TorchDataset

    reference = epochs_of(build(), 1)[0]
    loader = torch.utils.data.DataLoader(TorchDataset(build().batch(6)), batch_size=None, num_workers=2)
    assert [int(i) for b in loader for i in b["id"]] == reference


def test_mind_dataset_sources_and_a_source_column(tmp_path):
    a = write_numbered(tmp_path / "a.mindrecord", 12, shard_num=2)
    b = write_numbered(tmp_path / "b.mindrecord", 4)
    ds = mix([MindDataset(a, ["id", "name"]), MindDataset(b, ["id", "name"])], [3, 1], source_column="source")
    assert ds.get_col_names() == ["id", "name", "source"] and ds.get_dataset_size() == 16
    rows = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert collections.Counter(int(r["source"]) for r in rows) == {0: 12, 1: 4}
    assert all(str(r["name"]) == f"row-{int(r['id'])}" for r in rows)


@pytest.mark.parametrize("kw,message", [
    ({"weights": (1, 1)}, "weights must be 3"), ({"weights": (1, -1, 1)}, "weights must be"),
    ({"weights": (0, 0, 0)}, "positive sum"), ({"weights": WEIGHTS, "replacement": [True]}, "replacement"),
])
def test_bad_arguments(kw, message):
    with pytest.raises(ValueError, match=message):
        mix([source(k) for k in range(3)], **kw)


def test_sources_that_cannot_be_mixed():
    with pytest.raises(PipelineError, match="own sampler, shards"):
        mix([source(0), GeneratorDataset([(np.int64(1), np.zeros(2, np.float32))], ["id", "vec"],
                                         num_shards=2, shard_id=0)], [1, 1])
    with pytest.raises(PipelineError, match="random-access"):
        mix([source(0), source(1).map(lambda v: v, "vec")], [1, 1])
    with pytest.raises(PipelineError, match="column names differ"):
        mix([source(0), GeneratorDataset([(1,)], ["x"])], [1, 1])
    with pytest.raises(PipelineError, match="source_column 'id' is already a column"):
        mix([source(0), source(1)], [1, 1], source_column="id")
    with pytest.raises(PipelineError, match="empty"):
        mix([source(0), source(1, n=0)], [1, 1], num_samples=4)
