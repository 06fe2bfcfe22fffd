"""``read_mindrecord``: a MindRecord dataset as a Spark DataFrame, one partition per run of rows."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from recordio.extras import requires
from recordio.mindrecord.reader import FileReader
from recordio.mindrecord.remote_store import is_url
from recordio.mindrecord.row_runs import plan_reads
from recordio.spark.types import spark_schema

with requires("recordio.spark", "spark"):
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_mindrecord"]

BATCH_BYTES = 8 << 20         # a task yields an Arrow batch every 8 MiB of file bytes
PARTITIONS_PER_CORE = 2       # default partitions: this many per core of the cluster, at least one per shard

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
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


class ReadTask:
    """The executors' side: partition ``i`` reads run ``i`` of the rows as Arrow batches (picklable)."""

    def __init__(self, runs, files, sizes, counts, schema, columns):
        self.runs, self.files, self.sizes, self.counts = runs, files, sizes, counts
        self.schema, self.columns = schema, columns

    def __call__(self, batches):
        for batch in batches:
            for run in batch.column(0).to_pylist():
                yield from self.read_run(self.runs[run])

    def read_run(self, run):
        for f, start, stop in run:
            step = max(1, int(BATCH_BYTES * max(1, self.counts[f]) // max(1, self.sizes[f])))
            with FileReader([self.files[f]], columns=self.columns) as reader:
                for first in range(start, stop, step):
                    yield rows_batch(reader[first:min(stop, first + step)], self.schema, self.columns)


def read_mindrecord(spark: SparkSession, path: str | os.PathLike | Sequence[str | os.PathLike],
                    columns: Sequence[str] | None = None, *, num_partitions: int | None = None) -> DataFrame:
    """A MindRecord dataset as a DataFrame, rows in the dataset's order.

    Args:
        spark: the session.
        path: any data file of the dataset (its shards are found from its header), or a list of data
            files; every executor must see them at the same path.
        columns: the fields to read (default: all), in that order.
        num_partitions: the number of partitions, each a contiguous run of rows (cut inside shards and
            across them, so 4 shards are read by 16 tasks when asked for 16). Default: two per core
            (``defaultParallelism``), at least one per shard.

    Scalars keep their type (int32 -> ``int``, float32 -> ``float``, ...), strings are ``string``,
    bytes ``binary``, an array field of ``k`` dimensions is ``k`` nested ``array`` types.
    """
    given: str | list[str] = ([os.fspath(p) for p in path] if isinstance(path, (list, tuple))
                              else os.fspath(path))      # type: ignore[arg-type]
    if any(is_url(p) for p in ([given] if isinstance(given, str) else given)):
        raise ValueError(f"{path}: read_mindrecord reads from a filesystem that every executor sees at the same "
                         f"path (a shared or mounted one), not from object storage URLs")
    with FileReader(given, columns=columns) as reader:           # checks the files, schema and columns
        files, counts, schema = reader.files, reader.file_row_counts, dict(reader.schema)
    columns = list(columns) if columns is not None else list(schema)
    if num_partitions is None:
        num_partitions = max(len(files), PARTITIONS_PER_CORE * spark.sparkContext.defaultParallelism)
    runs = plan_reads(counts, num_partitions)
    task = ReadTask(runs, files, [os.path.getsize(f) for f in files], counts, schema, columns)
    ids = spark.range(0, len(runs), 1, max(1, len(runs)))
    return ids.mapInArrow(task, spark_schema(schema, columns))
