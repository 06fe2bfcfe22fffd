"""MindRecord rows <-> Arrow blocks (Ray's tensor extension types for arrays)."""

import numpy as np

from recordio.extras import requires

with requires("recordio.ray", "ray"):
    from ray.data.block import BlockAccessor
    from ray.data.extensions import ArrowTensorArray, ArrowVariableShapedTensorArray
    import pyarrow as pa

__all__ = ["block_rows", "rows_block"]

_ARROW = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
          "string": pa.string(), "bytes": pa.binary()}


def _column(values, spec):
    shape = spec.get("shape")
    if shape is None:
        if spec["type"] in ("string", "bytes"):
            return pa.array(values, _ARROW[spec["type"]])
        return pa.array(np.asarray(values, dtype=spec["type"]))
    if -1 in shape:
        return ArrowVariableShapedTensorArray.from_numpy(values)
    return ArrowTensorArray.from_numpy(np.stack(values))


def rows_block(rows, schema, columns):
    """The rows (dicts a FileReader returns) as one Arrow table with ``columns``, in that order."""
    return pa.Table.from_arrays([_column([r[c] for r in rows], schema[c]) for c in columns], names=columns)


def block_rows(block, schema):
    """A Ray block's rows as dicts the writer takes: plain Python scalars, ndarrays for arrays.

    The schema decides the values' types; a missing or surplus column is a ``SchemaError`` of the
    writer, a value of the wrong type too (no silent casts: an int64 array stays int64).
    """
    table = BlockAccessor.for_block(block).to_arrow()
    columns = {}
    for name in table.column_names:
        spec = schema.get(name, {})
        if "shape" in spec:
            columns[name] = list(BlockAccessor.for_block(table.select([name])).to_numpy(name))
        else:
            columns[name] = table.column(name).to_pylist()
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())] if names else []
