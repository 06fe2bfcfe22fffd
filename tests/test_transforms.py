"""TypeCast (C-style casts, dtype spellings) and Compose (nested op ids, tuple passing)."""

import numpy as np
import pytest
import torch

from recordio import transforms, vision
from recordio.keys import current_keys, derive_uid, op_scope, row_scope


@pytest.mark.parametrize("spelling", [np.float32, np.dtype("float32"), "float32", torch.float32, "torch.float32",
                                      torch.float, "float"])
def test_typecast_accepts_numpy_torch_and_names(spelling):
    out = transforms.TypeCast(spelling)(np.array([1, 2], np.int64))
    assert out.dtype == np.float32 and out.tolist() == [1.0, 2.0]


def test_typecast_float_to_uint8_truncates_and_wraps_like_c_and_torch():
    values = np.array([3.7, -1.2, 300.5, 0.0, 255.9], np.float32)
    out = transforms.TypeCast("uint8")(values)
    assert out.tolist() == [3, 255, 44, 0, 255]
    assert out.tolist() == torch.from_numpy(values).to(torch.int64).to(torch.uint8).tolist()


def test_typecast_to_int32_and_bool():
    assert transforms.TypeCast(torch.int32)(np.array([-2.9, 2.9])).tolist() == [-2, 2]
    assert transforms.TypeCast(torch.bool)(np.array([0, 3])).tolist() == [False, True]


@pytest.mark.parametrize("bad", ["complex64", "str", object, 3, "nonsense"])
def test_typecast_rejects_bad_types(bad):
    with pytest.raises(TypeError):
        transforms.TypeCast(bad)


class Record:
    """Returns the op id it ran under and the row's first draw."""

    def __call__(self, x):
        keys = current_keys()
        return x + [(keys.op, float(keys.uniform(0)[0]))]


def test_compose_runs_members_under_nested_op_ids():
    chain = transforms.Compose([Record(), Record()])
    with row_scope(1, 0, 5), op_scope(77):
        got = chain([])
    assert [uid for uid, _ in got] == [derive_uid(77, 0), derive_uid(77, 1)]
    assert got[0][1] != got[1][1]
    with row_scope(1, 0, 5), op_scope(77):
        assert chain([]) == got


def test_compose_passes_tuples_as_arguments():
    chain = transforms.Compose([vision.SlicePatches(1, 2), lambda a, b: (b, a), lambda a, b: a.sum() - b.sum()])
    img = np.arange(12, dtype=np.int64).reshape(2, 3, 2)
    img = np.concatenate([img, img + 100], axis=1)
    assert chain(img) == 100 * img.size // 2


@pytest.mark.parametrize("bad", [[], "abc", [1, 2], None])
def test_compose_rejects_non_callables(bad):
    with pytest.raises(TypeError):
        transforms.Compose(bad)


def test_every_op_pickles_for_worker_processes():
    import pickle

    ops = [vision.Decode(), vision.Resize(4, vision.Inter.AREA), vision.RandomCrop(3, padding=1),
           vision.CenterCrop(2), vision.RandomResizedCrop(8),
           vision.RandomHorizontalFlip(), vision.RandomVerticalFlip(), vision.Normalize([1], [2]), vision.HWC2CHW(),
           vision.Rescale(2, 1), vision.RandomColorAdjust(0.1, 0.2, 0.3, 0.4), vision.RandomSharpness(),
           vision.SlicePatches(2, 2, vision.SliceMode.DROP), transforms.TypeCast(torch.int64),
           vision.RandomCropDecodeResize(8), transforms.Compose([vision.Decode(), vision.Resize(4)])]
    img = np.random.default_rng(0).integers(0, 256, (6, 6, 3), dtype=np.uint8)
    for op in ops[1:-2]:
        copy = pickle.loads(pickle.dumps(op))
        with row_scope(1, 0, 2), op_scope(3):
            a = op(img)
        with row_scope(1, 0, 2), op_scope(3):
            b = copy(img)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)) if isinstance(a, tuple) else np.array_equal(a, b)
    for op in ops[:1] + ops[-2:]:
        assert repr(pickle.loads(pickle.dumps(op))) == repr(op)


def test_import_keeps_torch_and_cv2_out():
    import subprocess
    import sys

    code = ("import sys, recordio, recordio.transforms; recordio.transforms.TypeCast('int32'); "
            "assert 'torch' not in sys.modules and 'cv2' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = "import sys, recordio.vision; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
