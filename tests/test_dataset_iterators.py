"""Iterators (recordio.dataset.iterators): the offloaded tail applied by the iterator equals the
host pipeline; host batches for the sink; epochs; state of a finished epoch."""

import numpy as np
import pytest
import torch

from recordio import vision
from recordio.dataset import GeneratorDataset, HostBatch

IMAGES = [(np.random.default_rng(i).integers(0, 255, (6, 8, 3), dtype=np.uint8), np.int32(i))
          for i in range(10)]


def pipeline(offload, batch=4):
    ds = GeneratorDataset(IMAGES, ["image", "label"], shuffle=False)
    ds = ds.map([vision.RandomHorizontalFlip(), vision.RandomVerticalFlip(), vision.HWC2CHW()], "image",
                offload=offload)
    return ds.batch(batch) if batch else ds


@pytest.mark.parametrize("batch", [None, 4])
@pytest.mark.parametrize("output_numpy", [True, False])
def test_offloaded_tail_equals_the_host_pipeline(batch, output_numpy):
    offloaded = pipeline(True, batch)
    assert offloaded.offload_plan().tail
    got = list(offloaded.create_dict_iterator(num_epochs=1, output_numpy=output_numpy))
    want = list(pipeline(False, batch).create_dict_iterator(num_epochs=1, output_numpy=True))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        image = g["image"]
        assert isinstance(image, np.ndarray if output_numpy else torch.Tensor)
        np.testing.assert_array_equal(np.asarray(image), w["image"])


def test_host_batches_leave_the_tail_to_the_consumer():
    batches = list(pipeline(True).iter_host_batches(num_epochs=1))
    assert all(isinstance(b, HostBatch) for b in batches)
    assert [b.columns["image"].shape for b in batches] == [(4, 6, 8, 3), (4, 6, 8, 3), (2, 6, 8, 3)]
    assert batches[1].rows.tolist() == [4, 5, 6, 7] and batches[1].rows.dtype == np.int64
    module = pipeline(True).offload_module()
    out = module({"image": torch.from_numpy(batches[0].columns["image"])}, batches[0].rows, 0, 5489)
    first = next(iter(pipeline(False).create_dict_iterator(num_epochs=1, output_numpy=True)))
    np.testing.assert_array_equal(out["image"].numpy(), first["image"])


def test_unbatched_host_batches_have_a_leading_axis():
    b = next(iter(pipeline(False, None).iter_host_batches()))
    assert b.columns["image"].shape == (1, 3, 6, 8) and b.columns["label"].shape == (1,)


def test_endless_host_batches_run_epoch_after_epoch():
    stream = pipeline(False).iter_host_batches(num_epochs=None)
    epochs = [next(stream).epoch for _ in range(7)]
    stream.close()
    assert epochs == [0, 0, 0, 1, 1, 1, 2]


def test_no_tail_without_offload():
    assert pipeline(False).offload_plan().tail == {}
