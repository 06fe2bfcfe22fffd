"""recordio.vision.fusion: fused neighbours give exactly the unfused results and keep op indices."""

import numpy as np
import pytest

from recordio import vision
from recordio.transforms import Compose
from recordio.vision.fusion import fuse_ops

MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]


def unfused(ops, img):
    for op in ops:
        img = op(img)
    return img


@pytest.mark.parametrize("shape,mean,std", [
    ((31, 17, 3), MEAN, STD), ((5, 6, 1), [3.0], [2.0]), ((7, 9, 4), [1, 2, 3, 4], [5, 6, 7, 8]),
    ((8, 8, 3), [100.0], [50.0]), ((1, 1, 3), MEAN, STD)])
def test_normalize_then_hwc2chw_fused_equals_unfused(shape, mean, std):
    img = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    ops = [vision.Normalize(mean, std), vision.HWC2CHW()]
    fused = fuse_ops(ops)
    got = unfused(fused, img)
    want = unfused(ops, img)
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape == (shape[2],) + shape[:2]
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("img,mean,std", [(np.arange(60, dtype=np.float32).reshape(4, 5, 3), MEAN, STD),
                                          (np.arange(20, dtype=np.uint8).reshape(4, 5), [100.0], [50.0]),
                                          (np.arange(60, dtype=np.uint16).reshape(4, 5, 3), MEAN, STD)])
def test_other_images_run_both_ops_as_written(img, mean, std):
    ops = [vision.Normalize(mean, std), vision.HWC2CHW()]
    got, want = unfused(fuse_ops(ops), img), unfused(ops, img)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_channel_count_mismatch_still_raises_normalize_error():
    ops = fuse_ops([vision.Normalize(MEAN, STD), vision.HWC2CHW()])
    with pytest.raises(ValueError, match="Normalize"):
        ops[0](np.zeros((4, 4, 2), np.uint8))


def test_fusion_keeps_length_and_leaves_other_ops():
    flip = vision.RandomHorizontalFlip()
    chw_first = vision.Normalize(MEAN, STD, is_hwc=False)
    ops = [vision.Decode(), vision.RandomResizedCrop(8), flip, vision.Normalize(MEAN, STD), vision.HWC2CHW(),
           chw_first, vision.HWC2CHW()]
    fused = fuse_ops(ops)
    assert len(fused) == len(ops)
    assert fused[2] is flip and fused[5] is chw_first and fused[6] is ops[6]
    assert fused[3].__name__ == "Normalize" and fused[4].__name__ == "HWC2CHW"
    assert type(fused[0]).__name__ == "_DeferredDecode"


def test_compose_fuses_and_matches_the_unfused_chain():
    img = np.random.default_rng(1).integers(0, 256, (40, 30, 3), dtype=np.uint8)
    ops = [vision.RandomHorizontalFlip(1.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    compose = Compose(ops)
    assert type(compose._ops[1]).__name__ == "_NormalizeToCHW"
    np.testing.assert_array_equal(compose(img), unfused(ops, img))
