"""Offload is only a placement: host pipeline == offloaded pipeline == exported module (SPEC §3.7)."""

import cv2
import numpy as np
import pytest
import torch

from recordio import GeneratorDataset, config, transforms, vision

RNG = np.random.default_rng(2)
PICTURES = [cv2.resize(RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8), (40, 30), interpolation=cv2.INTER_CUBIC)
            for _ in range(6)]
JPEGS = [cv2.imencode(".jpg", p)[1].tobytes() for p in PICTURES]
N = 22


class Source:
    def __len__(self):
        return N

    def __getitem__(self, i):
        return np.frombuffer(JPEGS[i % len(JPEGS)], np.uint8), np.int32(i % 5)


def imagenet_chain():
    return [vision.Decode(), vision.RandomResizedCrop(16), vision.RandomHorizontalFlip(),
            vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1), vision.Normalize([123.7, 116.3, 103.5], [58.4, 57.1, 57.4]),
            vision.HWC2CHW()]


def sharp_chain():
    return [vision.Decode(), vision.CenterCrop(20), vision.RandomVerticalFlip(0.3), vision.RandomSharpness(),
            vision.RandomColorAdjust(saturation=(0.2, 1.8), hue=0.3), vision.Rescale(1 / 255, 0.0),
            vision.Normalize([0.5], [0.25])]


def cast_chain():
    return [vision.Decode(), vision.Resize((12, 14)), vision.RandomColorAdjust(brightness=0.5, contrast=0.5),
            transforms.TypeCast("float32"), vision.RandomHorizontalFlip(0.5)]


def train_chain():
    """The ImageNet training chain as the scripts write it: the host fuses its tail (a level run), the
    offloaded tail gets uint8 images."""
    return [vision.RandomCropDecodeResize(16), vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4),
            vision.Rescale(1 / 255, 0.0), vision.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
            vision.HWC2CHW()]


CHAINS = {"imagenet": imagenet_chain, "sharpness": sharp_chain, "cast": cast_chain, "train": train_chain}


@pytest.fixture(autouse=True)
def restore_config():
    seed, auto = config.get_seed(), config.get_auto_offload()
    yield
    config.set_seed(seed)
    config.set_auto_offload(auto)


def pipeline(chain, offload, batch=8, workers=1, label_offload=None, processes=False):
    ds = GeneratorDataset(Source(), ["image", "label"], shuffle=False)
    ds = ds.map(CHAINS[chain](), input_columns="image", offload=offload, num_parallel_workers=workers,
                python_multiprocessing=processes)
    ds = ds.map(transforms.TypeCast("int64"), input_columns="label", offload=label_offload)
    return ds.batch(batch) if batch else ds


def rows_of(ds, epochs=1, device=None):
    """Every output row, in order, as numpy: the batch split does not matter."""
    out = {"image": [], "label": []}
    iterator = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True, device=device)
    for _ in range(epochs):                      # each pass over the iterator is one epoch
        for batch in iterator:
            for k in out:
                out[k].extend(batch[k] if np.ndim(batch[k]) else [batch[k]])
    return {k: np.stack(v) for k, v in out.items()}


def assert_same(a, b, tol=1e-5):
    assert a["image"].dtype == b["image"].dtype and a["image"].shape == b["image"].shape
    assert np.abs(a["image"].astype(np.float64) - b["image"]).max() <= tol
    assert np.array_equal(a["label"], b["label"]) and a["label"].dtype == b["label"].dtype


@pytest.mark.parametrize("seed", [1, 77])
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_host_pipeline_equals_offloaded_pipeline(chain, seed):
    config.set_seed(seed)
    host = rows_of(pipeline(chain, offload=False))
    offloaded = pipeline(chain, offload=True, label_offload=True)
    assert offloaded.offload_plan().tail
    assert_same(host, rows_of(offloaded, epochs=1))


def test_two_epochs_differ_and_stay_equal():
    host, off = rows_of(pipeline("imagenet", False), epochs=2), rows_of(pipeline("imagenet", True), epochs=2)
    assert_same(host, off)
    assert not np.allclose(host["image"][:N], host["image"][N:])


@pytest.mark.parametrize("chain", ["imagenet", "train"])
def test_module_export_equals_the_in_pipeline_result(chain):
    ds = pipeline(chain, offload=True, label_offload=True)
    module = ds.offload_module()
    assert isinstance(module, torch.nn.Module)
    expected = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    for got, batch in zip(expected, ds.iter_host_batches(num_epochs=1)):
        assert batch.columns["image"].dtype == np.uint8          # un-augmented on the host
        out = module(batch.columns, batch.rows, batch.epoch, config.get_seed())
        assert np.array_equal(out["image"].numpy(), got["image"])
        assert np.array_equal(out["label"].numpy(), got["label"])


def test_same_values_whatever_workers_and_batch_size():
    reference = rows_of(pipeline("sharpness", offload=True, batch=8, workers=1))
    assert_same(reference, rows_of(pipeline("sharpness", offload=True, batch=5, workers=2)))
    assert_same(reference, rows_of(pipeline("sharpness", offload=False, batch=3, workers=2)))
    assert_same(reference, rows_of(pipeline("sharpness", offload=False, batch=8, workers=2, processes=True)))


def test_unbatched_pipeline_offloads_per_row():
    assert_same(rows_of(pipeline("cast", offload=False, batch=0)), rows_of(pipeline("cast", offload=True, batch=0)))


def test_auto_offload_and_explicit_false():
    config.set_auto_offload(True)
    ds = pipeline("imagenet", offload=None, label_offload=False)
    plan = ds.offload_plan()
    assert [type(op).__name__ for _, op in plan.tail["image"]] == [
        "RandomHorizontalFlip", "RandomColorAdjust", "Normalize", "HWC2CHW"]
    assert "label" not in plan.tail and "offload=False" in str(plan)
    config.set_auto_offload(False)
    assert_same(rows_of(pipeline("imagenet", offload=False)), rows_of(ds))


def test_offload_plan_prints_what_runs_where():
    text = str(pipeline("imagenet", offload=True).offload_plan())
    assert "Decode, RandomResizedCrop" in text and "RandomHorizontalFlip, RandomColorAdjust" in text
    assert "split after RandomResizedCrop" in text


@pytest.mark.gpu
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_cuda_offloaded_pipeline_equals_host(chain):
    host = rows_of(pipeline(chain, offload=False))
    cuda = rows_of(pipeline(chain, offload=True, label_offload=True), device="cuda")
    assert_same(host, cuda, tol=2.0 / 57.0 + 1e-4 if chain != "cast" else 2.0)   # hue: <= 2 LSB on CUDA


def test_pipeline_decodes_fused_before_a_resize():
    big = cv2.resize(PICTURES[0], (320, 240), interpolation=cv2.INTER_CUBIC)
    data = np.frombuffer(cv2.imencode(".jpg", big)[1].tobytes(), np.uint8)
    ds = GeneratorDataset([(data,)], ["image"], shuffle=False).map([vision.Decode(), vision.Resize((30, 40))],
                                                                    input_columns="image")
    out = next(iter(ds.create_dict_iterator(num_epochs=1, output_numpy=True)))["image"]
    fused = transforms.Compose([vision.Decode(), vision.Resize((30, 40))])(data)
    unfused = vision.Resize((30, 40))(vision.Decode()(data))
    assert np.array_equal(out, fused) and not np.array_equal(out, unfused)


def test_an_offloaded_tail_on_the_cpu_without_a_device_warns_once_and_names_the_fix(fresh_slow_warnings):
    """offload=True with no device: the tail runs as batched torch ops on the CPU, many times slower than in
    the map (same values), so a one-time slow-path warning says how to keep it in the map or give a device.
    An explicit device='cpu' is the user's choice: no warning; RECORDIO_ALLOW_SLOW=1 silences it."""
    import warnings

    def run(**kw):
        ds = GeneratorDataset(Source(), ["image", "label"], shuffle=False)
        ds = ds.map(imagenet_chain(), input_columns="image", offload=True).batch(4)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            list(ds.create_dict_iterator(num_epochs=1, output_numpy=True, **kw))
        return [w for w in seen if "slower path" in str(w.message)]

    assert run(device="cpu") == []
    (warned,) = run()
    text = str(warned.message)
    assert warned.category is RuntimeWarning and warned.filename == __file__
    for part in ("RandomHorizontalFlip, RandomColorAdjust, Normalize, HWC2CHW", "on the CPU", "offload=False",
                 "device='cuda'", "offload_module()", "RECORDIO_ALLOW_SLOW=1"):
        assert part in text, part
    assert run() == []                                  # once
    fresh_slow_warnings(allow_slow=True)
    assert run() == []
