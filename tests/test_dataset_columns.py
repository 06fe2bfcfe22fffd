"""The pipeline's batch path reads columns (FileReader through recordio.mindrecord.read.columns): its batches
equal those built from the rows, value for value, in every order, shard and resumed epoch."""

import numpy as np
import pytest

from recordio import config
from recordio.dataset import MindDataset
from recordio.dataset import mind_dataset as mind_dataset_module
from recordio.mindrecord.read import columns
from test_columns import _all_types
from rowcheck import values_equal


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cols") / "d.mindrecord")
    _all_types(path, n=203)
    return path + "0"


@pytest.fixture(scope="module")
def cifar_like(tmp_path_factory):
    from recordio import FileWriter
    path = str(tmp_path_factory.mktemp("cifar") / "c.mindrecord")
    rng = np.random.default_rng(5)
    writer = FileWriter(path, 2)
    writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "cifar-like")
    writer.add_index(["label"])
    writer.write_raw_data([{"image": rng.integers(0, 256, 3072, dtype=np.uint8).tobytes(),
                            "label": np.int32(i % 10)} for i in range(515)])
    writer.commit()
    return path + "0"


def _same(a, b):
    if isinstance(a, list) or isinstance(b, list):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return values_equal(a, b)


def _outputs(build, epochs=2, state=None, stop=None):
    """Every batch (numpy) of ``epochs`` epochs, the rows behind it and the state after it."""
    ds = build()
    if state is not None:
        ds.load_state_dict(state)
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    out = []
    for _ in range(epochs):
        for batch in it:
            out.append((list(batch), batch, it.state_dict()))
            if stop is not None and len(out) == stop:
                return out
    return out


def _both_paths(build, monkeypatch, **kw):
    reads = []
    real = columns.read_columns

    def counting(*args, **kws):
        reads.append(1)
        return real(*args, **kws)

    monkeypatch.setattr(columns, "read_columns", counting)
    fast = _outputs(build, **kw)
    monkeypatch.setattr(mind_dataset_module.MindDataset, "_column_reader", lambda self: None)
    slow = _outputs(build, **kw)
    monkeypatch.undo()
    assert fast and len(fast) == len(slow)
    for (names_f, f, state_f), (names_s, s, state_s) in zip(fast, slow):
        assert names_f == names_s == build().get_col_names()
        for name in names_f:
            assert _same(f[name], s[name]), name
        assert state_f == state_s
    return fast, reads


CONFIGS = {
    "sequential": dict(shuffle=False),
    "shuffled": dict(shuffle=True),
    "sharded": dict(shuffle=True, num_shards=3, shard_id=1),
    "sharded-in-order": dict(shuffle=False, num_shards=2, shard_id=0),
    "columns": dict(shuffle=True, columns_list=["s", "b", "i32", "vec"]),
    "files": dict(shuffle="files"),
}


@pytest.mark.slow
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("config_name", sorted(CONFIGS))
def test_batches_equal_the_row_path(dataset, monkeypatch, config_name, drop):
    options = dict(CONFIGS[config_name])
    if options.get("shuffle") == "files":
        from recordio.dataset import Shuffle
        options["shuffle"] = Shuffle.FILES

    def build():
        return MindDataset(dataset, **options).batch(16, drop_remainder=drop)

    _, reads = _both_paths(build, monkeypatch)
    assert reads, "the batch path did not read columns"


def test_every_shard_file_and_resume(dataset, monkeypatch):
    files = [dataset[:-1] + str(k) for k in range(3)]          # a batch crosses files

    def build():
        return MindDataset(files, shuffle=True).batch(32)

    full, _ = _both_paths(build, monkeypatch)
    state = full[2][2]                                        # resume after the third batch
    resumed, reads = _both_paths(build, monkeypatch, state=state)
    assert reads
    for (_, got, _), (_, want, _) in zip(resumed, full[3:]):
        assert all(_same(got[n], want[n]) for n in want)


def test_index_columns_and_bytes_forms(cifar_like, monkeypatch):
    _both_paths(lambda: MindDataset(cifar_like, columns_list=["label"], shuffle=True).batch(64), monkeypatch)
    _both_paths(lambda: MindDataset(cifar_like, shuffle=False).batch(100), monkeypatch)
    config.set_bytes_form("mindspore")
    try:
        fast, _ = _both_paths(lambda: MindDataset(cifar_like, shuffle=True).batch(100), monkeypatch)
        assert fast[0][1]["image"].dtype == np.dtype("S3072")
    finally:
        config.set_bytes_form("uint8")


def test_map_after_batch_and_per_batch_map(dataset, monkeypatch):
    def build():
        ds = MindDataset(dataset, shuffle=True, columns_list=["i32", "fixed"]).batch(10)
        return ds.map(lambda x: x * 2, input_columns=["fixed"])

    _, reads = _both_paths(build, monkeypatch)
    assert reads

    def build_per_batch():                                    # per_batch_map sees the rows' lists
        return MindDataset(dataset, shuffle=False, columns_list=["i64"]).batch(
            10, per_batch_map=lambda col, info: ([c + 1 for c in col],))

    _, reads = _both_paths(build_per_batch, monkeypatch)
    assert not reads


def test_padded_rows_read_row_by_row(dataset, monkeypatch):
    def build():
        return MindDataset(dataset, columns_list=["i32", "s"], num_shards=4, shard_id=3, shuffle=False,
                           padded_sample={"i32": 0, "s": "pad"}, num_padded=(-len_of(dataset)) % 4 or 4).batch(5)

    _, reads = _both_paths(build, monkeypatch)
    assert not reads


def len_of(path):
    from recordio import FileReader
    with FileReader(path) as r:
        return len(r)


def test_bytes_batches_as_tensors():
    """A batch's bytes become 1-D uint8 tensors (views of one tensor): the values of one tensor each."""
    torch = pytest.importorskip("torch")
    from recordio.dataset.values import to_torch
    values = [b"abc", b"", bytes(range(256)), b"\x00"]
    got = to_torch(values)
    assert isinstance(got, list) and len(got) == len(values)
    for tensor, value in zip(got, values):
        assert tensor.dtype == torch.uint8 and tensor.shape == (len(value),)
        assert bytes(tensor.numpy().tobytes()) == value
    got[0][0] = 0                                     # values are independent of the batch's bytes
    assert values[0] == b"abc" and got[1].numel() == 0 and got[2][0] == 0


@pytest.mark.parametrize("values", [[b"abc", b"", b"xy"], [b"ab", b"cd", b"ef"], [b"", b""]])
def test_bytes_batches_as_arrays(values):
    from recordio.dataset.values import to_numpy
    got = to_numpy(list(values))
    assert isinstance(got, list) and len(got) == len(values)
    for array, value in zip(got, values):
        assert array.dtype == np.uint8 and array.shape == (len(value),) and array.tobytes() == value
        assert array.flags.writeable and not array.flags.owndata   # views of the batch's own copy
    if len(values) > 1 and all(values):
        got[0][0] = 0                                     # a private copy: the values are untouched
        assert values[0][0] != 0 and np.shares_memory(got[0].base, got[1])
