"""Cross-check of the host ops against MindSpore 2.10's own CPU ops (OFFLOAD.md §2.3, point 3).

MindSpore runs once, in its own virtualenv (``RECORDIO_MINDSPORE_PYTHON``), on fixed images with
fixed (degenerate-range) parameters; without it the module skips. Tolerances: flips, crops, layout,
patches and casts exact; brightness/contrast/saturation/sharpness within 1 LSB (MindSpore rounds the
same formulas to nearest); hue within 16 LSB (MindSpore's 8-bit HSV round trip is lossy, ours is
exact float); resize within 1 LSB; Normalize/Rescale within 1e-4; decode within 2 LSB on average.
"""


import cv2
import numpy as np
import pytest

from recordio import transforms, vision
from recordio.keys import op_scope, row_scope
from ms_vision_script import oracle_image, run_script

pytestmark = pytest.mark.mindspore

SCRIPT = r'''
import sys
import numpy as np
import mindspore.dataset.transforms as T
import mindspore.dataset.vision as V
import mindspore as ms

data = dict(np.load(sys.argv[1]))
img, jpeg = data["img"], data["jpeg"]
out = {}
for k, a in enumerate((0.0, 0.37, 1.0, 1.9)):
    out[f"brightness{k}"] = V.RandomColorAdjust(brightness=(a, a))(img)
    out[f"contrast{k}"] = V.RandomColorAdjust(contrast=(a, a))(img)
    out[f"saturation{k}"] = V.RandomColorAdjust(saturation=(a, a))(img)
    out[f"sharpness{k}"] = V.RandomSharpness(degrees=(a, a))(img)
for k, h in enumerate((-0.5, -0.2, 0.0, 0.3)):
    out[f"hue{k}"] = V.RandomColorAdjust(hue=(h, h))(img)
out["hflip"] = V.RandomHorizontalFlip(1.0)(img)
out["vflip"] = V.RandomVerticalFlip(1.0)(img)
out["chw"] = V.HWC2CHW()(img)
out["center"] = V.CenterCrop((10, 13))(img)
out["center_pad"] = V.CenterCrop((40, 50))(img)
out["resize"] = V.Resize((20, 31))(img)
out["resize_short"] = V.Resize(25)(img)
out["normalize"] = V.Normalize([10.0, 20.0, 30.0], [2.0, 3.0, 4.0])(img)
out["rescale"] = V.Rescale(1.0 / 255, -0.5)(img)
out["cast"] = T.TypeCast(ms.uint8)(np.array([3.7, -1.2, 300.5, 0.0], np.float32))
for k, p in enumerate(V.SlicePatches(2, 3, V.SliceMode.PAD, 7)(img)):
    out[f"patch{k}"] = p
for k, p in enumerate(V.SlicePatches(2, 3, V.SliceMode.DROP)(img)):
    out[f"drop{k}"] = p
out["decode"] = V.Decode()(jpeg)
for mode in ("CONSTANT", "EDGE", "REFLECT", "SYMMETRIC"):
    out[f"pad4_{mode}"] = V.RandomCrop((37 + 2 + 4, 45 + 1 + 3), padding=[1, 2, 3, 4], fill_value=(5, 6, 7),
                                       padding_mode=getattr(V.Border, mode))(img)
out["pad2"] = V.RandomCrop((37 + 6, 45 + 4), padding=[2, 3])(img)
out["resize_tall"] = V.Resize(20)(np.ascontiguousarray(img.transpose(1, 0, 2)))
out["normalize_chw"] = V.Normalize([10.0, 20.0, 30.0], [2.0, 3.0, 4.0], is_hwc=False)(
    np.ascontiguousarray(img.transpose(2, 0, 1)))
np.savez(sys.argv[2], **out)
'''


@pytest.fixture(scope="module")
def mindspore(tmp_path_factory):
    img = oracle_image(np.random.default_rng(0))
    jpeg = np.frombuffer(cv2.imencode(".jpg", cv2.resize(img, (320, 240)))[1].tobytes(), np.uint8)
    return img, jpeg, run_script(tmp_path_factory.mktemp("ms_vision"), SCRIPT, {"img": img, "jpeg": jpeg})


def ours(op, img):
    with row_scope(1, 0, 0), op_scope(1):
        return op(img)


def diff(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    return np.abs(a.astype(np.float64) - b.astype(np.float64)).max()


@pytest.mark.parametrize("k,a", list(enumerate((0.0, 0.37, 1.0, 1.9))))
def test_brightness_contrast_saturation_sharpness_within_one_lsb(mindspore, k, a):
    img, _, ms = mindspore
    for name in ("brightness", "contrast", "saturation"):
        assert diff(ours(vision.RandomColorAdjust(**{name: (a, a)}), img), ms[f"{name}{k}"]) <= 1, name
    assert diff(ours(vision.RandomSharpness((a, a)), img), ms[f"sharpness{k}"]) <= 1


@pytest.mark.parametrize("k,h", list(enumerate((-0.5, -0.2, 0.0, 0.3))))
def test_hue_within_mindspores_8bit_error(mindspore, k, h):
    img, _, ms = mindspore
    assert diff(ours(vision.RandomColorAdjust(hue=(h, h)), img), ms[f"hue{k}"]) <= 16


def test_geometry_layout_and_casts_exact(mindspore):
    img, _, ms = mindspore
    assert np.array_equal(ours(vision.RandomHorizontalFlip(1.0), img), ms["hflip"])
    assert np.array_equal(ours(vision.RandomVerticalFlip(1.0), img), ms["vflip"])
    assert np.array_equal(vision.HWC2CHW()(img), ms["chw"])
    assert np.array_equal(vision.CenterCrop((10, 13))(img), ms["center"])
    assert np.array_equal(vision.CenterCrop((40, 50))(img), ms["center_pad"])
    assert np.array_equal(transforms.TypeCast("uint8")(np.array([3.7, -1.2, 300.5, 0.0], np.float32)), ms["cast"])


def test_slice_patches_exact(mindspore):
    img, _, ms = mindspore
    for mode, prefix in ((vision.SliceMode.PAD, "patch"), (vision.SliceMode.DROP, "drop")):
        patches = vision.SlicePatches(2, 3, mode, 7 if mode is vision.SliceMode.PAD else 0)(img)
        assert len(patches) == 6
        for k, p in enumerate(patches):
            assert np.array_equal(p, ms[f"{prefix}{k}"]), (prefix, k)


@pytest.mark.parametrize("mode", ["CONSTANT", "EDGE", "REFLECT", "SYMMETRIC"])
def test_random_crop_padding_exact(mindspore, mode):
    img, _, ms = mindspore
    op = vision.RandomCrop((43, 49), padding=[1, 2, 3, 4], fill_value=(5, 6, 7),
                           padding_mode=getattr(vision.Border, mode))
    assert np.array_equal(ours(op, img), ms[f"pad4_{mode}"])
    assert np.array_equal(ours(vision.RandomCrop((43, 49), padding=[2, 3]), img), ms["pad2"])


def test_resize_normalize_rescale(mindspore):
    img, _, ms = mindspore
    assert diff(vision.Resize((20, 31))(img), ms["resize"]) <= 1
    assert diff(vision.Resize(25)(img), ms["resize_short"]) <= 1
    assert diff(vision.Resize(20)(np.ascontiguousarray(img.transpose(1, 0, 2))), ms["resize_tall"]) <= 1
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    assert diff(vision.Normalize([10, 20, 30], [2, 3, 4], is_hwc=False)(chw), ms["normalize_chw"]) <= 1e-4
    assert diff(vision.Normalize([10, 20, 30], [2, 3, 4])(img), ms["normalize"]) <= 1e-4
    assert diff(vision.Rescale(1 / 255, -0.5)(img), ms["rescale"]) <= 1e-5


def test_decode(mindspore):
    _, jpeg, ms = mindspore
    out = vision.Decode()(jpeg)
    assert out.shape == ms["decode"].shape
    assert np.abs(out.astype(float) - ms["decode"]).mean() <= 2
