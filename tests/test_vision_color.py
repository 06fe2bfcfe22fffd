"""Colour ops against an independent float64 numpy/OpenCV reference (OFFLOAD.md §1.2, §2.3)."""

import cv2
import numpy as np
import pytest

from recordio import vision
from recordio.keys import Keys, op_scope, row_scope

KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float64) / 13.0


def under(op, img, row=0, seed=1, epoch=0, uid=3):
    with row_scope(seed, epoch, row), op_scope(uid):
        return op(img)


# ---- the reference: float64, written from the formulas, OpenCV for grey / blur / HSV -------------

def ref_round(x):
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def ref_grey(img):
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float64)


def ref_brightness(img, a):
    return ref_round(img * a)


def ref_contrast(img, a):
    m = np.rint(ref_grey(img).mean())
    return ref_round((1 - a) * m + a * img.astype(np.float64))


def ref_saturation(img, a):
    return ref_round((1 - a) * ref_grey(img)[..., None] + a * img.astype(np.float64))


def ref_hue(img, h):
    hsv = cv2.cvtColor(img.astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)   # H in degrees
    hsv[..., 0] = np.mod(hsv[..., 0] + h * 360.0, 360.0)
    return ref_round(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB).astype(np.float64) * 255.0)


def ref_sharpness(img, a):
    blur = cv2.filter2D(img, -1, KERNEL)
    blur[0], blur[-1], blur[:, 0], blur[:, -1] = img[0], img[-1], img[:, 0], img[:, -1]
    return ref_round(a * img.astype(np.float64) + (1 - a) * blur)


REFS = {"brightness": ref_brightness, "contrast": ref_contrast, "saturation": ref_saturation, "hue": ref_hue}


def images():
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 256, (17, 23, 3), dtype=np.uint8)
    smooth = cv2.resize(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8), (31, 19), interpolation=cv2.INTER_CUBIC)
    return {"noise": noise, "smooth": smooth, "black": np.zeros((5, 6, 3), np.uint8),
            "white": np.full((5, 6, 3), 255, np.uint8), "constant": np.full((4, 4, 3), (200, 40, 90), np.uint8),
            "grey": np.full((3, 7, 3), 128, np.uint8)}


IMAGES = images()


def single(kind, value):
    neutral = {"brightness": (1, 1), "contrast": (1, 1), "saturation": (1, 1), "hue": (0, 0)}
    neutral[kind] = (value, value)
    return vision.RandomColorAdjust(**neutral)


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("kind,value", [("brightness", 0.0), ("brightness", 0.37), ("brightness", 1.0),
                                        ("brightness", 1.9), ("contrast", 0.0), ("contrast", 0.8),
                                        ("contrast", 2.0), ("saturation", 0.0), ("saturation", 0.37),
                                        ("saturation", 2.0), ("hue", -0.5), ("hue", -0.13), ("hue", 0.0),
                                        ("hue", 0.31), ("hue", 0.5)])
def test_single_adjustment_matches_reference_within_one_lsb(name, kind, value):
    img = IMAGES[name]
    out = under(single(kind, value), img)
    ref = REFS[kind](img, value)
    assert out.dtype == np.uint8 and out.shape == img.shape
    assert np.abs(out.astype(int) - ref).max() <= 1


def test_rounding_is_to_nearest_not_truncation():
    img = np.full((2, 2, 3), 3, np.uint8)
    assert under(single("brightness", 1.5), img).max() == 4          # 4.5 -> 4 (half to even)
    assert under(single("brightness", 1.7), img).max() == 5          # 5.1 -> 5
    assert under(single("brightness", 1.9), img).max() == 6          # 5.7 -> 6, truncation gives 5


def test_identity_factors_leave_the_image_unchanged_exactly():
    img = IMAGES["noise"]
    assert np.array_equal(under(vision.RandomColorAdjust(), img), img)
    assert np.array_equal(under(vision.RandomSharpness((1, 1)), img), img)


def test_hue_is_exact_float_hsv_not_an_8bit_round_trip():
    img = IMAGES["smooth"]
    # a full turn and a zero turn are the identity up to float rounding (MindSpore's 8-bit trip: 8-9 LSB)
    assert np.abs(under(single("hue", 0.0), img).astype(int) - img).max() <= 1
    pure = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]], np.uint8)
    rotated = under(single("hue", 1 / 3), pure)                     # red -> green -> blue -> red
    assert np.abs(rotated.astype(int) - np.roll(pure, -1, axis=1)).max() <= 1


@pytest.mark.parametrize("degree", [0.0, 0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("name", ["noise", "smooth", "constant"])
def test_sharpness_matches_reference(name, degree):
    img = IMAGES[name]
    out = under(vision.RandomSharpness((degree, degree)), img)
    assert np.abs(out.astype(int) - ref_sharpness(img, degree)).max() <= 1


@pytest.mark.parametrize("shape", [(3, 3, 3), (2, 2, 3), (1, 5, 3), (3, 3), (6, 4)])
def test_sharpness_borders_unchanged(shape):
    img = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    out = under(vision.RandomSharpness((2.0, 2.0)), img)
    assert out.shape == img.shape
    for edge in (np.s_[0], np.s_[-1], np.s_[:, 0], np.s_[:, -1]):
        assert np.array_equal(out[edge], img[edge])
    if shape[:2] == (3, 3):
        s = img[..., None] if img.ndim == 2 else img
        blur = np.rint((s.astype(float).sum((0, 1)) + 4.0 * s[1, 1]) / 13)
        expect = np.clip(np.rint(2.0 * s[1, 1] - blur), 0, 255)
        assert np.array_equal(out.reshape(3, 3, -1)[1, 1], expect)


def test_sharpness_kernel_is_1_5_1():
    img = np.zeros((5, 5), np.uint8)
    img[2, 2] = 130
    blurred = under(vision.RandomSharpness((0.0, 0.0)), img)
    expect = np.zeros((5, 5), np.uint8)
    expect[1:4, 1:4] = 10
    expect[2, 2] = 50
    assert np.array_equal(blurred, expect)


def test_float_input_is_clamped_not_rounded():
    img = IMAGES["noise"].astype(np.float32)
    out = under(single("brightness", 1.3), img)
    assert out.dtype == np.float32
    assert np.abs(out - np.clip(img * 1.3, 0, 255)).max() <= 0.02
    out = under(single("saturation", 0.37), img)
    grey = img @ np.array([0.299, 0.587, 0.114])
    assert np.abs(out - np.clip(0.63 * grey[..., None] + 0.37 * img, 0, 255)).max() <= 0.02


def test_color_order_is_random_per_image_and_each_result_follows_its_order():
    op = vision.RandomColorAdjust(brightness=(1.8, 1.8), contrast=(0.0, 0.0))
    img = IMAGES["smooth"]
    b_then_c = ref_contrast(ref_brightness(img, 1.8), 0.0)
    c_then_b = ref_brightness(ref_contrast(img, 0.0), 1.8)
    assert not np.array_equal(b_then_c, c_then_b)
    seen = {"bc": 0, "cb": 0}
    for row in range(200):
        order = list(op.draw(Keys(1, 0, [row], 3))["order"][0])
        expect, key = (b_then_c, "bc") if order.index(0) < order.index(1) else (c_then_b, "cb")
        assert np.abs(under(op, img, row=row).astype(int) - expect).max() <= 1
        seen[key] += 1
    assert 70 <= seen["bc"] <= 130, seen


def test_all_24_orders_occur_and_factors_cover_their_ranges():
    op = vision.RandomColorAdjust(0.4, 0.3, 0.2, 0.1)
    params = op.draw(Keys(5, 1, np.arange(2000), 11))
    assert len({tuple(p) for p in params["order"]}) == 24
    f = params["factors"]
    for k, (lo, hi) in enumerate([(0.6, 1.4), (0.7, 1.3), (0.8, 1.2), (-0.1, 0.1)]):
        assert lo <= f[:, k].min() < lo + 0.01 and hi - 0.01 < f[:, k].max() < hi


def test_full_chain_matches_reference_in_drawn_order():
    op = vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)
    img = IMAGES["smooth"]
    for row in range(20):
        p = op.draw(Keys(1, 0, [row], 3))
        expect = img
        for k in p["order"][0]:
            expect = REFS[("brightness", "contrast", "saturation", "hue")[k]](expect, p["factors"][0, k])
        assert np.abs(under(op, img, row=row).astype(int) - expect).max() <= 2


def test_same_keys_same_result_other_rows_differ():
    op = vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)
    img = IMAGES["noise"]
    assert np.array_equal(under(op, img, row=4), under(op, img, row=4))
    assert not np.array_equal(under(op, img, row=4), under(op, img, row=5))


@pytest.mark.parametrize("kwargs,exc", [
    ({"brightness": -0.1}, ValueError), ({"hue": 0.6}, ValueError), ({"hue": (-0.6, 0.1)}, ValueError),
    ({"contrast": (1.5, 0.5)}, ValueError), ({"saturation": "x"}, TypeError), ({"brightness": (1, 2, 3)}, TypeError),
])
def test_color_adjust_rejects_bad_parameters(kwargs, exc):
    with pytest.raises(exc):
        vision.RandomColorAdjust(**kwargs)


def test_scalar_factor_becomes_range():
    op = vision.RandomColorAdjust(brightness=0.4, contrast=1.5, hue=0.2)
    assert op.brightness == (0.6, 1.4) and op.contrast == (0, 2.5) and op.hue == (-0.2, 0.2)


@pytest.mark.parametrize("degrees", [(-1, 1), (2, 1), (1,), "ab"])
def test_sharpness_rejects_bad_degrees(degrees):
    with pytest.raises((TypeError, ValueError)):
        vision.RandomSharpness(degrees)


def test_color_adjust_needs_three_channels():
    with pytest.raises(ValueError, match="<H,W,3>"):
        under(vision.RandomColorAdjust(0.5), np.zeros((4, 4), np.uint8))


def test_normalize_and_rescale():
    img = IMAGES["noise"]
    out = vision.Normalize([10, 20, 30], [2, 4, 8])(img)
    ref = (img.astype(np.float64) - [10, 20, 30]) / [2, 4, 8]
    assert out.dtype == np.float32 and np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    out = vision.Normalize([10, 20, 30], [2, 4, 8], is_hwc=False)(chw)
    assert np.allclose(out, ref.transpose(2, 0, 1), rtol=1e-6)
    assert np.allclose(vision.Normalize([5], [2])(img[..., 0]), (img[..., 0] - 5.0) / 2)
    out = vision.Rescale(1 / 255, -0.5)(img)
    assert out.dtype == np.float32 and np.allclose(out, img / 255 - 0.5, atol=1e-6)


@pytest.mark.parametrize("mean,std", [([1, 2], [1]), ([256], [1]), ([1], [0]), ([1], [256]), ([], [])])
def test_normalize_rejects_bad_parameters(mean, std):
    with pytest.raises((TypeError, ValueError)):
        vision.Normalize(mean, std)


def test_normalize_channel_mismatch_names_shapes():
    with pytest.raises(ValueError, match="2 values.*3 channels"):
        vision.Normalize([1, 2], [1, 1])(IMAGES["noise"])


@pytest.mark.parametrize("shape,mean", [((5, 6), [3]), ((5, 6, 1), [3]), ((5, 6, 4), [1, 2, 3, 4]), ((5, 6, 4), [9])])
def test_normalize_uint8_fast_path_equals_float_formula(shape, mean):
    img = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    std = [2.5] * len(mean)
    out = vision.Normalize(mean, std)(img)
    expect = (img.astype(np.float32) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    assert out.shape == img.shape and out.dtype == np.float32 and np.array_equal(out, expect)


def test_vectorised_draws_equal_the_documented_scalar_draws():
    op = vision.RandomColorAdjust(0.4, 0.3, (0.5, 1.5), 0.1)
    keys = Keys(3, 2, np.arange(50), 17)
    params = op.draw(keys)
    for k, (lo, hi) in enumerate(op.ranges):
        assert np.array_equal(params["factors"][:, k], keys.uniform(k, lo, hi))
    assert np.array_equal(params["order"], keys.permutation(4, 4))
    for row in range(50):                   # the one-row path (Python floats) gives the batched values
        one = op.draw(Keys(3, 2, [row], 17))
        assert np.array_equal(one["factors"][0], params["factors"][row])
        assert np.array_equal(one["order"][0], params["order"][row]) and one["order"].dtype == params["order"].dtype


def test_sharpness_many_channels_uses_the_same_formula():
    img = np.random.default_rng(4).integers(0, 256, (6, 7, 6), dtype=np.uint8)
    out = under(vision.RandomSharpness((1.7, 1.7)), img)
    for c in (0, 5):
        assert np.array_equal(out[..., c], under(vision.RandomSharpness((1.7, 1.7)), img[..., c].copy()))
