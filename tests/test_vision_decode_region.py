"""The region decoder (``recordio.vision._jpeg``): the box it decodes equals the same box of a full
decode, on every JPEG layout it takes; the others fall back to the full decode."""

import io
import os

import cv2
import numpy as np
import pytest
from PIL import Image

from recordio import vision
from recordio.keys import row_scope, op_scope
from recordio.vision import decode as dec

needs_region = pytest.mark.skipif(dec._jpeg is None, reason="the region decoder is not built")

SAMPLINGS = {"411": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411, "420": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
             "422": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422, "440": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440,
             "444": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444}


def test_region_decoder_is_built_in_ci():
    if os.environ.get("CI") and dec._jpeg is None:
        pytest.fail("recordio.vision._jpeg did not build (setup.py needs libjpeg-turbo's headers)")


def photo(height, width, seed=0):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(1, height // 8), max(1, width // 8), 3), dtype=np.uint8)
    img = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
    return cv2.add(img, rng.integers(0, 30, img.shape, dtype=np.uint8))


def encode(img, *params):
    return cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 85, *params])[1].tobytes()


def boxes(height, width, count, seed):
    rng = np.random.default_rng(seed)
    yield 0, 0, height, width
    for _ in range(count):
        h, w = int(rng.integers(1, height + 1)), int(rng.integers(1, width + 1))
        yield int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w


def check_boxes(data, count=25, seed=0):
    full = dec.decode("Decode", np.frombuffer(data, np.uint8))
    height, width = full.shape[:2]
    for y, x, h, w in boxes(height, width, count, seed):
        box = dec._decode_box(np.frombuffer(data, np.uint8), y, x, h, w)
        assert box is not None, (y, x, h, w)
        np.testing.assert_array_equal(box, full[y:y + h, x:x + w], err_msg=str((y, x, h, w)))


@needs_region
@pytest.mark.parametrize("sampling", sorted(SAMPLINGS))
@pytest.mark.parametrize("size", [(375, 500), (101, 257), (17, 33), (480, 7), (1, 1)])
def test_box_equals_the_full_decode(size, sampling):
    check_boxes(encode(photo(*size), cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLINGS[sampling]))


@needs_region
@pytest.mark.parametrize("params", [[cv2.IMWRITE_JPEG_RST_INTERVAL, 3], [cv2.IMWRITE_JPEG_OPTIMIZE, 1]],
                         ids=["restart-markers", "optimized-huffman"])
def test_box_equals_the_full_decode_with_restarts_and_optimised_tables(params):
    check_boxes(encode(photo(203, 311), *params))


@needs_region
def test_grey_and_other_encoders():
    check_boxes(encode(cv2.cvtColor(photo(90, 130), cv2.COLOR_RGB2GRAY)))
    out = io.BytesIO()
    Image.fromarray(photo(90, 130)).save(out, "JPEG", quality=90, subsampling=2)
    check_boxes(out.getvalue())


@needs_region
@pytest.mark.parametrize("kind", ["progressive", "cmyk", "truncated", "png", "garbage"])
def test_layouts_it_does_not_take_fall_back(kind):
    img = photo(64, 80)
    if kind == "progressive":
        data = encode(img, cv2.IMWRITE_JPEG_PROGRESSIVE, 1)
    elif kind == "cmyk":
        out = io.BytesIO()
        Image.fromarray(img).convert("CMYK").save(out, "JPEG")
        data = out.getvalue()
    elif kind == "truncated":                # the box lies past the cut: libjpeg warns, no region
        data = encode(img)[:600]
    elif kind == "png":
        data = cv2.imencode(".png", img)[1].tobytes()
    else:
        data = b"\xff\xd8\xff" + bytes(200)
    assert dec._jpeg.decode_box(data, 40, 10, 20, 20) is None


@needs_region
def test_a_file_cut_short_is_refused_even_when_the_box_lies_before_the_cut():
    """OpenCV refuses a truncated JPEG; the region decoder, which stops early, must not accept it."""
    data = encode(photo(64, 80))[:-400]
    assert dec._jpeg.decode_box(data, 0, 0, 8, 80) is None
    with pytest.raises(ValueError, match="cannot decode image"):
        dec.decode_region(dec.EncodedImage(np.frombuffer(data, np.uint8)), lambda h, w: ((0, 0, 8, 80), (8, 80)),
                          vision.Inter.LINEAR)


@needs_region
def test_bytes_after_the_end_marker_are_allowed():
    data = encode(photo(64, 80)) + b"\x00\x01\x02\x03"
    check_boxes(data, count=5)


@needs_region
def test_boxes_outside_the_image_are_refused():
    data = encode(photo(40, 50))
    for y, x, h, w in [(-1, 0, 5, 5), (0, 0, 41, 5), (0, 46, 5, 5), (0, 0, 0, 5)]:
        assert dec._jpeg.decode_box(data, y, x, h, w) is None


@needs_region
def test_random_resized_crop_after_decode_equals_the_unfused_ops(monkeypatch):
    """The fused map (region decode) gives the bytes of Decode then RandomResizedCrop."""
    ops = [vision.Decode(), vision.RandomResizedCrop(120)]     # no crop is 2x the output: no DCT scaling
    fused = vision.fuse_decode(ops)
    assert type(fused[0]) is not vision.Decode
    images = [encode(photo(150, 200, seed)) for seed in range(6)]
    calls = []
    real = dec._jpeg.decode_box
    monkeypatch.setattr(dec._jpeg, "decode_box", lambda *a: calls.append(a) or real(*a))
    for row, data in enumerate(images * 4):
        with row_scope(1, 0, row), op_scope(7):
            want = ops[1](ops[0](data))
        with row_scope(1, 0, row), op_scope(7):
            got = fused[1](fused[0](data))
        np.testing.assert_array_equal(got, want)
    assert len(calls) == len(images) * 4


def test_without_the_region_decoder_the_whole_image_is_decoded(monkeypatch):
    monkeypatch.setattr(dec, "_jpeg", None)
    monkeypatch.setenv("RECORDIO_ALLOW_SLOW", "1")          # the slow-path warning is tests/test_compiled.py's
    dec._region_decoder_is_exact.cache_clear()
    try:
        assert dec._decode_box(np.frombuffer(encode(photo(20, 20)), np.uint8), 0, 0, 5, 5) is None
        ops = vision.fuse_decode([vision.Decode(), vision.RandomResizedCrop(20)])
        with row_scope(1, 0, 3), op_scope(2):
            got = ops[1](ops[0](encode(photo(30, 40))))
        with row_scope(1, 0, 3), op_scope(2):
            want = vision.RandomResizedCrop(20)(vision.Decode()(encode(photo(30, 40))))
        np.testing.assert_array_equal(got, want)
    finally:
        dec._region_decoder_is_exact.cache_clear()


@needs_region
@pytest.mark.parametrize("interpolation", [vision.Inter.LINEAR, vision.Inter.CUBIC, vision.Inter.AREA])
@pytest.mark.parametrize("sampling", ["420", "422", "444"])
def test_scaled_region_equals_the_reduced_whole_decode(sampling, interpolation, monkeypatch):
    """A crop at least twice the output decodes only around the box at 1/2, 1/4 or 1/8 of the size:
    the result is that of resampling OpenCV's whole reduced decode (the path without the extension) within
    1 LSB on a few pixels: the decoded pixels are equal, but OpenCV's warp computes source coordinates in
    float32, so a translation by the block's origin moves some of them by an ulp."""
    data = np.frombuffer(encode(photo(397, 461, 3), cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLINGS[sampling]), np.uint8)
    rng = np.random.default_rng(5)
    for out in (20, 40, 90):
        for _ in range(12):
            h, w = int(rng.integers(2 * out, 398)), int(rng.integers(2 * out, 462))
            y, x = int(rng.integers(0, 398 - h)), int(rng.integers(0, 462 - w))
            region = lambda H, W: ((y, x, h, w), (out, out))       # noqa: E731
            got = dec.decode_region(dec.EncodedImage(data), region, interpolation)
            with monkeypatch.context() as m:
                m.setattr(dec, "_decode_scaled_box", lambda *a: None)
                want = dec.decode_region(dec.EncodedImage(data), region, interpolation)
            assert dec._reduction(data, h, w, out, out) > 1
            diff = np.abs(got.astype(int) - want)
            assert diff.max() <= 1 and diff.mean() < 0.01, (y, x, h, w, out, diff.max(), diff.mean())


@needs_region
def test_corrupt_scan_data_in_the_box_is_declined():
    """libjpeg warns on corrupt entropy-coded data and decodes on; the region path declines such a file
    (the whole-image decode decides what it gives), instead of handing on pixels decoded with a warning."""
    data = bytearray(encode(photo(64, 80)))
    sos = data.index(b"\xff\xda")
    at = sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")
    at += (len(data) - at) // 3
    data[at:at + 2] = b"\xff\xd5"                                   # a restart marker where none belongs
    assert dec._jpeg.decode_box(bytes(data), 0, 0, 64, 80) is None
    clean = encode(photo(64, 80))
    assert dec._jpeg.decode_box(clean, 0, 0, 64, 80) is not None
