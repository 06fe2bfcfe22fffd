"""Spark bridge: write a DataFrame as MindRecord in parallel, read MindRecord as a DataFrame.

``write_mindrecord(df, path)`` writes each partition as one shard on the executors with
:class:`recordio.ShardWriter`, each task attempt into a folder of its own, and publishes the dataset
from the driver (:func:`recordio.finalize_shards`) once the job has succeeded: a retried or speculative
attempt never duplicates rows, and a failed job leaves no dataset. ``read_mindrecord(spark, path)``
gives a DataFrame whose partitions are contiguous runs of rows. Needs the ``spark`` extra (pyspark and
pyarrow, and a Java runtime); pyspark is imported only here. See ``docs/howto-spark.md``.

Types, Spark -> MindRecord (and back):

==============================  ==============================  ==================================
Spark                           MindRecord                      read back as
==============================  ==============================  ==================================
byte, short, int / long         int32 / int64                   int / long
float / double                  float32 / float64               float / double
string / binary                 string / bytes                  string / binary
array<number>                   the number's type, ``[-1]``     array<number>
array<array<number>> ...        ``[-1, *inner]`` (first row's)  array<array<number>> ...
anything else                   refused, naming the column      -
==============================  ==============================  ==================================

A fixed-shape field read into Spark (``[2, 3]``) comes back as ``[-1, 3]`` when written without a
schema: Spark's types do not keep the first dimension; pass ``schema=`` to keep it.
"""

from recordio.spark.read import read_mindrecord
from recordio.spark.write import write_mindrecord

__all__ = ["read_mindrecord", "write_mindrecord"]
