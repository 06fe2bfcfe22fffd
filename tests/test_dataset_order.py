"""Shuffle modes, the distributed split and padding of MindDataset (recordio.dataset.order.shuffle, recordio.dataset.order.shards)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from recordio.dataset import MindDataset, Shuffle, config
from recordio.dataset.order.shards import consumed_after, shard_positions
from numbered import epoch_ids, write_numbered
from recordio.errors import PipelineError

N = 23


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("order") / "d.mindrecord", N, shard_num=3)




def file_ranges(path):
    counts = MindDataset(path).reader.file_row_counts
    starts = np.cumsum([0] + counts)
    return [list(range(a, b)) for a, b in zip(starts[:-1], starts[1:])]


def test_no_shuffle_is_dataset_order(dataset):
    assert epoch_ids(MindDataset(dataset, shuffle=False)) == [list(range(N))]


@pytest.mark.parametrize("shuffle", [None, True, Shuffle.GLOBAL])
def test_global_shuffle_is_a_new_permutation_each_epoch(dataset, shuffle):
    first, second = epoch_ids(MindDataset(dataset, shuffle=shuffle), epochs=2)
    assert sorted(first) == sorted(second) == list(range(N))
    assert first != list(range(N)) and first != second
    assert epoch_ids(MindDataset(dataset, shuffle=shuffle), epochs=2) == [first, second]


def test_global_shuffle_follows_the_seed(dataset):
    base = epoch_ids(MindDataset(dataset))
    config.set_seed(99)
    try:
        assert epoch_ids(MindDataset(dataset)) != base
    finally:
        config.set_seed(config.DEFAULT_SEED)


def test_files_shuffle_moves_whole_files(dataset):
    ranges = file_ranges(dataset)
    orders = epoch_ids(MindDataset(dataset, shuffle=Shuffle.FILES), epochs=4)
    for ids in orders:
        chunks, at = [], 0
        while at < len(ids):
            block = next(r for r in ranges if r[0] == ids[at])
            assert ids[at:at + len(block)] == block
            chunks.append(block[0])
            at += len(block)
        assert sorted(chunks) == [r[0] for r in ranges]
    assert len({tuple(o) for o in orders}) > 1


def test_infile_shuffle_keeps_files_in_order(dataset):
    ranges = file_ranges(dataset)
    ids = epoch_ids(MindDataset(dataset, shuffle=Shuffle.INFILE))[0]
    at = 0
    for block in ranges:
        assert sorted(ids[at:at + len(block)]) == block
        at += len(block)
    assert ids != list(range(N))


@pytest.mark.parametrize("num_shards", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_cover_every_row_with_equal_counts(dataset, num_shards, shuffle):
    per = math.ceil(N / num_shards)
    shards = [epoch_ids(MindDataset(dataset, shuffle=shuffle, num_shards=num_shards, shard_id=s))[0]
              for s in range(num_shards)]
    assert all(len(ids) == per for ids in shards)
    assert MindDataset(dataset, num_shards=num_shards, shard_id=0).get_dataset_size() == per
    flat = [i for ids in shards for i in ids]
    assert set(flat) == set(range(N))
    assert len(flat) - N == per * num_shards - N < num_shards


def test_padded_sample_evens_out_the_shards(dataset):
    pad = {"id": np.int64(-1), "label": np.int32(0)}
    shards = [epoch_ids(MindDataset(dataset, columns_list=["id", "label"], shuffle=False, num_shards=4,
                                    shard_id=s, padded_sample=pad, num_padded=1))[0] for s in range(4)]
    assert [len(s) for s in shards] == [6, 6, 6, 6]
    flat = sorted(i for s in shards for i in s)
    assert flat == [-1] + list(range(N))


def test_padding_must_make_shards_even(dataset):
    with pytest.raises(PipelineError, match="not divisible"):
        MindDataset(dataset, columns_list=["id", "label"], num_shards=4, shard_id=0,
                    padded_sample={"id": 0, "label": 0}, num_padded=2)
    with pytest.raises(PipelineError, match="num_shards"):
        MindDataset(dataset, columns_list=["id"], padded_sample={"id": 0}, num_padded=1)


def test_num_samples_limits_each_shard(dataset):
    ds = MindDataset(dataset, shuffle=False, num_samples=5, num_shards=2, shard_id=1)
    assert ds.get_dataset_size() == 5
    assert epoch_ids(ds)[0] == [1, 3, 5, 7, 9]


@pytest.mark.parametrize("total,shards,start", [(10, 3, 0), (10, 3, 4), (23, 4, 9), (5, 8, 0)])
def test_resumed_split_covers_the_rest(total, shards, start):
    taken = np.concatenate([shard_positions(total, shards, s, start) for s in range(shards)])
    assert set(taken.tolist()) == set(range(start, total))
    assert consumed_after(start, shards, len(shard_positions(total, shards, 0, start)), total) == total


@settings(max_examples=200, deadline=None)
@given(total=st.integers(0, 300), before=st.integers(1, 9), after=st.integers(1, 9), steps=st.integers(0, 40))
def test_split_then_resume_under_any_world_sizes(total, before, after, steps):
    """Shards in lockstep for ``steps`` rows, then the rest under another world size: every position
    once, repeats only as padding (fewer than the shard count, per phase)."""
    per = len(shard_positions(total, before, 0))
    steps = min(steps, per)
    head = [p for s in range(before) for p in shard_positions(total, before, s)[:steps].tolist()]
    consumed = consumed_after(0, before, steps, total)
    tail = [p for s in range(after) for p in shard_positions(total, after, s, consumed).tolist()]
    assert set(head) | set(tail) == set(range(total))
    assert len(set(head) & set(tail)) == 0 or consumed == total
    assert len(head) - len(set(head)) < before and len(tail) - len(set(tail)) < after
    assert all(len(shard_positions(total, after, s, consumed)) == -(-(total - consumed) // after)
               for s in range(after))
