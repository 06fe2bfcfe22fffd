"""The optional C colour kernels give the bytes of the numpy/OpenCV kernels (on every RGB colour for
hue and saturation), and the ops give the same values with and without them."""

import itertools
import os

import numpy as np
import pytest

from recordio import vision
from recordio.vision import color_kernels as ck
from recordio.vision import fusion

F32 = np.float32

needs_c = pytest.mark.skipif(ck._kernels is None, reason="the C kernels are not built")


def test_c_kernels_are_built_in_ci():
    """CI installs with a compiler: a silently failed build would leave only the numpy path tested."""
    if os.environ.get("CI") and ck._kernels is None:
        pytest.fail("recordio.vision._kernels did not build (setup.py); the C paths are untested")


@pytest.fixture(scope="module")
def every_colour():
    c = np.arange(2 ** 24, dtype=np.uint32)
    return np.stack([(c >> 16) & 255, (c >> 8) & 255, c & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setattr(ck, "_kernels", None)          # fusion picks its path from the same name


@pytest.fixture(params=["simd", "scalar"])
def simd(request):
    """Each test with this fixture runs twice: with the AVX2 loops where the CPU has them, and without."""
    kernels = ck._kernels                   # a test may swap the name out (numpy path) before teardown
    was = kernels.use_simd(request.param == "simd")
    yield request.param
    kernels.use_simd(was)


def test_simd_loops_run_where_the_cpu_has_avx2():
    """The AVX2 forms are picked on a CPU that has AVX2 (else the simd runs below test the scalar loops)."""
    if ck._kernels is None or "avx2" not in open("/proc/cpuinfo").read():
        pytest.skip("no C kernels or no AVX2 here")
    assert ck._kernels.use_simd(True) is True


def _numpy(fn, *args):
    saved = ck._kernels
    ck._kernels = None
    try:
        return fn(*args)
    finally:
        ck._kernels = saved


@pytest.mark.slow
@needs_c
@pytest.mark.parametrize("factor", [-0.5, -0.1, 0.01, 1 / 6, 0.4999])
def test_hue_on_every_colour(every_colour, factor):
    want = np.clip(np.rint(ck.adjust_hue(every_colour.astype(F32), factor)), 0, 255).astype(np.uint8)
    got = every_colour.copy()
    ck._kernels.adjust(got, b"\x03", 1.0, 1.0, 1.0, factor)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_numpy(ck.adjust_hue, every_colour, factor), want)


@needs_c
@pytest.mark.parametrize("factor", [0.0, 0.6, 1.37])
def test_saturation_on_every_colour(every_colour, factor, simd):
    a = F32(factor)
    grey = ck.grey_formula(every_colour).astype(F32)
    want = np.clip(np.rint(every_colour.astype(F32) * a + (grey * (F32(1) - a))[..., None]), 0, 255)
    got = every_colour.copy()
    ck._kernels.adjust(got, b"\x02", 1.0, 1.0, factor, 0.0)
    np.testing.assert_array_equal(got, want.astype(np.uint8))


@needs_c
@pytest.mark.parametrize("factor", [0.0, 0.6, 1.0, 1.4])
@pytest.mark.parametrize("k", [0, 1])
def test_brightness_and_contrast_equal_numpy(k, factor, simd):
    rng = np.random.default_rng(k)
    for shape in [(1, 1, 3), (5, 7, 3), (64, 48, 3)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        got = img.copy()
        ck._kernels.adjust(got, bytes([k]), factor, factor, 1.0, 0.0)
        np.testing.assert_array_equal(got, _numpy(ck.ADJUST[k], img, factor))


@needs_c
def test_adjust_all_equals_numpy_in_every_order_and_leaves_input_alone():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (31, 29, 3), dtype=np.uint8)
    before = img.copy()
    factors = np.array([1.3, 0.7, 1.6, -0.2])
    for order in [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1), (1, 3, 0, 2)]:
        for enabled in [(True,) * 4, (False, True, True, False)]:
            got = ck.adjust_all(img, factors, order, enabled)
            np.testing.assert_array_equal(got, _numpy(ck.adjust_all, img, factors, order, enabled))
    np.testing.assert_array_equal(img, before)


@needs_c
def test_adjust_all_takes_non_contiguous_views():
    img = np.random.default_rng(4).integers(0, 256, (40, 40, 3), dtype=np.uint8)[::2, ::-1]
    got = ck.adjust_all(img, np.array([1.2, 0.8, 1.1, 0.3]), (0, 1, 2, 3))
    np.testing.assert_array_equal(got, _numpy(ck.adjust_all, np.ascontiguousarray(img),
                                              np.array([1.2, 0.8, 1.1, 0.3]), (0, 1, 2, 3)))


@needs_c
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("view", ["plain", "flipped", "strided"])
def test_normalize_to_chw_equals_numpy_path(channels, view, monkeypatch, simd):
    img = np.random.default_rng(channels).integers(0, 256, (9, 11, channels), dtype=np.uint8)
    img = {"plain": img, "flipped": img[::-1, ::-1], "strided": img[::2, 1::3]}[view]
    op = fusion.fuse_ops([vision.Normalize([10.0] * channels, [3.0] * channels), vision.HWC2CHW()])[0]
    got = op(img)
    monkeypatch.setattr(ck, "_kernels", None)
    np.testing.assert_array_equal(got, op(img))
    want = ((img.astype(F32) - F32(10.0)) / F32(3.0)).transpose(2, 0, 1)
    np.testing.assert_array_equal(got, want)


@needs_c
@pytest.mark.parametrize("view", [(slice(None), slice(None, None, -1)), (slice(None, None, -1), slice(None)),
                                  (slice(1, None, 2), slice(None, None, 3))])
def test_adjust_from_reads_views_as_their_copies(view, simd):
    img = np.random.default_rng(6).integers(0, 256, (23, 19, 3), dtype=np.uint8)[view]
    factors = np.array([1.3, 0.7, 1.6, -0.2])
    for order in [(0, 1, 2, 3), (2, 1, 0, 3), (3, 0, 1, 2), (1, 0, 3, 2)]:
        got = ck.adjust_all(img, factors, order)
        np.testing.assert_array_equal(got, _numpy(ck.adjust_all, np.ascontiguousarray(img), factors, order))


@needs_c
@pytest.mark.parametrize("chw", [True, False])
@pytest.mark.parametrize("view", [(slice(None), slice(None)), (slice(None), slice(None, None, -1)),
                                  (slice(1, None, 2), slice(None, None, 3))])
def test_adjust_levels_equals_adjust_then_lookup(view, chw, simd):
    """Every order and every subset of the adjustments: the last pass writing floats (a saturation/hue pass
    row by row, pending tables composed with the run's) gives the uint8 result looked up."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (23, 19, 3), dtype=np.uint8)[view]
    tables = rng.standard_normal((3, 256)).astype(F32)
    factors = np.array([1.3, 0.7, 1.6, -0.2])
    for n, order in enumerate(itertools.permutations(range(4))):
        enabled = [bool(n >> k & 1) or k == n % 4 for k in range(4)] if n % 3 else [True] * 4
        got = ck.adjust_levels(img, factors, order, enabled, tables, chw)
        adjusted = ck.adjust_all(img, factors, order, enabled)
        want = np.stack([tables[c][adjusted[:, :, c]] for c in range(3)], 0 if chw else -1)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    nothing = ck.adjust_levels(img, factors, (0, 1, 2, 3), (False,) * 4, tables, chw)
    np.testing.assert_array_equal(nothing, np.stack([tables[c][img[:, :, c]] for c in range(3)], 0 if chw else -1))


@needs_c
@pytest.mark.parametrize("kinds", [(0, 1, 2), (1, 0, 2, 1), (0, 1, 0, 1, 2), (1, 0, 1, 0, 1, 2, 0, 1)])
def test_pending_brightness_and_contrast_steps_before_a_pixel_pass(kinds, simd):
    """The AVX2 loops compute up to four brightness/contrast steps pending before a saturation pass (and
    the contrast's grey sum) with float32 operations, more with their table: the bytes of the steps applied
    one by one in numpy, every level of a row of every colour ramp, flipped too."""
    img = np.random.default_rng(len(kinds)).integers(0, 256, (37, 45, 3), dtype=np.uint8)
    img[0] = np.arange(45 * 3).reshape(45, 3) * 255 // (45 * 3 - 1)
    factors = (1.37, 0.61, 1.52, 0.0)
    for view in (img, img[:, ::-1]):
        want = np.ascontiguousarray(view)
        for k in kinds:
            want = _numpy(lambda x: ck.ADJUST[k](x, factors[k]), want)
        got = np.empty(view.shape, np.uint8)
        ck._kernels.adjust_from(view, got, bytes(kinds), *factors)
        np.testing.assert_array_equal(got, want)


@needs_c
def test_c_kernels_reject_wrong_buffers():
    k = ck._kernels
    with pytest.raises(ValueError, match="whole RGB pixels"):
        k.adjust(np.zeros(4, np.uint8), b"\x03", 1.0, 1.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="not one of 0..3"):
        k.adjust(np.zeros(6, np.uint8), b"\x04", 1.0, 1.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="contiguous"):
        k.adjust(np.zeros((4, 4, 3), np.uint8)[:, ::2], b"\x00", 1.0, 1.0, 1.0, 0.1)
    with pytest.raises((BufferError, TypeError)):
        k.adjust(b"\x00\x01\x02", b"\x00", 1.0, 1.0, 1.0, 0.1)          # read-only
    with pytest.raises(ValueError, match="output"):
        k.lookup(np.zeros((2, 2, 3), np.uint8), np.zeros((3, 256), F32), np.zeros(11, F32), True)
    with pytest.raises(ValueError, match="tables"):
        k.lookup(np.zeros((2, 2, 3), np.uint8), np.zeros((2, 256), F32), np.zeros(12, F32), True)
    with pytest.raises(ValueError, match="uint8 <H,W,C>"):
        k.lookup(np.zeros((2, 2, 5), np.uint8), np.zeros((5, 256), F32), np.zeros(20, F32), True)
    with pytest.raises(ValueError, match="output"):
        k.adjust_from(np.zeros((2, 2, 3), np.uint8), np.zeros(9, np.uint8), b"\x00", 1.0, 1.0, 1.0, 0.0)
    img, tables = np.zeros((2, 2, 3), np.uint8), np.zeros((3, 256), F32)
    with pytest.raises(ValueError, match="output"):
        k.adjust_levels(img, np.zeros(11, F32), b"\x02", 1.0, 1.0, 1.0, 0.0, tables, True)
    with pytest.raises(ValueError, match="tables"):
        k.adjust_levels(img, np.zeros(12, F32), b"\x02", 1.0, 1.0, 1.0, 0.0, tables[:2], True)
    with pytest.raises(ValueError, match="RGB image with adjacent channels"):
        k.adjust_levels(img[:, :, ::-1], np.zeros(12, F32), b"\x02", 1.0, 1.0, 1.0, 0.0, tables, True)
    with pytest.raises(ValueError, match="not one of 0..3"):
        k.adjust_levels(img, np.zeros(12, F32), b"\x05", 1.0, 1.0, 1.0, 0.0, tables, True)
    empty = np.zeros((0, 5, 3), np.uint8)
    k.adjust(empty, b"\x00\x01\x02\x03", 1.0, 1.0, 1.0, 0.1)              # nothing to do, no division by 0
    k.adjust_levels(empty, np.zeros(0, F32), b"\x00\x01\x02\x03", 1.0, 1.0, 1.0, 0.1, tables, True)


def test_random_color_adjust_same_values_without_c_kernels(numpy_only):
    """The numpy path alone (as on an install without a compiler) against an independent float reference
    of one adjustment, so the fallback is covered even where the C kernels are built."""
    img = np.random.default_rng(5).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    out = ck.adjust_all(img, np.array([1.5, 1.0, 1.0, 0.0]), (0, 1, 2, 3))
    np.testing.assert_array_equal(out, np.clip(np.rint(img.astype(F32) * F32(1.5)), 0, 255).astype(np.uint8))


@needs_c
def test_level_arithmetic_is_what_the_avx2_loops_write(simd):
    """With a level run's arithmetic (float32 <4,3>: multiply, add, subtract, divide per channel) the AVX2
    loops compute the values instead of looking them up, so a program that disagrees with the tables shows
    in what they write (the scalar loops look up); a program that agrees gives the tables' bits, in every
    order of the adjustments, flipped or not."""
    k = ck._kernels
    levels = np.arange(256, dtype=F32)
    program = np.array([[1 / 255.0] * 3, [-0.0] * 3, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]], F32)
    tables = np.ascontiguousarray(np.stack([((levels * program[0, c]) + program[1, c] - program[2, c])
                                            / program[3, c] for c in range(3)]).astype(F32))
    img = np.random.default_rng(3).integers(0, 256, (19, 37, 3), dtype=np.uint8)
    for view in (img, img[:, ::-1]):
        for order in [(), (2,), (0, 1, 2), (2, 0, 1), (1, 2, 0)]:
            factors = (1.3, 0.7, 1.6, 0.0)
            got = ck.adjust_levels(view, factors, order, (True,) * 4, tables, True, program)
            want = ck.adjust_levels(view, factors, order, (True,) * 4, tables, True)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    wrong, out = program.copy(), np.empty((3, 19, 37), F32)
    wrong[3] *= 2
    k.lookup(img, tables, out, True, wrong)
    looked_up = np.stack([tables[c][img[:, :, c]] for c in range(3)])
    if simd == "simd" and k.use_simd(True):
        assert not np.array_equal(out[:, :, :32], looked_up[:, :, :32])      # the AVX2 loop computed them
        np.testing.assert_array_equal(out[:, :, 32:], looked_up[:, :, 32:])  # the row's rest: looked up
    else:
        np.testing.assert_array_equal(out, looked_up)
    with pytest.raises(ValueError, match="program"):
        k.lookup(img, tables, out, True, np.zeros(11, F32))
