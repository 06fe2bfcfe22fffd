"""Spark SQL types <-> MindRecord schema fields, and Spark row values -> the values the writer takes."""

from __future__ import annotations

import numpy as np

from recordio.errors import SchemaError
from recordio.extras import requires

from recordio.mindrecord.read.columns import BytesColumn

with requires("recordio.spark", "spark"):
    import pyarrow as pa
    from pyspark.sql import types as T

__all__ = ["mindrecord_schema", "spark_schema", "to_writer_columns", "to_writer_row"]

_SCALARS = {T.ByteType: "int32", T.ShortType: "int32", T.IntegerType: "int32", T.LongType: "int64",
            T.FloatType: "float32", T.DoubleType: "float64", T.StringType: "string", T.BinaryType: "bytes"}
_NUMBERS = {"int32", "int64", "float32", "float64"}
_SPARK = {"int32": T.IntegerType(), "int64": T.LongType(), "float32": T.FloatType(), "float64": T.DoubleType(),
          "string": T.StringType(), "bytes": T.BinaryType()}
_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64, pa.uint8(): np.uint8,
          pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
          pa.float64(): np.float64}
_HOLDS = ("MindRecord holds integers, floats, strings, binary and arrays of numbers: cast the column, "
          "or write it through row_fn with a schema")


def _leaf(data_type):
    """(the element type under every ArrayType, how many arrays deep)."""
    depth = 0
    while isinstance(data_type, T.ArrayType):
        data_type, depth = data_type.elementType, depth + 1
    return data_type, depth


def mindrecord_field(field: T.StructField, sample=None) -> dict:
    """The MindRecord field for a Spark column: scalars by type, a 1-d array as ``[-1]``, a nested array
    as ``[-1, *inner]`` with the inner shape of ``sample`` (a value of the column)."""
    leaf, depth = _leaf(field.dataType)
    kind = _SCALARS.get(type(leaf))
    if kind is None or (depth and kind not in _NUMBERS):
        raise SchemaError(f"column {field.name!r}: Spark type {field.dataType.simpleString()} has no MindRecord "
                          f"type ({_HOLDS})")
    if depth == 0:
        return {"type": kind}
    if depth == 1:
        return {"type": kind, "shape": [-1]}
    return {"type": kind, "shape": [-1, *_inner_shape(field, sample, depth)]}


def _inner_shape(field, sample, depth):
    if sample is None:
        raise SchemaError(f"column {field.name!r}: a nested array ({field.dataType.simpleString()}) needs its inner "
                          f"shape, and the DataFrame has no row with a value in it: pass schema=")
    try:
        shape = np.asarray(sample).shape
    except ValueError:
        shape = ()
    if len(shape) != depth or 0 in shape[1:]:
        raise SchemaError(f"column {field.name!r}: a nested array must have a fixed inner shape (MindRecord "
                          f"arrays have at most one -1 dimension); its first value is ragged: pass schema=")
    return list(shape[1:])


def nested_columns(struct: T.StructType) -> list[str]:
    """The columns whose inner shape comes from a sample row (arrays of arrays)."""
    return [f.name for f in struct.fields if _leaf(f.dataType)[1] > 1]


def mindrecord_schema(struct: T.StructType, samples: dict | None = None) -> dict:
    """The MindRecord schema of a DataFrame's schema; ``samples`` holds a value of each nested column."""
    samples = samples or {}
    return {f.name: mindrecord_field(f, samples.get(f.name)) for f in struct.fields}


def spark_type(spec: dict) -> T.DataType:
    data_type: T.DataType = _SPARK[spec["type"]]
    for _ in spec.get("shape") or ():
        data_type = T.ArrayType(data_type, containsNull=False)
    return data_type


def spark_schema(schema: dict, columns=None) -> T.StructType:
    """The Spark schema of MindRecord ``schema`` (its ``columns``, in that order)."""
    names = list(schema) if columns is None else list(columns)
    return T.StructType([T.StructField(n, spark_type(schema[n]), nullable=False) for n in names])


def check_columns(struct: T.StructType, schema: dict) -> None:
    """A DataFrame written with a given schema: the same columns, arrays of the same element type."""
    names = [f.name for f in struct.fields]
    if set(names) != set(schema):
        raise SchemaError(f"the DataFrame's columns {sorted(names)} are not the schema's fields {sorted(schema)}: "
                          f"select them, or map rows with row_fn")
    for f in struct.fields:
        leaf, depth = _leaf(f.dataType)
        spec = schema[f.name]
        if depth and _SCALARS.get(type(leaf)) != spec["type"]:
            raise SchemaError(f"column {f.name!r}: Spark type {f.dataType.simpleString()} into a field of "
                              f"{spec['type']}: cast the column (arrays are not cast silently)")


def _array(value, spec, name):
    if isinstance(value, np.ndarray):
        return value
    try:
        array = np.asarray(value)
    except ValueError:
        raise SchemaError(f"field {name!r}: expected an array of {spec['type']} of shape {spec['shape']}, "
                          f"found a ragged nested list") from None
    if array.size == 0:                              # [] for a [-1, 2] field: no rows of two
        return array.astype(spec["type"]).reshape([0 if d == -1 else d for d in spec["shape"]])
    if array.dtype.kind not in "iuf" or (array.dtype.kind == "f" and spec["type"].startswith("int")):
        raise SchemaError(f"field {name!r}: expected an array of {spec['type']}, found values of {array.dtype}")
    out = array.astype(spec["type"])
    if out.dtype.kind == "i" and not np.array_equal(out, array):
        raise SchemaError(f"field {name!r}: a value is out of the range of {spec['type']}")
    return out


def to_writer_row(row: dict, schema: dict) -> dict:
    """A row of Python values (lists for arrays, bytearray for binary) as the writer takes it."""
    out = {}
    for name, value in row.items():
        spec = schema.get(name)
        if spec is not None and spec.get("shape") and value is not None:
            value = _array(value, spec, name)
        elif isinstance(value, bytearray):
            value = bytes(value)
        out[name] = value
    return out


def to_writer_columns(batch: pa.RecordBatch, schema: dict) -> dict | None:
    """An Arrow batch (no nulls) as the writer's columns (``FileWriter.write_columns``): numbers as the
    arrays Arrow holds, binary as one buffer and its offsets, strings as lists, arrays as numpy arrays
    (checked, not cast, as :func:`to_writer_row` does); None when a column needs the rows."""
    columns = {}
    for name, column in zip(batch.schema.names, batch.columns):
        spec = schema.get(name)
        kind = column.type
        if column.null_count:
            return None
        if spec is not None and spec.get("shape"):
            columns[name] = [_array(value, spec, name) for value in column.to_pylist()]
        elif kind in _NUMPY:
            columns[name] = _numbers(column)
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            columns[name] = _bytes_column(column)
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            columns[name] = column.to_pylist()
        else:
            return None
    return columns


def _numbers(column):
    """A numeric Arrow array (no nulls) as a numpy view of its values buffer (``to_numpy`` would import
    pandas, a third of a second in each fresh Python worker)."""
    values = column.buffers()[1]
    return np.frombuffer(values, dtype=_NUMPY[column.type])[column.offset:column.offset + len(column)]


def _bytes_column(column):
    """A binary Arrow array as a :class:`BytesColumn` over its data buffer (no copy)."""
    _, offsets, data = column.buffers()
    width = np.int64 if pa.types.is_large_binary(column.type) else np.int32
    offsets = np.frombuffer(offsets, dtype=width)[column.offset:column.offset + len(column) + 1]
    buffer = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return BytesColumn(buffer, offsets)
