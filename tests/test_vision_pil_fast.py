"""The PIL eval chain in C (recordio.vision.pil_fast, _pilfast.c) gives Pillow's bytes, or runs Pillow.

``Decode(to_pil=True)`` -> ``Resize`` -> ``CenterCrop`` is compared bit for bit with Pillow itself over
random sizes, aspect ratios, odd widths, resizes up and down, both filters, both orders of Pillow's two
passes (and the sizes where its rule flips), grey, 4:4:4/4:2:2/4:2:0, progressive and restart-marked
JPEGs, with and without the AVX2 loops; then as fused ops (fusion.fuse_ops) against the ops as written,
on photos; then the cases it leaves to Pillow. Tier ``mindspore``: the chain's bytes against MindSpore 2.10's own.
"""

import io
import warnings

import numpy as np
import pytest
from PIL import Image

from recordio import compiled, vision
from recordio.errors import FormatError
from recordio.tools import vision_photos
from recordio.vision import _pilfast, pil_fast
from recordio.vision.fusion import fuse_ops
from ms_vision_script import run_script

UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
KINDS = {"grey": dict(mode="L"), "444": dict(subsampling=0), "422": dict(subsampling=1),
         "420": dict(subsampling=2), "progressive": dict(progressive=True),
         "restarts": dict(restart_marker_blocks=3)}


def jpeg(rng, width, height, mode="RGB", quality=90, **options):
    """A smooth random photo-like image of ``width`` x ``height`` as JPEG bytes (Pillow's encoder)."""
    small = rng.integers(0, 256, (max(2, height // 8), max(2, width // 8), 3), dtype=np.uint8)
    img = Image.fromarray(small).resize((width, height), Image.BICUBIC).convert(mode)
    stream = io.BytesIO()
    img.save(stream, "JPEG", quality=quality, **options)
    return stream.getvalue()


def pillow(data, out, window, cubic):
    """Pillow's chain: decode, resize to ``out`` (w, h), crop ``window`` (top, left, h, w) -> array."""
    img = Image.open(io.BytesIO(data)).convert("RGB")
    if out != img.size:
        img = img.resize(out, Image.BICUBIC if cubic else Image.BILINEAR)
    top, left, h, w = window
    return np.asarray(img.crop((left, top, left + w, top + h)))


def fast(data, size, out, window, cubic, vector=1):
    found = _pilfast.resize_crop(data, *size, *out, cubic, *window, vector)
    assert found is not None
    return np.frombuffer(found, np.uint8).reshape(window[2], window[3], 3)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_random_sizes_windows_and_filters_give_pillows_bytes(kind):
    rng = np.random.default_rng(sorted(KINDS).index(kind))
    for _ in range(40):
        width, height = (int(v) for v in rng.integers(1, 260, 2))
        data = jpeg(rng, width, height, **KINDS[kind])
        ow, oh = (int(v) for v in rng.integers(1, 330, 2))
        h, w = int(rng.integers(1, oh + 1)), int(rng.integers(1, ow + 1))
        window = (int(rng.integers(0, oh - h + 1)), int(rng.integers(0, ow - w + 1)), h, w)
        cubic = int(rng.integers(0, 2))
        want = pillow(data, (ow, oh), window, cubic)
        for vector in (1, 0):
            np.testing.assert_array_equal(fast(data, (width, height), (ow, oh), window, cubic, vector), want,
                                          err_msg=f"{(width, height)} -> {(ow, oh)}, window {window}")


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_the_pass_order_where_pillows_rule_flips(extra):
    """Pillow 13 resamples vertically first when the height shrinks by more than twice as many pixels as
    the width (or the width does not shrink): sizes on both sides of that line."""
    rng = np.random.default_rng(10 + extra)
    for _ in range(12):
        width = int(rng.integers(20, 200))
        ow = int(rng.integers(1, width))
        oh = int(rng.integers(4, 150))
        height = oh + 2 * (width - ow) + extra
        data = jpeg(rng, width, height)
        for cubic in (0, 1):
            window = (0, 0, oh, ow)
            np.testing.assert_array_equal(fast(data, (width, height), (ow, oh), window, cubic),
                                          pillow(data, (ow, oh), window, cubic))


def run(ops, data):
    for op in ops:
        data = op(data)
    return data


EVAL = [lambda: [vision.Decode(to_pil=True), vision.Resize(256), vision.CenterCrop(224), vision.ToTensor(),
                 vision.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)],
        lambda: [vision.Decode(to_pil=True), vision.Resize((224, 300), vision.Inter.CUBIC), vision.CenterCrop(200),
                 vision.ToTensor()],
        lambda: [vision.Decode(to_pil=True), vision.Resize(300), vision.ToTensor()],
        lambda: [vision.Decode(to_pil=True), vision.Resize(256), vision.CenterCrop((224, 200))]]


@pytest.fixture(scope="module")
def photos():
    rng = np.random.default_rng(5)
    tall = [jpeg(rng, 150, 420), jpeg(rng, 257, 600, mode="L")]      # vertical pass first; grey
    return vision_photos.jpegs(6, seed=4) + tall


@pytest.mark.parametrize("chain", range(len(EVAL)))
def test_fused_chain_equals_the_ops_as_written(photos, chain):
    fused = fuse_ops(EVAL[chain]())
    assert isinstance(fused[0], pil_fast.PilChain)
    for data in photos:
        got, want = run(fused, data), run(EVAL[chain](), data)
        assert type(got) is type(want)                      # a PIL image where the ops hand one on
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert np.asarray(got).dtype == np.asarray(want).dtype


def test_the_chain_is_fused_only_as_written():
    assert not isinstance(fuse_ops([vision.Decode(to_pil=True), vision.Resize(256, vision.Inter.NEAREST)])[0],
                          pil_fast.PilChain)
    assert not isinstance(fuse_ops([vision.Decode(), vision.Resize(256)])[0], pil_fast.PilChain)
    assert not isinstance(fuse_ops([vision.Decode(to_pil=True), vision.CenterCrop(256)])[0], pil_fast.PilChain)


def cmyk(rng):
    stream = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (40, 50, 4), dtype=np.uint8), "CMYK").save(stream, "JPEG")
    return stream.getvalue()


def damaged(rng):
    data = bytearray(jpeg(rng, 120, 90))
    data[len(data) // 2:len(data) // 2 + 2] = b"\xff\xd5"    # a stray restart marker: libjpeg warns, Pillow decodes
    return bytes(data)


def png(rng):
    stream = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(stream, "PNG")
    return stream.getvalue()


@pytest.mark.parametrize("make", [cmyk, damaged, png, lambda rng: jpeg(rng, 100, 60)])
def test_what_the_c_path_leaves_to_pillow_gives_pillows_result(make):
    data = make(np.random.default_rng(0))
    ops = [vision.Decode(to_pil=True), vision.Resize(64), vision.CenterCrop(100), vision.ToTensor()]   # crop > image
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(run(fuse_ops(ops), data), run(ops, data))


def test_a_damaged_jpeg_is_declined_by_the_c_path():
    data = damaged(np.random.default_rng(0))
    assert _pilfast.resize_crop(data, 120, 90, 60, 45, 0, 0, 0, 45, 60) is None


def outcome(ops, data):
    """The chain's output as an array, or the error it raised (type and message)."""
    try:
        return np.asarray(run(ops, data))
    except Exception as exc:            # noqa: BLE001 - the error itself is what is compared
        return type(exc), str(exc)


def test_a_truncated_jpeg_fails_as_pillow_fails():
    data = jpeg(np.random.default_rng(1), 120, 90)[:-300]
    ops = [vision.Decode(to_pil=True), vision.Resize(64), vision.CenterCrop(48), vision.ToTensor()]
    assert _pilfast.resize_crop(data, 120, 90, 85, 64, 0, 8, 18, 48, 48) is None
    found = outcome(fuse_ops(ops), data)
    assert found == outcome(ops, data) and found[0] is FormatError and "truncated" in found[1]


def test_an_image_over_pillows_pixel_limit_goes_through_pillow(monkeypatch):
    data = jpeg(np.random.default_rng(2), 120, 90)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)        # Pillow errors past twice the limit
    ops = [vision.Decode(to_pil=True), vision.Resize(64), vision.CenterCrop(48), vision.ToTensor()]
    found = outcome(fuse_ops(ops), data)
    assert found == outcome(ops, data) and found[0] is Image.DecompressionBombError


def test_bad_sizes_are_refused():
    data = jpeg(np.random.default_rng(3), 30, 20)
    with pytest.raises(ValueError, match="sizes out of range"):
        _pilfast.resize_crop(data, 30, 20, 15, 10, 0, 5, 0, 10, 15)          # window below the image
    assert _pilfast.resize_crop(data, 31, 20, 15, 10, 0, 0, 0, 10, 15) is None    # not the JPEG's size


def test_the_self_check_passes():
    assert pil_fast._exact()


class Differs:
    """A stand-in for _pilfast whose bytes are not Pillow's."""

    @staticmethod
    def resize_crop(data, width, height, out_w, out_h, cubic, top, left, h, w, vector=1):
        return bytearray(h * w * 3)


def test_a_failed_self_check_warns_once_and_leaves_the_chain_to_pillow(monkeypatch, photos):
    monkeypatch.setattr(pil_fast, "_compiled", lambda: Differs)
    monkeypatch.setattr(compiled, "_warned", set())
    monkeypatch.setitem(compiled._state, "recordio.vision._pilfast", "active")
    pil_fast._exact.cache_clear()
    try:
        ops = EVAL[0]()
        with pytest.warns(RuntimeWarning, match="_pilfast.*disabled itself.*Pillow version"):
            np.testing.assert_array_equal(run(fuse_ops(ops), photos[0]), run(ops, photos[0]))
    finally:
        pil_fast._exact.cache_clear()


MS_SCRIPT = r'''
import sys
import numpy as np
import mindspore.dataset.transforms as T
import mindspore.dataset.vision as V
data = dict(np.load(sys.argv[1]))
chains = {"a": [V.Decode(to_pil=True), V.Resize(256), V.CenterCrop(224)],
          "b": [V.Decode(to_pil=True), V.Resize((224, 300), V.Inter.BICUBIC), V.CenterCrop(200)]}
out = {}
for name, ops in chains.items():
    for key in data:
        img = T.Compose(ops)(data[key])
        out[f"{name}{key}"] = np.asarray(img[0] if isinstance(img, tuple) else img)
np.savez(sys.argv[2], **out)
'''


@pytest.mark.mindspore
def test_the_chains_bytes_are_mindsporees(tmp_path, photos):
    theirs = run_script(tmp_path, MS_SCRIPT, {f"j{k}": np.frombuffer(d, np.uint8) for k, d in enumerate(photos)})
    chains = {"a": [vision.Decode(to_pil=True), vision.Resize(256), vision.CenterCrop(224)],
              "b": [vision.Decode(to_pil=True), vision.Resize((224, 300), vision.Inter.CUBIC), vision.CenterCrop(200)]}
    for name, ops in chains.items():
        for k, data in enumerate(photos):
            mine = np.asarray(run(fuse_ops(ops), data))
            want = theirs[f"{name}j{k}"]
            want = want[0] if want.ndim == 4 else want
            np.testing.assert_array_equal(mine, want, err_msg=f"chain {name}, photo {k}")
