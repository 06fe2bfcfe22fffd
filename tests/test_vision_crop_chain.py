"""recordio.vision.crop_chain: the train chain's decode, resize, flip, colour and level run in one compiled
call give exactly the unfused ops' values, draws and errors."""

import cv2
import numpy as np
import pytest

from recordio import vision
from recordio.keys import op_scope, row_scope
from recordio.transforms import Compose
from recordio.vision import crop_chain, fusion
from recordio.vision.fusion import fuse_ops

pytestmark = pytest.mark.skipif(not crop_chain.available(), reason="the compiled crop chain is not built")

UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
TAIL = [vision.Rescale(1 / 255, 0), vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()]
CHAINS = {
    "train": lambda: [vision.RandomCropDecodeResize(48, scale=(0.08, 1.0)), vision.RandomHorizontalFlip(),
                      vision.RandomColorAdjust(0.4, 0.4, 0.4), *TAIL],
    "hue, every flip": lambda: [vision.RandomCropDecodeResize((40, 56)), vision.RandomHorizontalFlip(1.0),
                                vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1), *TAIL],
    "decode then crop, vertical flip": lambda: [vision.Decode(), vision.RandomResizedCrop(36, scale=(0.3, 1.0)),
                                                vision.RandomVerticalFlip(), *TAIL],
    "no flip, channels last": lambda: [vision.RandomCropDecodeResize(44), vision.RandomColorAdjust(0.5, 0.5, 0.5),
                                       vision.Rescale(1 / 255, 0), vision.Normalize(UNIT_MEAN, UNIT_STD)],
    "no colour": lambda: [vision.RandomCropDecodeResize(52), vision.RandomHorizontalFlip(), *TAIL],
    "eval": lambda: [vision.Decode(), vision.Resize(40), vision.CenterCrop(32), vision.Normalize(MEAN, STD),
                     vision.HWC2CHW()],
    "eval, flip, (h, w) sizes": lambda: [vision.Decode(), vision.Resize((45, 61)), vision.CenterCrop((30, 44)),
                                         vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.3, 0.3, 0.3),
                                         *TAIL],
}


def _photo(shape, seed):
    """A smooth photo-like image (noise blurred), so the JPEG's pixels are not noise."""
    noise = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    return cv2.GaussianBlur(noise, (0, 0), 3)


def _jpeg(shape, seed, *params):
    return cv2.imencode(".jpg", _photo(shape, seed), list(params))[1].tobytes()


def _run(ops, data, row):
    """The ops on one row under the pipeline's keys (op j draws as op j of a map)."""
    value = data
    with row_scope(7, 0, row):
        for j, op in enumerate(ops):
            if getattr(op, "passes_input", False) is True:
                continue
            with op_scope(j):
                value = op(value)
    return value


def _plans(ops):
    return any(isinstance(op, crop_chain.PlannedCrop) or getattr(op, "plans", False) is True for op in ops)


def _without_chain(make, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(crop_chain, "available", lambda: False)
        ops = fuse_ops(make())
    assert not _plans(ops)
    return ops


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_the_chain_in_one_call_equals_the_ops_one_by_one(chain, monkeypatch):
    fused = fuse_ops(CHAINS[chain]())
    assert _plans(fused)
    plain = _without_chain(CHAINS[chain], monkeypatch)
    calls = []
    real = crop_chain.compiled_chain()

    class Counting:
        def crop_levels(self, *args):
            calls.append(args)
            return real.crop_levels(*args)

    monkeypatch.setattr(crop_chain, "_chain", Counting())
    shapes = [(97, 83, 3), (160, 120, 3), (64, 200, 3), (33, 47, 3)]
    for row in range(24):
        data = _jpeg(shapes[row % 4], row, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                     (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422,
                      cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444)[row % 3])
        got, want = _run(fused, data, row), _run(plain, data, row)
        assert _same(got, want), (chain, row)
    assert len(calls) >= 12                           # most boxes are decoded at full scale: one call each
    flips = {args[8] for args in calls}
    assert flips <= {0, 1, 2} and (chain != "train" or flips == {0, 1})


def test_a_box_of_the_output_size_is_not_resized(monkeypatch):
    make = lambda: [vision.RandomCropDecodeResize(40, scale=(1.0, 1.0), ratio=(1.0, 1.0)),
                    vision.RandomColorAdjust(0.4, 0.4, 0.4), *TAIL]
    data = _jpeg((40, 40, 3), 1)
    got, want = _run(fuse_ops(make()), data, 3), _run(_without_chain(make, monkeypatch), data, 3)
    assert _same(got, want)


@pytest.mark.parametrize("kind", ["progressive", "png", "grey", "large box"])
def test_images_the_call_declines_or_does_not_take_give_the_ops_values(kind, monkeypatch):
    make = CHAINS["train"]
    photo = _photo((120, 90, 3), 4)
    data = {"progressive": lambda: _jpeg((120, 90, 3), 4, cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
            "png": lambda: cv2.imencode(".png", photo)[1].tobytes(),
            "grey": lambda: cv2.imencode(".jpg", photo[:, :, 0])[1].tobytes(),
            "large box": lambda: _jpeg((400, 420, 3), 4)}[kind]()     # boxes of 2x the output: decoded scaled
    fused, plain = fuse_ops(make()), _without_chain(make, monkeypatch)
    for row in range(12):
        assert _same(_run(fused, data, row), _run(plain, data, row)), row


def test_a_corrupt_jpeg_raises_the_crop_ops_error_with_a_note():
    good = bytearray(_jpeg((80, 80, 3), 2))
    bad = bytes(good[:len(good) // 2])                # cut short: no end-of-image marker
    ops = fuse_ops(CHAINS["train"]())
    with pytest.raises(Exception) as caught:
        _run(ops, bad, 0)
    text = str(caught.value) + "\n".join(getattr(caught.value, "__notes__", []))
    assert "RandomCropDecodeResize" in text and "fused" in text


def test_draws_stay_with_their_ops():
    """The plan changes no op's draws: each op draws under its own op id, as unfused."""
    make = CHAINS["train"]
    data = _jpeg((97, 83, 3), 0)
    fused = fuse_ops(make())
    outs = {_run(fused, data, row).tobytes() for row in range(8)}
    assert len(outs) == 8                             # rows draw differently
    with row_scope(7, 0, 5), op_scope(0):
        box = make()[0].region(97, 83)
    with row_scope(7, 0, 5), op_scope(0):
        plan = fused[0](data)
    assert isinstance(plan, crop_chain.CropPlan) and (plan.box, plan.resized) == box
    assert plan.whole == (*box[0][2:], 0, 0) and plan.window == (0, 0, *box[1])


def test_compose_runs_the_chain_in_one_call(monkeypatch):
    data = _jpeg((90, 110, 3), 5)
    composed = Compose(CHAINS["train"]())
    assert _plans(composed._ops)
    with row_scope(7, 0, 1):
        got = composed(data)
    monkeypatch.setattr(fusion, "fuse_ops", list)
    with row_scope(7, 0, 1):
        want = Compose(CHAINS["train"]())(data)
    assert _same(got, want)


def test_what_is_not_planned():
    offloaded_tail = [vision.RandomCropDecodeResize(32), vision.RandomHorizontalFlip()]
    assert not _plans(fuse_ops(offloaded_tail))
    other_between = [vision.RandomCropDecodeResize(32), vision.RandomRotation(10), *TAIL]
    assert not _plans(fuse_ops(other_between))
    eval_on_arrays = [vision.Resize(40), vision.CenterCrop(32), *TAIL]      # no Decode before: arrays come in
    assert not _plans(fuse_ops(eval_on_arrays))
    nearest = [vision.RandomCropDecodeResize(32, interpolation=vision.Inter.NEAREST), *TAIL]
    plan = _run(fuse_ops(nearest), _jpeg((90, 90, 3), 1), 0)
    assert isinstance(plan, np.ndarray) and plan.shape == (3, 32, 32)


def test_the_call_checks_its_arguments():
    data = _jpeg((40, 40, 3), 1)
    out = np.empty((3, 8, 8), np.float32)
    tables = np.zeros((3, 256), np.float32)
    call = crop_chain.compiled_chain().crop_levels

    def box(top, left, h, w, whole=None, resized=(8, 8), window=(0, 0, 8, 8), kinds=b"", image=data, flips=0):
        return call(image, top, left, h, w, whole or (h, w, 0, 0), resized, window, flips, out, kinds, 1, 1, 1, 0,
                    tables, True)

    with pytest.raises(ValueError, match="crop_levels"):
        box(0, 0, 0, 8)                               # an empty box
    with pytest.raises(ValueError, match="crop_levels"):
        box(0, 0, 8, 8, whole=(8, 8, 1, 0))           # the box does not fit its image
    with pytest.raises(ValueError, match="crop_levels"):
        box(0, 0, 8, 8, resized=(8, 8), window=(1, 0, 8, 8))    # the window leaves the resize
    with pytest.raises(ValueError, match="crop_levels"):
        box(0, 0, 8, 8, flips=4)
    with pytest.raises(ValueError, match="output"):
        box(0, 0, 8, 8, resized=(9, 8), window=(0, 0, 9, 8))   # out holds 8 x 8
    with pytest.raises(ValueError, match="adjustment"):
        box(0, 0, 8, 8, kinds=b"\x07")
    assert box(30, 30, 20, 20) is False               # outside the JPEG: declined
    assert box(0, 0, 8, 8, image=data[:100]) is False     # cut short: declined
    assert box(0, 0, 8, 8, whole=(40, 40, 0, 0), resized=(20, 20), window=(0, 0, 8, 8)) is False  # reads past the box
    assert box(0, 0, 40, 40, whole=(40, 40, 0, 0), resized=(20, 20), window=(0, 0, 8, 8)) is True
