"""WebDataset tar shards <-> MindRecord (the ``webdataset`` package reads and writes the tars).

A sample is the files of a tar that share a key (the name up to its first dot); it becomes one
row, one field per extension. The extension's last part gives the type, the rest the field name:

==========================  ===========================  =========================================
file                        field                        value
==========================  ===========================  =========================================
``KEY.label.npy``           ``label``                    numbers from ``.npy`` (no pickles): a
                                                         0-d array is a scalar of its dtype, others
                                                         an array (shape ``[-1, ...]``); int8/16,
                                                         uint8/16, bool widen to int32, uint32 to
                                                         int64, float16 to float32
``KEY.caption.txt``         ``caption``                  string (UTF-8; also ``.text``, ``.json``)
``KEY.cls``                 ``cls``                      int64 from decimal text (also ``.cls2``,
                                                         ``.index``, ``.id``, ``.count``)
``KEY.jpg``, ``KEY.seg.png``  ``jpg``, ``seg_png``       bytes, as stored (any other extension)
==========================  ===========================  =========================================

The schema is inferred from the first sample (or given); the key is kept in ``__key__``
(``key_field=None`` drops it). A sample that lacks a field, has one the schema does not, or
repeats a key of its tar is an error naming the tar and the key. :func:`to_webdataset` writes
the other way: bytes as ``KEY.<field>``, strings as ``.txt``, numbers as ``.npy`` (dtype kept),
so that a round trip gives the same rows.
"""

import io
import json
import os
import re
import tarfile

import numpy as np

from recordio.converters import engine
from recordio.errors import FormatError, SchemaError
from recordio.extras import requires

__all__ = ["WebDatasetSource", "convert_webdataset", "to_webdataset"]

STRING_EXTS = ("txt", "text", "json")
INT_EXTS = ("cls", "cls2", "index", "id", "count")
_WIDEN = {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32",
          "int32": "int32", "uint32": "int64", "int64": "int64", "float16": "float32", "float32": "float32",
          "float64": "float64"}
_TAR = (".tar", ".tar.gz", ".tgz")


def tar_files(paths):
    """The tar files named, folders expanded (their ``.tar``/``.tar.gz``/``.tgz`` files, sorted)."""
    return engine.input_files(paths, "tar", keep=lambda name: name.endswith(_TAR))


def field_of(ext):
    """``(field name, type suffix or None)`` of a file extension (``label.npy`` -> ``("label", "npy")``)."""
    head, _, last = ext.rpartition(".")
    last = last.lower()
    typed = last in ("npy", *STRING_EXTS, *INT_EXTS)
    name = head if typed and head else ext
    return re.sub(r"[^0-9a-zA-Z_]", "_", name), (last if typed else None)


def _npy(data, where):
    array = np.load(io.BytesIO(data), allow_pickle=False)
    if array.dtype.name not in _WIDEN:
        raise SchemaError(f"{where}: a .npy of dtype {array.dtype}, which MindRecord cannot hold (numbers of "
                          f"{', '.join(_WIDEN)})")
    return array


def _infer(ext, data, where):
    name, suffix = field_of(ext)
    if suffix == "npy":
        array = _npy(data, where)
        spec = {"type": _WIDEN[array.dtype.name]}
        return name, spec if array.ndim == 0 else {**spec, "shape": [-1, *array.shape[1:]]}
    if suffix in STRING_EXTS:
        return name, {"type": "string"}
    return name, {"type": "int64" if suffix in INT_EXTS else "bytes"}


def infer_schema(sample, key_field="__key__", where="the first sample"):
    """The schema of one sample (``{ext: bytes}`` with ``__key__``), and ``{field: ext}``."""
    schema, exts = {}, {}
    for ext, data in _files(sample):
        name, spec = _infer(ext, data, f"{where}: {ext}")
        if name in schema:
            raise SchemaError(f"{where}: extensions {exts[name]!r} and {ext!r} both make field {name!r}")
        schema[name], exts[name] = spec, ext
    if key_field:
        if key_field in schema:
            raise SchemaError(f"{where}: a file makes field {key_field!r}, the key's; pass another key_field")
        schema[key_field] = {"type": "string"}
    return schema


def _files(sample):
    return [(k, v) for k, v in sample.items() if not k.startswith("__")]


def _value(ext, data, spec, where):
    suffix = field_of(ext)[1]
    if suffix == "npy":
        array = _npy(data, where)
        if not np.can_cast(array.dtype, spec["type"], "safe") or (array.ndim == 0) != ("shape" not in spec):
            raise SchemaError(f"{where}: expected {spec}, found a .npy of dtype {array.dtype} and shape "
                              f"{array.shape}")
        array = array.astype(spec["type"], copy=False)
        return array if array.ndim else array[()]
    if suffix in INT_EXTS and spec["type"] in ("int32", "int64"):
        return int(data.decode("ascii").strip())
    if spec["type"] == "string":
        return data.decode("utf-8")
    if spec["type"] != "bytes":
        raise SchemaError(f"{where}: the schema says {spec} for a file of extension {ext!r}")
    return data


def samples(path):
    """The samples of one tar file, grouped by key with ``webdataset``'s own iterators."""
    with requires("the WebDataset bridge"):
        from webdataset import tariterators

    with open(path, "rb") as stream:
        files = tariterators.tar_file_expander([{"url": path, "stream": stream}])
        yield from tariterators.group_by_keys(files, lcase=False)   # field names keep their case


def count_samples(path):
    """Distinct keys of a tar (headers only for an uncompressed one)."""
    with requires("the WebDataset bridge"):
        from webdataset.tariterators import base_plus_ext

    with tarfile.open(path, "r:*") as tar:
        keys = {base_plus_ext(m.name)[0] for m in tar if m.isreg() and not m.name.split("/")[-1].startswith("__")}
    return len(keys - {None})


class WebDatasetSource:
    """WebDataset tar shards as conversion units of one tar each (see :mod:`engine`)."""

    kind = "webdataset"

    def __init__(self, paths, schema=None, key_field="__key__", index_fields=None):
        self.files = tar_files(paths)
        self.key_field = key_field
        if schema is None:
            first = next(samples(self.files[0]), None)
            if first is None:
                raise FormatError(f"{self.files[0]}: no samples to infer the schema from (pass schema=)")
            schema = infer_schema(first, key_field, f"{self.files[0]}: sample {first['__key__']!r}")
        self.schema = dict(schema)
        self.index_fields = list(index_fields or [])
        self.desc = json.dumps({"source": "webdataset"})

    def units(self):
        return [(path, count_samples(path)) for path in self.files]

    def unit_rows(self, unit):
        return unit[1]

    def where(self, unit):
        return unit[0]

    def facts(self):
        return {"schema": self.schema, "key_field": self.key_field,
                "files": [[f, os.path.getsize(f)] for f in self.files]}

    def read(self, unit):
        rows, keys = [], set()
        for sample in samples(unit[0]):
            key = sample["__key__"]
            where = f"{unit[0]}: sample {key!r}"
            if key in keys:
                raise FormatError(f"{where}: the key appears twice in the tar (its files are not adjacent)")
            keys.add(key)
            rows.append(self._row(sample, where))
        return rows

    def _row(self, sample, where):
        row = {self.key_field: sample["__key__"]} if self.key_field else {}
        for ext, data in _files(sample):
            name = field_of(ext)[0]
            if name not in self.schema or name in row:
                raise SchemaError(f"{where}: file {ext!r} makes field {name!r}, which the schema "
                                  f"({', '.join(self.schema)}) does not have")
            row[name] = _value(ext, data, self.schema[name], f"{where}: {ext}")
        missing = [n for n in self.schema if n not in row]
        if missing:
            raise SchemaError(f"{where}: no file for field(s) {missing} (the schema's fields: {', '.join(self.schema)})")
        return row


def convert_webdataset(paths, destination, *, schema=None, key_field="__key__", index_fields=None, **options):
    """Convert WebDataset tar shards (files or folders) into ``destination``; see :func:`engine.convert`."""
    return engine.convert(WebDatasetSource(paths, schema, key_field, index_fields), destination, **options)


# --- MindRecord -> WebDataset ----------------------------------------------------------------


def _sample(row, schema, key, extensions):
    sample = {"__key__": key}
    for name, value in row.items():
        spec = schema[name]
        if spec["type"] == "bytes":
            sample[extensions.get(name, name)] = value
        elif spec["type"] == "string":
            sample[extensions.get(name, f"{name}.txt")] = value
        else:
            sample[extensions.get(name, f"{name}.npy")] = np.asarray(value, dtype=spec["type"])
    return sample


def to_webdataset(path, pattern, *, columns=None, maxcount=10000, key_field="__key__", extensions=None):
    """Write the MindRecord dataset ``path`` as WebDataset shards ``pattern % i`` (``"out/shard-%06d.tar"``);
    returns the tar files. The key is the row's ``key_field`` (a string without dots) when the schema has
    it, else the row number; ``extensions`` renames a field's file (``{"image": "jpg"}``)."""
    with requires("the WebDataset bridge"):
        import webdataset

    from recordio.mindrecord.read.reader import FileReader

    pattern = os.fspath(pattern)
    try:
        if pattern % 0 == pattern % 1:
            raise TypeError
    except TypeError:
        raise ValueError(f"pattern {pattern!r} needs one %d for the shard number (e.g. 'out/train-%06d.tar')") \
            from None
    extensions, written, seen = dict(extensions or {}), [], set()
    with FileReader(path, columns=columns) as reader:
        schema = dict(reader.schema)
        keyed = key_field in schema
        with webdataset.ShardWriter(pattern, maxcount=maxcount, verbose=0, post=written.append) as out:
            for i, row in enumerate(reader):
                key = row.pop(key_field) if keyed else f"{i:09d}"
                _check_key(path, i, key, seen)
                out.write(_sample(row, {n: schema[n] for n in row}, key, extensions))
    return written


def _check_key(path, i, key, seen):
    if "." in key or "/" in key or not key or key.startswith("__"):
        raise FormatError(f"{path}: row {i}: key {key!r} is empty, starts with '__' or has a '.' or '/' "
                          f"(WebDataset keys end at the first dot)")
    if key in seen:
        raise FormatError(f"{path}: row {i}: key {key!r} was already written (WebDataset keys are unique)")
    seen.add(key)
