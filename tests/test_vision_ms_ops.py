"""The vision ops of MindSpore 2.10's namespace added to recordio (AutoContrast ... UniformAugment):
shapes, dtypes, bounds, keyed reproducibility, both input forms (numpy and PIL), argument errors.
Value cross-checks against MindSpore itself: test_vision_ms_ops_oracle.py."""

import numpy as np
import pytest
from PIL import Image, ImageOps

import recordio.dataset as ds
import recordio.dataset.vision as dvision
from recordio import transforms, vision
from recordio.dataset.vision import utils as vision_utils
from recordio.keys import op_scope, row_scope

RNG = np.random.default_rng(7)
IMG = RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8)


def at(op, *args, row=0, seed=1):
    with row_scope(seed, 0, row), op_scope(3):
        return op(*args)


RANDOM_OPS = [
    lambda: vision.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5),
    lambda: vision.RandomRotation((0, 125), vision.Inter.BILINEAR, False, (6, 6), 1),
    lambda: vision.RandomColor((0.1, 1.9)),
    lambda: vision.RandomPosterize((1, 8)),
    lambda: vision.RandomSolarize((0, 255)),
    lambda: vision.RandomPerspective(0.5, 1.0),
    lambda: vision.UniformAugment([vision.Invert(), vision.RandomColor(), vision.RandomRotation(30)], 2),
]


@pytest.mark.parametrize("make", RANDOM_OPS)
@pytest.mark.parametrize("form", ["numpy", "pil"])
def test_random_ops_keep_shape_type_and_are_keyed(make, form):
    img = IMG if form == "numpy" else Image.fromarray(IMG)
    outs = [np.asarray(at(make(), img, row=r)) for r in range(6)]
    for out in outs:
        assert out.shape == IMG.shape and out.dtype == np.uint8
    again = [np.asarray(at(make(), img, row=r)) for r in range(6)]
    assert all(np.array_equal(a, b) for a, b in zip(outs, again))            # same key, same output
    assert any(not np.array_equal(outs[0], o) for o in outs[1:])              # rows draw differently
    if form == "pil":       # MindSpore's C-only ops return an array for a PIL image, the others a PIL image
        c_only = isinstance(make(), (vision.RandomPosterize, vision.RandomSolarize))
        assert isinstance(at(make(), img), np.ndarray if c_only else Image.Image)


def test_posterize_and_solarize_bounds():
    for row in range(20):
        out = at(vision.RandomPosterize((3, 5)), IMG, row=row)
        assert np.all(out & 0b111 == 0) and np.all(out <= IMG) and np.all(IMG - out < 32)
        sol = at(vision.RandomSolarize((50, 200)), IMG, row=row)
        assert np.all((sol == IMG) | (sol == 255 - IMG))
        assert np.all(sol[IMG < 50] == IMG[IMG < 50])
    assert np.array_equal(at(vision.RandomSolarize((0, 0)), IMG), 255 - IMG)
    assert np.array_equal(at(vision.RandomPosterize(8), IMG), IMG)


def test_degenerate_ranges_are_identities():
    assert np.array_equal(at(vision.RandomAffine(0), IMG), IMG)
    assert np.array_equal(at(vision.RandomRotation((0, 0)), IMG), IMG)
    assert np.array_equal(at(vision.RandomColor((1, 1)), IMG), IMG)
    assert np.array_equal(at(vision.RandomPerspective(0.5, 0.0), IMG), IMG)
    assert at(vision.RandomRotation((90, 90), expand=True), IMG).shape == (40, 30, 3)
    assert np.array_equal(at(vision.RandomRotation((180, 180), vision.Inter.NEAREST), IMG), IMG[::-1, ::-1])


def test_deterministic_ops_against_references():
    assert np.array_equal(vision.Invert()(IMG), 255 - IMG)
    pil = Image.fromarray(IMG)
    assert np.array_equal(np.asarray(vision.Invert()(pil)), 255 - IMG)
    assert np.array_equal(np.asarray(vision.AutoContrast(5, 3)(pil)), np.asarray(ImageOps.autocontrast(pil, 5, [3])))
    stretched = vision.AutoContrast()(IMG // 2 + 20)
    assert stretched.min() == 0 and stretched.max() == 255
    eq = vision.Equalize()(IMG[:, :, 0])
    assert eq.shape == (30, 40) and eq.max() == 255
    padded = vision.Pad((1, 2, 3, 4), (5, 6, 7))(IMG)
    assert padded.shape == (36, 44, 3) and np.array_equal(padded[2:32, 1:41], IMG)
    assert np.array_equal(padded[0, 0], [5, 6, 7]) and np.array_equal(padded[-1, -1], [5, 6, 7])
    assert np.array_equal(vision.Pad(2, padding_mode=vision.Border.EDGE)(IMG)[0, 0], IMG[0, 0])
    assert np.array_equal(np.asarray(vision.Pad((1, 2), padding_mode=vision.Border.SYMMETRIC)(pil)),
                          np.pad(IMG, ((2, 2), (1, 1), (0, 0)), "symmetric"))


def test_five_and_ten_crop():
    pil = Image.fromarray(IMG)
    crops = vision.FiveCrop((10, 12))(pil)
    assert len(crops) == 5 and all(isinstance(c, Image.Image) and c.size == (12, 10) for c in crops)
    boxes = [IMG[:10, :12], IMG[:10, -12:], IMG[-10:, :12], IMG[-10:, -12:], IMG[10:20, 14:26]]
    for crop, box in zip(crops, boxes):
        assert np.array_equal(np.asarray(crop), box)
    for array, want in zip(vision.FiveCrop((10, 12))(IMG), boxes):
        assert np.array_equal(array, want)
    ten = vision.TenCrop(8, use_vertical_flip=True)(pil)
    assert len(ten) == 10 and np.array_equal(np.asarray(ten[5]), IMG[::-1][:8, :8])
    with pytest.raises(ValueError):
        vision.FiveCrop(31)(pil)


def test_tensor_ops():
    chw = RNG.random((3, 4, 5)).astype(np.float32)
    mat, mean = RNG.standard_normal((60, 60)), RNG.standard_normal(60)
    out = vision.LinearTransformation(mat, mean)(chw)
    assert out.shape == chw.shape and out.dtype == np.float64
    np.testing.assert_allclose(out.ravel(), (chw.ravel() - mean) @ mat)
    with pytest.raises(ValueError):
        vision.LinearTransformation(mat, mean)(chw[:2])
    assert vision.ToType(np.int16)(chw * 100).dtype == np.int16
    assert np.array_equal(np.asarray(vision.ToPIL()(IMG)), IMG)
    assert vision.ToPIL()(chw[0]).mode == "F"
    with pytest.raises(TypeError):
        vision.ToPIL()(chw.transpose(1, 2, 0))          # float with 3 channels: Pillow has no such mode


def test_random_erasing_box_and_value():
    chw = RNG.random((3, 20, 30)).astype(np.float32)
    erased = [at(vision.RandomErasing(prob=1.0, value=(1, 2, 3)), chw, row=r) for r in range(10)]
    for out in erased:
        changed = np.any(out != chw, axis=0)
        ys, xs = np.nonzero(changed)
        assert ys.size and changed[ys.min():ys.max() + 1, xs.min():xs.max() + 1].all()        # one box
        assert np.array_equal(out[:, ys[0], xs[0]], [1, 2, 3]) and out.dtype == chw.dtype
    assert np.array_equal(at(vision.RandomErasing(prob=0.0), chw), chw)
    noisy = at(vision.RandomErasing(prob=1.0, value="random"), chw)
    assert np.array_equal(noisy, at(vision.RandomErasing(prob=1.0, value="random"), chw))
    kept = chw.copy()
    assert at(vision.RandomErasing(prob=1.0, inplace=True), kept) is kept


def test_cutmix_batch():
    images = RNG.integers(0, 256, (6, 16, 16, 3), dtype=np.uint8)
    labels = np.eye(5, dtype=np.int32)[[0, 1, 2, 3, 4, 0]]
    out, mixed = at(vision.CutMixBatch(vision.ImageBatchFormat.NHWC), images, labels)
    assert out.shape == images.shape and out.dtype == np.uint8 and mixed.dtype == np.float32
    np.testing.assert_allclose(mixed.sum(1), 1.0, rtol=1e-6)
    for i in range(6):                 # each pixel comes from some image of the batch at the same place
        assert np.all(np.any(np.all(out[i][None] == images, axis=-1), axis=0))
        own = np.all(out[i] == images[i], axis=-1).mean()
        assert own >= mixed[i][labels[i].argmax()] - 1e-6
    nchw, _ = at(vision.CutMixBatch(vision.ImageBatchFormat.NCHW, 2.0, 1.0), images.transpose(0, 3, 1, 2), labels)
    assert nchw.shape == (6, 3, 16, 16)
    same, plain = at(vision.CutMixBatch(vision.ImageBatchFormat.NHWC, prob=0.0), images, labels)
    assert np.array_equal(same, images) and np.array_equal(plain, labels)
    with pytest.raises(ValueError):
        vision.CutMixBatch(vision.ImageBatchFormat.NHWC)(images, labels.argmax(1))        # not one-hot
    assert dvision.CutMixBatch is vision.CutMixBatch and vision_utils.ImageBatchFormat.NCHW == 1


def test_uniform_augment_applies_at_most_num_ops():
    calls = []

    def recorder(k):
        def op(img):
            calls.append(k)
            return img
        return op

    op = vision.UniformAugment([recorder(k) for k in range(5)], num_ops=2)
    counts = []
    for row in range(200):
        calls.clear()
        at(op, IMG, row=row)
        assert len(calls) == len(set(calls)) <= 2
        counts.append(len(calls))
    assert set(counts) == {0, 1, 2} and 0.8 < np.mean(counts) < 1.2            # each picked op: p = 1/2


def test_pil_paths_of_existing_ops():
    pil = Image.fromarray(IMG)
    for op in (vision.RandomCrop(20, padding=2, pad_if_needed=True, padding_mode=vision.Border.REFLECT),
               vision.RandomHorizontalFlip(1.0), vision.RandomVerticalFlip(1.0), vision.RandomSharpness(),
               vision.RandomResizedCrop(12), vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)):
        assert isinstance(at(op, pil), Image.Image)
    assert np.array_equal(np.asarray(at(vision.RandomHorizontalFlip(1.0), pil)), IMG[:, ::-1])
    assert at(vision.RandomCrop(50, pad_if_needed=True), pil).size == (50, 50)
    assert at(vision.RandomResizedCrop((12, 9)), pil).size == (9, 12)


def test_in_a_pipeline_independent_of_workers():
    def source():
        for i in range(8):
            yield (np.roll(IMG, i, axis=1),)

    ops = [vision.RandomAffine(10, scale=(0.9, 1.1)), vision.UniformAugment([vision.Invert(), vision.Equalize(),
                                                                              vision.RandomPosterize((2, 6))]),
           vision.RandomSolarize((0, 255)), vision.Pad(2)]

    def run(workers):
        data = ds.GeneratorDataset(source, ["image"], shuffle=False)
        data = data.map(operations=transforms.Compose(ops), input_columns="image", num_parallel_workers=workers)
        return [row["image"] for row in data.create_dict_iterator(output_numpy=True, num_epochs=1)]

    one, three = run(1), run(3)
    assert len(one) == 8 and all(r.shape == (34, 44, 3) for r in one)
    assert all(np.array_equal(a, b) for a, b in zip(one, three))


@pytest.mark.parametrize("make,error", [
    (lambda: vision.AutoContrast(cutoff=50), ValueError),
    (lambda: vision.AutoContrast(cutoff="1"), TypeError),
    (lambda: vision.AutoContrast(ignore=256), ValueError),
    (lambda: vision.AutoContrast(ignore=[1.5]), TypeError),
    (lambda: vision.Pad((1, 2, 3)), ValueError),
    (lambda: vision.Pad(-1), ValueError),
    (lambda: vision.Pad(1.5), TypeError),
    (lambda: vision.Pad(1, fill_value=(1, 2)), TypeError),
    (lambda: vision.Pad(1, padding_mode="edge"), TypeError),
    (lambda: vision.RandomRotation(-5), ValueError),
    (lambda: vision.RandomRotation((10, 5)), ValueError),
    (lambda: vision.RandomRotation((1, 2, 3)), TypeError),
    (lambda: vision.RandomRotation(5, expand=1), TypeError),
    (lambda: vision.RandomRotation(5, center=(1,)), TypeError),
    (lambda: vision.RandomAffine(5, translate=(0.1, 2.0)), ValueError),
    (lambda: vision.RandomAffine(5, translate=(0.1,)), TypeError),
    (lambda: vision.RandomAffine(5, scale=(2, 1)), ValueError),
    (lambda: vision.RandomAffine(5, shear=(5, 1)), ValueError),
    (lambda: vision.RandomAffine(5, resample="nearest"), TypeError),
    (lambda: vision.RandomColor(1.5), TypeError),
    (lambda: vision.RandomColor((2, 1)), ValueError),
    (lambda: vision.RandomColor((1, 2, 3)), ValueError),
    (lambda: vision.RandomPosterize(9), ValueError),
    (lambda: vision.RandomPosterize((1, 2, 3)), TypeError),
    (lambda: vision.RandomSolarize([0, 255]), TypeError),
    (lambda: vision.RandomSolarize((200, 100)), ValueError),
    (lambda: vision.RandomPerspective(1, 0.5), TypeError),
    (lambda: vision.RandomPerspective(0.5, 1.5), ValueError),
    (lambda: vision.RandomResize(0), ValueError),
    (lambda: vision.RandomResize((1, 2, 3)), TypeError),
    (lambda: vision.FiveCrop((0, 2)), ValueError),
    (lambda: vision.TenCrop(2, use_vertical_flip=1), TypeError),
    (lambda: vision.RandomErasing(prob=2), ValueError),
    (lambda: vision.RandomErasing(scale=(0.5, 0.1)), ValueError),
    (lambda: vision.RandomErasing(value="noise"), ValueError),
    (lambda: vision.RandomErasing(value=0.5), TypeError),
    (lambda: vision.RandomErasing(max_attempts=0), ValueError),
    (lambda: vision.LinearTransformation(np.ones((3, 4)), np.ones(3)), ValueError),
    (lambda: vision.LinearTransformation([[1]], np.ones(1)), TypeError),
    (lambda: vision.LinearTransformation(np.ones((3, 3)), np.ones(4)), ValueError),
    (lambda: vision.CutMixBatch(0), TypeError),
    (lambda: vision.CutMixBatch(vision.ImageBatchFormat.NHWC, alpha=0), ValueError),
    (lambda: vision.CutMixBatch(vision.ImageBatchFormat.NHWC, prob=1.5), ValueError),
    (lambda: vision.UniformAugment([vision.Invert()], num_ops=2), ValueError),
    (lambda: vision.UniformAugment([], num_ops=1), ValueError),
    (lambda: vision.UniformAugment(vision.Invert(), num_ops=1), TypeError),
    (lambda: vision.UniformAugment([1], num_ops=1), TypeError),
    (lambda: vision.ToType(3), TypeError),
])
def test_bad_arguments_raise_mindspores_error_types(make, error):
    with pytest.raises(error):
        make()


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError):
        vision.Equalize()(IMG.astype(np.float32))              # MindSpore's C op: uint8 only
    with pytest.raises(TypeError):
        vision.RandomErasing()(Image.fromarray(IMG))          # <C,H,W> arrays only
    with pytest.raises(ValueError):
        vision.RandomColor()(IMG[:, :, :1])
