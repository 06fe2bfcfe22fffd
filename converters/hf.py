"""Hugging Face ``datasets``: a MindRecord dataset as a ``datasets.Dataset`` (:func:`to_hf`), and back
(:func:`from_hf`, on the conversion engine: pool or Ray, progress, resume, atomic publish).

=================  ==============================  ==========================================
MindRecord         to_hf gives                     from_hf takes
=================  ==============================  ==========================================
int32              ``Value("int32")``              bool, int8, int16, int32, uint8, uint16
int64              ``Value("int64")``              int64, uint32, ``ClassLabel``
float32            ``Value("float32")``            float16, float32
float64            ``Value("float64")``            float64
string             ``Value("string")``             string, large_string
bytes              ``Image()`` when the first      binary, large_binary, ``Image()`` (the
                   rows decode as images, else     encoded file bytes; a PIL-only image is
                   ``Value("binary")``             refused: cast it to ``Image()`` first)
array [k]          ``List(Value, length=k)``       ``List``/``Sequence``/``LargeList`` of numbers,
array [-1]         ``List(Value)``                 nested, with at most one variable length
array, 2-5 dims    ``Array2D`` ... ``Array5D``     ``Array2D`` ... ``Array5D`` (a ``None`` first
  (-1 first only)    (``None`` for -1)               dimension is -1)
other arrays       nested ``List``                 as above
=================  ==============================  ==========================================

Widening is lossless (int8 -> int32, float16 -> float32); nothing is narrowed. uint64, nulls,
Audio, Video and dicts are refused with the column's name.
"""

import io
import json
import os

import numpy as np

from recordio.converters import engine
from recordio.errors import FormatError, RecordIOError, SchemaError
from recordio.extras import requires

__all__ = ["from_hf", "to_hf"]

_NUMERIC = {"bool": "int32", "int8": "int32", "int16": "int32", "int32": "int32", "uint8": "int32",
            "uint16": "int32", "int64": "int64", "uint32": "int64", "float16": "float32", "float32": "float32",
            "float64": "float64"}
_SCALAR = {**_NUMERIC, "string": "string", "large_string": "string", "binary": "bytes", "large_binary": "bytes"}
IMAGE_PROBE_ROWS = 8


# --- MindRecord -> Hugging Face --------------------------------------------------------------


def _array_feature(datasets, spec):
    value, shape = datasets.Value(spec["type"]), spec["shape"]
    if len(shape) == 1:
        return datasets.List(value, length=shape[0])
    if 2 <= len(shape) <= 5 and -1 not in shape[1:]:
        array = getattr(datasets, f"Array{len(shape)}D")
        return array(shape=tuple(None if d == -1 else d for d in shape), dtype=spec["type"])
    feature = value
    for size in reversed(shape):
        feature = datasets.List(feature, length=size)
    return feature


def features_of(schema, images=()):
    """The ``datasets.Features`` of a MindRecord schema (``images``: bytes fields to give as ``Image()``)."""
    with requires("the Hugging Face datasets bridge", "hf"):
        import datasets

    out = {}
    for name, spec in schema.items():
        if "shape" in spec:
            out[name] = _array_feature(datasets, spec)
        elif name in images:
            out[name] = datasets.Image()
        else:
            out[name] = datasets.Value("binary" if spec["type"] == "bytes" else spec["type"])
    return datasets.Features(out)


def _is_image(data):
    try:
        from PIL import Image
    except ImportError:
        return False
    try:
        with Image.open(io.BytesIO(data)) as image:
            return bool(image.format)
    except Exception:                       # not an image PIL can open: stays bytes
        return False


def _image_fields(reader, schema):
    fields = [n for n, s in schema.items() if s == {"type": "bytes"}]
    probe = reader[:min(IMAGE_PROBE_ROWS, len(reader))]
    return [n for n in fields if probe and all(_is_image(row[n]) for row in probe)]


def _rows(path, columns, images, stamp):
    from recordio.mindrecord.read.reader import FileReader

    with FileReader(list(path) if isinstance(path, tuple) else path, columns=list(columns)) as reader:
        for i, row in enumerate(reader):
            for name in images:
                if not _is_image(row[name]):
                    raise FormatError(f"{path}: row {i}, field {name!r}: expected image bytes (the first rows "
                                      f"were images), found {row[name][:16]!r}...; pass images=[] to keep "
                                      f"the field as bytes")
            yield row


def to_hf(path, columns=None, *, images=None, cache_dir=None):
    """The MindRecord dataset ``path`` as a ``datasets.Dataset`` (Arrow files in the HF cache).

    ``images``: the bytes fields to give as ``Image()`` features (default: those whose first rows
    decode as images; a later row that does not is an error naming it). Types: see the module's table.
    """
    with requires("the Hugging Face datasets bridge", "hf"):
        import datasets

    from recordio.mindrecord.read.reader import FileReader

    given = tuple(os.fspath(p) for p in path) if isinstance(path, (list, tuple)) else os.fspath(path)
    with FileReader(given, columns=columns) as reader:
        schema = {n: dict(s) for n, s in reader.schema.items()}
        names = list(columns) if columns is not None else list(schema)
        images = _image_fields(reader, schema) if images is None else list(images)
        stamp = tuple((f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in reader.files)  # a new cache
                                                                                # when the files change
    wrong = [n for n in images if schema.get(n) != {"type": "bytes"}]
    if wrong:
        raise SchemaError(f"{path}: images={images}: {wrong} are not bytes fields of the schema")
    features = features_of({n: schema[n] for n in names}, images)
    kwargs = {"path": given, "columns": tuple(names), "images": tuple(images), "stamp": stamp}
    try:
        return datasets.Dataset.from_generator(_rows, features=features, cache_dir=cache_dir, gen_kwargs=kwargs)
    except datasets.exceptions.DatasetGenerationError as exc:
        if isinstance(exc.__cause__, RecordIOError):          # ours, with the file and row: raise it as is
            raise exc.__cause__ from None
        raise


# --- Hugging Face -> MindRecord --------------------------------------------------------------


def _refuse(name, feature, hint="cast it to a supported feature or drop it (Dataset.remove_columns)"):
    return SchemaError(f"column {name!r} has feature {feature!r}, which MindRecord cannot hold: {hint}")


def _list_spec(datasets, name, feature):
    shape = []
    while isinstance(feature, (datasets.List, datasets.LargeList)):
        shape.append(getattr(feature, "length", -1))
        feature = feature.feature
    if not isinstance(feature, datasets.Value) or feature.dtype not in _NUMERIC or shape.count(-1) > 1:
        raise _refuse(name, feature, "arrays hold numbers, with at most one variable dimension")
    return {"type": _NUMERIC[feature.dtype], "shape": shape}


def field_spec(name, feature):
    """The MindRecord field spec of the ``datasets`` feature of column ``name``; SchemaError if none."""
    with requires("the Hugging Face datasets bridge", "hf"):
        import datasets

    if isinstance(feature, datasets.Value) and feature.dtype in _SCALAR:
        return {"type": _SCALAR[feature.dtype]}
    if isinstance(feature, datasets.ClassLabel):
        return {"type": "int64"}
    if isinstance(feature, datasets.Image):
        return {"type": "bytes"}
    if type(feature).__name__ in ("Array2D", "Array3D", "Array4D", "Array5D") and feature.dtype in _NUMERIC:
        return {"type": _NUMERIC[feature.dtype], "shape": [-1 if d is None else d for d in feature.shape]}
    if isinstance(feature, (datasets.List, datasets.LargeList)):
        return _list_spec(datasets, name, feature)
    raise _refuse(name, feature)


class HFSource:
    """A ``datasets.Dataset`` as conversion units of ``chunk_rows`` rows (see :mod:`engine`)."""

    kind = "huggingface"
    chunk_rows = 1024

    def __init__(self, dataset, columns=None, index_fields=None):
        columns = list(columns) if columns is not None else list(dataset.column_names)
        self.schema = {n: field_spec(n, dataset.features[n]) for n in columns}
        nulls = [n for n in columns if dataset.data.column(n).null_count]
        if nulls:
            raise SchemaError(f"column {nulls[0]!r} holds nulls; MindRecord cannot hold them: fill or drop them "
                              f"(Dataset.filter) first")
        self.dataset = dataset.select_columns(columns)
        self.index_fields = list(index_fields or [])
        self.desc = json.dumps({"source": "huggingface", "features": self.dataset.features.to_dict()})

    def units(self):
        n = len(self.dataset)
        return [(start, min(n, start + self.chunk_rows)) for start in range(0, n, self.chunk_rows)]

    def unit_rows(self, unit):
        return unit[1] - unit[0]

    def where(self, unit):
        return f"rows {unit[0]}..{unit[1] - 1} of the Hugging Face dataset"

    def facts(self):
        return {"fingerprint": self.dataset._fingerprint, "schema": self.schema, "index": self.index_fields}

    def read(self, unit):
        table = self.dataset.with_format("arrow")[unit[0]:unit[1]]
        columns = [_values(table.column(n).combine_chunks(), self.schema[n], n, unit) for n in self.schema]
        return [dict(zip(self.schema, row)) for row in zip(*columns)]


def _values(array, spec, name, unit):
    with requires("the Hugging Face datasets bridge", "hf"):
        import pyarrow as pa

    if isinstance(array.type, pa.ExtensionType):
        array = array.storage
    if "shape" in spec:
        return _arrays(array, np.dtype(spec["type"]), name, unit)
    if pa.types.is_struct(array.type):                        # Image(): {bytes, path}
        return [_image_bytes(v, name, unit) for v in array.to_pylist()]
    if spec["type"] in ("string", "bytes"):
        return array.to_pylist()
    values = array.to_numpy(zero_copy_only=False).astype(spec["type"])
    return values.tolist() if spec["type"] != "float32" else list(values)


def _image_bytes(value, name, unit):
    if value.get("bytes") is not None:
        return value["bytes"]
    if value.get("path"):
        with open(value["path"], "rb") as f:
            return f.read()
    raise SchemaError(f"column {name!r}, {unit}: an image with neither bytes nor a path")


def _arrays(array, dtype, name, unit):
    """Each row's numbers as a flat array of ``dtype``; a row whose inner lists differ in length is refused."""
    with requires("the Hugging Face datasets bridge", "hf"):
        import pyarrow as pa

    starts, ends = np.arange(len(array)), np.arange(1, len(array) + 1)
    first = True
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        if array.null_count:
            raise SchemaError(f"column {name!r}, rows {unit[0]}..{unit[1] - 1}: a null inside an array")
        if pa.types.is_fixed_size_list(array.type):
            k = array.type.list_size
            base = array.offset
            lo, hi = (starts + base) * k, (ends + base) * k
        else:
            offsets = array.offsets.to_numpy()
            lo, hi = offsets[starts], offsets[ends]
            if not first:
                _check_regular(offsets, starts, ends, name, unit)
        starts, ends, array, first = lo, hi, array.values, False
    values = array.to_numpy(zero_copy_only=False)
    return [values[s:e].astype(dtype) for s, e in zip(starts.tolist(), ends.tolist())]


def _check_regular(offsets, starts, ends, name, unit):
    """Inside each row, every list at this depth has the same length (MindRecord arrays are regular)."""
    lengths = np.diff(offsets)
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s > 1 and (lengths[s:e] != lengths[s]).any():
            raise SchemaError(f"column {name!r}, rows {unit[0]}..{unit[1] - 1}: ragged nested lists (MindRecord "
                              f"arrays have one variable dimension at most)")


def from_hf(dataset, destination, *, columns=None, index_fields=None, **options):
    """Write a ``datasets.Dataset`` as the MindRecord dataset ``destination`` (``Image()`` columns as their
    encoded bytes); ``options`` as for every converter (shard_num, workers, engine, overwrite, ...)."""
    return engine.convert(HFSource(dataset, columns, index_fields), destination, **options)
