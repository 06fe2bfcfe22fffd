"""MindSpore's data types (``mindspore.common.dtype``, imported as ``mstype`` by most data scripts).

    import recordio.common.dtype as mstype
    ds = ds.map(transforms.TypeCast(mstype.int32), input_columns="label")

Each type knows its numpy dtype (``mstype.float32.numpy_dtype``); ``TypeCast`` and the other places
that take a dtype accept them, as well as numpy and torch dtypes and names.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Type", "bool_", "dtype_to_nptype", "float16", "float32", "float64", "float_", "int16", "int32",
           "int64", "int8", "int_", "string", "uint16", "uint32", "uint64", "uint8"]


class Type:
    """A MindSpore data type: ``name`` (``"int32"``) and its numpy dtype (None for ``string``)."""

    __slots__ = ("name", "numpy_dtype")

    def __init__(self, name: str, numpy_dtype: type | None) -> None:
        self.name = name
        self.numpy_dtype = None if numpy_dtype is None else np.dtype(numpy_dtype)

    def __repr__(self) -> str:
        return self.name.capitalize()            # MindSpore prints Int32, Float32, Bool, String

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Type) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("recordio.common.dtype", self.name))


int8, int16, int32, int64 = (Type(f"int{b}", getattr(np, f"int{b}")) for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (Type(f"uint{b}", getattr(np, f"uint{b}")) for b in (8, 16, 32, 64))
float16, float32, float64 = (Type(f"float{b}", getattr(np, f"float{b}")) for b in (16, 32, 64))
bool_ = Type("bool", np.bool_)
string = Type("string", None)
int_, float_ = int64, float32                    # MindSpore's aliases


def dtype_to_nptype(type_: Type) -> type:
    """The numpy scalar type of a MindSpore type (MindSpore's function of the same name)."""
    if not isinstance(type_, Type) or type_.numpy_dtype is None:
        raise TypeError(f"dtype_to_nptype: {type_!r} has no numpy type")
    return type_.numpy_dtype.type
