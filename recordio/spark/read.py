"""``read_mindrecord``: a MindRecord dataset as a Spark DataFrame, one partition per run of rows."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from recordio.extras import requires
from recordio.mindrecord.read.reader import FileReader
from recordio.mindrecord.storage.store import is_url
from recordio.spark.executors import recordio_on_executors
from recordio.spark.source import PARTITIONS_PER_CORE, MindRecordSource

with requires("recordio.spark", "spark"):
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_mindrecord"]


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
    with recordio_on_executors(spark):       # the source is planned in the executors' Python
        return load.load()
