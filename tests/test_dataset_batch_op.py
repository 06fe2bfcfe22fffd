"""``batch`` straight from a source (column-wise, no Item per row) equals ``batch`` over Items:
same values, row ids, epochs and resume states, in every order, split and remainder case."""

import numpy as np
import pytest

from recordio.dataset import GeneratorDataset, MindDataset, Shuffle, config
from numbered import numbered_rows
from recordio.mindrecord.write.writer import FileWriter

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "rows.mindrecord"
    rows = [dict(r, image=bytes([r["id"] % 256]) * 12) for r in numbered_rows(150)]
    with FileWriter(str(path), shard_num=2, overwrite=True) as w:
        w.add_schema({"id": {"type": "int64"}, "label": {"type": "int32"},
                      "vec": {"type": "float32", "shape": [4]}, "name": {"type": "string"},
                      "data": {"type": "bytes"}, "image": {"type": "bytes"}}, "numbered rows")
        w.add_index(["id", "label"])
        w.write_raw_data(rows)
    return str(path) + "0"


@pytest.fixture(autouse=True)
def default_seed_after():
    yield
    config.set_seed(config.DEFAULT_SEED)


def _outputs(ds, epochs=2):
    """(columns, state after it) of every batch of ``epochs`` epochs, numpy output."""
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    out = []
    for _ in range(epochs):
        for batch in it:
            out.append((batch, it.state_dict()))
    return out


def _host_rows(ds):
    return [(b.rows.tolist(), b.epoch) for b in ds.iter_host_batches(num_epochs=2)]


def _assert_same(fast, general):
    assert len(fast) == len(general)
    for (a, state_a), (b, state_b) in zip(fast, general):
        assert list(a) == list(b) and state_a == state_b
        for name in a:
            x, y = a[name], b[name]
            assert type(x) is type(y)
            if isinstance(x, list):
                assert len(x) == len(y)
                assert all(np.array_equal(u, v) and u.dtype == v.dtype and u.shape == v.shape
                           for u, v in zip(x, y))
            else:
                assert x.dtype == y.dtype and np.array_equal(x, y)


CASES = [
    dict(shuffle=False),
    dict(shuffle=None),
    dict(shuffle=Shuffle.INFILE),
    dict(shuffle=Shuffle.FILES, num_shards=3, shard_id=1),
    dict(num_shards=4, shard_id=3),
    dict(shuffle=False, num_samples=40),
    dict(columns_list=["id", "image"], num_shards=4, shard_id=2, num_padded=2,
         padded_sample={"id": np.int64(-1), "image": b"\0" * 12}),
]


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("size,drop", [(7, False), (64, True), (100, False)])
def test_batch_from_the_source_equals_batch_over_items(dataset, kw, size, drop):
    config.set_seed(5)

    def build(general):
        ds = MindDataset(dataset, **kw)
        if general:                        # project(all columns) hands batch Items, not the source's rows
            ds = ds.project(ds.get_col_names())
        return ds.batch(size, drop_remainder=drop)

    _assert_same(_outputs(build(False)), _outputs(build(True)))
    assert _host_rows(build(False)) == _host_rows(build(True))


def test_equal_length_bytes_are_stacked_as_uint8(dataset):
    """Bytes of one length in a batch are one ``(n, L)`` uint8 array (MindSpore gives one array too);
    the row-wise and the columnar batch paths agree."""
    for ds in (MindDataset(dataset, shuffle=False).batch(5),
               MindDataset(dataset, shuffle=False).map(lambda x: x, input_columns=["image"]).batch(5)):
        batch = next(iter(ds.create_dict_iterator(output_numpy=True)))
        assert type(batch["image"]) is np.ndarray and batch["image"].dtype == np.uint8
        assert batch["image"].shape == (5, 12) and batch["image"][:, 0].tolist() == [0, 1, 2, 3, 4]
        tensors = next(iter(ds.create_dict_iterator()))
        assert tuple(tensors["image"].shape) == (5, 12) and str(tensors["image"].dtype) == "torch.uint8"


def test_resume_mid_epoch_from_the_source_path(dataset):
    config.set_seed(3)
    ds = MindDataset(dataset, columns_list=["id"]).batch(16)
    it = ds.create_dict_iterator(num_epochs=1, output_numpy=True)
    seen = [next(it)["id"].tolist() for _ in range(3)]
    state = it.state_dict()
    resumed = MindDataset(dataset, columns_list=["id"], num_shards=2, shard_id=0).batch(16)
    other = MindDataset(dataset, columns_list=["id"], num_shards=2, shard_id=1).batch(16)
    rest = []
    for part in (resumed, other):
        part.load_state_dict(state)
        rest.extend(v for b in part.create_dict_iterator(num_epochs=1, output_numpy=True) for v in b["id"].tolist())
    assert sorted(sum(seen, []) + rest) == list(range(150))


def test_per_batch_map_and_generator_source_take_the_source_path():
    config.set_seed(2)
    rows = [(np.int64(i), bytes([i]) * 3) for i in range(20)]

    def per_batch(ids, data, info):
        return [i * 10 for i in ids], data

    def build(general):
        ds = GeneratorDataset(rows, ["id", "data"])
        ds = ds.project(["id", "data"]) if general else ds
        return ds.batch(6, per_batch_map=per_batch, input_columns=["id", "data"])

    _assert_same(_outputs(build(False)), _outputs(build(True)))


# --- token rows: equal-length int32 [-1] columns -------------------------------------------------------

@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    """40 rows of 33 int32 ids over every compressed width, and ragged rows beside them."""
    rng = np.random.default_rng(24)
    ids = rng.integers(-2**31, 2**31, (40, 33), dtype=np.int64) >> rng.integers(0, 32, (40, 1))
    ids = ids.astype(np.int32)
    path = str(tmp_path_factory.mktemp("tokens") / "tokens.mindrecord")
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema({"input_ids": {"type": "int32", "shape": [-1]}, "ragged": {"type": "int64", "shape": [-1]}},
                     "tokens")
        w.write_raw_data([{"input_ids": row, "ragged": np.arange(i % 3, dtype=np.int64)} for i, row in enumerate(ids)])
    return path, ids


@pytest.mark.parametrize("shuffle", [False, True])
def test_token_batches_are_one_array_equal_to_the_rows(tokens, shuffle):
    path, ids = tokens
    data = MindDataset(path, columns_list=["input_ids", "ragged"], shuffle=shuffle).batch(8)
    seen = []
    for batch in data.create_dict_iterator(num_epochs=1, output_numpy=True):
        assert isinstance(batch["input_ids"], np.ndarray)
        assert batch["input_ids"].shape == (8, 33) and batch["input_ids"].dtype == np.int32
        assert isinstance(batch["ragged"], list)          # unequal lengths stay a list (SPEC §2)
        for row_ids, ragged in zip(batch["input_ids"], batch["ragged"]):
            seen.append(row_ids)
            k = next(i for i, r in enumerate(ids) if np.array_equal(r, row_ids))
            assert np.array_equal(ragged, np.arange(k % 3))
    assert np.array_equal(np.stack(seen), ids) != shuffle
    assert sorted(map(bytes, seen)) == sorted(map(bytes, ids))
