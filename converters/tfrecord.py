"""TFRecord files of ``tf.train.Example`` -> records, with MindSpore's ``TFRecordToMR`` schema rules.

Features are described as TensorFlow's ``tf.io.FixedLenFeature(shape, dtype)`` describes
them; :class:`FixedLenFeature` is recordio's equivalent (TensorFlow's own objects are taken
too, without importing TensorFlow). ``dtype`` is ``string``, ``int64`` or ``float32`` (what
``tf.io.parse_single_example`` parses; a name, a numpy type or a ``tf.DType``). A feature
of shape ``[]`` becomes a scalar field (a ``string`` one becomes ``bytes`` when it is in
``bytes_fields``), one of shape ``[n]`` an ``int64``/``float32`` array field of shape
``[n]``. Feature names are made schema-safe as MindSpore makes them (punctuation and spaces
-> ``_``). Every record must hold each feature with exactly the declared number of values
(or it has a ``default_value``); anything else raises naming the file, record and feature.

Without a feature description (the CLI's default) it is inferred from the first record:
one value -> shape ``[]``, n values -> ``[n]``; a byte string that is not UTF-8 -> bytes.
"""

import collections
import json
import os
import string

import numpy as np

from recordio.converters import engine
from recordio.converters.tfrecord_io import parse_example, read_records, scan
from recordio.errors import FormatError

__all__ = ["FixedLenFeature", "FeatureSpec", "TFRecordSource", "cast_name", "convert_tfrecord",
           "infer_features"]

_KIND = {"string": "bytes", "int64": "int64", "float32": "float"}     # dtype -> Example list kind
_NUMPY = {"int64": np.int64, "float32": np.float32}
_SPECIAL = set(string.punctuation + " ") - {"_"}
CHUNK = 256                 # records per conversion unit


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed shape: ``FixedLenFeature([], "string")``, ``FixedLenFeature([6], "int64")``
    (the fields of ``tf.io.FixedLenFeature``)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


def cast_name(key):
    """MindSpore's field name for feature ``key``: punctuation and spaces become ``_``."""
    return "".join("_" if c in _SPECIAL else c for c in key)


def dtype_name(dtype):
    """``string``/``int64``/``float32``/... of a name, a numpy type or a ``tf.DType``."""
    if dtype in (str, bytes, "str", "bytes", "string"):
        return "string"
    if isinstance(dtype, type):
        return np.dtype(dtype).name
    name = getattr(dtype, "name", dtype)
    return {"double": "float64", "float": "float32"}.get(name, name) if isinstance(name, str) else repr(dtype)


def _is_fixed_len_feature(value):
    return type(value).__name__ == "FixedLenFeature" and hasattr(value, "shape") and hasattr(value, "dtype")


class FeatureSpec:
    """A checked ``feature_dict`` and ``bytes_fields``: the schema, and rows from parsed Examples."""

    def __init__(self, feature_dict, bytes_fields=None):
        if feature_dict is None or not isinstance(feature_dict, dict):
            raise ValueError("Parameter feature_dict is None or not dict.")
        for value in feature_dict.values():
            if not _is_fixed_len_feature(value):
                raise ValueError(f"Parameter feature_dict: {feature_dict} only support FixedLenFeature.")
        self.features = {key: (list(value.shape), dtype_name(value.dtype), getattr(value, "default_value", None))
                         for key, value in feature_dict.items()}
        self.bytes_fields = self._check_bytes_fields(feature_dict, bytes_fields)
        self.schema = self._schema()

    def _check_bytes_fields(self, feature_dict, bytes_fields):
        if bytes_fields is None:
            return []
        if not isinstance(bytes_fields, list):
            raise ValueError(f"Parameter bytes_fields: {bytes_fields} must be list(str).")
        for item in bytes_fields:
            if not isinstance(item, str):
                raise ValueError(f"Parameter bytes_fields's item: {item} is not str.")
            if item not in feature_dict:
                raise ValueError(f"Parameter bytes_fields's item: {item} is not in feature_dict: {feature_dict}.")
            if not isinstance(feature_dict[item].shape, list):
                raise ValueError(f"Parameter feature_dict[{item}].shape should be a list.")
            if self.features[item][1] != "string":
                raise ValueError(f"Parameter bytes_field: {item} should be tf.string in feature_dict.")
        return [cast_name(item) for item in bytes_fields]

    def _schema(self):
        schema, origin = {}, {}
        for key, (shape, dtype, _) in self.features.items():
            name = cast_name(key)
            if name in origin:
                raise ValueError(f"Parameter feature_dict: features {origin[name]!r} and {key!r} both become "
                                 f"the field {name!r}")
            origin[name] = key
            if dtype not in _KIND:
                raise ValueError(f"Parameter feature_dict[{key!r}].dtype {dtype} is not supported: a TFRecord "
                                 f"feature is string, int64 or float32")
            schema[name] = self._field(key, name, shape, dtype)
        return schema

    def _field(self, key, name, shape, dtype):
        if not shape:
            return {"type": "bytes" if name in self.bytes_fields else dtype}
        if len(shape) != 1:
            raise ValueError(f"Parameter len(feature_dict[{key}].shape) should be 1.")
        if not isinstance(shape[0], int) or isinstance(shape[0], bool):
            raise ValueError("Invalid parameter feature_dict, value and type mismatch, "
                             f"please check item of feature_dict[\"{key}\"].")
        if shape[0] < 1:
            raise ValueError(f"Parameter feature_dict[{key}].shape[0] should > 0")
        if dtype == "string":
            raise ValueError(f"Parameter feature_dict[{key}].dtype is tf.string which shape[0] "
                             "is not None. It is not supported.")
        return {"type": dtype, "shape": [shape[0]]}

    def row(self, parsed):
        """The record ``parsed`` (``parse_example``'s dict) as a row; features in sorted order, as
        ``tf.io.parse_single_example`` returns them. Raises FormatError naming the feature."""
        return {cast_name(key): self._value(key, parsed) for key in sorted(self.features)}

    def _value(self, key, parsed):
        shape, dtype, default = self.features[key]
        kind, values = parsed.get(key, (None, None))
        if values is None:
            if default is None:
                raise FormatError(f"feature {key!r} is missing (feature_dict declares {dtype} {shape})")
            kind, values = _KIND[dtype], _default_values(default, dtype)
        if kind != _KIND[dtype]:
            raise FormatError(f"feature {key!r} holds {kind} values, feature_dict declares {dtype}")
        expected = shape[0] if shape else 1
        if len(values) != expected:
            raise FormatError(f"feature {key!r} holds {len(values)} values, feature_dict declares shape {shape}")
        if shape:
            return np.asarray(values, _NUMPY[dtype])
        return self._scalar(key, dtype, values[0])

    def _scalar(self, key, dtype, value):
        if dtype == "int64":
            return int(value)
        if dtype == "float32":
            return float(value)
        if cast_name(key) in self.bytes_fields:
            return bytes(value)
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"feature {key!r} is not UTF-8 text; name it in bytes_fields to keep its "
                              f"bytes") from None

    def to_json(self):
        return {"features": {k: {"shape": s, "dtype": d} for k, (s, d, _) in self.features.items()},
                "bytes_fields": self.bytes_fields}


def _default_values(default, dtype):
    values = np.asarray(default, dtype=object).ravel().tolist()
    return [v.encode() if isinstance(v, str) else v for v in values] if dtype == "string" else values


def infer_features(path):
    """``(feature_dict, bytes_fields)`` read off the first record of the TFRecord file ``path``."""
    offsets, problem = scan(path)
    if not offsets:
        raise problem or FormatError(f"{path}: no records to infer the features from")
    _, data = next(read_records(path, offsets[0], 1))
    if isinstance(data, Exception):
        raise data
    features, bytes_fields = {}, []
    for key, (kind, values) in sorted(parse_example(data).items()):
        if kind is None or not values:
            raise FormatError(f"{path}: record 0: feature {key!r} has no values to infer its type from")
        dtype = {"bytes": "string", "int64": "int64", "float": "float32"}[kind]
        if dtype == "string" and len(values) > 1:
            raise FormatError(f"{path}: record 0: feature {key!r} holds {len(values)} byte strings; MindRecord "
                              f"has no list-of-strings field")
        features[key] = FixedLenFeature([] if len(values) == 1 else [len(values)], dtype)
        if dtype == "string" and not _is_utf8(values[0]):
            bytes_fields.append(key)
    return features, bytes_fields


def _is_utf8(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def records_as_rows(spec, path, offset, count, first, skipped=None):
    """Rows of ``count`` records from byte ``offset``; a bad record raises FormatError naming it, or
    is appended to ``skipped`` as ``(where, reason)`` when a list is given."""
    rows = []
    for index, data in read_records(path, offset, count, first):
        try:
            if isinstance(data, Exception):
                raise data
            rows.append(spec.row(parse_example(data)))
        except FormatError as exc:
            where = f"{path}: record {index}"
            message = str(exc) if str(exc).startswith(path) else f"{where}: {exc}"
            if skipped is None:
                raise type(exc)(message) from exc
            skipped.append((where, message))
    return rows


def tfrecord_files(paths):
    """The TFRecord files of ``paths`` (files, or folders whose non-hidden files are all taken, sorted)."""
    return engine.input_files(paths, "TFRecord")


class TFRecordSource:
    """TFRecord files as conversion units of up to 256 records (their offsets found by one scan)."""

    kind = "tfrecord"
    chunk_rows = 256

    def __init__(self, paths, feature_dict=None, bytes_fields=None, skip_bad=False):
        self.files = tfrecord_files(paths)
        if feature_dict is None:
            feature_dict, inferred = infer_features(self.files[0])
            bytes_fields = inferred if bytes_fields is None else bytes_fields
        self.spec = FeatureSpec(feature_dict, bytes_fields)
        self.schema, self.index_fields, self.skip_bad = self.spec.schema, [], bool(skip_bad)
        self.desc = json.dumps({"source": "tfrecord", "files": [os.path.basename(f) for f in self.files],
                                **self.spec.to_json()})

    def units(self):
        units = []
        for path in self.files:
            offsets, problem = scan(path)
            for start in range(0, len(offsets), CHUNK):
                units.append((path, offsets[start], min(CHUNK, len(offsets) - start), start, None))
            if problem is not None:    # the unframable rest: a unit whose read raises the problem
                units.append((path, -1, 0, len(offsets), str(problem)))
        return units

    def unit_rows(self, unit):
        return unit[2]

    def where(self, unit):
        path, _, count, first, problem = unit
        return f"{path} [records {first}:{first + count}]" if problem is None else f"{path} [record {first} on]"

    def facts(self):
        return {"files": [(f, os.path.getsize(f), os.stat(f).st_mtime_ns) for f in self.files],
                "spec": self.spec.to_json(), "skip_bad": self.skip_bad}

    def read(self, unit):
        path, offset, count, first, problem = unit
        if problem is not None:
            raise FormatError(problem)
        skipped = [] if self.skip_bad else None
        rows = records_as_rows(self.spec, path, offset, count, first, skipped)
        return engine.PartialRows(rows, skipped or ())


def convert_tfrecord(paths, destination, *, feature_dict=None, bytes_fields=None, skip_bad=False, **options):
    """Convert TFRecord files (or folders of them); see :func:`engine.convert` for ``options``.

    ``feature_dict``: ``{name: FixedLenFeature}`` (default: inferred from the first record);
    ``bytes_fields``: scalar string features kept as bytes (default with an inferred
    ``feature_dict``: those whose first value is not UTF-8). With ``skip_bad``, each bad
    record (CRC mismatch, not an Example, a feature not as declared) is left out and listed
    in ``Summary.skipped``; a truncated file or a bad length CRC leaves out the rest of that file.
    """
    source = TFRecordSource(paths, feature_dict, bytes_fields, skip_bad)
    return engine.convert(source, destination, skip_bad=skip_bad, **options)
