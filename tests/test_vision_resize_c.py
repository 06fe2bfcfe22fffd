"""The compiled bilinear resize (recordio.vision._kernels.resize) gives cv2.resize's INTER_LINEAR bytes:
on random sizes (upscales, reductions, odd and one-pixel sizes), views with padded rows, windows of the
output, in its AVX-512, AVX2 and scalar loops; and the ops that resize take it only where it is exact."""

import os

import cv2
import numpy as np
import pytest

from recordio import vision
from recordio.vision import resampling
from recordio.vision.resampling import Inter, resize

kernels = resampling.compiled_resize()
needs_c = pytest.mark.skipif(kernels is None, reason="the C kernels are not built")


def test_resize_kernel_is_built_in_ci():
    if os.environ.get("CI") and kernels is None:
        pytest.fail("recordio.vision._kernels did not build (setup.py), or its resize differs from OpenCV: "
                    "the compiled resize is untested")


@pytest.fixture(params=["avx512", "avx2", "scalar"])
def loops(request):
    """Each test runs with the AVX-512 loops (where the CPU has them), the AVX2 ones only, and neither."""
    was_simd = kernels.use_simd(request.param != "scalar")
    was_wide = kernels.use_avx512(request.param == "avx512")
    yield request.param
    kernels.use_simd(was_simd)
    kernels.use_avx512(was_wide)


def reference(img, h, w):
    c = img.shape[2]
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR).reshape(h, w, c)


def compiled(img, h, w, window=None):
    y, x, oh, ow = window or (0, 0, h, w)
    out = np.empty((oh, ow, img.shape[2]), np.uint8)
    kernels.resize(img, out, h, w, y, x)
    return out


@needs_c
def test_random_sizes_and_windows_give_cv2_bytes(loops):
    rng = np.random.default_rng(41)
    checked = 0
    while checked < 400:
        sh, sw, h, w = (int(v) for v in rng.integers(1, 260, 4))
        c = int(rng.choice([1, 3, 3, 3, 4]))
        if resampling.opencv_halves(sw, w) and resampling.opencv_halves(sh, h):
            continue                             # OpenCV's INTER_AREA case: the Python side never asks
        padded = rng.integers(0, 256, (sh + 1, sw + 3, c), dtype=np.uint8)
        img = padded[1:, 2:-1]                   # rows longer than the image: a view, as decode boxes are
        want = reference(img, h, w)
        np.testing.assert_array_equal(compiled(img, h, w), want, err_msg=f"{(sh, sw, c)} -> {(h, w)}")
        y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
        window = (y, x, int(rng.integers(1, h - y + 1)), int(rng.integers(1, w - x + 1)))
        np.testing.assert_array_equal(compiled(img, h, w, window), want[y:y + window[2], x:x + window[3]],
                                      err_msg=f"{(sh, sw, c)} -> {(h, w)}, window {window}")
        checked += 1


@needs_c
@pytest.mark.parametrize("sh, sw, h, w", [
    (120, 130, 224, 224), (300, 301, 224, 224), (400, 380, 224, 224),       # the train chain's crop boxes
    (440, 500, 256, 290), (375, 500, 256, 341),                              # the eval chain's Resize(256)
    (1, 1, 7, 9), (7, 9, 1, 1), (2, 900, 3, 224), (900, 2, 224, 3),          # edges: one pixel, thin strips
    (224, 224, 113, 600), (100, 3000, 100, 1000), (450, 480, 224, 224),      # reductions by 2 to 3
    (50, 2000, 50, 300), (31, 4001, 17, 97),                                 # past the byte permutes: gathers
])
def test_sizes_the_chains_meet_give_cv2_bytes(loops, sh, sw, h, w):
    rng = np.random.default_rng(sh * 7 + sw)
    img = rng.integers(0, 256, (sh, sw, 3), dtype=np.uint8)
    np.testing.assert_array_equal(compiled(img, h, w), reference(img, h, w))


@needs_c
def test_photo_gives_cv2_bytes(loops):
    from skimage import data
    img = np.ascontiguousarray(data.astronaut())            # smooth areas and edges, not only noise
    for h, w in [(224, 224), (256, 256), (97, 311)]:
        np.testing.assert_array_equal(compiled(img, h, w), reference(img, h, w))


@needs_c
def test_bad_arguments_are_refused():
    img = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="window"):
        kernels.resize(img, np.empty((5, 5, 3), np.uint8), 8, 8, 4, 0)     # runs past the output
    with pytest.raises(ValueError, match="window"):
        kernels.resize(img, np.empty((5, 5, 1), np.uint8), 8, 8, 0, 0)     # channels differ
    with pytest.raises(ValueError, match="adjacent"):
        kernels.resize(img[:, ::-1], np.empty((5, 5, 3), np.uint8), 5, 5, 0, 0)
    huge = np.lib.stride_tricks.as_strided(img, shape=(1, 800_000_000, 3), strides=(2_400_000_000, 3, 1))
    with pytest.raises(ValueError, match="too long"):           # refused before a byte of it is read
        kernels.resize(huge, np.empty((1, 5, 3), np.uint8), 1, 5, 0, 0)


def test_resize_matches_cv2_for_every_layout_the_ops_pass():
    """The ops' resize takes the compiled loops where they apply and cv2 elsewhere: same bytes."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (90, 120, 3), dtype=np.uint8)
    cases = [img, img[:, ::-1], img[::-1], img[:, :, 0], np.ascontiguousarray(img[:, :, 1]),
             img.astype(np.float32), img[::2, ::3], img[:, :, :2]]
    for src in cases:
        want = cv2.resize(src, (77, 61), interpolation=cv2.INTER_LINEAR).reshape(61, 77, *src.shape[2:])
        np.testing.assert_array_equal(resize(src, 61, 77, Inter.LINEAR), want)
        np.testing.assert_array_equal(resize(src, 61, 77, Inter.LINEAR, (3, 5, 50, 60)), want[3:53, 5:65])
    half = cv2.resize(img, (60, 45), interpolation=cv2.INTER_LINEAR)   # OpenCV averages 2x2 blocks here
    np.testing.assert_array_equal(resize(img, 45, 60, Inter.LINEAR), half)
    assert resampling.opencv_halves(120, 60) and not resampling.opencv_halves(121, 60)


def test_resize_op_and_random_resized_crop_give_cv2_bytes():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (333, 500, 3), dtype=np.uint8)
    got = vision.Resize(256)(img)
    np.testing.assert_array_equal(got, cv2.resize(img, (384, 256), interpolation=cv2.INTER_LINEAR))
    whole = vision.RandomResizedCrop((200, 300), scale=(1, 1), ratio=(500 / 333, 500 / 333))   # the box: all of it
    np.testing.assert_array_equal(whole(img), cv2.resize(img, (300, 200), interpolation=cv2.INTER_LINEAR))


@needs_c
def test_a_resize_that_differs_from_opencv_turns_itself_off(monkeypatch):
    """If this OpenCV resized differently, the self-check fails, warns once, and cv2.resize does the work."""
    resampling.compiled_resize.cache_clear()
    real = cv2.resize
    monkeypatch.setattr(cv2, "resize", lambda *a, **k: real(*a, **k) ^ np.uint8(1))
    try:
        with pytest.warns(RuntimeWarning, match="differs from OpenCV"):
            assert resampling.compiled_resize() is None
        img = np.zeros((10, 12, 3), np.uint8)
        assert (resize(img, 7, 9, Inter.LINEAR) == 1).all()              # cv2's (here altered) bytes
    finally:
        monkeypatch.undo()
        resampling.compiled_resize.cache_clear()
    assert resampling.compiled_resize() is kernels


@needs_c
def test_a_part_around_the_window_gives_the_whole_images_bytes(loops):
    """The window of a whole image's resize, read from only the part that source_span says it reads (a
    decoded box around a centre crop): cv2's bytes of resizing everything, then cropping."""
    rng = np.random.default_rng(11)
    for _ in range(150):
        H, W, h, w = (int(v) for v in rng.integers(2, 300, 4))
        img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
        y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
        window = (y, x, int(rng.integers(1, h - y + 1)), int(rng.integers(1, w - x + 1)))
        (top, bottom), (left, right) = (resampling.source_span(H, h, y, window[2]),
                                        resampling.source_span(W, w, x, window[3]))
        part = img[top:bottom + 1, left:right + 1]
        got = resampling.resize_part(part, (H, W, top, left), h, w, window)
        if resampling.opencv_halves(W, w) and resampling.opencv_halves(H, h):
            assert got is None                       # OpenCV's INTER_AREA case: the caller resizes it all
            continue
        want = reference(img, h, w)[y:y + window[2], x:x + window[3]]
        np.testing.assert_array_equal(got, want, err_msg=f"{(H, W)} -> {(h, w)}, window {window}")


@needs_c
def test_a_part_that_misses_pixels_the_window_reads_is_refused():
    img = np.zeros((100, 100, 3), np.uint8)
    out = np.empty((50, 50, 3), np.uint8)
    with pytest.raises(ValueError, match="outside the part"):
        kernels.resize(img[10:60, 10:60], out, 100, 100, 0, 0, 100, 100, 10, 10)   # the window starts at 0
    with pytest.raises(ValueError, match="not inside"):
        kernels.resize(img[:60, :60], out, 100, 100, 0, 0, 100, 100, 50, 0)
