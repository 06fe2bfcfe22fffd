"""Geometric ops: Resize, crops, flips, HWC2CHW, SlicePatches, and their parameter checks."""

import cv2
import numpy as np
import pytest

from recordio import vision
from recordio.keys import Keys, op_scope, row_scope
from recordio.vision.resampling import resized_crop_box

IMG = np.random.default_rng(3).integers(0, 256, (30, 40, 3), dtype=np.uint8)


def under(op, img, row=0, seed=1, epoch=0, uid=9):
    with row_scope(seed, epoch, row), op_scope(uid):
        return op(img)


@pytest.mark.parametrize("inter,flag", [(vision.Inter.NEAREST, cv2.INTER_NEAREST),
                                        (vision.Inter.BILINEAR, cv2.INTER_LINEAR),
                                        (vision.Inter.BICUBIC, cv2.INTER_CUBIC),
                                        (vision.Inter.AREA, cv2.INTER_AREA)])
def test_resize_pair_matches_opencv(inter, flag):
    out = vision.Resize((12, 17), inter)(IMG)
    assert np.array_equal(out, cv2.resize(IMG, (17, 12), interpolation=flag))


@pytest.mark.parametrize("shape,size,expect", [((30, 40, 3), 15, (15, 20)), ((40, 30, 3), 15, (20, 15)),
                                                ((30, 40), 10, (10, 13)), ((7, 7, 3), 7, (7, 7))])
def test_resize_int_sets_shorter_side(shape, size, expect):
    assert vision.Resize(size)(np.zeros(shape, np.uint8)).shape[:2] == expect


def test_resize_keeps_single_channel_axis():
    assert vision.Resize((5, 6))(np.zeros((10, 12, 1), np.uint8)).shape == (5, 6, 1)


def test_center_crop_and_padding():
    out = vision.CenterCrop((10, 20))(IMG)
    assert np.array_equal(out, IMG[10:20, 10:30])
    small = np.ones((2, 3, 3), np.uint8)
    padded = vision.CenterCrop(5)(small)
    assert padded.shape == (5, 5, 3) and padded.sum() == small.sum() and np.all(padded[2:4, 1:4] == 1)


def test_random_crop_is_a_window_of_the_image_and_varies_by_row():
    op = vision.RandomCrop((8, 9))
    origins = set()
    for row in range(40):
        out = under(op, IMG, row=row)
        hits = [(y, x) for y in range(23) for x in range(32) if np.array_equal(IMG[y:y + 8, x:x + 9], out)]
        assert hits
        origins.add(hits[0])
    assert len(origins) > 20
    assert np.array_equal(under(op, IMG, row=3), under(op, IMG, row=3))


@pytest.mark.parametrize("mode,cv_mode", [(vision.Border.CONSTANT, cv2.BORDER_CONSTANT),
                                          (vision.Border.EDGE, cv2.BORDER_REPLICATE),
                                          (vision.Border.REFLECT, cv2.BORDER_REFLECT_101),
                                          (vision.Border.SYMMETRIC, cv2.BORDER_REFLECT)])
def test_random_crop_padding_modes(mode, cv_mode):
    op = vision.RandomCrop((34, 48), padding=(4, 2), fill_value=7, padding_mode=mode)  # left/right 4, top/bottom 2
    padded = cv2.copyMakeBorder(IMG, 2, 2, 4, 4, cv_mode, value=[7, 7, 7, 7])
    assert np.array_equal(under(op, IMG), padded)


def test_random_crop_pad_if_needed_and_too_small():
    assert under(vision.RandomCrop(50, pad_if_needed=True), IMG).shape == (50, 50, 3)
    with pytest.raises(ValueError, match="larger than"):
        under(vision.RandomCrop(50), IMG)


def test_resized_crop_box_stays_inside_and_respects_ratio():
    for row in range(200):
        y, x, h, w = resized_crop_box(Keys(1, 0, [row], 5), 300, 400, (0.08, 1.0), (0.75, 4 / 3), 10)
        assert 0 <= y and y + h <= 300 and 0 <= x and x + w <= 400
        assert 0.07 * 120000 <= h * w <= 120000 * 1.01
        assert 0.7 <= w / h <= 1.4


def test_resized_crop_fallback_is_centred():
    y, x, h, w = resized_crop_box(Keys(1, 0, [0], 5), 10, 100, (0.9, 1.0), (1.0, 1.0), 3)
    assert (y, x, h, w) == (0, 45, 10, 10)


def test_random_resized_crop_equals_crop_then_resize():
    op = vision.RandomResizedCrop((16, 12))
    for row in range(5):
        with row_scope(1, 0, row), op_scope(9):
            (y, x, h, w), size = op.region(30, 40)
        expect = cv2.resize(IMG[y:y + h, x:x + w], (12, 16), interpolation=cv2.INTER_LINEAR)
        assert np.array_equal(under(op, IMG, row=row), expect)


@pytest.mark.parametrize("op_cls,axis", [(vision.RandomHorizontalFlip, 1), (vision.RandomVerticalFlip, 0)])
def test_flips(op_cls, axis):
    assert np.array_equal(under(op_cls(1.0), IMG), np.flip(IMG, axis))
    assert np.array_equal(under(op_cls(0.0), IMG), IMG)
    gray = IMG[..., 0]
    assert np.array_equal(under(op_cls(1.0), gray), np.flip(gray, axis))
    flips = sum(not np.array_equal(under(op_cls(0.3), IMG, row=r), IMG) for r in range(1000))
    assert abs(flips - 300) < 4 * (1000 * 0.3 * 0.7) ** 0.5


def test_hwc2chw():
    out = vision.HWC2CHW()(IMG)
    assert out.shape == (3, 30, 40) and np.array_equal(out[1], IMG[..., 1]) and out.flags.c_contiguous
    assert vision.HWC2CHW()(IMG[..., 0]) is not None and vision.HWC2CHW()(IMG[..., 0]).shape == (30, 40)
    with pytest.raises(ValueError):
        vision.HWC2CHW()(np.zeros((1, 2, 3, 4)))


def test_slice_patches_pad_and_drop():
    img = np.arange(7 * 5 * 3, dtype=np.uint8).reshape(7, 5, 3)
    patches = vision.SlicePatches(2, 2, vision.SliceMode.PAD, 9)(img)
    assert len(patches) == 4 and all(p.shape == (4, 3, 3) for p in patches)
    assert np.array_equal(patches[0], img[:4, :3]) and np.array_equal(patches[1][:, :2], img[:4, 3:])
    assert np.all(patches[1][:, 2] == 9) and np.all(patches[3][3] == 9)
    dropped = vision.SlicePatches(2, 2, vision.SliceMode.DROP)(img)
    assert all(p.shape == (3, 2, 3) for p in dropped) and np.array_equal(dropped[3], img[3:6, 2:4])
    whole = np.concatenate([np.concatenate(patches[i * 2:i * 2 + 2], axis=1) for i in range(2)])
    assert np.array_equal(whole[:7, :5], img)


@pytest.mark.parametrize("make", [
    lambda: vision.Resize(0), lambda: vision.Resize((1, 2, 3)), lambda: vision.Resize(4, "linear"),
    lambda: vision.RandomCrop(4, padding=-1), lambda: vision.RandomCrop(4, padding=(1, 2, 3)),
    lambda: vision.RandomCrop(4, fill_value=256), lambda: vision.RandomCrop(4, pad_if_needed=1),
    lambda: vision.RandomResizedCrop(4, scale=(1.0, 0.5)), lambda: vision.RandomResizedCrop(4, ratio=(0, 1)),
    lambda: vision.RandomResizedCrop(4, max_attempts=0), lambda: vision.RandomHorizontalFlip(1.5),
    lambda: vision.RandomVerticalFlip("a"), lambda: vision.SlicePatches(0, 1),
    lambda: vision.SlicePatches(1, 1, "pad"), lambda: vision.SlicePatches(fill_value=-1),
    lambda: vision.CenterCrop(True),
])
def test_bad_parameters_raise_at_construction(make):
    with pytest.raises((TypeError, ValueError)):
        make()


def test_ops_reject_non_images_with_the_op_name():
    with pytest.raises(TypeError, match="Resize"):
        vision.Resize(4)([1, 2, 3])
    with pytest.raises(ValueError, match="CenterCrop.*shape"):
        vision.CenterCrop(4)(np.zeros(5, np.uint8))


def test_resized_crop_box_draws_are_the_documented_scalar_draws():
    import math
    keys = Keys(2, 1, [13], 8)
    y, x, h, w = resized_crop_box(keys, 300, 400, (0.08, 1.0), (0.75, 4 / 3), 10)
    for k in range(10):
        area = 120000 * keys.uniform(4 * k, 0.08, 1.0)[0]
        aspect = math.exp(keys.uniform(4 * k + 1, math.log(0.75), math.log(4 / 3))[0])
        ww, hh = int(round(math.sqrt(area * aspect))), int(round(math.sqrt(area / aspect)))
        if ww <= 400 and hh <= 300:
            assert (h, w) == (hh, ww)
            assert y == keys.integers(4 * k + 2, 0, 300 - hh + 1)[0] and x == keys.integers(4 * k + 3, 0, 401 - ww)[0]
            break
