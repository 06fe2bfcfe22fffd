"""Batched torch kernels of the offloadable ops, on any torch device.

Each kernel takes a batch ``x`` (B, *sample_shape) and per-sample parameters, and follows the float32
operation sequence of the host kernel in ``recordio.vision.color_kernels`` so that both give the same values.
uint8 input is rounded and saturated after every colour adjustment, as the host ops do; float input
is clamped to [0, 255] and not rounded.


No kernel synchronises the host with the device: constants are device tensors made once per device
and cached (:func:`device_const`; tensors, not Python floats, so a division stays a true division
on CUDA), and per-batch parameters go to the device from pinned memory without blocking
(:func:`to_device`).
"""

import numpy as np

from recordio.extras import requires

with requires("the offloaded augmentation tail (map(..., offload=True))"):
    import torch

__all__ = ["adjust", "blur_sum", "device_const", "finish", "flip", "grey", "per_sample", "sharpness",
           "to_device"]

F32 = torch.float32
GREY_WEIGHTS = (9798, 19235, 3735)          # as recordio.vision.color_kernels
_CONSTANTS: dict = {}                        # (bytes, shape, dtype, device) or (repr, dtype, device) -> tensor
_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64, torch.int32: np.int32,
                 torch.int64: np.int64, torch.uint8: np.uint8}


def device_const(value, device, dtype=F32):
    """``value`` (a number or an array) as a tensor on ``device``, made once and cached."""
    scalar = repr(value) if isinstance(value, (int, float)) else None   # repr: -0.0 and nan keys too
    if scalar is not None:                      # the common case, without building an array first
        tensor = _CONSTANTS.get((scalar, dtype, str(device)))
        if tensor is not None:
            return tensor
    arr = np.asarray(value, dtype=_NUMPY_DTYPES[dtype])
    key = (arr.tobytes(), arr.shape, dtype, str(device))
    tensor = _CONSTANTS.get(key)
    if tensor is None:
        tensor = _CONSTANTS[key] = torch.from_numpy(arr.copy()).to(device)
    if scalar is not None:
        _CONSTANTS[(scalar, dtype, str(device))] = tensor
    return tensor


def to_device(values, device, dtype=None):
    """A per-batch host array on ``device``: through pinned memory and a non-blocking copy on CUDA."""
    t = torch.as_tensor(values, dtype=dtype)
    if torch.device(device).type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def per_sample(values, x, dtype=F32):
    """A (B,) parameter as a tensor broadcastable against ``x`` (B, ...), on ``x``'s device."""
    return to_device(values, x.device, dtype).view(-1, *[1] * (x.dim() - 1))


def _const(value, x):
    return device_const(value, x.device)


def finish(out, is_uint8, cast=True):
    """Round and saturate for uint8 input (then cast, unless ``cast`` is False: the caller copies the
    integral float32 values into a uint8 tensor, which casts them exactly); clamp float input."""
    if is_uint8:
        out = out.round_().clamp_(0, 255)
        return out.to(torch.uint8) if cast else out
    return out.clamp_(0, 255)


def grey(x):
    """Per-pixel grey (B, H, W) as float32: OpenCV's fixed-point rounding for uint8 input."""
    if x.dtype == torch.uint8:             # exact integer sums: one multiply and one reduction
        weights = device_const(GREY_WEIGHTS, x.device, torch.int32)
        return (((x * weights).sum(-1, dtype=torch.int32) + 16384) >> 15).to(F32)
    x = x.to(F32)
    return x[..., 0] * _const(0.299, x) + x[..., 1] * _const(0.587, x) + x[..., 2] * _const(0.114, x)


def grey_mean(x):
    """Mean grey per sample (B, 1, 1, 1); rounded to an integer for uint8 input."""
    g = grey(x)
    if x.dtype == torch.uint8:
        total = g.sum(dim=(1, 2), dtype=torch.float64)              # integers: exact in any order
        count = device_const(float(g[0].numel()), x.device, torch.float64)
        return (total / count).round().to(F32).view(-1, 1, 1, 1)
    return g.to(torch.float64).mean(dim=(1, 2)).to(F32).view(-1, 1, 1, 1)


def _scaled(x, a):
    """A new float32 tensor ``x * a`` (safe to modify in place); uint8 times a float32 tensor is
    computed in float32 in one kernel, the same values as converting first."""
    return x * a if x.dtype in (torch.uint8, F32) else x.to(F32).mul_(a)


def brightness(x, a, cast=True):
    return finish(_scaled(x, a), x.dtype == torch.uint8, cast)


def contrast(x, a, cast=True):
    return finish(_scaled(x, a).add_(grey_mean(x) * (1.0 - a)), x.dtype == torch.uint8, cast)


def saturation(x, a, cast=True):
    return finish(_scaled(x, a).add_(grey(x).unsqueeze(-1) * (1.0 - a)), x.dtype == torch.uint8, cast)


TINY = torch.finfo(torch.float32).tiny


def frac(y):
    return y - torch.floor(y)


def hue_sector(r, g, b):
    """Hue in sixths (0..6), chroma and value. The red/green/blue cases select with ``where``: the
    same values as summing the masked terms (each masked-out term is a signed zero), fewer kernels."""
    maxc = torch.maximum(torch.maximum(r, g), b)
    cr = maxc - torch.minimum(torch.minimum(r, g), b)
    is_r = maxc == r
    is_g = maxc == g                            # where red is not the maximum
    num = torch.where(is_r, g - b, torch.where(is_g, b - r, r - g))
    offset = torch.where(is_r, _const(0.0, r), torch.where(is_g, _const(2.0, r), _const(4.0, r)))
    return num / cr.clamp_min(TINY) + offset, cr, maxc


def hsv_to_rgb(h, cr, v):
    """(..., 3) RGB from hue (turns), chroma and value: the channels n = 5, 3, 1 at once, each element
    through the same float32 operations as one channel at a time."""
    k = (h * 6.0).unsqueeze(-1) + _const((5.0, 3.0, 1.0), h)
    k = k - (k >= 6.0) * 6.0
    return v.unsqueeze(-1) - cr.unsqueeze(-1) * torch.minimum(k, 4.0 - k).clamp(0, 1)


def hue(x, a, cast=True):
    """Rotate the hue (exact float HSV, 0..255 scale); the division by a device tensor keeps CUDA from
    using a reciprocal."""
    sector, cr, v = hue_sector(*x.to(F32).unbind(-1))
    h = frac(sector / _const(6.0, sector) + (a + 1.0).view(-1, 1, 1))
    return finish(hsv_to_rgb(h, cr, v), x.dtype == torch.uint8, cast)


ADJUST = (brightness, contrast, saturation, hue)


def _adjust_plan(factors, order, enabled):
    """The host side of :func:`adjust`: at each position the rows are regrouped by the adjustment they
    apply there, so that every step works on a contiguous slice of the batch.

    Returns ``(gathers, steps, params, restore)``: ``gathers`` the row indices of each regrouping,
    ``steps`` per position ``(gather or None, [(kind, start, stop), ...])``, ``params`` the factors of
    every step's rows in step order, and ``restore`` the gather that puts the rows back in batch
    order (None when they are in it)."""
    n = len(order)
    layout = np.arange(n)                       # layout[j]: the sample held in row j
    where = np.arange(n)                        # where[i]: the row holding sample i
    gathers, steps, params = [], [], []
    for pos in range(4):
        kinds = order[:, pos]
        active = [k for k in range(4) if enabled[k] and (kinds == k).any()]
        if not active:
            continue
        perm = np.argsort(kinds, kind="stable")
        gather = None
        if not np.array_equal(perm, layout):
            gather = len(gathers)
            gathers.append(where[perm])
            layout = perm
            where = np.empty(n, np.int64)
            where[layout] = np.arange(n)
        bounds = np.searchsorted(kinds[layout], np.arange(5))
        groups = [(k, int(bounds[k]), int(bounds[k + 1])) for k in active]
        for k, start, stop in groups:
            params.append(factors[layout[start:stop], k])
        steps.append((gather, groups))
    restore = None
    if not np.array_equal(layout, np.arange(n)):
        restore = len(gathers)
        gathers.append(where)
    return gathers, steps, params, restore


def adjust(x, factors, order, enabled):
    """RandomColorAdjust on a batch: sample i applies its enabled adjustments in ``order[i]``.

    ``factors`` (B, 4) and ``order`` (B, 4) are numpy arrays. At each of the 4 positions the batch is
    regrouped by adjustment (one gather), each adjustment runs once on its contiguous slice, and a
    last gather restores the order: about 4 full-batch ops of work, and the row indices and factors
    of the whole batch go to the device in one copy each.
    """
    n = len(order)
    gathers, steps, params, restore = _adjust_plan(np.asarray(factors), np.asarray(order), enabled)
    if not steps:
        return x.clone()                  # the caller's batch is never modified
    rows = to_device(np.concatenate(gathers), x.device, torch.int64) if gathers else None
    fac = to_device(np.concatenate(params).astype(np.float32), x.device)
    out, offset = x, 0
    for gather, groups in steps:
        if gather is not None:
            out = out.index_select(0, rows[gather * n:(gather + 1) * n])
        for k, start, stop in groups:
            a = fac[offset:offset + stop - start].view(-1, *[1] * (x.dim() - 1))
            offset += stop - start
            if start == 0 and stop == n:
                out = ADJUST[k](out, a).to(out.dtype)
            else:
                if out is x:
                    out = x.clone()       # the caller's batch is never modified
                part = out[start:stop]
                part.copy_(ADJUST[k](part, a, cast=False))
    if restore is not None:
        out = out.index_select(0, rows[restore * n:(restore + 1) * n])
    return out


def blur_sum(x):
    """Interior sum with kernel [[1,1,1],[1,5,1],[1,1,1]] over axes 1, 2 (same order as the host)."""
    h, w = x.shape[1:3]
    total = 4 * x[:, 1:-1, 1:-1]
    for dy in range(3):
        for dx in range(3):
            total = total + x[:, dy:h - 2 + dy, dx:w - 2 + dx]
    return total


def sharpness(x, degrees):
    is_uint8 = x.dtype == torch.uint8
    y = x.to(F32)
    out = y.clone()
    if y.shape[1] > 2 and y.shape[2] > 2:
        blur = blur_sum(y) / _const(13.0, y)
        if is_uint8:
            blur = blur.round()
        a = per_sample(degrees, y)
        out[:, 1:-1, 1:-1] = y[:, 1:-1, 1:-1] * a + blur.mul_(1.0 - a)
    return finish(out, is_uint8)


def flip(x, mask, axis):
    """Flip sample axis ``axis`` (0: H, 1: W) of the samples where ``mask`` (numpy bool) is set."""
    chosen = mask.nonzero()[0]
    if len(chosen) == 0:
        return x
    index = to_device(chosen, x.device)
    return x.index_copy(0, index, x.index_select(0, index).flip(axis + 1))
