"""MindSpore's PIL path: Decode(to_pil=True) → Resize / CenterCrop / Grayscale → ToTensor → Normalize(is_hwc=False).

Checked against Pillow and numpy directly, through a pipeline, and against MindSpore 2.10's own
eager ops (the ``mindspore`` tier): the same values, exactly.
"""

import subprocess

import cv2
import numpy as np
import pytest
from PIL import Image

from recordio import GeneratorDataset, transforms, vision

CHAINS = {       # name -> [(op, kwargs), ...], built the same way by both libraries
    "resize_short": [("Decode", {"to_pil": True}), ("Resize", {"size": 32}), ("ToTensor", {})],
    "resize_hw_crop": [("Decode", {"to_pil": True}), ("Resize", {"size": [40, 50]}),
                       ("CenterCrop", {"size": 24}), ("ToTensor", {}),
                       ("Normalize", {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                                      "is_hwc": False})],
    "crop_bigger_than_image": [("Decode", {"to_pil": True}), ("CenterCrop", {"size": [70, 90]}), ("ToTensor", {})],
    "grey_1": [("Decode", {"to_pil": True}), ("Grayscale", {}), ("ToTensor", {})],
    "grey_3_nearest": [("Decode", {"to_pil": True}), ("Resize", {"size": 20, "interpolation": "NEAREST"}),
                       ("Grayscale", {"num_output_channels": 3}), ("ToTensor", {})],
    "bicubic": [("Decode", {"to_pil": True}), ("Resize", {"size": [31, 17], "interpolation": "BICUBIC"}),
                ("ToTensor", {})],
    "random_grey_always": [("Decode", {"to_pil": True}), ("RandomGrayscale", {"prob": 1.0}), ("ToTensor", {})],
    "random_grey_never": [("Decode", {"to_pil": True}), ("RandomGrayscale", {"prob": 0.0}), ("ToTensor", {})],
    "random_grey_of_grey": [("Decode", {"to_pil": True}), ("Grayscale", {}), ("RandomGrayscale", {"prob": 1}),
                            ("ToTensor", {})],
}


def build(module, chain):
    ops = []
    for name, kwargs in chain:
        kwargs = dict(kwargs)
        if "interpolation" in kwargs:
            kwargs["interpolation"] = getattr(module.Inter, kwargs["interpolation"])
        ops.append(getattr(module, name)(**kwargs))
    return ops


@pytest.fixture(scope="module")
def jpegs():
    rng = np.random.default_rng(3)
    images = [cv2.resize(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), (w, h), interpolation=cv2.INTER_CUBIC)
              for h, w in ((48, 64), (61, 45), (33, 33))]
    return [np.frombuffer(cv2.imencode(".jpg", img)[1].tobytes(), np.uint8) for img in images]


def ours(chain, jpeg):
    return transforms.Compose(build(vision, chain))(jpeg)


def ours_in_a_pipeline(chain, jpegs):
    data = GeneratorDataset([(j,) for j in jpegs], ["image"], shuffle=False)
    data = data.map(build(vision, chain), input_columns="image")
    return [row["image"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]


def test_the_pil_chain_is_pillow_and_numpy(jpegs):
    import io
    pil = Image.open(io.BytesIO(jpegs[0].tobytes())).convert("RGB").resize((50, 40), Image.BILINEAR)
    box = pil.crop((13, 8, 37, 32))
    expected = np.asarray(box).transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
    got = ours(CHAINS["resize_hw_crop"], jpegs[0])
    assert got.dtype == np.float32 and got.shape == (3, 24, 24)
    assert np.array_equal(got, (expected - mean) / std)


def test_decode_to_pil_is_not_fused_and_gives_pil():
    ops = vision.fuse_decode([vision.Decode(to_pil=True), vision.Resize(10)])
    assert type(ops[0]) is vision.Decode and ops[0].to_pil


def test_a_map_outputs_a_pil_image_as_numpy(jpegs):
    ds = GeneratorDataset([(j,) for j in jpegs], ["image"], shuffle=False)
    ds = ds.map([vision.Decode(to_pil=True), vision.Resize([20, 30])], input_columns="image")
    out = [r["image"] for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert all(isinstance(a, np.ndarray) and a.shape == (20, 30, 3) and a.dtype == np.uint8 for a in out)


def test_to_tensor_of_an_array_and_a_grey_image():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert np.array_equal(vision.ToTensor()(img), img.transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255))
    assert vision.ToTensor()(np.zeros((4, 5), np.uint8)).shape == (1, 4, 5)
    with pytest.raises(ValueError, match="num_output_channels"):
        vision.Grayscale(2)


def test_random_grayscale_keeps_the_channels_and_draws_per_row(jpegs):
    rgb = Image.open(__import__("io").BytesIO(jpegs[0].tobytes())).convert("RGB")
    always = vision.RandomGrayscale(1.0)(rgb)
    plane = np.asarray(rgb.convert("L"))
    assert always.mode == "RGB" and np.array_equal(np.asarray(always), np.dstack([plane] * 3))
    assert vision.RandomGrayscale(1.0)(rgb.convert("L")).mode == "L"
    assert vision.RandomGrayscale(0.0)(rgb) is rgb
    assert np.asarray(vision.RandomGrayscale(1.0)(np.asarray(rgb))).shape == np.asarray(rgb).shape
    data = GeneratorDataset([(np.asarray(rgb),)] * 200, ["image"], shuffle=False)
    data = data.map(vision.RandomGrayscale(0.3), input_columns="image")
    grey = [bool(np.all(img[..., 0] == img[..., 1]) and np.all(img[..., 1] == img[..., 2]))
            for img in (row["image"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True))]
    assert 30 <= sum(grey) <= 90                     # about 60 of 200 rows, drawn per row
    with pytest.raises(ValueError, match="prob"):
        vision.RandomGrayscale(1.5)


SCRIPT = r'''
import pickle, sys
import numpy as np
import mindspore.dataset as ds
import mindspore.dataset.vision as V
chains, jpegs = pickle.load(open(sys.argv[1], "rb"))
out = {}
for name, chain in chains.items():
    ops = []
    for op, kwargs in chain:
        kwargs = dict(kwargs)
        if "interpolation" in kwargs:
            kwargs["interpolation"] = getattr(V.Inter, kwargs["interpolation"])
        ops.append(getattr(V, op)(**kwargs))
    data = ds.GeneratorDataset([(j,) for j in jpegs], ["image"], shuffle=False).map(ops, input_columns="image")
    out[name] = [row["image"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
pickle.dump({k: [(a.dtype.str, a.shape, a.tobytes()) for a in v] for k, v in out.items()}, open(sys.argv[2], "wb"),
            protocol=4)
'''


@pytest.fixture(scope="module")
def theirs(mindspore_python, jpegs, tmp_path_factory):
    import pickle
    folder = tmp_path_factory.mktemp("ms-pil")
    (folder / "run.py").write_text(SCRIPT)
    with open(folder / "in.pkl", "wb") as f:
        pickle.dump((CHAINS, jpegs), f, protocol=4)
    done = subprocess.run([mindspore_python, str(folder / "run.py"), str(folder / "in.pkl"), str(folder / "out.pkl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(folder / "out.pkl", "rb") as f:
        raw = pickle.load(f)
    return {k: [np.frombuffer(b, np.dtype(d)).reshape(s) for d, s, b in v] for k, v in raw.items()}


@pytest.mark.mindspore
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_the_pil_chain_equals_mindspore(theirs, jpegs, name):
    for got, expected in zip(ours_in_a_pipeline(CHAINS[name], jpegs), theirs[name], strict=True):
        assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
        assert np.array_equal(got, expected), float(np.abs(got.astype(np.float64) - expected).max())
