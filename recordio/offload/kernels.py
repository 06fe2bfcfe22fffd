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
import torch

__all__ = ["adjust", "blur_sum", "device_const", "finish", "flip", "grey", "per_sample", "sharpness",
           "to_device"]

F32 = torch.float32
GREY_WEIGHTS = (9798, 19235, 3735)          # as recordio.vision.color_kernels
_CONSTANTS: dict = {}                        # (bytes, shape, dtype, device) -> device tensor


def device_const(value, device, dtype=F32):
    """``value`` (a number or an array) as a tensor on ``device``, made once and cached."""
    arr = np.asarray(value, dtype=torch.empty(0, dtype=dtype).numpy().dtype)
    key = (arr.tobytes(), arr.shape, dtype, str(device))
    tensor = _CONSTANTS.get(key)
    if tensor is None:
        tensor = _CONSTANTS[key] = torch.from_numpy(arr.copy()).to(device)
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


def finish(out, is_uint8):
    if is_uint8:
        return out.round_().clamp_(0, 255).to(torch.uint8)
    return out.clamp_(0, 255)


def grey(x):
    """Per-pixel grey (B, H, W) as float32: OpenCV's fixed-point rounding for uint8 input."""
    if x.dtype == torch.uint8:
        c = x.to(torch.int32)
        w = GREY_WEIGHTS
        return ((c[..., 0] * w[0] + c[..., 1] * w[1] + c[..., 2] * w[2] + 16384) >> 15).to(F32)
    x = x.to(F32)
    return x[..., 0] * _const(0.299, x) + x[..., 1] * _const(0.587, x) + x[..., 2] * _const(0.114, x)


def grey_mean(x):
    """Mean grey per sample (B, 1, 1, 1); rounded to an integer for uint8 input."""
    g = grey(x)
    if x.dtype == torch.uint8:
        total = g.to(torch.int64).sum(dim=(1, 2)).to(torch.float64)
        count = device_const(float(g[0].numel()), x.device, torch.float64)
        return (total / count).round().to(F32).view(-1, 1, 1, 1)
    return g.to(torch.float64).mean(dim=(1, 2)).to(F32).view(-1, 1, 1, 1)


def _scaled(x, a):
    """A new float32 tensor ``x * a`` (safe to modify in place)."""
    return x.to(F32).mul_(a) if x.dtype != F32 else x * a


def brightness(x, a):
    return finish(_scaled(x, a), x.dtype == torch.uint8)


def contrast(x, a):
    return finish(_scaled(x, a).add_(grey_mean(x) * (1.0 - a)), x.dtype == torch.uint8)


def saturation(x, a):
    return finish(_scaled(x, a).add_(grey(x).unsqueeze(-1) * (1.0 - a)), x.dtype == torch.uint8)


TINY = torch.finfo(torch.float32).tiny


def frac(y):
    return y - torch.floor(y)


def hue_sector(r, g, b):
    maxc = torch.maximum(torch.maximum(r, g), b)
    cr = maxc - torch.minimum(torch.minimum(r, g), b)
    is_r = maxc == r
    is_g = (maxc == g) & ~is_r
    is_b = ~(is_r | is_g)
    num = is_r * (g - b) + is_g * (b - r) + is_b * (r - g)
    return num / cr.clamp_min(TINY) + (is_g * 2.0 + is_b * 4.0), cr, maxc


def hsv_to_rgb(h, cr, v):
    h6 = h * 6.0
    out = []
    for n in (5.0, 3.0, 1.0):
        k = n + h6
        k = k - (k >= 6.0) * 6.0
        out.append(v - cr * torch.minimum(k, 4.0 - k).clamp(0, 1))
    return out


def hue(x, a):
    """Rotate the hue (exact float HSV, 0..255 scale); the division by a device tensor keeps CUDA from
    using a reciprocal."""
    sector, cr, v = hue_sector(*x.to(F32).unbind(-1))
    h = frac(sector / _const(6.0, sector) + (a + 1.0).view(-1, 1, 1))
    return finish(torch.stack(hsv_to_rgb(h, cr, v), dim=-1), x.dtype == torch.uint8)


ADJUST = (brightness, contrast, saturation, hue)


def adjust(x, factors, order, enabled):
    """RandomColorAdjust on a batch: sample i applies its enabled adjustments in ``order[i]``.

    ``factors`` (B, 4) and ``order`` (B, 4) are numpy arrays; each step runs once per adjustment on
    the sub-batch that has it at that position (16 sub-batch calls, about 4 full-batch ops of work).
    """
    out = x.clone()                       # the caller's batch is never modified
    for pos in range(4):
        for k in range(4):
            chosen = (order[:, pos] == k).nonzero()[0] if enabled[k] else ()
            if len(chosen) == 0:
                continue
            index = to_device(chosen, x.device)
            sub = out.index_select(0, index)
            a = per_sample(factors[chosen, k], sub)
            out.index_copy_(0, index, ADJUST[k](sub, a).to(out.dtype))
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
