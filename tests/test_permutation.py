"""The keyed permutation of a shuffled epoch: a bijection of [0, N), keyed, read at any position."""

import numpy as np
import pytest

from recordio.dataset import MindDataset, Shuffle
from recordio.dataset.order.shuffle import ORDER_VERSION, global_order
from recordio.dataset.order.permutation import KeyedPermutation, Padded, Picked
from recordio.errors import PipelineError
from recordio.mindrecord import codec


def _is_permutation(values, n):
    return len(values) == n and (n == 0 or np.array_equal(np.bincount(values, minlength=n), np.ones(n, np.int64)))


@pytest.mark.slow
def test_every_n_up_to_ten_thousand_is_a_permutation():
    for n in range(0, 10_001):
        assert _is_permutation(KeyedPermutation(n, n * 7919 + 1)[0:n], n), n


@pytest.mark.parametrize("n", [1 << 20, (1 << 20) + 1, 3_000_007])
def test_large_n_is_a_permutation(n):
    assert _is_permutation(KeyedPermutation(n, 12345).at(np.arange(n)), n)


def test_keyed_and_deterministic():
    n = 100_000
    a, b, c = KeyedPermutation(n, 1)[0:n], KeyedPermutation(n, 1)[0:n], KeyedPermutation(n, 2)[0:n]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert (a == c).mean() < 0.01 and (a == np.arange(n)).mean() < 0.01
    assert not np.array_equal(global_order(n, 5, 0)[0:n], global_order(n, 5, 1)[0:n])     # each epoch
    assert not np.array_equal(global_order(n, 5, 0)[0:n], global_order(n, 6, 0)[0:n])     # each seed


def test_first_row_is_uniform_over_keys():
    firsts = np.array([KeyedPermutation(10, k)[0] for k in range(4000)])
    counts = np.bincount(firsts, minlength=10)
    chi2 = ((counts - 400) ** 2 / 400).sum()
    assert chi2 < 30, counts                     # 9 degrees of freedom: p < 0.001 above ~27.9


def test_any_position_reads_as_the_whole_epoch():
    n = 50_001
    p = KeyedPermutation(n, 99)
    whole = p[0:n]
    assert np.array_equal(p[17_000:n], whole[17_000:])              # resume mid-epoch
    assert np.array_equal(p[3::7], whole[3::7])                      # a shard's positions
    rows = np.random.default_rng(0).integers(0, n, 1000)
    assert np.array_equal(p[rows], whole[rows]) and p[-1] == whole[-1] and p[5] == whole[5]
    picked = Picked(p, np.arange(2, n, 3))
    assert np.array_equal(np.concatenate([picked[i:i + 64] for i in range(0, len(picked), 64)]), whole[2::3])
    assert list(Padded(p, 3))[-4:] == [int(whole[-1]), n, n + 1, n + 2]
    with pytest.raises(IndexError):
        p[n]


def test_order_version_2_rows_are_pinned():
    """Saved states of order version 2 resume into these rows: the network may not change under them."""
    assert KeyedPermutation(1000, 42)[0:8].tolist() == [5, 560, 86, 987, 949, 579, 825, 3]
    big = KeyedPermutation(10**12 + 39, 7)
    assert big[np.array([0, 1, 10**12 - 1])].tolist() == [516342751263, 910958345888, 263217168788]


@pytest.mark.skipif(codec.BACKEND != "c", reason="the compiled codec is not built")
def test_compiled_network_equals_the_numpy_reference(monkeypatch):
    rng = np.random.default_rng(5)
    cases = [(n, int(rng.integers(0, 2**63))) for n in [2, 3, 4, 5, 17, 1000, 65_537, 2**31 + 11, 2**40 - 3]]
    cases.append((2**62 + 1, 2**64 - 1))
    got = {}
    for n, key in cases:
        positions = np.unique(np.concatenate([np.arange(min(n, 2000)), rng.integers(0, n, 2000), [n - 1]]))
        got[n, key] = (positions, KeyedPermutation(n, key).at(positions))
    monkeypatch.setattr(codec, "_codec", None)
    for (n, key), (positions, rows) in got.items():
        assert np.array_equal(rows, KeyedPermutation(n, key).at(positions)), n
    with pytest.raises(ValueError, match="outside"):
        monkeypatch.undo()
        codec._codec.permute(np.array([5]), np.empty(1, np.int64), 5, 2, (1, 2))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from recordio import FileWriter
    path = tmp_path_factory.mktemp("perm") / "p.mr"
    w = FileWriter(str(path), 2, fsync=False)
    w.add_schema({"id": {"type": "int64"}})
    w.write_raw_data([{"id": i} for i in range(1000)])
    w.commit()
    return str(path) + "0"


def _ids(ds, **kw):
    return [int(r["id"]) for r in ds.create_dict_iterator(output_numpy=True, num_epochs=1, **kw)]


def test_sharded_shuffled_epochs_cover_every_row_once(dataset):
    shards = [_ids(MindDataset(dataset, shuffle=Shuffle.GLOBAL, num_shards=4, shard_id=s)) for s in range(4)]
    assert sorted(sum(shards, [])) == list(range(1000)) and {len(s) for s in shards} == {250}
    whole = _ids(MindDataset(dataset, shuffle=Shuffle.GLOBAL))
    assert [whole[i] for i in range(1, 1000, 4)] == shards[1]


def test_a_state_of_another_order_version_is_refused_mid_epoch(dataset):
    ds = MindDataset(dataset, shuffle=True)
    it = ds.create_dict_iterator(output_numpy=True, num_epochs=1)
    head = [int(next(it)["id"]) for _ in range(10)]
    state = ds.state_dict()
    assert state["order"] == ORDER_VERSION
    resumed = MindDataset(dataset, shuffle=True)
    resumed.load_state_dict(state)
    assert head + _ids(resumed) == _ids(MindDataset(dataset, shuffle=True))
    old = {k: v for k, v in state.items() if k != "order"}              # saved before order versions
    with pytest.raises(PipelineError, match="order version 1.*order version 2.*restart at the next epoch"):
        MindDataset(dataset, shuffle=True).load_state_dict(old)
    at_start = dict(old, delivered=0, source=None, epoch=1)
    MindDataset(dataset, shuffle=True).load_state_dict(at_start)        # an epoch's start: any version
