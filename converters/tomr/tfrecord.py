"""MindSpore's ``TFRecordToMR``: one TFRecord file -> MindRecord, without TensorFlow.

As MindSpore (TensorFlow 2 path): the schema from ``feature_dict`` and ``bytes_fields``
(:class:`recordio.converters.tfrecord.FeatureSpec`), description ``TFRecord to MindRecord``,
one file, no index, rows in batches of 256 with ``parallel_writer=True``. ``feature_dict``
takes :class:`FixedLenFeature` (``from recordio.mindrecord import FixedLenFeature``) or
TensorFlow's ``tf.io.FixedLenFeature``. Records are read by
:mod:`recordio.converters.tfrecord_io`, which checks both CRCs of every record (TensorFlow's
reader checks them too); a bad record raises naming the file and the record.
"""

import recordio
from recordio.converters.tfrecord import FeatureSpec, records_as_rows
from recordio.converters.tfrecord_io import scan
from recordio.converters.tomr.common import ToMR, check_filename

__all__ = ["TFRecordToMR"]


class TFRecordToMR(ToMR):
    """A TFRecord file of ``tf.train.Example`` -> MindRecord (MindSpore's class)."""

    parallel_writer = True

    def __init__(self, source, destination, feature_dict, bytes_fields=None):
        if not isinstance(source, str):
            raise ValueError("Parameter source must be string.")
        check_filename(source, "source")
        if not isinstance(destination, str):
            raise ValueError("Parameter destination must be string.")
        check_filename(destination, "destination")
        self.spec = FeatureSpec(feature_dict, bytes_fields)
        self.source, self.destination, self.feature_dict = source, destination, feature_dict
        self.bytes_fields_list = self.spec.bytes_fields
        self.mindrecord_schema = self.spec.schema

    def _convert(self):
        self.write(recordio.FileWriter(self.destination), self.mindrecord_schema, "TFRecord to MindRecord",
                   self._rows())

    def tfrecord_iterator(self):
        """The rows ``transform`` writes, one per record (MindSpore's method, which it marks for removal)."""
        return self._rows()

    def _rows(self):
        offsets, problem = scan(self.source)
        for start in range(0, len(offsets), 256):
            yield from records_as_rows(self.spec, self.source, offsets[start], min(256, len(offsets) - start),
                                       start)
        if problem is not None:
            raise problem
