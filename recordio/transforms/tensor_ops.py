"""Tensor transforms of ``mindspore.dataset.transforms``: Concatenate, Fill, Mask, OneHot, PadEnd, Slice, Unique.

Each checks its arguments as MindSpore 2.10 does (same error types and wording) and computes on numpy.
Values given to an op (a fill value, a mask constant, a pad value) are cast to the input's dtype
C-style first, as MindSpore does (``Fill(-3)`` on uint8 fills 253, ``Mask(LE, 2.5)`` on uint8 compares
with 2). Bad input data raise ``RuntimeError`` (MindSpore's type for a failed map) naming what was found.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from recordio.errors import check_range, type_check
from recordio.common.casting import cast, to_numpy_dtype

__all__ = ["Concatenate", "Fill", "Mask", "OneHot", "PadEnd", "Relational", "Slice", "Unique"]

_SCALARS = (str, float, bool, int, bytes)


def _is_text(array: np.ndarray) -> bool:
    return array.dtype.kind in "USO"


def _scalar_like(value: Any, array: np.ndarray, op: str, what: str) -> Any:
    """``value`` as an element of ``array``'s dtype: numbers cast C-style, text only with text."""
    text_value = isinstance(value, (str, bytes))
    if text_value != _is_text(array):
        raise RuntimeError(f"{op}: {what} and the input tensor must both be numeric or both be strings, but got "
                           f"{what} {value!r} and input tensor of dtype {array.dtype}")
    if text_value:
        return value
    with np.errstate(over="ignore"):       # 1e40 as float32 is inf, as in MindSpore: no warning
        return cast(np.asarray(value), array.dtype)[()]


class Concatenate:
    """Prepend and/or append 1-D arrays to a 1-D input (``axis`` 0 or -1), of the input's dtype."""

    def __init__(self, axis: int = 0, prepend: np.ndarray | None = None, append: np.ndarray | None = None) -> None:
        if axis is not None:
            type_check(axis, (int,), "axis")
            if axis not in (0, -1):
                raise ValueError("only 1D concatenation supported.")
        for name, value in (("prepend", prepend), ("append", append)):
            if value is not None:
                type_check(value, (np.ndarray,), name)
                if value.ndim != 1:
                    raise ValueError(f"can only {name} 1D arrays.")
        self.axis, self.prepend, self.append = axis, prepend, append

    def __call__(self, array):
        array = np.asarray(array)
        if array.ndim != 1:
            raise RuntimeError(f"Concatenate: only 1D input supported, got rank of input: {array.ndim}")
        parts = [array]
        for name, value in (("prepend", self.prepend), ("append", self.append)):
            if value is None:
                continue
            same = value.dtype == array.dtype or (_is_text(value) and value.dtype.kind == array.dtype.kind)
            if not same:
                raise RuntimeError(f"Concatenate: input datatype does not match the {name} datatype, got input "
                                   f"datatype: {array.dtype}, {name} datatype:{value.dtype}")
            parts.insert(0 if name == "prepend" else len(parts), value)
        return np.concatenate(parts)

    def __repr__(self):
        return f"Concatenate(axis={self.axis}, prepend={self.prepend!r}, append={self.append!r})"


class Fill:
    """Every element set to ``fill_value`` (cast to the input's dtype); same shape and dtype."""

    def __init__(self, fill_value: str | bytes | int | float | bool) -> None:
        type_check(fill_value, _SCALARS, "fill_value")
        self.fill_value = fill_value

    def __call__(self, array):
        array = np.asarray(array)
        value = _scalar_like(self.fill_value, array, "Fill", "fill_value")
        if _is_text(array):
            return np.full(array.shape, value)
        return np.full(array.shape, value, dtype=array.dtype)

    def __repr__(self):
        return f"Fill({self.fill_value!r})"


class Relational(IntEnum):
    """The comparisons of :class:`Mask` (MindSpore's ``Relational``)."""

    EQ = 0
    NE = 1
    GT = 2
    GE = 3
    LT = 4
    LE = 5


_COMPARE = {Relational.EQ: np.equal, Relational.NE: np.not_equal, Relational.GT: np.greater,
            Relational.GE: np.greater_equal, Relational.LT: np.less, Relational.LE: np.less_equal}


class Mask:
    """``input <operator> constant`` elementwise (constant cast to the input's dtype), as ``dtype``."""

    def __init__(self, operator: Relational, constant: str | bytes | int | float | bool, dtype: Any = None) -> None:
        """``dtype``: a ``recordio.common.dtype`` type (``mstype.bool_`` by default), as MindSpore's."""
        type_check(operator, (Relational,), "operator")
        type_check(constant, _SCALARS, "constant")
        if dtype is not None and not hasattr(dtype, "numpy_dtype"):     # a recordio.common.dtype.Type
            raise TypeError(f"Argument dtype with value {dtype} is not of type [<class 'mindspore._c_expression."
                            f"typing.Type'>], but got {type(dtype)}.")
        if dtype is not None and dtype.numpy_dtype is None:
            raise RuntimeError(f"Mask: Only supports bool or numeric datatype for generated mask type, but got:{dtype}")
        self.operator, self.constant = operator, constant
        self.dtype = np.dtype(np.bool_) if dtype is None else to_numpy_dtype(dtype)

    def __call__(self, array):
        array = np.asarray(array)
        if isinstance(self.constant, (str, bytes)) != _is_text(array):
            raise RuntimeError("Mask: input datatype does not match the value datatype, both should be numeric or "
                               f"non-numerical in the same time (input {array.dtype}, value {self.constant!r})")
        constant = _scalar_like(self.constant, array, "Mask", "constant")
        return cast(_COMPARE[self.operator](array, constant), self.dtype)

    def __repr__(self):
        return f"Mask({self.operator!r}, {self.constant!r}, {self.dtype.name})"


class OneHot:
    """Integer labels (scalar or 1-D) to one-hot rows of ``num_classes``; trailing dimensions of size 1
    are dropped first, as MindSpore does (``[[1], [2]]`` gives two rows, ``[1]`` one vector).

    The output has the input's dtype, or float64 with ``smoothing_rate`` > 0 (the true class gets
    ``1 - rate + rate / num_classes``, the others ``rate / num_classes``). A label outside
    ``[0, num_classes)`` raises ``RuntimeError`` (MindSpore 2.10 fails on a label >= ``num_classes``;
    a negative one it turns into a row of zeros eagerly and crashes on in a pipeline).
    """

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0) -> None:
        type_check(smoothing_rate, (int, float), "smoothing_rate")
        type_check(num_classes, (int,), "num_classes")
        if num_classes <= 0:
            raise ValueError("Input must be greater than 0.")
        check_range(smoothing_rate, 0.0, 1.0, "smoothing_rate")
        self.num_classes, self.smoothing_rate = num_classes, smoothing_rate

    def __call__(self, labels):
        labels = np.asarray(labels)
        if labels.dtype.kind not in "iu":
            raise RuntimeError(f"OneHot: Only support input of int type, but got: {labels.dtype}")
        while labels.ndim and labels.shape[-1] == 1:       # (N, 1) -> (N,), (1,) -> () as MindSpore's
            labels = labels[..., 0]
        if labels.ndim > 1:
            raise RuntimeError(f"OneHot: Only support scalar or 1D input, got rank: {labels.ndim}")
        bad = labels[(labels < 0) | (labels >= self.num_classes)]
        if bad.size:
            raise RuntimeError(f"OneHot: index values should be in [0, {self.num_classes}) (num classes: "
                               f"{self.num_classes}), but got: {bad.flat[0]}")
        hot = np.arange(self.num_classes) == labels[..., None].astype(np.int64)
        if self.smoothing_rate > 0:
            off = self.smoothing_rate / self.num_classes
            return np.where(hot, 1.0 - self.smoothing_rate + off, off)
        return hot.astype(labels.dtype)

    def __repr__(self):
        return f"OneHot({self.num_classes}, smoothing_rate={self.smoothing_rate})"


class PadEnd:
    """Pad (or truncate) each dimension at its end to ``pad_shape`` (``None``: keep that dimension).

    ``pad_value`` is cast to the input's dtype; ``None`` pads 0, or empty strings for text.
    """

    def __init__(self, pad_shape: list, pad_value: str | bytes | int | float | bool | None = None) -> None:
        if pad_value is not None:
            type_check(pad_value, _SCALARS, "pad_value")
        type_check(pad_shape, (list,), "pad_shape")
        for dim in pad_shape:
            if dim is None:
                continue
            if not isinstance(dim, int):
                raise TypeError("a value in the list is not an integer.")
            type_check(dim, (int,), "")
            check_range(dim, 1, 2 ** 63 - 1)
        self.pad_shape, self.pad_value = list(pad_shape), pad_value

    def __call__(self, array):
        array = np.asarray(array)
        if array.ndim == 0:
            return array
        if array.ndim != len(self.pad_shape):
            raise RuntimeError(f"PadEnd: invalid pad shape, as rank of input is: {array.ndim}, and rank of pad "
                               f"value: {len(self.pad_shape)}")
        shape = [have if want is None else want for have, want in zip(array.shape, self.pad_shape)]
        if self.pad_value is None:
            value = array.dtype.type()
        else:
            value = _scalar_like(self.pad_value, array, "PadEnd", "pad_value")
        out = np.full(shape, value, dtype=array.dtype)
        keep = tuple(slice(0, min(have, want)) for have, want in zip(array.shape, shape))
        out[keep] = array[keep]
        return out

    def __repr__(self):
        return f"PadEnd({self.pad_shape!r}, {self.pad_value!r})"


def _slice_option(option: Any) -> Any:
    if isinstance(option, bool):
        return slice(None) if option else []
    if isinstance(option, int):
        return [option]
    if option is None or option is Ellipsis:
        return slice(None)
    return option


class Slice:
    """Index each dimension by an int, a list of ints, a ``slice`` or ``None``/``...`` (the whole dimension).

    Out-of-range indices and a slice step of 0 raise ``RuntimeError``; a ``slice`` follows Python's
    rules (MindSpore 2.10 refuses a ``slice`` whose stop is ``None`` with "Wrong slice object").
    """

    def __init__(self, *slices: Any) -> None:
        for option in slices:
            if option is None:
                continue
            type_check(option, (int, list, slice, bool, type(Ellipsis)), "slice")
            if isinstance(option, list) and option and isinstance(option[0], int):
                for i, index in enumerate(option):
                    type_check(index, (int,), f"slice[{i}]")
        self.slices = [_slice_option(option) for option in slices]

    def __call__(self, array):
        array = np.asarray(array)
        if len(self.slices) > array.ndim:
            raise RuntimeError(f"Invalid shape, should be greater than slices index: {len(self.slices)} slice(s) "
                               f"for an input of rank {array.ndim}")
        for axis, option in enumerate(self.slices):
            array = np.take(array, self._indices(option, array.shape[axis]), axis=axis)
        return array

    @staticmethod
    def _indices(option, size):
        if isinstance(option, slice):
            if option.step == 0:
                raise RuntimeError(f"Wrong slice object: step 0 in {option}")
            return np.arange(size)[option]
        if not option:
            raise RuntimeError("Both indices and slices can not be empty.")
        indices = np.asarray(option, dtype=np.int64)
        indices = np.where(indices < 0, indices + size, indices)
        bad = indices[(indices < 0) | (indices >= size)]
        if bad.size:
            raise RuntimeError(f"Index {bad[0]} is out of bounds (dimension of size {size}).")
        return indices

    def __repr__(self):
        return f"Slice({', '.join(map(repr, self.slices))})"


class Unique:
    """The unique values of a numeric batch (rank >= 2, flattened) in first-seen order, each element's
    index into them and each value's count: three outputs (values, int32, int32)."""

    def __call__(self, array):
        array = np.asarray(array)
        if _is_text(array):
            raise RuntimeError(f"Unique: only support numeric datatype of input, got {array.dtype}.")
        if array.ndim < 2:
            raise RuntimeError(f"Unique: input must be at least 2-D in order to do unique op, got rank:{array.ndim}")
        flat = array.reshape(-1)
        values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return (values[order], rank[inverse.reshape(-1)].astype(np.int32), counts[order].astype(np.int32))

    def __repr__(self):
        return "Unique()"
