"""Decode, header sizes, and fused decode (reduced-scale JPEG decoding) against decode-then-crop."""

import cv2
import numpy as np
import pytest

from recordio import transforms, vision
from recordio.errors import FormatError
from recordio.keys import op_scope, row_scope
from recordio.vision.decode import EncodedImage, as_buffer, image_size


def _picture(h, w, seed):
    rng = np.random.default_rng(seed)
    img = cv2.resize(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), (w, h), interpolation=cv2.INTER_CUBIC)
    cv2.putText(img, "rio", (w // 8, h // 2), cv2.FONT_HERSHEY_SIMPLEX, h / 120, (255, 255, 255), 3)
    return cv2.add(img, rng.integers(0, 20, img.shape, dtype=np.uint8))


@pytest.fixture(scope="module")
def jpegs():
    return [cv2.imencode(".jpg", _picture(480, 640, s), [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
            for s in range(6)]


def under(op, data, row=0, uid=4):
    with row_scope(1, 0, row), op_scope(uid):
        return op(data)


def test_decode_gives_rgb_as_opencv(jpegs):
    bgr = cv2.imdecode(np.frombuffer(jpegs[0], np.uint8), cv2.IMREAD_COLOR)
    for data in (jpegs[0], np.frombuffer(jpegs[0], np.uint8)):
        out = vision.Decode()(data)
        assert out.dtype == np.uint8 and np.array_equal(out, bgr[..., ::-1])


def test_decode_png_keeps_pixels_exactly():
    img = _picture(20, 30, 1)
    png = cv2.imencode(".png", img[..., ::-1])[1].tobytes()
    assert np.array_equal(vision.Decode()(png), img)
    assert image_size(as_buffer("t", png)) == (20, 30)


def test_header_size_without_decoding(jpegs):
    assert image_size(as_buffer("t", jpegs[0])) == (480, 640)
    assert image_size(as_buffer("t", b"not an image at all......")) is None


@pytest.mark.parametrize("data", [b"", b"\xff\xd8\xff\xe0garbage", b"hello world", np.zeros(10, np.uint8)])
def test_undecodable_bytes_raise_format_error_naming_the_row(data):
    with row_scope(1, 0, 42), op_scope(1), pytest.raises(FormatError, match=r"row 42.*JPEG or PNG"):
        vision.Decode()(data)


def test_a_cut_short_image_is_named_as_such(jpegs):
    png = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))[1].tobytes()
    for data, kind in ((jpegs[0][:200], "JPEG"), (png[:40], "PNG")):
        with row_scope(1, 0, 7), op_scope(1), pytest.raises(FormatError, match=rf"row 7\): expected a whole JPEG or "
                                                                                 rf"PNG, found a {kind} of \d+ bytes "
                                                                                 rf"that does not decode .*cut short"):
            vision.Decode()(data)
        with row_scope(1, 0, 7), op_scope(1), pytest.raises(FormatError, match=rf"row 7\): expected a whole JPEG or "
                                                                                 rf"PNG, found a {kind} .*cut short.*"
                                                                                 rf"Pillow: "):
            vision.Decode(to_pil=True)(data)                 # the PIL path says the same, with Pillow's words


def test_decode_rejects_non_bytes():
    with pytest.raises(TypeError, match="encoded image bytes"):
        vision.Decode()(np.zeros((4, 4, 3), np.uint8))


def _reference(op, data, row, interpolation=cv2.INTER_LINEAR):
    """Decode everything, crop the same box, resize: the unfused path."""
    full = vision.Decode()(data)
    with row_scope(1, 0, row), op_scope(4):
        (y, x, h, w), (oh, ow) = op.region(*full.shape[:2])
    return cv2.resize(full[y:y + h, x:x + w], (ow, oh), interpolation=interpolation), h / oh


@pytest.mark.parametrize("size", [32, 64, 100])
def test_fused_decode_stays_close_to_decode_then_crop(jpegs, size):
    """Tolerance: mean |fused - unfused| <= 3 LSB (unfused antialiased) and within 1.5 LSB of the
    unfused bilinear result's own distance to its antialiased version."""
    op = vision.RandomCropDecodeResize(size, scale=(0.3, 1.0))
    reduced = 0
    for row, data in enumerate(jpegs * 3):
        out = under(op, data, row)
        linear, factor = _reference(op, data, row)
        area, _ = _reference(op, data, row, cv2.INTER_AREA)
        assert out.shape == (size, size, 3) and out.dtype == np.uint8
        err_area = np.abs(out.astype(float) - area).mean()
        err_linear = np.abs(out.astype(float) - linear).mean()
        assert err_area <= 3.0
        assert err_linear <= np.abs(linear.astype(float) - area).mean() + 1.5
        reduced += factor >= 2
    assert reduced >= 6


def test_fused_decode_without_reduction_is_identical(jpegs):
    op = vision.RandomCropDecodeResize(400, scale=(0.9, 1.0))
    for row in range(3):
        assert np.array_equal(under(op, jpegs[row], row), _reference(op, jpegs[row], row)[0])


def test_random_crop_decode_resize_draws_like_random_resized_crop(jpegs):
    fused, plain = vision.RandomCropDecodeResize(48), vision.RandomResizedCrop(48)
    full = vision.Decode()(jpegs[1])
    for row in range(10):
        with row_scope(1, 0, row), op_scope(4):
            box_a = fused.region(480, 640)
        with row_scope(1, 0, row), op_scope(4):
            box_b = plain.region(480, 640)
        assert box_a == box_b
    assert np.abs(under(fused, jpegs[1]).astype(float) - under(plain, full)).mean() < 12


def test_fuse_decode_keeps_indices_and_defers_decode(jpegs):
    ops = vision.fuse_decode([vision.Decode(), vision.Resize(60), vision.Decode(), vision.HWC2CHW()])
    assert len(ops) == 4 and type(ops[0]).__name__ == "_DeferredDecode" and type(ops[2]) is vision.Decode
    assert isinstance(ops[0](jpegs[0]), EncodedImage)
    out = ops[1](ops[0](jpegs[0]))
    plain = vision.Resize(60)(vision.Decode()(jpegs[0]))
    assert out.shape == plain.shape == (60, 80, 3)
    assert np.abs(out.astype(float) - cv2.resize(vision.Decode()(jpegs[0]), (80, 60),
                                                 interpolation=cv2.INTER_AREA)).mean() <= 3


def test_compose_fuses_decode_with_the_following_crop(jpegs):
    chain = transforms.Compose([vision.Decode(), vision.RandomResizedCrop(40), vision.HWC2CHW()])
    out = under(chain, jpegs[2], row=3)
    assert out.shape == (3, 40, 40)
    assert np.array_equal(out, under(chain, jpegs[2], row=3))


@pytest.mark.parametrize("make", [lambda: vision.Decode(to_pil="yes"), lambda: vision.RandomCropDecodeResize(0),
                                  lambda: vision.RandomCropDecodeResize(8, scale=(2, 1)),
                                  lambda: vision.RandomCropDecodeResize(8, interpolation=1)])
def test_bad_parameters(make):
    with pytest.raises((TypeError, ValueError)):
        make()


def test_fused_decode_falls_back_when_the_header_gives_no_size(jpegs):
    data = bytearray(jpegs[0])
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 7] = b"\x00\x00"                    # height 0 in the frame header
    assert image_size(as_buffer("t", bytes(data))) == (0, 640)
    with row_scope(1, 0, 0), op_scope(4):
        try:
            out = vision.RandomCropDecodeResize(32)(bytes(data))
        except FormatError as exc:                          # OpenCV may refuse the frame: a clear error
            assert "cannot decode image" in str(exc)
        else:
            assert out.shape == (32, 32, 3)


def test_a_deferred_decode_that_fails_says_it_ran_inside_the_next_op(jpegs, tmp_path):
    """Decode → Resize → CenterCrop decodes inside Resize's slot (only the window CenterCrop keeps): the
    map's note names operation 1 (Resize), and a note says the Decode before it runs there."""
    from recordio import FileWriter, MindDataset
    path = str(tmp_path / "bad.mindrecord")
    with FileWriter(path, shard_num=1) as w:
        w.add_schema({"image": {"type": "bytes"}}, "images")
        w.write_raw_data([{"image": jpegs[0]}, {"image": jpegs[0][:300]}])
    data = MindDataset(path, shuffle=False).map([vision.Decode(), vision.Resize(64), vision.CenterCrop(48)],
                                                input_columns="image")
    with pytest.raises(FormatError, match="Decode: cannot decode image.*cut short") as caught:
        list(data.create_tuple_iterator(output_numpy=True))
    notes = "\n".join(caught.value.__notes__)
    assert "operation 1 (Resize), row 1" in notes and "the Decode before this op runs inside it" in notes
