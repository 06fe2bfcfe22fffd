"""Arrow types <-> MindRecord field specs, and Arrow columns -> values the writer accepts.

=====================================  ============================================
Arrow                                  MindRecord
=====================================  ============================================
bool, int8/16/32, uint8/16             int32   (bool as 0/1)
int64, uint32                          int64
float16, float32 / float64             float32 / float64
string, large_string                   string
binary, large_binary, fixed binary     bytes
dictionary<T>                          as T (decoded)
list<N>, large_list<N>                 N array, shape [-1]
fixed_size_list<N, k>                  N array, shape [k]
list<fixed_size_list<N, k>>            N array, shape [-1, k]
fixed_size_list<fixed_size_list<..>>   N array, shape [k, m]
=====================================  ============================================

N is a numeric type above (not bool). Everything else (uint64, timestamps, dates,
decimals, structs, maps, lists of strings, nested variable lists) is refused with the
column's name and a suggested cast, and so is any null.
"""

import numpy as np

from recordio.errors import SchemaError
from recordio.extras import requires

with requires("Parquet/Arrow conversion", "arrow"):
    import pyarrow as pa
    import pyarrow.compute as pc

__all__ = ["arrow_type", "column_values", "field_spec"]

_SCALARS = [
    (pa.types.is_boolean, "int32"), (pa.types.is_int8, "int32"), (pa.types.is_int16, "int32"),
    (pa.types.is_int32, "int32"), (pa.types.is_uint8, "int32"), (pa.types.is_uint16, "int32"),
    (pa.types.is_int64, "int64"), (pa.types.is_uint32, "int64"), (pa.types.is_float16, "float32"),
    (pa.types.is_float32, "float32"), (pa.types.is_float64, "float64"),
    (pa.types.is_string, "string"), (pa.types.is_large_string, "string"),
    (pa.types.is_binary, "bytes"), (pa.types.is_large_binary, "bytes"),
    (pa.types.is_fixed_size_binary, "bytes"),
]
_ARROW = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
          "string": pa.string(), "bytes": pa.binary()}
_HINTS = [
    (pa.types.is_uint64, "uint64 does not fit MindRecord's int64; cast to int64 if the values fit"),
    (pa.types.is_temporal, "cast it to int64 (e.g. pyarrow.compute.cast(col, pa.int64())) or to string"),
    (pa.types.is_decimal, "cast it to float64 or to string"),
    (pa.types.is_struct, "flatten it into one column per field (Table.flatten())"),
    (pa.types.is_map, "MindRecord has no map type; store it as a JSON string"),
    (pa.types.is_null, "the column holds only nulls; drop it"),
]


def _scalar(t):
    return next((kind for test, kind in _SCALARS if test(t)), None)


def _refuse(column, t, hint=None):
    hint = hint or next((h for test, h in _HINTS if test(t)), "cast it to a supported type or drop it")
    return SchemaError(f"column {column!r} has Arrow type {t}, which MindRecord cannot hold: {hint}")


def _array_spec(column, t):
    """(element type, shape) of a list column, or raise."""
    shape = []
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        fixed = pa.types.is_fixed_size_list(t)
        if not fixed and shape:
            raise _refuse(column, t, "only the outermost list may have a variable length")
        shape.append(t.list_size if fixed else -1)
        t = t.value_type
    kind = _scalar(t)
    if kind not in ("int32", "int64", "float32", "float64") or pa.types.is_boolean(t):
        raise _refuse(column, t, "arrays must hold numbers (int8..int64, uint8..uint32, float16..64)")
    return kind, shape


def field_spec(column, t):
    """The MindRecord field spec of an Arrow column ``column`` of type ``t``; SchemaError if none."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    kind = _scalar(t)
    if kind is not None:
        return {"type": kind}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        kind, shape = _array_spec(column, t)
        return {"type": kind, "shape": shape}
    raise _refuse(column, t)


def arrow_type(spec):
    """The Arrow type of a MindRecord field spec (arrays as (nested) lists)."""
    t = _ARROW[spec["type"]]
    for size in reversed(spec.get("shape", [])):
        t = pa.list_(t) if size == -1 else pa.list_(t, size)
    return t


def _first_null(array):
    return int(np.flatnonzero(pc.is_null(array).to_numpy(zero_copy_only=False))[0])


def column_values(name, array, spec, where, first_row=0):
    """The values of Arrow ``array`` as the writer takes them for ``spec``; SchemaError on nulls.

    ``first_row`` is the row of the file where ``array`` starts (for messages).
    """
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.null_count:
        raise SchemaError(f"{where}: column {name!r} row {first_row + _first_null(array)} of the file is null; "
                          f"MindRecord cannot hold nulls: fill them (pyarrow.compute.fill_null) or drop the "
                          f"rows first")
    if "shape" in spec:
        return _arrays(name, array, spec, where)
    if spec["type"] in ("string", "bytes"):
        return array.to_pylist()
    dtype = np.dtype(spec["type"])
    return list(pc.cast(array, _ARROW[spec["type"]]).to_numpy().astype(dtype, copy=False))


def _arrays(name, array, spec, where):
    dtype, shape = np.dtype(spec["type"]), spec["shape"]
    lengths = pc.list_value_length(array).to_numpy()
    values = pc.list_flatten(array)
    for _ in shape[1:]:
        values = pc.list_flatten(values)
    if values.null_count:
        raise SchemaError(f"{where}: column {name!r} has a null inside a list; MindRecord cannot hold "
                          f"nulls: fill them (pyarrow.compute.fill_null) first")
    flat = pc.cast(values, _ARROW[spec["type"]]).to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    inner = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    bounds = np.cumsum(lengths * inner)[:-1]
    return [a.reshape([-1, *shape[1:]]) if shape[0] == -1 else a.reshape(shape)
            for a in np.split(flat, bounds)]
