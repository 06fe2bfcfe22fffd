"""DataLoader workers hand batches over through shared rings (recordio.dataset.loader_ring)."""

import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from numbered import numbered_rows, write_numbered
from recordio.dataset import MindDataset, TorchDataset, loader_ring
from recordio.dataset.values import TensorRows

pytestmark = pytest.mark.skipif(not loader_ring.available(), reason="no memfd_create on this platform")

N = 240


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("ring") / "d.mindrecord", N, shard_num=2)


def expected(i):
    return numbered_rows(1, i)[0]


def check_batch(batch):
    """Every value of a batch equals the row its id names: types, dtypes and bytes."""
    assert type(batch) is dict
    ids = batch["id"].tolist()
    assert batch["id"].dtype == torch.int64 and batch["vec"].shape == (len(ids), 4)
    assert isinstance(batch["data"], list) and len(batch["data"]) == len(ids)
    assert batch["name"] == [expected(i)["name"] for i in ids]
    for k, i in enumerate(ids):
        row = expected(i)
        assert batch["vec"][k].tolist() == row["vec"].tolist() and int(batch["label"][k]) == row["label"]
        assert batch["data"][k].dtype == torch.uint8 and bytes(batch["data"][k].numpy()) == row["data"]
    return ids


def test_batches_held_across_epochs_keep_their_values(dataset, monkeypatch):
    """Batches kept by the consumer are never overwritten: the worker takes a batch's bytes back only
    once its last view is gone, and starts a larger ring when the small one is full (a ring of a few
    batches here, so the test would see any early reuse)."""
    monkeypatch.setattr(loader_ring, "FIRST_CAPACITY", 4096)       # inherited by the forked workers
    ds = MindDataset(dataset, shuffle=True).batch(8)
    loader = DataLoader(TorchDataset(ds), batch_size=None, num_workers=2, persistent_workers=True)
    held = []
    for _ in range(3):
        held.append(list(loader))
    for epoch in held:
        ids = [i for batch in epoch for i in check_batch(batch)]
        assert sorted(ids) == list(range(N))


def test_batches_dropped_at_once_reuse_one_ring(dataset):
    ds = MindDataset(dataset, shuffle=False).batch(16)
    loader = DataLoader(TorchDataset(ds), batch_size=None, num_workers=2, persistent_workers=True)
    for _ in range(4):
        ids = []
        for batch in loader:
            ids += check_batch(batch)
        assert ids == list(range(N))
    rings = {number for number, _ in loader_ring._MAPPED.values()}
    assert rings == {0}                                    # freed batches: the first ring sufficed


def test_same_batches_as_without_workers(dataset):
    ds = MindDataset(dataset, shuffle=True).batch(16)
    plain = list(DataLoader(TorchDataset(ds), batch_size=None, num_workers=0))
    shared = list(DataLoader(TorchDataset(ds), batch_size=None, num_workers=2))
    assert len(plain) == len(shared)
    for a, b in zip(plain, shared):
        assert list(a) == list(b)
        for name in a:
            if isinstance(a[name], torch.Tensor):
                assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name])
            elif name == "data":
                assert [bytes(t.numpy()) for t in a[name]] == [bytes(t.numpy()) for t in b[name]]
            else:
                assert a[name] == b[name]


def test_rings_of_exited_workers_are_dropped(dataset):
    ds = MindDataset(dataset).batch(16)
    for _ in range(3):                                     # new workers each time
        for _ in DataLoader(TorchDataset(ds), batch_size=None, num_workers=2):
            pass
    assert len(loader_ring._MAPPED) <= 2                   # only the last loader's two workers


def test_a_changed_row_list_is_pickled_as_a_list():
    rows = TensorRows.of(torch.arange(6, dtype=torch.uint8), [2, 4])
    rows[0] = torch.tensor([9], dtype=torch.uint8)
    again = pickle.loads(pickle.dumps(rows))
    assert type(again) is list and [t.tolist() for t in again] == [[9], [2, 3, 4, 5]]
    intact = pickle.loads(pickle.dumps(TensorRows.of(torch.arange(3), [1, 2])))
    assert type(intact) is TensorRows and [t.tolist() for t in intact] == [[0], [1, 2]]


def test_a_collate_fn_sees_lists_and_its_changes_arrive(dataset):
    """A ``collate_fn`` gets the batch's lists as lists; what it puts there reaches the loop."""
    def collate(batch):
        batch["data"] = [t[:1] for t in batch["data"]]               # replaces the views
        batch["extra"] = np.arange(3)
        return batch

    ds = MindDataset(dataset, shuffle=False).batch(16)
    loader = DataLoader(TorchDataset(ds), batch_size=None, num_workers=2, collate_fn=collate)
    for batch in loader:
        ids = batch["id"].tolist()
        assert [bytes(t.numpy()) for t in batch["data"]] == [expected(i)["data"][:1] for i in ids]
        assert batch["extra"].tolist() == [0, 1, 2]


def test_without_memfd_batches_are_plain_pickles(dataset, monkeypatch):
    monkeypatch.setattr(loader_ring, "available", lambda: False)
    ds = MindDataset(dataset, shuffle=False).batch(16)
    ids = [i for b in DataLoader(TorchDataset(ds), batch_size=None, num_workers=2) for i in check_batch(b)]
    assert sorted(ids) == list(range(N))


class _EmptyColumns(torch.utils.data.IterableDataset):
    def __iter__(self):
        yield loader_ring.SharedBatch({"x": torch.zeros(0, 3), "rows": TensorRows.of(torch.zeros(0, dtype=torch.uint8),
                                                                                     [0, 0]),
                                       "name": ["a", "b"]})


def test_a_batch_of_empty_tensors_arrives_as_tensors():
    """A batch whose tensors hold no bytes at all still arrives as tensors (not as their descriptors)."""
    (batch,) = list(DataLoader(_EmptyColumns(), batch_size=None, num_workers=1))
    assert isinstance(batch["x"], torch.Tensor) and batch["x"].shape == (0, 3) and batch["x"].dtype == torch.float32
    assert [t.shape for t in batch["rows"]] == [(0,), (0,)] and batch["name"] == ["a", "b"]


_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.int64, torch.float16,
           torch.bfloat16, torch.float32, torch.float64, torch.complex64)


def _column(dtype, shape, seed):
    values = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 100
    if dtype.is_complex:
        return torch.complex(values, -values).to(dtype)
    return values.to(dtype)


class _EveryDtype(torch.utils.data.IterableDataset):
    """One batch with a column of each dtype (numpy has no bfloat16: that one takes torch's views),
    odd sizes so columns start at unaligned offsets, and a row list of float16 values."""

    def __iter__(self):
        cols = {str(d): _column(d, (3, k + 1), k) for k, d in enumerate(_DTYPES)}
        cols["scalar"] = _column(torch.float32, (), 99)
        cols["rows"] = TensorRows.of(_column(torch.bfloat16, (7,), 5), [2, 0, 5])
        yield loader_ring.SharedBatch(cols)


def test_every_dtype_arrives_with_its_values_shape_and_dtype():
    (batch,) = list(DataLoader(_EveryDtype(), batch_size=None, num_workers=1))
    (expected_batch,) = list(_EveryDtype())
    assert list(batch) == list(expected_batch)
    for name, want in expected_batch.items():
        got = batch[name]
        if name == "rows":
            assert [t.dtype for t in got] == [torch.bfloat16] * 3 and [len(t) for t in got] == [2, 0, 5]
            assert all(torch.equal(a, b) for a, b in zip(got, want))
            continue
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert torch.equal(got, want), name


def _same_collated(a, b):
    """Two collated batches are equal: keys, tensor dtypes and values, lists of bytes / str by type."""
    assert type(a) is type(b) is dict and list(a) == list(b)
    for name in a:
        if isinstance(b[name], torch.Tensor):
            assert isinstance(a[name], torch.Tensor) and a[name].dtype == b[name].dtype, name
            assert a[name].shape == b[name].shape and torch.equal(a[name], b[name]), name
        else:
            assert type(a[name]) is list and [type(v) for v in a[name]] == [type(v) for v in b[name]], name
            assert a[name] == b[name], name


def test_recordio_collate_gives_default_collate_batches_through_the_ring(dataset):
    """``DataLoader(FileReader, batch_size, num_workers=2, collate_fn=recordio.collate)``: the batches of
    ``default_collate`` without workers, value for value; in the main process it is default_collate."""
    import recordio
    from recordio import FileReader
    from torch.utils.data import default_collate
    with FileReader(dataset[:-1] + "0") as reader:      # both shards
        expected = list(DataLoader(reader, batch_size=17, num_workers=0))
        before = set(loader_ring._MAPPED)
        shared = list(DataLoader(reader, batch_size=17, num_workers=2, collate_fn=recordio.collate))
        assert len(set(loader_ring._MAPPED) - before) == 2              # each worker's ring carried batches
        assert len(shared) == len(expected) == -(-N // 17)
        for a, b in zip(shared, expected):
            _same_collated(a, b)
        rows = reader.__getitems__([5, 0, 3])
        inline = recordio.collate(rows)
        assert type(inline) is dict
        _same_collated(inline, default_collate(rows))


class _ByteLists(torch.utils.data.IterableDataset):
    def __iter__(self):
        for k in range(40):
            yield loader_ring.SharedBatch({"blobs": [bytes([k]) * (i % 4) for i in range(k + 1)],
                                           "empty": [b"", b""], "k": k})     # k: pickled


def test_lists_of_bytes_travel_in_the_ring_and_free_their_bytes_at_once(monkeypatch):
    monkeypatch.setattr(loader_ring, "FIRST_CAPACITY", 4096)         # a few batches: reuse is needed
    loader = DataLoader(_ByteLists(), batch_size=None, num_workers=1, persistent_workers=True)
    for _ in range(3):
        got = list(loader)
        assert [int(b["k"]) for b in got] == list(range(40))
        for k, b in enumerate(got):
            assert type(b["blobs"]) is list and all(type(v) is bytes for v in b["blobs"])
            assert b["blobs"] == [bytes([k]) * (i % 4) for i in range(k + 1)] and b["empty"] == [b"", b""]
    assert {number for number, _ in loader_ring._MAPPED.values()} == {0}     # copied out: slots freed
    _, descriptor = loader_ring.SharedBatch({"b": [b"ab", b""], "s": ["x"], "none": []}).__reduce__()
    kinds = {name: kind for name, (kind, _) in descriptor[-1].items()}
    assert kinds == {"b": "bytes", "s": "value", "none": "value"}        # the bytes went into the ring
