"""``write_mindrecord``: a Spark DataFrame written as MindRecord, one shard per partition, published once.

Each task attempt writes its partition with :class:`recordio.ShardWriter` into a folder of its own,
``.<name>.rio-spark/attempt-<task attempt id>/``; a retried or speculative attempt therefore never
touches another attempt's part. Spark hands the driver the result of exactly one successful attempt
per partition; the driver moves those parts (and only those) into the parts folder and publishes the
dataset with :func:`recordio.finalize_shards`. Whatever fails, the attempts' folder and the parts are
removed and no dataset is published (a dataset already at the path is untouched).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence

from recordio.errors import SchemaError
from recordio.extras import requires
from recordio.mindrecord.schema import Schema
from recordio.mindrecord.storage.upload import write_target
from recordio.mindrecord.write.shard_writer import ShardWriter, finalize_shards, parts_dir
from recordio.mindrecord.write.writer import FileWriter
from recordio.spark.executors import recordio_on_executors
from recordio.spark.types import (check_columns, mindrecord_schema, nested_columns, to_writer_columns,
                                  to_writer_row)

with requires("recordio.spark", "spark"):
    import pyarrow as pa
    from pyspark import TaskContext
    from pyspark.sql import DataFrame, Row
    from pyspark.sql import functions as F

__all__ = ["attempts_dir", "write_mindrecord"]

CHUNK_ROWS = 512
RESULT = "shard int, attempt string, rows long"
_ORDER = "__recordio_row__"


def attempts_dir(file_name) -> str:
    """The folder of the task attempts' private parts, beside the dataset (hidden, never a dataset)."""
    file_name = os.path.abspath(os.fspath(file_name))
    return os.path.join(os.path.dirname(file_name), f".{os.path.basename(file_name)}.rio-spark")


class WriteTask:
    """The executors' side: one task attempt writes its partition as shard ``partitionId`` (picklable)."""

    def __init__(self, path, shard_num, schema, index_fields, desc, row_fn):
        self.path, self.shard_num, self.schema = path, shard_num, schema
        self.index_fields, self.desc, self.row_fn = list(index_fields), desc, row_fn
        self.convert = row_fn is not None or any(spec.get("shape") for spec in schema.values())

    def __call__(self, batches):
        context = TaskContext.get()
        shard, attempt = context.partitionId(), context.taskAttemptId()
        folder = self.attempt_folder(shard, attempt)
        rows = self.write(shard, folder, batches)
        yield pa.RecordBatch.from_pydict({"shard": [shard], "attempt": [folder], "rows": [rows]},
                                         schema=pa.schema([("shard", pa.int32()), ("attempt", pa.string()),
                                                           ("rows", pa.int64())]))

    def attempt_folder(self, shard, attempt):
        if shard >= self.shard_num:
            raise RuntimeError(f"{self.path}: Spark ran partition {shard} of a {self.shard_num}-shard write "
                               f"(the DataFrame has more partitions than it planned): pass shard_num=")
        folder = os.path.join(attempts_dir(self.path), f"attempt-{attempt}")
        os.mkdir(folder)                 # fails once the driver has dropped the write: a straggler writes nothing
        return folder

    def write(self, shard, folder, batches) -> int:
        target = os.path.join(folder, os.path.basename(self.path))
        with ShardWriter(target, shard, self.shard_num, self.schema, self.desc, self.index_fields) as writer:
            writer.open()
            done = 0
            for batch in batches:
                for first in range(0, batch.num_rows, CHUNK_ROWS):
                    self._write_chunk(writer, shard, done + first, batch.slice(first, CHUNK_ROWS))
                done += batch.num_rows
        return writer.rows

    def _write_chunk(self, writer, shard, first, chunk):
        """Write a slice of an Arrow batch: as columns (no dict a row) unless ``row_fn`` maps rows or a
        column needs the rows (nulls, which the row checks then refuse)."""
        try:
            columns = to_writer_columns(chunk, self.schema) if self.row_fn is None else None
            if columns is not None:
                writer.write_columns(columns)
            else:
                writer.write_raw_data(self._rows(chunk))
        except SchemaError as exc:
            last = first + chunk.num_rows - 1
            raise SchemaError(f"{self.path}: partition {shard}, rows {first}..{last}: {exc}") from exc

    def _rows(self, chunk):
        rows = chunk.to_pylist()
        if self.row_fn is not None:
            rows = [self.row_fn(Row(**row)) for row in rows]
        if self.convert:                   # Arrow gives scalars, str and bytes as the writer takes them
            rows = [to_writer_row(row, self.schema) for row in rows]
        return rows


def _schema_of(df, schema, row_fn):
    if schema is not None:
        Schema(schema)                             # a bad schema fails on the driver, before any task
        if row_fn is None:
            check_columns(df.schema, schema)
        return dict(schema)
    if row_fn is not None:
        raise SchemaError("write_mindrecord with row_fn needs schema= (the fields row_fn returns)")
    samples = {}
    for name in nested_columns(df.schema):          # the inner shape of a nested array: its first non-empty value
        first = df.select(name).where(F.size(F.col(name)) > 0).limit(1).collect()
        if first:
            samples[name] = first[0][0]
    return mindrecord_schema(df.schema, samples)


def _in_shards(df, shard_num):
    """``df`` in ``shard_num`` partitions, rows in their order (a range shuffle on the row position)."""
    if df.rdd.getNumPartitions() == shard_num:
        return df
    columns = df.columns
    ordered = df.withColumn(_ORDER, F.monotonically_increasing_id())
    return ordered.repartitionByRange(shard_num, _ORDER).sortWithinPartitions(_ORDER).select(*columns)


def _publish(results, path, shard_num, schema, index_fields, desc, overwrite):
    """Move each partition's winning part into the parts folder, write empty shards, publish."""
    target = parts_dir(path)
    os.makedirs(target, exist_ok=True)
    for result in results:
        source = parts_dir(os.path.join(result["attempt"], os.path.basename(path)))
        for name in sorted(os.listdir(source), key=lambda n: n.endswith(".json")):   # the record last
            os.replace(os.path.join(source, name), os.path.join(target, name))
    for shard in sorted(set(range(shard_num)) - {r["shard"] for r in results}):
        with ShardWriter(path, shard, shard_num, schema, desc, list(index_fields)) as writer:
            writer.write_raw_data([])
    finalize_shards(path, shard_num, overwrite=overwrite)


def write_mindrecord(df: DataFrame, path: str | os.PathLike, *, schema: dict | None = None,
                     index_fields: Sequence[str] = (), shard_num: int | None = None,
                     row_fn: Callable[[Row], dict] | None = None, overwrite: bool = False,
                     desc: str | None = None, storage_options: dict | None = None,
                     staging_dir: str | os.PathLike | None = None) -> int:
    """Write ``df`` as the MindRecord dataset ``path`` (``shard_num`` files), in its row order; returns the rows.

    Args:
        df: the DataFrame. Without ``schema``, its Spark types give the MindRecord schema (see
            :mod:`recordio.spark`); a column MindRecord cannot hold is refused before any task runs.
        path: the dataset's file name (shards are ``path0``, ``path1``, ... when ``shard_num > 1``), on a
            filesystem the driver and every executor see at the same path, or a URL (``s3://...``,
            docs/howto-remote.md): then the shards are written into ``staging_dir`` and uploaded from
            the driver once the job succeeded, shard 0's ``.db`` last (nothing opens before).
        schema: the MindRecord schema; needed with ``row_fn``. Without ``row_fn`` the columns must be its
            fields, and array columns of its element type.
        index_fields: fields indexed in the ``.db`` (``FileWriter.add_index``).
        shard_num: the number of files. Default: the DataFrame's partitions. Otherwise the DataFrame is
            range-partitioned into ``shard_num`` partitions on the rows' positions (a shuffle; order kept).
        row_fn: ``row_fn(Row) -> dict`` run on the executors for every row (tokenize, decode, crop).
        overwrite: replace a dataset already at ``path`` (only once the new one is complete).
        desc: the schema's description.
        storage_options: for a URL: the fsspec options (credentials, endpoint).
        staging_dir: for a URL: the folder the shards are staged in before the upload, one the driver
            and every executor see (default: the driver's cache folder, which fits local mode only).

    Raises what the failed job raised; then no dataset is published and one already at ``path`` is kept.
    """
    schema = _schema_of(df, schema, row_fn)
    shard_num = shard_num if shard_num is not None else max(1, df.rdd.getNumPartitions())
    target = write_target(os.fspath(path), shard_num, overwrite=overwrite, storage_options=storage_options,
                          staging_dir=os.fspath(staging_dir) if staging_dir is not None else None)
    if target.remote:                          # staged locally (a rerun replaces the staged copy), uploaded last
        path, overwrite = target.path, True
    path = os.path.abspath(os.fspath(path))
    FileWriter(path, shard_num=shard_num, overwrite=overwrite)     # name, count, target: checked, then let go
    attempts = attempts_dir(path)
    for folder in (attempts, parts_dir(path)):                     # what an earlier, failed write left
        shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(attempts)
    task = WriteTask(path, shard_num, schema, index_fields, desc, row_fn)
    try:
        with recordio_on_executors(df.sparkSession):          # else a ModuleNotFoundError inside a Java trace
            results = _in_shards(df, shard_num).mapInArrow(task, RESULT).collect()
        _publish(results, path, shard_num, schema, index_fields, desc, overwrite)
    except BaseException:
        shutil.rmtree(parts_dir(path), ignore_errors=True)
        raise
    finally:
        shutil.rmtree(attempts, ignore_errors=True)
    target.publish()
    return sum(r["rows"] for r in results)
