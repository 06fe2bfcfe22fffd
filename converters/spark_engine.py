"""Shard tasks on Spark (``engine="spark"``, extra ``recordio[spark]``).

The driver makes an RDD of shard ids, one partition each; each Spark task writes whole shards
(data file and ``.db``) through :class:`recordio.ShardWriter` into the parts folder beside the
target, which every executor must see (a shared filesystem). A retried or speculative attempt
writes the same rows and replaces the part atomically, so it never duplicates rows; only the
driver finalizes and publishes. An unreadable input travels back as data (its error is raised on
the driver as it was raised, without Spark retrying it). Uses the active SparkSession; otherwise
starts one (``spark-submit``'s master, else local) for the conversion and stops it after.
"""

import json
import pickle

from recordio.converters.shard_task import write_shard
from recordio.errors import RecordIOError, WorkerError
from recordio.extras import requires

__all__ = ["run_spark"]


class _Write:
    """One Spark task: the shards of its partition (picklable)."""

    def __init__(self, job, tasks):
        self.job, self.tasks = job, tasks

    def __call__(self, shard_ids):
        for shard_id in shard_ids:
            rows, skipped, error = 0, [], b""
            try:
                _, rows, skipped = write_shard(self.job, shard_id, self.tasks[shard_id])
            except (RecordIOError, OSError, ValueError) as exc:
                error = pickle.dumps(exc)
            yield shard_id, rows, json.dumps(skipped), error


def run_spark(job, tasks, progress):
    """Write the shards ``tasks`` ({shard_id: units}) as Spark tasks; returns [(shard_id, rows, skipped)]."""
    with requires("engine='spark'", "spark"):
        from pyspark.errors import PySparkException
        from pyspark.sql import SparkSession
    session = SparkSession.getActiveSession()
    started = session is None
    if started:
        session = SparkSession.builder.appName("recordio convert").getOrCreate()
    try:
        ids = sorted(tasks)
        rdd = session.sparkContext.parallelize(ids, len(ids)).mapPartitions(_Write(job, tasks))
        try:
            answers = rdd.collect()
        except (PySparkException, RuntimeError) as exc:
            raise WorkerError(f"a Spark task failed while writing shards: {exc}") from exc
    finally:
        if started:                  # a session this call started goes with it
            session.stop()
    errors = [pickle.loads(error) for _, _, _, error in answers if error]
    if errors:
        raise errors[0]
    results = [(shard_id, rows, json.loads(skipped)) for shard_id, rows, skipped, _ in answers]
    progress.update(sum(rows for _, rows, _ in results))
    return results
