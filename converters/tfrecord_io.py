"""TFRecord files without TensorFlow: the framing, its CRCs, and ``tf.train.Example`` messages.

A TFRecord file is a sequence of records::

    uint64  length              little-endian
    uint32  masked_crc(length)  CRC-32C of the 8 length bytes, masked
    bytes   data[length]        a serialized tf.train.Example
    uint32  masked_crc(data)

``masked_crc(x) = ((c >> 15 | c << 17) + 0xa282ead8) mod 2**32`` with ``c = crc32c(x)``
(TensorFlow's ``tsl/lib/hash/crc32c.h``). Both CRCs are checked (the ``crc32c`` package);
a mismatch raises :class:`recordio.errors.ChecksumError`, a short file
:class:`recordio.errors.FormatError`, each naming the file, the record and its offset.

``Example`` messages are parsed by protobuf from the message types of TensorFlow's
``example.proto``/``feature.proto`` declared below in a private descriptor pool (so they
never clash with TensorFlow's own when it is loaded too).
"""

import functools
import struct

from recordio.converters.tomr.common import import_optional
from recordio.errors import ChecksumError, FormatError
from recordio.extras import requires

__all__ = ["frame", "masked_crc", "parse_example", "read_records", "scan"]

HEADER = 12                 # length + its CRC
FOOTER = 4                  # the data's CRC
_MASK = 0xA282EAD8


def masked_crc(data):
    """TFRecord's masked CRC-32C of ``data``."""
    crc = import_optional("crc32c", "tfrecord").crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK) & 0xFFFFFFFF


def frame(data):
    """``data`` framed as one TFRecord record (for writers and tests)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def _header(f, path, index, offset):
    """The record length at ``offset`` (its CRC checked), or None at the end of the file."""
    head = f.read(HEADER)
    if not head:
        return None
    if len(head) < HEADER:
        raise FormatError(f"{path}: record {index} at byte {offset}: truncated header ({len(head)} of "
                          f"{HEADER} bytes)")
    length, crc = struct.unpack("<QI", head)
    if masked_crc(head[:8]) != crc:
        raise ChecksumError(f"{path}: record {index} at byte {offset}: length CRC mismatch (the rest of "
                            f"the file cannot be framed)")
    return length


def scan(path):
    """``(offsets, problem)``: the byte offset of each record whose header is sound, in order, and
    None or the error that stops framing the rest of the file (a bad length CRC, a truncation)."""
    offsets, offset = [], 0
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        while True:
            try:
                length = _header(f, path, len(offsets), offset)
            except FormatError as exc:
                return offsets, exc
            if length is None:
                return offsets, None
            end = offset + HEADER + length + FOOTER
            if end > size:
                return offsets, FormatError(f"{path}: record {len(offsets)} at byte {offset}: truncated "
                                            f"({length} data bytes announced, {size - offset - HEADER} left)")
            offsets.append(offset)
            offset = f.seek(end)


def read_records(path, offset, count, first=0):
    """``count`` records from byte ``offset`` (record number ``first``) as ``(number, data or error)``;
    a record whose data CRC fails gives a :class:`ChecksumError` and the next record follows."""
    with open(path, "rb") as f:
        f.seek(offset)
        for index in range(first, first + count):
            length = _header(f, path, index, offset)
            if length is None:
                raise FormatError(f"{path}: record {index} at byte {offset}: the file ends early")
            body = f.read(length + FOOTER)
            if len(body) < length + FOOTER:
                raise FormatError(f"{path}: record {index} at byte {offset}: truncated data")
            data, (crc,) = body[:length], struct.unpack("<I", body[length:])
            if masked_crc(data) != crc:
                yield index, ChecksumError(f"{path}: record {index} at byte {offset}: data CRC mismatch")
            else:
                yield index, data
            offset += HEADER + length + FOOTER


@functools.lru_cache(maxsize=1)
def _example_class():
    """The ``tensorflow.Example`` message class, built in a private pool."""
    descriptor_pb2 = import_optional("google.protobuf.descriptor_pb2", "tfrecord")
    with requires("TFRecord conversion", "tfrecord"):
        from google.protobuf import descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(name="recordio/tf_example.proto", package="tensorflow",
                                               syntax="proto3")
    types = descriptor_pb2.FieldDescriptorProto
    repeated, optional = types.LABEL_REPEATED, types.LABEL_OPTIONAL
    for name, kind in (("BytesList", types.TYPE_BYTES), ("FloatList", types.TYPE_FLOAT),
                       ("Int64List", types.TYPE_INT64)):
        message = proto.message_type.add(name=name)
        message.field.add(name="value", number=1, label=repeated, type=kind)
    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, kind) in enumerate((("bytes_list", "BytesList"), ("float_list", "FloatList"),
                                           ("int64_list", "Int64List")), 1):
        feature.field.add(name=name, number=number, label=optional, type=types.TYPE_MESSAGE,
                          type_name=f".tensorflow.{kind}", oneof_index=0)
    features = proto.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=optional, type=types.TYPE_STRING)
    entry.field.add(name="value", number=2, label=optional, type=types.TYPE_MESSAGE,
                    type_name=".tensorflow.Feature")
    features.field.add(name="feature", number=1, label=repeated, type=types.TYPE_MESSAGE,
                       type_name=".tensorflow.Features.FeatureEntry")
    example = proto.message_type.add(name="Example")
    example.field.add(name="features", number=1, label=optional, type=types.TYPE_MESSAGE,
                      type_name=".tensorflow.Features")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


_KINDS = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def parse_example(data):
    """``{name: (kind, values)}`` of a serialized ``tf.train.Example``; kind is bytes, float or int64
    (None for a feature with no list set)."""
    example = _example_class()()
    try:
        example.ParseFromString(bytes(data))
    except Exception as exc:       # protobuf's DecodeError: not an Example
        raise FormatError(f"not a tf.train.Example ({type(exc).__name__}: {exc})") from exc
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = (_KINDS.get(kind), list(getattr(feature, kind).value) if kind else [])
    return out
