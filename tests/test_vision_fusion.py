"""recordio.vision.fusion: fused neighbours give exactly the unfused results and keep op indices."""

import numpy as np
import pytest

from recordio import vision
from recordio.keys import op_scope, row_scope
from recordio.transforms import Compose
from recordio.vision import color_kernels, fusion, level_runs
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
    assert fused[2].op is flip and fused[6] is ops[6]
    assert fused[3].__name__ == "Normalize" and fused[4].__name__ == "HWC2CHW" and fused[5].op is chw_first
    assert type(fused[0]).__name__ == "_DeferredDecode"


def test_compose_fuses_and_matches_the_unfused_chain():
    img = np.random.default_rng(1).integers(0, 256, (40, 30, 3), dtype=np.uint8)
    ops = [vision.RandomHorizontalFlip(1.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    compose = Compose(ops)
    assert type(compose._ops[0]).__name__ == "_ViewFlip" and type(compose._ops[1]).__name__ == "LevelRun"
    np.testing.assert_array_equal(compose(img), unfused(ops, img))


UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
LEVEL_RUNS = {
    "rescale-normalize-chw": lambda: [vision.Rescale(1 / 255, 0), vision.Normalize(UNIT_MEAN, UNIT_STD),
                                      vision.HWC2CHW()],
    "rescale-normalize-hwc": lambda: [vision.Rescale(1 / 255, 0), vision.Normalize(UNIT_MEAN, UNIT_STD)],
    "chw-then-normalize": lambda: [vision.HWC2CHW(), vision.Normalize(MEAN, STD, is_hwc=False)],
    "totensor-normalize": lambda: [vision.ToTensor(), vision.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)],
    "totensor-rescale-normalize": lambda: [vision.ToTensor(), vision.Rescale(2.0, -0.5),
                                           vision.Normalize([0.5], [0.25], is_hwc=False)],
    "two-normalize": lambda: [vision.Normalize(MEAN, STD), vision.Rescale(0.5, 1.0), vision.Normalize([1.0], [2.0]),
                              vision.HWC2CHW()],
}


def _run(ops, img, row):
    """The ops on one row under the pipeline's keys (op j draws as op j of a map)."""
    with row_scope(7, 0, row):
        for j, op in enumerate(ops):
            with op_scope(j):
                img = op(img)
    return img


def _photo(shape, seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("head", ["none", "flip", "vflip", "flip-color"])
@pytest.mark.parametrize("run", sorted(LEVEL_RUNS))
def test_level_runs_equal_the_unfused_ops(run, head, compiled, monkeypatch):
    if not compiled:
        monkeypatch.setattr(color_kernels, "_kernels", None)
    before = {"none": [], "flip": [vision.RandomHorizontalFlip()], "vflip": [vision.RandomVerticalFlip()],
              "flip-color": [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)]}[head]
    ops = before + LEVEL_RUNS[run]()
    fused = fuse_ops(ops)
    kinds = [type(op).__name__ for op in fused]
    into_colour = head == "flip-color" and compiled            # the compiled colour op writes the run itself
    assert len(fused) == len(ops) and kinds[len(before)] == ("_Passed" if into_colour else "LevelRun")
    assert (kinds[1] == "ColourLevels") == into_colour
    for row in range(8):                                 # prob 0.5: both flip outcomes are seen
        img = _photo((29, 23, 3), row)
        got, want = _run(fused, img, row), _run(ops, img, row)
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)


COLOUR_INPUTS = {
    "float": lambda img: img.astype(np.float32),                    # the colour op's float path, then the run
    "channels reversed": lambda img: img[:, :, ::-1],               # channel stride -1: not the C kernels'
    "cropped view": lambda img: img[3:-2, 1:-4],
}


@pytest.mark.parametrize("kind", sorted(COLOUR_INPUTS))
def test_colour_then_level_run_takes_other_inputs_as_written(kind):
    ops = [vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.2), vision.Rescale(1 / 255, 0),
           vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()]
    fused = fuse_ops(ops)
    for row in range(6):
        img = COLOUR_INPUTS[kind](_photo((17, 21, 3), row))
        got, want = _run(fused, img, row), _run(ops, img, row)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_colour_then_level_run_refusing_channels_raises_the_ops_error():
    ops = fuse_ops([vision.RandomColorAdjust(0.4), vision.Normalize([1.0, 2.0], [3.0, 4.0]), vision.HWC2CHW()])
    assert type(ops[0]).__name__ == ("ColourLevels" if color_kernels.compiled_kernels() else "RandomColorAdjust")
    with pytest.raises(ValueError, match="Normalize"):
        _run(ops, _photo((4, 4, 3)), 0)


@pytest.mark.parametrize("shape", [(6, 5, 1), (6, 5, 4), (1, 1, 3)])
def test_level_runs_take_other_channel_counts(shape):
    ops = [vision.Rescale(1 / 255, 0), vision.Normalize([0.5], [0.2]), vision.HWC2CHW()]
    img = _photo(shape)
    np.testing.assert_array_equal(_run(fuse_ops(ops), img, 0), _run(ops, img, 0))


@pytest.mark.parametrize("img", [np.arange(60, dtype=np.float32).reshape(4, 5, 3),
                                 np.arange(20, dtype=np.uint8).reshape(4, 5),
                                 np.arange(60, dtype=np.uint16).reshape(4, 5, 3)])
def test_level_runs_run_other_images_as_written(img):
    ops = [vision.Rescale(1 / 255, 0), vision.Normalize([0.5], [0.2]), vision.HWC2CHW()]
    got, want = _run(fuse_ops(ops), img, 0), _run(ops, img, 0)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_totensor_run_takes_pil_images():
    from PIL import Image
    ops = [vision.ToTensor(), vision.Normalize([0.5], [0.2], is_hwc=False)]
    fused = fuse_ops(ops)
    for mode in ("RGB", "L"):
        img = Image.fromarray(_photo((13, 17, 3))).convert(mode)
        got, want = _run(fused, img, 0), _run(ops, img, 0)
        assert got.shape == want.shape == ((3,) if mode == "RGB" else (1,)) + (13, 17)
        np.testing.assert_array_equal(got, want)


def test_level_run_refusing_channels_raises_the_ops_error():
    ops = fuse_ops([vision.Rescale(1 / 255, 0), vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()])
    with pytest.raises(ValueError, match="Normalize: mean/std have 3 values"):
        ops[0](_photo((4, 4, 2)))


def test_what_does_not_fuse():
    """A lone op, a Normalize on the other layout, a ToTensor to another type, a flip before an op that
    copies anyway: as written."""
    lone = [vision.Rescale(1 / 255, 0), vision.RandomHorizontalFlip(), vision.Normalize(MEAN, STD, is_hwc=False)]
    assert fuse_ops(lone) == lone
    other_type = [vision.ToTensor("float64"), vision.Normalize(MEAN, STD, is_hwc=False)]
    assert fuse_ops(other_type) == other_type
    flip_then_resize = [vision.RandomHorizontalFlip(), vision.Resize(8)]
    assert fuse_ops(flip_then_resize) == flip_then_resize


def test_fused_train_chain_in_a_pipeline_equals_the_unfused_ops(tmp_path, monkeypatch):
    """MindDataset.map fuses (the planner's host maps): the rows equal those of the same pipeline with
    fusion switched off."""
    import cv2
    from recordio import FileWriter, MindDataset
    path = str(tmp_path / "x.mindrecord")
    with FileWriter(path, overwrite=True) as w:
        w.add_schema({"image": {"type": "bytes"}}, "x")
        w.write_raw_data([{"image": cv2.imencode(".jpg", _photo((60, 70, 3), i))[1].tobytes()} for i in range(6)])

    def rows():
        ops = [vision.RandomCropDecodeResize(32), vision.RandomHorizontalFlip(),
               vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1 / 255, 0),
               vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()]
        ds = MindDataset(path, shuffle=False).map(ops, input_columns="image", num_parallel_workers=2)
        return [row["image"] for row in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]

    got = rows()
    monkeypatch.setattr(fusion, "fuse_ops", list)
    want = rows()
    assert len(got) == 6 and got[0].shape == (3, 32, 32) and got[0].dtype == np.float32
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


class _Applied:
    """A slot a fused neighbour applied: the pipeline and Compose must skip it (calling it fails)."""

    passes_input = True

    def __call__(self, value):
        raise AssertionError("a slot that passes its input on was called")


def _draw(value):
    """A random op: adds a draw of its own op id (so it tells whether its index was kept)."""
    from recordio.keys import current_keys
    return value + current_keys().uniform(0)[0]


@pytest.mark.parametrize("workers", [1, 2])
def test_slots_that_pass_their_input_on_are_skipped_and_keep_the_indices(tmp_path, workers):
    """A ``passes_input`` slot is not called, in a map or in Compose, and the ops after it draw as
    they would after an op that returns its input (their op ids are their indices)."""
    from recordio import FileWriter, MindDataset
    path = str(tmp_path / "x.mindrecord")
    with FileWriter(path, overwrite=True) as w:
        w.add_schema({"x": {"type": "float64"}}, "x")
        w.write_raw_data([{"x": float(i)} for i in range(8)])

    def rows(ops):
        ds = MindDataset(path, shuffle=False).map(ops, input_columns="x", num_parallel_workers=workers)
        return [float(row["x"]) for row in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]

    identity = [lambda v: v, _draw, lambda v: v, _draw]
    want = rows(identity)
    assert rows([_Applied(), _draw, _Applied(), _draw]) == want
    assert rows([Compose([_Applied(), _draw, _Applied(), _draw])]) == rows([Compose(identity)])
    assert want != rows([_draw, _draw]) and len(set(want)) == 8           # the indices matter


@pytest.mark.parametrize("shape", [(300, 410, 3), (200, 180, 3), (100, 90, 3)])
@pytest.mark.parametrize("pil_form", [False, True])
def test_eval_chain_fused_equals_unfused(shape, pil_form):
    """Resize + CenterCrop (only the crop's window resized; as written for a PIL image or when the crop
    pads), then a level run, on a decoded image (Decode's own fusion with Resize is checked in
    test_vision_decode.py)."""
    import cv2
    data = cv2.imencode(".jpg", _photo(shape, 3))[1].tobytes()
    if pil_form:
        ops = [vision.Resize(128), vision.CenterCrop(112), vision.ToTensor(),
               vision.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)]
    else:
        ops = [vision.Resize(128), vision.CenterCrop((112, 120)), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    fused = fuse_ops(ops)
    assert [type(op).__name__ for op in fused][:3] == ["_CroppedResize", "_Passed", "LevelRun"]
    img = vision.Decode(to_pil=pil_form)(data)
    got, want = _run(fused, img, 0), _run(ops, img, 0)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    small = _photo((50, 60, 3))
    np.testing.assert_array_equal(_run(fused, small, 0), _run(ops, small, 0))
    padded = [vision.Resize(100)] + ops[1:]                # resized smaller than the crop: CenterCrop pads
    np.testing.assert_array_equal(_run(fuse_ops(padded), small, 0), _run(padded, small, 0))


@pytest.mark.parametrize("shape, encoding", [((300, 410, 3), ".jpg"), ((600, 700, 3), ".jpg"),
                                             ((1100, 1300, 3), ".jpg"), ((310, 290, 3), ".png")])
def test_decode_resize_centre_crop_resizes_only_the_window(shape, encoding):
    """Decode -> Resize -> CenterCrop (the eval chain): the deferred decode then only the crop's window
    resized, the bytes of the deferred decode + Resize followed by CenterCrop as written (at full scale and
    where the decoder scales in the DCT); a crop that pads runs as written."""
    import cv2
    from recordio.vision.fusion import fuse_decode
    data = np.frombuffer(cv2.imencode(encoding, _photo(shape, 5))[1].tobytes(), np.uint8)
    for size, crop in [(256, 224), ((230, 250), (224, 200)), (200, 224)]:
        ops = [vision.Decode(), vision.Resize(size), vision.CenterCrop(crop), vision.Normalize(MEAN, STD),
               vision.HWC2CHW()]
        fused = fuse_ops(ops)
        assert [type(op).__name__ for op in fused][:3] == ["_DeferredDecode", "_CroppedResize", "_Passed"]
        got, want = _run(fused, data, 0), _run(fuse_decode(ops), data, 0)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


LEVEL_ARITHMETIC = {
    "rescale-normalize": lambda: [vision.Rescale(1.0 / 255, 0.0), vision.Normalize(MEAN, STD), vision.HWC2CHW()],
    "normalize": lambda: [vision.Normalize([123.675, 116.28, 103.53], [58.395, 57.12, 57.375]), vision.HWC2CHW()],
    "totensor-normalize": lambda: [vision.ToTensor(), vision.Normalize(MEAN, STD, is_hwc=False)],
    "rescale": lambda: [vision.Rescale(0.5, -3.0), vision.HWC2CHW()],
}


@pytest.mark.parametrize("run", sorted(LEVEL_ARITHMETIC))
def test_level_runs_compute_their_arithmetic_with_the_tables_bits(run):
    """A level run whose ops are a multiply, add, subtract and divide in that order is computed by the
    kernels instead of looked up: the same float32 bits (signed zeros too) as the ops as written, on every
    level, with and without a colour op before it, flipped or not."""
    if color_kernels.compiled_kernels() is None:
        pytest.skip("the C kernels are not built")
    for head in ([], [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4)]):
        ops = head + LEVEL_ARITHMETIC[run]()
        fused = fuse_ops(ops)
        level_run = next(op for op in fused if isinstance(op, level_runs.LevelRun) or hasattr(op, "run"))
        assert getattr(level_run, "run", level_run).program() is not None
        for row in range(12):
            img = _photo((17, 41, 3), row)
            img[0, :, :] = np.arange(41 * 3).reshape(41, 3) * 255 // 122        # a ramp of levels
            got, want = _run(fused, img, row), _run(ops, img, row)
            assert got.shape == want.shape
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_level_run_out_of_order_or_unchecked_arithmetic_is_not_used(monkeypatch):
    """Normalize then Rescale is not a multiply-add-subtract-divide: no arithmetic, the tables (same values);
    arithmetic that does not give the tables' bits on every level is refused."""
    if color_kernels.compiled_kernels() is None:
        pytest.skip("the C kernels are not built")
    ops = [vision.Normalize(MEAN, STD), vision.Rescale(0.5, 1.0), vision.HWC2CHW()]
    fused = fuse_ops(ops)
    assert fused[0].program() is None
    img = _photo((9, 16, 3))
    np.testing.assert_array_equal(_run(fused, img, 0), _run(ops, img, 0))
    real = level_runs.arithmetic
    monkeypatch.setattr(level_runs, "arithmetic", lambda ops: real(ops) * np.float32(1.0000001))
    assert fuse_ops(LEVEL_ARITHMETIC["rescale-normalize"]())[0].program() is None
