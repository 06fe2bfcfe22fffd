"""Same seed -> same order and same augmentation, whatever the workers, their kind, the batch size
or the prefetch depth (keyed randomness, recordio.keys)."""

import numpy as np
import pytest

from recordio.dataset import GeneratorDataset, MindDataset, config
from numbered import write_numbered
from recordio.keys import current_keys


class Jitter:
    """A user-written random op: draws through the keys of the row and op being processed."""

    def __call__(self, vec):
        return vec + np.float32(current_keys().uniform(0, 0.0, 1.0)[0])


class Flip:
    def __call__(self, vec):
        return vec[::-1].copy() if current_keys().bernoulli(0, 0.5)[0] else vec


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("det") / "d.mindrecord", 60, shard_num=2)


def augmented(path, workers, processes, batch, epochs=2):
    ds = MindDataset(path, columns_list=["id", "vec"])
    ds = ds.map([Jitter(), Flip()], input_columns="vec", num_parallel_workers=workers,
                python_multiprocessing=processes)
    ds = ds.map(Jitter(), input_columns="vec", num_parallel_workers=workers, python_multiprocessing=processes)
    ds = ds.batch(batch)
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    out = []
    for _ in range(epochs):
        ids, vecs = [], []
        for b in it:
            ids.extend(b["id"].tolist())
            vecs.extend(list(b["vec"]))
        out.append((ids, np.stack(vecs)))
    return out


@pytest.fixture(scope="module")
def reference(dataset):
    return augmented(dataset, 1, False, 1)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("processes", [False, True])
@pytest.mark.parametrize("batch", [1, 7, 32])
def test_matrix(dataset, reference, workers, processes, batch):
    got = augmented(dataset, workers, processes, batch)
    for (ids, vecs), (ref_ids, ref_vecs) in zip(got, reference):
        assert ids == ref_ids
        np.testing.assert_array_equal(vecs, ref_vecs)


def test_augmentation_varies_by_row_epoch_and_seed(dataset, reference):
    (ids0, vecs0), (ids1, vecs1) = reference
    offsets0 = vecs0.max(axis=1) - np.array(ids0)
    offsets1 = dict(zip(ids1, vecs1.max(axis=1) - np.array(ids1)))
    assert len(np.unique(offsets0)) == len(offsets0)
    assert not np.allclose(offsets0, [offsets1[i] for i in ids0])
    config.set_seed(7)
    try:
        other = augmented(dataset, 1, False, 1, epochs=1)[0]
    finally:
        config.set_seed(config.DEFAULT_SEED)
    assert other[0] != ids0


@pytest.mark.parametrize("prefetch", [1, 64])
def test_prefetch_depth_changes_nothing(dataset, reference, prefetch):
    old = config.get_prefetch_size()
    config.set_prefetch_size(prefetch)
    try:
        got = augmented(dataset, 2, False, 5)
    finally:
        config.set_prefetch_size(old)
    assert got[0][0] == reference[0][0]
    np.testing.assert_array_equal(got[1][1], reference[1][1])


def test_generator_source_with_eager_call_outside_a_pipeline():
    ds = GeneratorDataset([(np.zeros(3, np.float32),)] * 4, ["v"], shuffle=False).map(Jitter(), "v")
    a = [r["v"].tolist() for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert len({tuple(v) for v in a}) == 4
    assert Jitter()(np.zeros(1, np.float32)).shape == (1,)
