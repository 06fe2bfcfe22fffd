"""MindSpore's non-vision dataset ops: the tensor transforms (Concatenate, Fill, Mask, Slice, OneHot,
PadEnd, Unique), RandomChoice/RandomApply/RandomOrder on keyed randomness, PaddedDataset,
ConcatDataset.use_sampler, padded_batch, bucket_batch_by_length, a callable batch_size, apply,
get_repeat_count, num_classes, ds.zip and device_que.

The ``mindspore`` tier runs the pipelines of ``ms_ops_cases`` on MindSpore 2.10 and on recordio and
compares every value, dtype and shape, and the error type of every bad argument."""

import numpy as np
import pytest

import ms_ops_cases
import recordio.dataset as ds
import recordio.dataset.transforms as T
from ms_client import run_oracle
from ms_oracle import from_plain
from numbered import write_numbered
from recordio.errors import PipelineError
from recordio.keys import current_keys

N = 23


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("msops") / "d.mindrecord", N)


# --- the same pipelines on MindSpore 2.10 --------------------------------------------------------------

@pytest.fixture(scope="module")
def oracle(mindspore_python, tmp_path_factory):
    names = list(ms_ops_cases.CASES)
    jobs = [{"op": "case", "name": name} for name in names]
    return dict(zip(names, run_oracle(mindspore_python, jobs, tmp_path_factory.mktemp("ms-ops-oracle"))))


def assert_same(expected, got, where=()):
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        got = np.asarray(got)
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), f"at {list(where)}: {got!r} vs {expected!r}"
        assert np.array_equal(got, expected), f"at {list(where)}: {got!r} vs {expected!r}"
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), f"at {list(where)}: {len(got)} items vs {len(expected)}"
        for k, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, (*where, k))
    elif isinstance(expected, dict):
        assert sorted(got) == sorted(expected), f"at {list(where)}"
        for k in expected:
            assert_same(expected[k], got[k], (*where, k))
    else:
        assert got == expected, f"at {list(where)}: {got!r} vs {expected!r}"


@pytest.mark.mindspore
@pytest.mark.parametrize("name", list(ms_ops_cases.CASES))
def test_matches_mindspore(oracle, name):
    result = oracle[name]
    assert "error" not in result, result.get("error")
    assert_same(from_plain(result["value"]), ms_ops_cases.CASES[name](ds, T))


# --- tensor ops ------------------------------------------------------------------------------------------

def test_unique_indices_rebuild_the_input_and_counts_add_up():
    batch = np.random.default_rng(3).integers(0, 6, size=(4, 5))
    values, index, counts = T.Unique()(batch)
    assert np.array_equal(values[index], batch.reshape(-1))
    assert counts.sum() == batch.size and len(set(values.tolist())) == len(values)
    first_seen = [batch.reshape(-1).tolist().index(v) for v in values.tolist()]
    assert first_seen == sorted(first_seen)


def test_bad_data_raise_runtime_error_naming_what_was_found():
    with pytest.raises(RuntimeError, match="index values should be in"):
        T.OneHot(3)(np.array([-1]))                 # MindSpore crashes on it in a pipeline
    with pytest.raises(RuntimeError, match="out of bounds"):
        T.Slice([5])(np.arange(5))
    with pytest.raises(RuntimeError, match="step 0"):
        T.Slice(slice(0, 3, 0))(np.arange(5))


def test_slice_with_an_open_stop_follows_python():
    assert T.Slice(slice(2, None))(np.arange(6)).tolist() == list(range(6))[2:]
    assert T.Slice(slice(None, None, -2))(np.arange(6)).tolist() == list(range(6))[::-2]


# --- keyed randomness ------------------------------------------------------------------------------------

def _random_pipeline(path, op, workers=1):
    data = ds.MindDataset(path, columns_list=["id", "vec"], shuffle=False)
    return data.map(op, input_columns="vec", num_parallel_workers=workers)


def _vecs(data, epochs=1):
    it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [[row["vec"].tolist() for row in it] for _ in range(epochs)]


class Jitter:
    def __call__(self, vec):
        return vec + np.float32(current_keys().uniform(0)[0])


RANDOM_OPS = {
    "choice": lambda: T.RandomChoice([lambda v: v + 100, lambda v: v * -1, Jitter()]),
    "apply": lambda: T.RandomApply([lambda v: v + 100, Jitter()], prob=0.5),
    "order": lambda: T.RandomOrder([lambda v: v + 100, lambda v: v * 2, Jitter()]),
}


@pytest.mark.parametrize("name", list(RANDOM_OPS))
def test_random_compositions_are_keyed(path, name):
    ds.config.set_seed(11)
    one = _vecs(_random_pipeline(path, RANDOM_OPS[name]()), 2)
    again = _vecs(_random_pipeline(path, RANDOM_OPS[name](), workers=3), 2)
    assert one == again                                   # a row's draw does not depend on the workers
    assert one[0] != one[1]                               # nor is it the same every epoch
    ds.config.set_seed(12)
    assert _vecs(_random_pipeline(path, RANDOM_OPS[name]()), 2) != one


BRANCHES = {   # op over row i's value i -> the results each branch gives
    "choice": (lambda: T.RandomChoice([lambda v: v + 100, lambda v: v * -1]), lambda i: {i + 100, -i}),
    "apply": (lambda: T.RandomApply([lambda v: v + 100]), lambda i: {i + 100, i}),
    "order": (lambda: T.RandomOrder([lambda v: v + 100, lambda v: v * 2]), lambda i: {2 * i + 200, 2 * i + 100}),
}


@pytest.mark.parametrize("name", list(BRANCHES))
def test_random_compositions_take_every_branch(path, name):
    ds.config.set_seed(5)
    make, results = BRANCHES[name]
    (vecs,) = _vecs(_random_pipeline(path, make()))
    firsts = [v[0] for v in vecs]
    assert all(f in results(i) for i, f in enumerate(firsts))
    branch = [sorted(results(i)).index(f) for i, f in enumerate(firsts) if i]
    assert 0 in branch and 1 in branch


@pytest.mark.parametrize("cut", [0, 5, 17])
def test_random_compositions_resume_exactly(path, cut):
    ds.config.set_seed(21)
    reference = _vecs(_random_pipeline(path, RANDOM_OPS["order"]()), 2)
    data = _random_pipeline(path, RANDOM_OPS["order"]())
    it = data.create_dict_iterator(num_epochs=2, output_numpy=True)
    head = [row["vec"].tolist() for _, row in zip(range(cut), it)]
    state = it.state_dict()
    resumed = _random_pipeline(path, RANDOM_OPS["order"]())
    resumed.load_state_dict(state)
    rest = _vecs(resumed, 2)
    assert head + rest[0] == reference[0] and rest[1] == reference[1]


def test_random_arguments_checked_as_mindspore():
    with pytest.raises(TypeError, match="transforms list"):
        T.RandomChoice((T.Fill(1),))
    with pytest.raises(ValueError, match="prob"):
        T.RandomApply([T.Fill(1)], 1.5)
    with pytest.raises(ValueError, match="missing parentheses"):
        T.RandomOrder([T.Fill])


# --- resume of the new nodes -------------------------------------------------------------------------------

def _ids(data, epochs=2, state=None):
    if state is not None:
        data.load_state_dict(state)
    it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    first = state["epoch"] if state else 0
    return [[np.atleast_1d(row["id"]).tolist() for row in it] for _ in range(first, epochs)]


def _padded_concat(path, shard=None):
    data = ds.MindDataset(path, columns_list=["id", "label"], shuffle=False)
    data = data + ds.PaddedDataset([{"id": np.array(-1 - k, np.int64), "label": np.array(0, np.int32)}
                                    for k in range(3)])
    if shard is not None:
        data.use_sampler(ds.DistributedSampler(2, shard, shuffle=False))
    return data.shuffle(4)


def _interleaved(path):
    data = ds.MindDataset(path, columns_list=["id"], shuffle=False) + ds.PaddedDataset(
        [{"id": np.array(-1 - k, np.int64)} for k in range(5)])
    data.use_sampler(ds.RandomSampler())
    return data


def _bucketed(path):
    data = ds.MindDataset(path, columns_list=["id", "data"], shuffle=True)
    return data.bucket_batch_by_length(["data"], [3, 6], [2, 3, 4])


NEW_NODES = {"padded": lambda p: _padded_concat(p), "padded shard": lambda p: _padded_concat(p, 1),
             "interleave": _interleaved,
             "bucket": _bucketed,
             "padded_batch": lambda p: ds.MindDataset(p, columns_list=["id", "data"]).padded_batch(
                 lambda info: 2 + info.get_batch_num() % 3, pad_info={"data": (None, 7)})}


@pytest.mark.parametrize("name", list(NEW_NODES))
@pytest.mark.parametrize("cut", [1, 4])
def test_new_nodes_resume_exactly(path, name, cut):
    ds.config.set_seed(3)
    reference = _ids(NEW_NODES[name](path))
    assert reference[0] and reference[0] != reference[1] or name == "padded shard"
    data = NEW_NODES[name](path)
    it = data.create_dict_iterator(num_epochs=2, output_numpy=True)
    head = [np.atleast_1d(row["id"]).tolist() for _, row in zip(range(cut), it)]
    rest = _ids(NEW_NODES[name](path), state=it.state_dict())
    assert head + rest[0] == reference[0] and rest[1] == reference[1]


def test_padded_rows_complete_the_shards(path):
    shards = [sorted(x for ids in _ids(_padded_concat(path, s), 1)[0] for x in ids) for s in (0, 1)]
    assert sorted(shards[0] + shards[1]) == sorted(list(range(N)) + [-1, -2, -3])
    assert len(shards[0]) == len(shards[1]) == (N + 3) // 2
    assert _padded_concat(path, 0).get_dataset_size() == (N + 3) // 2


def test_use_sampler_random_interleaves_keeping_each_order(path):
    ds.config.set_seed(8)
    ids = [x[0] for x in _ids(_interleaved(path), 1)[0]]
    assert [i for i in ids if i >= 0] == list(range(N)) and [i for i in ids if i < 0] == [-1, -2, -3, -4, -5]
    assert ids != list(range(N)) + [-1, -2, -3, -4, -5]


def test_bucket_batches_lose_no_row_unless_asked(path):
    lengths = {i: 1 + i % 7 for i in range(N)}             # numbered rows: data is 1 + i % 7 bytes
    for drop in (False, True):
        data = ds.MindDataset(path, columns_list=["id", "data"], shuffle=False)
        batches = _ids(data.bucket_batch_by_length(["data"], [3, 6], [2, 3, 4], drop_remainder=drop), 1)[0]
        got = sorted(x for b in batches for x in b)
        buckets = [[i for i in range(N) if k == int(np.searchsorted([3, 6], lengths[i], side="right"))]
                   for k in range(3)]
        kept = [i for k, b in enumerate(buckets) for i in b[:len(b) - len(b) % [2, 3, 4][k] if drop else None]]
        assert got == sorted(kept)


def test_bucket_column_names_are_checked_when_run(path):
    data = ds.MindDataset(path, columns_list=["id"]).bucket_batch_by_length(["image"], [3], [2, 2])
    with pytest.raises(PipelineError, match="image"):
        _ids(data, 1)


def test_bucket_length_function_must_give_an_int(path):
    data = ds.MindDataset(path, columns_list=["id", "data"], shuffle=False)
    data = data.bucket_batch_by_length(["id"], [3], [2, 2], element_length_function=lambda i: float(i))
    with pytest.raises(PipelineError, match="expected an int"):
        _ids(data, 1)


# --- batch_size callables, padded_batch, facts ----------------------------------------------------------------

def test_callable_batch_size_sees_batch_and_epoch(path):
    seen = []

    def size(info):
        seen.append((info.get_batch_num(), info.get_epoch_num()))
        return 1 + info.get_batch_num() + info.get_epoch_num()
    batches = _ids(ds.MindDataset(path, columns_list=["id"], shuffle=False).batch(size), 2)
    for epoch, sizes in enumerate(batches):
        assert [len(b) for b in sizes][:-1] == [1 + k + epoch for k in range(len(sizes) - 1)]
        assert sum(sizes, []) == list(range(N))
    assert seen[0] == (0, 0) and (0, 1) in seen
    bad = ds.MindDataset(path, columns_list=["id"]).batch(lambda info: 0)
    with pytest.raises(PipelineError, match="returned 0"):
        _ids(bad, 1)


def test_padded_batch_refuses_to_cut_a_row(path):
    data = ds.MindDataset(path, columns_list=["data"], shuffle=False).padded_batch(4, pad_info={"data": ([3], 0)})
    with pytest.raises(ValueError, match="larger than the pad shape"):
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))


def test_pad_info_naming_no_column_fails_when_run(path):
    data = ds.MindDataset(path, columns_list=["id"]).padded_batch(4, pad_info={"image": (None, 2)})
    with pytest.raises(PipelineError, match="image"):
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))


def test_facts(path):
    data = ds.MindDataset(path, shuffle=False)
    assert data.num_classes() is None and data.get_repeat_count() == 1
    assert data.repeat(4).map(lambda x: x, input_columns="id").get_repeat_count() == 4
    assert ds.zip((data.project("id"), ds.MindDataset(path).project("label"))).get_col_names() == ["id", "label"]
    assert data.apply(lambda d: d.take(5)).get_dataset_size() == 5
    assert data.batch(lambda info: 3).get_batch_size() == -1 and data.padded_batch(3).get_batch_size() == 3


# --- device_que ------------------------------------------------------------------------------------------------

def test_device_que_sends_the_batches_to_the_device(path):
    pytest.importorskip("torch")
    data = ds.MindDataset(path, columns_list=["id", "vec"], shuffle=False).batch(5)
    queue = data.device_que(device="cpu")
    with pytest.raises(RuntimeError, match="not iterable"):
        queue.create_dict_iterator()
    queue.send(num_epochs=2)
    first = [batch["id"].tolist() for batch in queue]
    assert sum(first, []) == list(range(N))
    assert queue.get_data_info()[1] == [[N % 5], [N % 5, 4]]
    batches = iter(queue)
    head = [next(batches)["id"].tolist() for _ in range(2)]
    queue.stop_send()
    queue.continue_send()
    rest = [batch["id"].tolist() for batch in batches]
    assert head + rest == [list(range(k, min(k + 5, N))) for k in range(0, N, 5)]
    with pytest.raises(PipelineError, match="epoch"):
        iter(queue)
    queue.release()
