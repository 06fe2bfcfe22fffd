"""Batched device ops == host ops per sample (same keyed draws), on cpu and, when present, CUDA."""

import numpy as np
import pytest
import torch

from recordio import transforms, vision
from recordio.errors import PipelineError
from recordio.keys import Keys, derive_uid, op_scope, row_scope
from recordio.offload.tail import OffloadTail, build_tail
from recordio.offload.plan import MapSpec, plan_offload

SEED, EPOCH = 11, 3
RNG = np.random.default_rng(5)
NOISE = RNG.integers(0, 256, (9, 13, 17, 3), dtype=np.uint8)
NOISE[0] = 0
NOISE[1] = 255
NOISE[2] = (250, 10, 128)
ROWS = np.array([4, 90, 17, 3, 1000, 55, 8, 21, 7])

OPS = {
    "hflip": vision.RandomHorizontalFlip(0.5),
    "vflip": vision.RandomVerticalFlip(0.7),
    "brightness": vision.RandomColorAdjust(brightness=(0.0, 2.0)),
    "contrast": vision.RandomColorAdjust(contrast=(0.0, 2.0)),
    "saturation": vision.RandomColorAdjust(saturation=(0.0, 2.0)),
    "hue": vision.RandomColorAdjust(hue=(-0.5, 0.5)),
    "jitter": vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1),
    "sharpness": vision.RandomSharpness((0.0, 2.0)),
    "normalize": vision.Normalize([123.7, 116.3, 103.5], [58.4, 57.1, 57.4]),
    "rescale": vision.Rescale(1 / 255, -0.5),
    "hwc2chw": vision.HWC2CHW(),
    "cast": transforms.TypeCast("float32"),
}


def host_chain(ops, img, row, uids, seed=SEED, epoch=EPOCH):
    with row_scope(seed, epoch, row):
        for uid, op in zip(uids, ops):
            with op_scope(uid):
                img = op(img)
    return img


def device_chain(ops, batch, rows, uids, device="cpu", rounding="per_op"):
    tail = OffloadTail({"image": list(zip(uids, ops))}, rounding=rounding)
    x = torch.from_numpy(batch).to(device)
    return tail({"image": x}, torch.as_tensor(rows), EPOCH, SEED)["image"].cpu().numpy()


def assert_parity(ops, batch, rows, device="cpu", rounding="per_op", host_input=None, tol=0.0):
    uids = [derive_uid(41, j) for j in range(len(ops))]
    out = device_chain(ops, batch, rows, uids, device, rounding)
    host_batch = batch if host_input is None else host_input
    for i, row in enumerate(rows):
        expect = host_chain(ops, host_batch[i], row, uids)
        assert out[i].dtype == expect.dtype and out[i].shape == expect.shape
        diff = np.abs(out[i].astype(np.float64) - expect.astype(np.float64)).max()
        assert diff <= tol, (i, row, diff)


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_batched_op_equals_the_host_op_per_sample(name):
    assert_parity([OPS[name]], NOISE, ROWS, tol=1e-6 if name == "normalize" else 0.0)


@pytest.mark.parametrize("name", ["hflip", "vflip", "sharpness", "rescale", "normalize", "hwc2chw"])
def test_two_dimensional_images(name):
    if name == "normalize":
        op = vision.Normalize([100], [50])
    else:
        op = OPS[name]
    assert_parity([op], NOISE[..., 0].copy(), ROWS, tol=1e-6)


def test_all_24_colour_orders_in_one_batch():
    op = OPS["jitter"]
    orders = op.draw(Keys(SEED, EPOCH, np.arange(400), derive_uid(41, 0)))["order"]
    rows, seen = [], set()
    for row, order in enumerate(map(tuple, orders)):
        if order not in seen:
            seen.add(order)
            rows.append(row)
    assert len(rows) == 24
    batch = np.resize(NOISE, (24, *NOISE.shape[1:]))
    assert_parity([op], batch, np.array(rows))


def test_chain_with_fused_rescale_normalize():
    ops = [OPS["hflip"], OPS["jitter"], OPS["sharpness"], OPS["rescale"], vision.Normalize([0.1, 0.2, 0.3], [0.2] * 3),
           OPS["hwc2chw"]]
    assert_parity(ops, NOISE, ROWS, tol=2e-5)
    tail = build_tail(plan_offload([MapSpec(41, ops, ["image"], None, True)], auto_offload=False,
                                   zip_or_concat=False))
    assert len(tail.columns["image"]) == 5          # Rescale + Normalize became one op


def test_channel_first_normalize_after_hwc2chw():
    assert_parity([OPS["hwc2chw"], vision.Normalize([10, 20, 30], [2, 3, 4], is_hwc=False)], NOISE, ROWS, tol=1e-6)


def test_flip_after_hwc2chw_flips_the_same_axis_as_the_host():
    assert_parity([OPS["hwc2chw"], vision.RandomHorizontalFlip(1.0)], NOISE, ROWS)


def test_typecast_float_to_uint8_wraps_like_the_host():
    ops = [vision.Rescale(1.7, -20.3), transforms.TypeCast(torch.uint8)]
    assert_parity(ops, NOISE, ROWS)


@pytest.mark.parametrize("name", ["jitter", "sharpness", "contrast", "hue"])
def test_rounding_none_is_the_float_path(name):
    """rounding='none' computes in float32: it equals the host op applied to float input."""
    out = device_chain([OPS[name]], NOISE, ROWS, [7], rounding="none")
    assert out.dtype == np.float32
    for i, row in enumerate(ROWS):
        expect = host_chain([OPS[name]], NOISE[i].astype(np.float32), row, [7])
        assert np.abs(out[i] - expect).max() <= 1e-3
    rounded = device_chain([OPS[name]], NOISE, ROWS, [7])
    assert np.abs(out - rounded).max() <= (4.0 if name == "jitter" else 1.0 + 1e-3)


def test_same_rows_same_values_whatever_the_batch_split():
    ops = [OPS["hflip"], OPS["jitter"], OPS["sharpness"]]
    uids = [1, 2, 3]
    whole = device_chain(ops, NOISE, ROWS, uids)
    parts = np.concatenate([device_chain(ops, NOISE[:4], ROWS[:4], uids), device_chain(ops, NOISE[4:], ROWS[4:], uids)])
    assert np.array_equal(whole, parts)
    other_epoch = OffloadTail({"image": list(zip(uids, ops))})({"image": torch.from_numpy(NOISE)}, ROWS, EPOCH + 1,
                                                                SEED)["image"].numpy()
    assert not np.array_equal(whole, other_epoch)


def test_module_passes_other_columns_and_accepts_numpy():
    tail = OffloadTail({"image": [(1, OPS["hflip"])]})
    labels = np.arange(9)
    out = tail({"image": NOISE, "label": labels, "name": ["a"] * 9}, ROWS, 0, 1)
    assert isinstance(out["image"], torch.Tensor) and out["label"] is labels and out["name"] == ["a"] * 9
    assert isinstance(tail, torch.nn.Module) and "RandomHorizontalFlip" in repr(tail)


def test_module_errors_name_the_column():
    tail = OffloadTail({"image": [(1, OPS["jitter"])]})
    with pytest.raises(PipelineError, match="'image' is not in the batch"):
        tail({"label": np.arange(3)}, np.arange(3), 0, 1)
    with pytest.raises(PipelineError, match="batch of 9 but 2 row ids"):
        tail({"image": NOISE}, np.arange(2), 0, 1)
    with pytest.raises(PipelineError, match="list"):
        tail({"image": list(NOISE)}, ROWS, 0, 1)
    with pytest.raises(PipelineError, match=r"<H,W,3>"):
        tail({"image": NOISE[..., :2]}, ROWS, 0, 1)
    with pytest.raises(ValueError, match="rounding"):
        OffloadTail({}, rounding="fast")


def test_params_are_drawn_per_call_not_frozen_in_the_module():
    tail = OffloadTail({"image": [(1, vision.RandomHorizontalFlip(0.5))]})
    batch = np.repeat(NOISE[3:4], 64, axis=0)
    a = tail({"image": batch}, np.arange(64), 0, 1)["image"]
    b = tail({"image": batch}, np.arange(64, 128), 0, 1)["image"]
    flipped_a = (a != torch.from_numpy(batch)).flatten(1).any(1)
    flipped_b = (b != torch.from_numpy(batch)).flatten(1).any(1)
    assert 10 < int(flipped_a.sum()) < 54 and not torch.equal(flipped_a, flipped_b)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(OPS))
def test_cuda_each_batched_op_equals_the_host_op(name):
    tol = 2.0 if name in ("hue", "jitter") else 1e-5 if name in ("normalize", "rescale") else 0.0
    assert_parity([OPS[name]], NOISE, ROWS, device="cuda", tol=tol)


@pytest.mark.gpu
def test_cuda_chain_equals_cpu_chain():
    ops = [OPS["hflip"], OPS["jitter"], OPS["sharpness"], OPS["normalize"], OPS["hwc2chw"]]
    uids = [1, 2, 3, 4, 5]
    cpu = device_chain(ops, NOISE, ROWS, uids)
    cuda = device_chain(ops, NOISE, ROWS, uids, device="cuda")
    assert np.abs(cpu - cuda).max() <= 2.0 / 57.0 + 1e-4


def test_cpu_chunking_does_not_change_values():
    ops = [(1, OPS["hflip"]), (2, OPS["jitter"]), (3, OPS["sharpness"]), (4, OPS["normalize"])]
    x = torch.from_numpy(NOISE)
    whole = OffloadTail({"image": ops}, cpu_chunk=100)({"image": x}, ROWS, EPOCH, SEED)["image"]
    chunked = OffloadTail({"image": ops}, cpu_chunk=2)({"image": x}, ROWS, EPOCH, SEED)["image"]
    assert torch.equal(whole, chunked)


@pytest.mark.parametrize("rounding", ["per_op", "none"])
def test_every_op_keeps_tensors_on_the_batch_device(rounding):
    """On the meta device any tensor left on the cpu would raise a device mismatch (the CUDA hazard)."""
    ops = [OPS["hflip"], OPS["vflip"], OPS["jitter"], OPS["sharpness"], OPS["rescale"], OPS["normalize"],
           OPS["hwc2chw"], vision.Normalize([1], [2]), transforms.TypeCast("float16")]
    x = torch.empty((9, 13, 17, 3), dtype=torch.uint8, device="meta")
    out = OffloadTail({"image": list(enumerate(ops))}, rounding)({"image": x}, ROWS, EPOCH, SEED)["image"]
    assert out.device.type == "meta" and out.shape == (9, 3, 13, 17) and out.dtype == torch.float16


def test_tail_never_modifies_the_callers_batch():
    x = torch.from_numpy(NOISE.copy())
    before = x.clone()
    OffloadTail({"image": [(1, OPS["hflip"]), (2, OPS["jitter"]), (3, OPS["sharpness"])]}, cpu_chunk=100)(
        {"image": x}, ROWS, EPOCH, SEED)
    assert torch.equal(x, before)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_typecast_of_any_float_is_defined_and_equal_on_host_and_offloaded(dtype, device):
    """NaN, infinities and out-of-range floats cast to the same integers offloaded (on CUDA too, where a
    plain ``.to(int)`` differs from the CPU) as on the host."""
    from recordio.offload.tail import TypeCastOp
    from recordio.transforms import TypeCast
    values = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0 ** 63, 3.7, -1.2, 300.5, -0.5],
                      np.float32).reshape(1, -1)
    host = TypeCast(dtype)(values)
    offloaded = TypeCastOp(0, TypeCast(dtype))(torch.from_numpy(values).to(device), None, 0, 0)
    assert offloaded.device.type == device
    offloaded = offloaded.cpu().numpy()
    assert host.dtype == offloaded.dtype == np.dtype(dtype)
    assert np.array_equal(host, offloaded)
    assert host[0, 0] == 0 and host[0, 6] == 3 and (dtype != "uint8" or host[0, 7] == 255)
