"""``read_mindrecord``: a MindRecord dataset as a Spark DataFrame, one partition per run of rows."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence

import numpy as np

from recordio.extras import requires
from recordio.mindrecord.read.reader import FileReader
from recordio.mindrecord.storage.store import is_url
from recordio.spark.source import PARTITIONS_PER_CORE, MindRecordSource

with requires("recordio.spark", "spark"):
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_mindrecord"]

_ARROW = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
          "string": pa.string(), "bytes": pa.binary()}


def _nested(values, spec):
    """Arrays of one field (each with the field's number of dimensions) as an Arrow list array."""
    dtype = np.dtype(spec["type"])
    leaf = pa.array(np.concatenate([v.ravel() for v in values]) if values else np.empty(0, dtype), _ARROW[spec["type"]])
    for depth in reversed(range(len(spec["shape"]))):
        lengths = [np.full(math.prod(v.shape[:depth]), v.shape[depth]) for v in values]
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths) if lengths else [])]).astype(np.int32)
        leaf = pa.ListArray.from_arrays(pa.array(offsets), leaf)
    return leaf


def columns_batch(batch, schema, columns):
    """A ``FileReader.read_batch`` result as one Arrow record batch of ``columns`` (no Python object a
    value for numbers, arrays and bytes)."""
    fields = [pa.field(name, _arrow_type(schema[name]), nullable=False) for name in columns]
    arrays = [_column(batch[name], schema[name], f.type) for name, f in zip(columns, fields)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _column(values, spec, kind):
    if spec["type"] == "bytes":
        if isinstance(values, np.ndarray):                  # every value of one length: (n, L) uint8
            n, width = values.shape
            offsets, data = np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(values).ravel()
        else:                                               # a BytesColumn: one buffer and its offsets
            offsets, data = np.asarray(values.offsets, np.int64), values.buffer
        return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                     [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(kind)
    if spec["type"] == "string" or not spec.get("shape"):
        return pa.array(values, _ARROW[spec["type"]]).cast(kind)
    if isinstance(values, np.ndarray):                      # one shape: (n, *shape)
        values = list(values)
    return _nested(values, spec).cast(kind)


def rows_batch(rows, schema, columns):
    """FileReader rows as one Arrow record batch of ``columns``."""
    arrays = []
    for name in columns:
        spec, values = schema[name], [r[name] for r in rows]
        if spec.get("shape"):
            arrays.append(_nested(values, spec))
        elif spec["type"] in ("string", "bytes"):
            arrays.append(pa.array(values, _ARROW[spec["type"]]))
        else:
            arrays.append(pa.array(np.asarray(values, dtype=spec["type"]), _ARROW[spec["type"]]))
    fields = [pa.field(name, _arrow_type(schema[name]), nullable=False) for name in columns]
    return pa.RecordBatch.from_arrays([a.cast(f.type) for a, f in zip(arrays, fields)], schema=pa.schema(fields))


def _arrow_type(spec):
    """The Arrow type Spark expects of a field: no nulls anywhere, list items named ``element``."""
    kind = _ARROW[spec["type"]]
    for _ in spec.get("shape") or ():
        kind = pa.list_(pa.field("element", kind, nullable=False))
    return kind


def read_mindrecord(spark: SparkSession, path: str | os.PathLike | Sequence[str | os.PathLike],
                    columns: Sequence[str] | None = None, *, num_partitions: int | None = None,
                    storage_options: dict | None = None) -> DataFrame:
    """A MindRecord dataset as a DataFrame, rows in the dataset's order.

    Args:
        spark: the session.
        path: any data file of the dataset (its shards are found from its header), or a list of data
            files, that every executor sees at the same path; or the URL of a data file
            (``s3://...``, docs/howto-remote.md), which each executor reads through its node's cache.
        columns: the fields to read (default: all), in that order.
        num_partitions: the number of partitions, each a contiguous run of rows (cut inside shards and
            across them, so 4 shards are read by 16 tasks when asked for 16). Default: two per core
            (``defaultParallelism``), at least one per shard.
        storage_options: a URL's fsspec options (they travel to the executors with the read's options;
            credentials from the executors' environment need none).

    Scalars keep their type (int32 -> ``int``, float32 -> ``float``, ...), strings are ``string``,
    bytes ``binary``, an array field of ``k`` dimensions is ``k`` nested ``array`` types.

    The DataFrame is the ``mindrecord`` data source (:mod:`recordio.spark.source`): with
    ``spark.sql.python.filterPushdown.enabled=true`` on the session, ``==`` and ``isin`` filters on
    integer and string **index fields** are answered by the ``.db`` and only the matching rows are
    read (each checked against the data file).
    """
    given: str | list[str] = ([os.fspath(p) for p in path] if isinstance(path, (list, tuple))
                              else os.fspath(path))      # type: ignore[arg-type]
    if isinstance(given, list) and any(is_url(p) for p in given):
        raise ValueError(f"{path}: a dataset at a URL is read from one of its data files' URL, not a list")
    with FileReader(given, columns=columns, storage_options=storage_options) as reader:   # checks it all
        files = reader.files
    if num_partitions is None:
        num_partitions = max(len(files), PARTITIONS_PER_CORE * spark.sparkContext.defaultParallelism)
    spark.dataSource.register(MindRecordSource)
    load = (spark.read.format("mindrecord").option("path", json.dumps(given) if isinstance(given, list) else given)
            .option("numPartitions", str(int(num_partitions)))
            .option("pushdown", str(spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")).lower()))
    if columns is not None:
        load = load.option("columns", json.dumps(list(columns)))
    if storage_options:
        load = load.option("storageOptions", json.dumps(storage_options))
    return load.load()
