"""The image-training chains, fused (recordio.vision.fusion) and as written, against MindSpore 2.10's own ops
on ImageNet-like photos (tier ``mindspore``; skips without ``RECORDIO_MINDSPORE_PYTHON``).

Tolerances are docs/vision.md's: decode within 2 LSB on average, resize within 1 LSB, brightness 1 LSB,
Normalize/Rescale within 1e-4 (the PIL chain is Pillow's bytes on both sides; tests/test_vision_pil.py
checks it bit for bit against MindSpore's pipeline). The
random ops run with degenerate parameters (flip with probability 1, a fixed brightness), so both sides
compute the same thing.
"""

import numpy as np
import pytest

from recordio import vision
from recordio.keys import op_scope, row_scope
from recordio.tools import vision_photos
from recordio.vision.fusion import fuse_ops
from ms_vision_script import run_script

pytestmark = pytest.mark.mindspore

UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]

SCRIPT = r'''
import sys
import numpy as np
import mindspore.dataset.transforms as T
import mindspore.dataset.vision as V
data = dict(np.load(sys.argv[1]))
UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
chains = {
    "train": [V.Decode(), V.Resize((224, 224)), V.RandomHorizontalFlip(1.0),
              V.RandomColorAdjust(brightness=(0.8, 0.8)), V.Rescale(1.0 / 255, 0.0),
              V.Normalize(UNIT_MEAN, UNIT_STD), V.HWC2CHW()],
    "eval": [V.Decode(), V.Resize(256), V.CenterCrop(224), V.Normalize(MEAN, STD), V.HWC2CHW()],
    "eval_pil": [V.Decode(to_pil=True), V.Resize(256), V.CenterCrop(224), V.ToTensor(),
                 V.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)],
}
out = {}
for name, ops in chains.items():
    for k in range(len([key for key in data if key.startswith("jpeg")])):
        out[f"{name}{k}"] = T.Compose(ops)(data[f"jpeg{k}"])
np.savez(sys.argv[2], **out)
'''

CHAINS = {
    "train": lambda: [vision.Decode(), vision.Resize((224, 224)), vision.RandomHorizontalFlip(1.0),
                      vision.RandomColorAdjust(brightness=(0.8, 0.8)), vision.Rescale(1.0 / 255, 0.0),
                      vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()],
    "eval": lambda: [vision.Decode(), vision.Resize(256), vision.CenterCrop(224), vision.Normalize(MEAN, STD),
                     vision.HWC2CHW()],
    "eval_pil": lambda: [vision.Decode(to_pil=True), vision.Resize(256), vision.CenterCrop(224), vision.ToTensor(),
                         vision.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)],
}
LSB = {"train": 1 / 255 / min(UNIT_STD), "eval": 1 / min(STD), "eval_pil": 1 / 255 / min(UNIT_STD)}


@pytest.fixture(scope="module")
def photos():
    return vision_photos.jpegs(6, seed=3)


@pytest.fixture(scope="module")
def mindspore(tmp_path_factory, photos):
    inputs = {f"jpeg{k}": np.frombuffer(j, np.uint8) for k, j in enumerate(photos)}
    return run_script(tmp_path_factory.mktemp("chains"), SCRIPT, inputs)


def run(ops, data):
    value = data
    with row_scope(0, 0, 0):
        for j, op in enumerate(ops):
            with op_scope(j):
                value = op(value)
    return np.asarray(value)


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_chain_fused_and_as_written_against_mindspore(mindspore, photos, chain):
    for k, data in enumerate(photos):
        ops = CHAINS[chain]()
        fused, plain, theirs = run(fuse_ops(ops), data), run(ops, data), mindspore[f"{chain}{k}"]
        if theirs.ndim == 4 and theirs.shape[0] == 1:       # MindSpore's eager PIL Compose adds an axis
            theirs = theirs[0]
        assert fused.shape == plain.shape == theirs.shape and fused.dtype == theirs.dtype == np.float32
        if chain == "eval_pil":         # the same Pillow bytes; MindSpore's eager Normalize rounds its floats
            np.testing.assert_allclose(fused, theirs, atol=1e-4, rtol=0)       # its own way (1 ulp here)
        else:
            diff = np.abs(fused.astype(np.float64) - theirs) / LSB[chain]
            assert diff.mean() <= 2.5, (chain, k, diff.mean())      # decode <= 2 LSB on average, resize 1 LSB
        if chain == "eval_pil":
            np.testing.assert_array_equal(fused, plain)
        else:                       # Decode then Resize is the fused decode (DCT-scaled where the photo allows)
            assert (np.abs(fused.astype(np.float64) - plain) / LSB[chain]).mean() <= 3, (chain, k)
            decoded = run(ops[:1], data)                        # the rest, fused: bit for bit
            np.testing.assert_array_equal(run(fuse_ops(ops[1:]), decoded), run(ops[1:], decoded))
