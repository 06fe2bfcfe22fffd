"""Ray Data bridge: read a MindRecord dataset as a ``ray.data.Dataset`` and write one from it.

``read_mindrecord(path)`` gives a Ray dataset whose read tasks each take a run of rows of
one or more shards (so a 4-shard dataset is read by more than 4 tasks when
``override_num_blocks`` asks for more); ``write_mindrecord(ds, path, schema)`` writes one
shard per Ray write task with :class:`recordio.ShardWriter` and publishes the dataset
atomically from the driver (:func:`recordio.finalize_shards`): a failed task leaves no
dataset. Needs the ``ray`` extra (``pip install 'mindrecordio[ray]'``); Ray is imported
only here. See ``docs/howto-ray.md``.

Types, MindRecord -> Arrow (and back):

=================  =====================================================================
int32 ... float64  the Arrow scalar of the same name (a numpy scalar of that dtype in batches)
string / bytes     ``string`` / ``binary``
array, fixed       Ray's ``ArrowTensorType`` (a batch column is one ``(n, *shape)`` ndarray)
array with a -1    Ray's ``ArrowVariableShapedTensorType`` (a batch column of ndarrays)
=================  =====================================================================
"""

from recordio.ray.read import MindRecordDatasource, read_mindrecord
from recordio.ray.write import MindRecordDatasink, write_mindrecord

__all__ = ["MindRecordDatasink", "MindRecordDatasource", "read_mindrecord", "write_mindrecord"]
