"""The offloaded tail: batched torch versions of the offloadable ops, as one ``torch.nn.Module``.

``build_tail(plan)`` turns an :class:`~recordio.offload.plan.OffloadPlan` into an :class:`OffloadTail`.
Its ``forward(columns, rows, epoch, seed)`` runs each column's ops on the batch, on the device of the
tensors, with per-sample parameters drawn from the keyed randomness of the batch's rows — the same
draws the host ops make — so a row gets the same values on the host, in the iterator, in the sink and
in a model that calls the module itself. Parameters are computed on the host for every call and never
frozen into a graph.

``rounding="per_op"`` (default) reproduces the host ops' uint8 rounding between colour ops;
``rounding="none"`` computes colour ops in float32 throughout (the host ops' float-input semantics:
fewer passes, not bit-equal to the host ops on uint8, float32 output). Consecutive Rescale/Normalize
ops are fused into one multiply-add per channel.
"""

import numpy as np

from recordio.extras import requires
from recordio.offload import kernels as K
from recordio.errors import PipelineError
from recordio.keys import Keys
from recordio.transforms import INT64_RANGE, to_numpy_dtype

with requires("the offloaded augmentation tail (map(..., offload=True))"):
    import torch

__all__ = ["OffloadTail", "build_tail", "device_op"]

ROUNDING = ("per_op", "none")


class DeviceOp:
    """One offloaded op: ``op`` is the host op (its parameters and draws), ``uid`` its op id."""

    def __init__(self, uid, op, rounding="per_op"):
        self.uid, self.op, self.rounding = uid, op, rounding

    def params(self, rows, epoch, seed):
        return self.op.draw(Keys(seed, epoch, rows, self.uid))

    def prepare(self, x):
        """uint8 stays uint8 under per-op rounding; otherwise compute in float32."""
        return x if x.dtype == torch.uint8 and self.rounding == "per_op" else x.to(torch.float32)

    def __repr__(self):
        return f"{type(self).__name__}({self.op!r})"


def _check_rgb(name, x):
    if x.dim() != 4 or x.shape[-1] != 3:
        raise PipelineError(f"offloaded {name}: expected a batch of <H,W,3> images (B,H,W,3), found shape "
                            f"{tuple(x.shape)}")


class ColorAdjustOp(DeviceOp):
    def __call__(self, x, rows, epoch, seed):
        _check_rgb("RandomColorAdjust", x)
        p = self.params(rows, epoch, seed)
        return K.adjust(self.prepare(x), p["factors"], p["order"], self.op.enabled)


class SharpnessOp(DeviceOp):
    def __call__(self, x, rows, epoch, seed):
        if x.dim() not in (3, 4):
            raise PipelineError(f"offloaded RandomSharpness: expected a batch of images, found {tuple(x.shape)}")
        return K.sharpness(self.prepare(x), self.params(rows, epoch, seed)["degree"])


class FlipOp(DeviceOp):
    def __call__(self, x, rows, epoch, seed):
        if x.dim() not in (3, 4):
            raise PipelineError(f"offloaded {type(self.op).__name__}: expected a batch of images, "
                                f"found shape {tuple(x.shape)}")
        return K.flip(x, self.params(rows, epoch, seed)["flip"], self.op.axis)


class HWC2CHWOp(DeviceOp):
    def __call__(self, x, rows, epoch, seed):
        return x.permute(0, 3, 1, 2).contiguous() if x.dim() == 4 else x


class TypeCastOp(DeviceOp):
    def __call__(self, x, rows, epoch, seed):
        dtype = getattr(torch, to_numpy_dtype(self.op.data_type).name)
        if x.is_floating_point() and not dtype.is_floating_point and dtype != torch.bool:
            low, high = INT64_RANGE                     # as recordio.transforms.cast, on any device
            wide = x.to(torch.float64).trunc().nan_to_num(0.0, posinf=high, neginf=low).clamp(low, high)
            return wide.to(torch.int64).to(dtype)
        return x.to(dtype)


def _affine_of(op, shape):
    """(scale, offset) float64 arrays broadcastable to a sample of ``shape`` for Rescale/Normalize."""
    if type(op).__name__ == "Rescale":
        return np.float64(op.rescale), np.float64(op.shift)
    axis = len(shape) - 1 if op.is_hwc or len(shape) == 2 else 0
    channels = 1 if len(shape) == 2 else shape[axis]
    if len(op.mean) not in (1, channels):
        raise PipelineError(f"offloaded Normalize: mean/std have {len(op.mean)} values, samples of shape "
                            f"{tuple(shape)} have {channels} channels")
    view = [1] * len(shape)
    view[axis] = -1
    scale, offset = op.affine(len(op.mean))
    return scale.reshape(view), offset.reshape(view)


class AffineOp(DeviceOp):
    """Consecutive Rescale/Normalize ops as one ``x * scale + offset`` (one op: its exact formula)."""

    def __init__(self, uid, ops, rounding="per_op"):
        super().__init__(uid, ops, rounding)
        self.ops = list(ops)

    def __call__(self, x, rows, epoch, seed):
        y = x.to(torch.float32)
        if len(self.ops) == 1:
            return self._single(self.ops[0], y)
        scale, offset = np.float64(1.0), np.float64(0.0)
        for op in self.ops:
            a, b = _affine_of(op, tuple(y.shape[1:]))
            scale, offset = scale * a, offset * a + b
        return y * K.device_const(scale, y.device) + K.device_const(offset, y.device)

    @staticmethod
    def _single(op, y):
        if type(op).__name__ == "Rescale":
            return y * K.device_const(op.rescale, y.device) + K.device_const(op.shift, y.device)
        scale, _ = _affine_of(op, tuple(y.shape[1:]))
        shape = scale.shape
        mean = K.device_const(np.asarray(op.mean, np.float32).reshape(shape), y.device)
        std = K.device_const(np.asarray(op.std, np.float32).reshape(shape), y.device)
        return (y - mean) / std

    def __repr__(self):
        return f"AffineOp({', '.join(repr(op) for op in self.ops)})"


_KINDS = {"RandomColorAdjust": ColorAdjustOp, "RandomSharpness": SharpnessOp, "RandomHorizontalFlip": FlipOp,
          "RandomVerticalFlip": FlipOp, "HWC2CHW": HWC2CHWOp, "TypeCast": TypeCastOp}


def device_op(uid, op, rounding="per_op"):
    """The batched version of one host op."""
    name = type(op).__name__
    if name in ("Rescale", "Normalize"):
        return AffineOp(uid, [op], rounding)
    if name not in _KINDS:
        raise PipelineError(f"{name} has no device version; offloadable ops: {sorted(_KINDS) + ['Normalize', 'Rescale']}")
    return _KINDS[name](uid, op, rounding)


def _fuse(ops):
    """Merge runs of AffineOps into one."""
    fused = []
    for op in ops:
        if isinstance(op, AffineOp) and fused and isinstance(fused[-1], AffineOp):
            fused[-1] = AffineOp(fused[-1].uid, fused[-1].ops + op.ops, op.rounding)
        else:
            fused.append(op)
    return fused


def _as_tensor(name, value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    raise PipelineError(f"offloaded column {name!r}: expected a batched tensor or array, found "
                        f"{type(value).__name__} (offloaded columns must batch into one array)")


def _rows(rows):
    if isinstance(rows, torch.Tensor):
        rows = rows.detach().cpu().numpy()
    return np.asarray(rows, dtype=np.int64).reshape(-1)


class OffloadTail(torch.nn.Module):
    """The offloaded ops of every column; columns without offloaded ops pass through."""

    def __init__(self, tail, rounding="per_op", cpu_chunk=8):
        super().__init__()
        self.cpu_chunk = cpu_chunk
        if rounding not in ROUNDING:
            raise ValueError(f"rounding must be one of {ROUNDING}, got {rounding!r}")
        self.rounding = rounding
        self.columns = {col: _fuse([device_op(uid, op, rounding) for uid, op in entries])
                        for col, entries in tail.items()}

    def forward(self, columns, rows, epoch, seed):
        rows = _rows(rows)
        out = dict(columns)
        for col, ops in self.columns.items():
            if col not in columns:
                raise PipelineError(f"offloaded column {col!r} is not in the batch (columns passed to the tail: "
                                    f"{sorted(columns)}); was it renamed or projected away after its map?")
            x = _as_tensor(col, columns[col])
            if x.shape[0] != len(rows):
                raise PipelineError(f"offloaded column {col!r}: batch of {x.shape[0]} but {len(rows)} row ids")
            out[col] = self._run(ops, x, rows, epoch, seed)
        return out

    def _run(self, ops, x, rows, epoch, seed):
        """Run a column's ops; on a CPU in chunks of ``cpu_chunk`` samples, so that temporaries stay
        small and cached (the values do not depend on the chunking: every op is per sample)."""
        step = self.cpu_chunk if x.device.type == "cpu" else len(rows)
        parts = []
        for start in range(0, max(len(rows), 1), max(step, 1)):
            part, part_rows = x[start:start + step], rows[start:start + step]
            for op in ops:
                part = op(part, part_rows, epoch, seed)
            parts.append(part)
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def extra_repr(self):
        return "\n".join(f"{col}: {ops}" for col, ops in self.columns.items()) + f"\nrounding={self.rounding!r}"


def build_tail(plan, rounding="per_op", cpu_chunk=8):
    """The torch module that runs ``plan.tail`` (a plan, or its ``tail`` dict)."""
    return OffloadTail(getattr(plan, "tail", plan), rounding, cpu_chunk)
