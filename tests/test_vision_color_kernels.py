"""The OpenCV fast paths of the colour kernels give the values of the plain float32 numpy sequence."""

import cv2
import numpy as np
import pytest

from recordio.vision import color_kernels as ck

F32 = np.float32


def plain_round(x):
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def uint8_images(seed, count=40, shape=(37, 53, 3)):
    """Random images with channel ties, grey images and constant ones (every hue sector and mask case)."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        if k % 5 == 1:
            img[..., 1] = img[..., 0]
        elif k % 5 == 2:
            img[..., 2] = img[..., 1]
        elif k % 5 == 3:
            img[:] = img[..., :1]
        elif k % 5 == 4:
            img[:] = 255 * (k % 2)
        yield img


def test_round_u8_equals_rint_clip_astype_on_halves_and_neighbours():
    halves = np.arange(-600, 1200, dtype=F32) / F32(2)
    near = np.concatenate([np.nextafter(halves, F32(-1e9)), np.nextafter(halves, F32(1e9))])
    x = np.concatenate([halves, near, np.random.default_rng(0).uniform(-300, 600, 5000).astype(F32)])
    for shape in [(x.size,), (x.size // 4, 4), (x.size // 12, 4, 3)]:
        v = x[:np.prod(shape)].reshape(shape)
        np.testing.assert_array_equal(ck.round_u8(v.copy()), plain_round(v))


def test_round_u8_other_dtypes_and_empty():
    np.testing.assert_array_equal(ck.round_u8(np.array([2.5, -3.0, 300.7])), [2, 0, 255])
    assert ck.round_u8(np.zeros((0, 3), F32)).shape == (0, 3)


@pytest.mark.parametrize("factor", [0.0, 0.6, 1.0, 1.37, 2.0])
def test_saturation_uint8_path_equals_float32_sequence(factor):
    a = F32(factor)
    for img in uint8_images(1):
        x = img.astype(F32) * a + (ck.grey_u8(img).astype(F32) * (F32(1) - a))[..., None]
        np.testing.assert_array_equal(ck.adjust_saturation(img, factor), plain_round(x))


def test_hue_sector_u8_equals_float_planes():
    for img in uint8_images(2):
        fast = ck.hue_sector_u8(img)
        plain = ck.hue_sector(*(np.ascontiguousarray(img[..., c], F32) for c in range(3)))
        for got, want in zip(fast, plain):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("factor", [-0.5, -0.1, 0.0, 0.03, 0.25, 0.5])
def test_hue_uint8_equals_rounded_float_path(factor):
    for img in uint8_images(3):
        want = plain_round(ck.adjust_hue(img.astype(F32), factor))
        np.testing.assert_array_equal(ck.adjust_hue(img, factor), want)


def test_hsv_to_rgb_wrap_is_minus_six_at_and_above_six():
    h = np.array([[0.0, np.nextafter(F32(1 / 6), F32(0)), 1 / 6, 0.5, 5 / 6, np.nextafter(F32(1), F32(0))]], F32)
    cr, v = np.full_like(h, 100), np.full_like(h, 200)
    want = []
    for n in (5.0, 3.0, 1.0):
        k = h * F32(6) + F32(n)
        k = np.where(k >= 6, k - F32(6), k)
        want.append(v - cr * np.clip(np.minimum(k, F32(4) - k), 0, 1))
    for got, w in zip(ck.hsv_to_rgb(h, cr, v), want):
        np.testing.assert_array_equal(got, w)
    assert cv2.threshold(np.array([[6.0]], F32), ck._BELOW_SIX, 6.0, cv2.THRESH_BINARY)[1][0, 0] == 6.0


@pytest.mark.parametrize("shape", [(1, 1, 3), (1, 2, 3), (4, 1, 3), (1, 4, 3), (2, 2, 3), (16, 1, 3)])
def test_tiny_images_take_the_same_values(shape):
    """OpenCV reads a 1x1 (or 4x1) array next to a scalar as a scalar: tiny images must still work."""
    for img in uint8_images(4, count=10, shape=shape):
        want = plain_round(img.astype(F32) * F32(1.3) + (ck.grey_u8(img).astype(F32) * (F32(1) - F32(1.3)))[..., None])
        np.testing.assert_array_equal(ck.adjust_saturation(img, 1.3), want)
        np.testing.assert_array_equal(ck.adjust_hue(img, 0.2), plain_round(ck.adjust_hue(img.astype(F32), 0.2)))
        x = img.astype(F32) * F32(1.01) - F32(1.5)
        np.testing.assert_array_equal(ck.round_u8(x.copy()), plain_round(x))
