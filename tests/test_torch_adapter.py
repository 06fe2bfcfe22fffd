"""TorchDataset (recordio.dataset.torch_adapter): a pipeline in a torch DataLoader."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from recordio.dataset import MindDataset, TorchDataset
from numbered import write_numbered
from recordio.keys import current_keys

N = 50


class Jitter:
    def __call__(self, vec):
        return vec + np.float32(current_keys().uniform(0)[0])


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("adapter") / "d.mindrecord", N, shard_num=2)


def pipeline(path, **kw):
    return MindDataset(path, columns_list=["id", "vec"], **kw).map(Jitter(), input_columns="vec").batch(4)


def collect(loader):
    rows = {}
    order = []
    for batch in loader:
        assert isinstance(batch["id"], torch.Tensor)
        for i, v in zip(batch["id"].tolist(), batch["vec"]):
            order.append(i)
            rows[i] = v.tolist()
    return order, rows


def test_two_workers_see_every_row_once_with_the_same_augmentations(dataset):
    loader = DataLoader(TorchDataset(pipeline(dataset)), batch_size=None, num_workers=2)
    order, rows = collect(loader)
    assert sorted(order) == list(range(N))
    direct = {}
    for b in pipeline(dataset).create_dict_iterator(num_epochs=1, output_numpy=True):
        direct.update({i: v.tolist() for i, v in zip(b["id"].tolist(), b["vec"])})
    assert rows == direct


def test_set_epoch_reshuffles(dataset):
    adapter = TorchDataset(pipeline(dataset))
    loader = DataLoader(adapter, batch_size=None, num_workers=2)
    first = collect(loader)
    adapter.set_epoch(1)
    second = collect(loader)
    assert sorted(first[0]) == sorted(second[0]) and first[0] != second[0]
    assert first[1] != second[1]


def test_workers_within_explicit_shards(dataset):
    seen = []
    for shard in range(3):
        loader = DataLoader(TorchDataset(pipeline(dataset, num_shards=3, shard_id=shard)), batch_size=None,
                            num_workers=2)
        seen += collect(loader)[0]
    assert set(seen) == set(range(N)) and len(seen) - N < 6


def test_without_workers(dataset):
    order, _ = collect(DataLoader(TorchDataset(pipeline(dataset)), batch_size=None))
    assert sorted(order) == list(range(N))


def test_an_offloaded_tail_runs_in_the_workers():
    from recordio import vision
    from recordio.dataset import GeneratorDataset

    images = [(np.random.default_rng(i).integers(0, 255, (4, 6, 3), dtype=np.uint8), np.int64(i))
              for i in range(12)]

    def build(offload):
        ds = GeneratorDataset(images, ["image", "id"], shuffle=False)
        return ds.map([vision.RandomHorizontalFlip(), vision.HWC2CHW()], "image", offload=offload).batch(3)

    assert build(True).offload_plan().tail
    got = {}
    for batch in DataLoader(TorchDataset(build(True)), batch_size=None, num_workers=2):
        got.update({int(i): img.numpy() for i, img in zip(batch["id"], batch["image"])})
    want = {}
    for batch in build(False).create_dict_iterator(num_epochs=1, output_numpy=True):
        want.update({int(i): img for i, img in zip(batch["id"], batch["image"])})
    assert sorted(got) == list(range(12))
    assert all(np.array_equal(got[i], want[i]) for i in want)


def test_process_workers_inside_dataloader_workers_become_threads(dataset):
    ds = MindDataset(dataset, columns_list=["id", "vec"])
    ds = ds.map(Jitter(), input_columns="vec", num_parallel_workers=2, python_multiprocessing=True)
    order, rows = collect(DataLoader(TorchDataset(ds.batch(5)), batch_size=None, num_workers=2))
    assert sorted(order) == list(range(N))


def test_an_iterable_source_is_split_between_workers():
    from recordio.dataset import GeneratorDataset

    def rows():
        for i in range(21):
            yield (np.int64(i),)

    loader = DataLoader(TorchDataset(GeneratorDataset(rows, ["id"]).batch(2)), batch_size=None, num_workers=2)
    seen = [i for batch in loader for i in batch["id"].tolist()]
    assert sorted(seen) == list(range(21))


def test_an_offloaded_tail_warns_when_the_torch_dataset_is_made(fresh_slow_warnings):
    """A DataLoader's workers run an offloaded tail on the CPU (no device there): the one-time slow-path
    warning comes from making the TorchDataset, in the main process, before any worker starts; workers
    started after it inherit the run's note (recordio.compiled) and stay quiet."""
    import warnings

    from recordio import GeneratorDataset, compiled, vision

    imgs = [(np.full((6, 6, 3), i, np.uint8),) for i in range(8)]
    ds = GeneratorDataset(imgs, ["image"], shuffle=False)
    ds = ds.map([vision.RandomHorizontalFlip(), vision.HWC2CHW()], input_columns="image", offload=True).batch(4)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        loader_data = TorchDataset(ds)
        batches = list(DataLoader(loader_data, batch_size=None, num_workers=0))
    (warned,) = [w for w in seen if "slower path" in str(w.message)]
    assert warned.filename == __file__ and "RandomHorizontalFlip, HWC2CHW" in str(warned.message)
    assert "offload_module()" in str(warned.message) and compiled.WARNED in __import__("os").environ
    assert [b["image"].shape for b in batches] == [(4, 3, 6, 6)] * 2
