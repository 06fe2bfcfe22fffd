"""General transforms: TypeCast and Compose (MindSpore's ``dataset.transforms``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recordio.keys import sub_op

__all__ = ["Compose", "TypeCast", "to_numpy_dtype"]

_TORCH_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16", "bool": "bool_"}


def to_numpy_dtype(data_type: Any) -> np.dtype:
    """A numpy dtype from a numpy dtype/type, a torch dtype, a MindSpore type (``recordio.common.dtype``)
    or a dtype name ('float32', 'torch.int64')."""
    if getattr(data_type, "numpy_dtype", None) is not None:  # recordio.common.dtype.Type (mstype.int32)
        data_type = data_type.numpy_dtype
    if type(data_type).__module__ == "torch":          # torch.dtype, without importing torch
        data_type = str(data_type)
    if isinstance(data_type, str):
        name = data_type.removeprefix("torch.").removeprefix("mindspore.").removeprefix("mstype.")
        data_type = _TORCH_NAMES.get(name, name)
    try:
        dtype = np.dtype(data_type)
    except TypeError as exc:
        raise TypeError(f"data_type must be a numpy dtype, a torch dtype or a dtype name, "
                        f"got {data_type!r}") from exc
    if dtype.kind not in "biuf":
        raise TypeError(f"data_type must be a bool, integer or float type, got {dtype}")
    return dtype


INT64_RANGE = (-2.0 ** 63, 2.0 ** 63 - 1024)      # the float64 values that fit in an int64


def cast(array: Any, dtype: np.dtype) -> np.ndarray:
    """C-style cast: float -> integer truncates toward zero and wraps (3.7 -> 3, -1.2 -> 255 for uint8).

    Defined for every float, the same on every device (the offloaded TypeCast computes it too):
    NaN -> 0; infinities and values beyond int64 saturate at int64's range first, then wrap.
    """
    array = np.asarray(array)
    if array.dtype.kind == "f" and dtype.kind in "iu":
        wide = np.nan_to_num(np.trunc(array.astype(np.float64)), nan=0.0, posinf=INT64_RANGE[1],
                             neginf=INT64_RANGE[0])
        return np.clip(wide, *INT64_RANGE).astype(np.int64).astype(dtype)
    return array.astype(dtype)


class TypeCast:
    """Cast to ``data_type`` (numpy dtype, torch dtype or name)."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = to_numpy_dtype(data_type)

    def __call__(self, array):
        return cast(array, self.data_type)

    def __repr__(self):
        return f"TypeCast({self.data_type.name})"


class Compose:
    """Run ops in sequence; member ``i`` draws its randomness under its own nested op id.

    An op returning a tuple passes its items as the next op's arguments. A Decode right before a
    Resize/RandomResizedCrop is fused (decoded at reduced scale), and a Normalize right before
    HWC2CHW writes channels-first directly; see ``recordio.vision.fusion``.
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        if not isinstance(transforms, (list, tuple)) or not transforms:
            raise TypeError(f"transforms must be a non-empty list of callables, got {transforms!r}")
        for i, op in enumerate(transforms):
            if not callable(op):
                raise TypeError(f"transforms[{i}] is not callable: {op!r}")
        self.transforms = list(transforms)
        self._ops = self.transforms
        if any(type(op).__module__.startswith("recordio.vision.") for op in self.transforms):
            from recordio.vision.fusion import fuse_ops
            self._ops = fuse_ops(self.transforms)

    def __call__(self, *args):
        for i, op in enumerate(self._ops):
            with sub_op(i):
                result = op(*args)
            args = result if isinstance(result, tuple) else (result,)
        return args[0] if len(args) == 1 else args

    def __repr__(self):
        return f"Compose({self.transforms!r})"
