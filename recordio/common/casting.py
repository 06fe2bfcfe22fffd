"""Dtypes and the C-style cast shared by TypeCast, the tensor ops and the offloaded tail."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["INT64_RANGE", "cast", "to_numpy_dtype"]

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
