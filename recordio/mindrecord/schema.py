"""Schemas: field types, validation of rows against them, and a row's encoding and decoding.

Accepted Python values per schema type (MindSpore 2.10's table, kept on purpose so that
scripts behave the same; anything else is refused with a :class:`SchemaError`):

=========  =====================================================================
int32      ``int`` (not ``bool``) or ``np.int32``, within the int32 range
int64      ``int`` (not ``bool``) or ``np.int64``, within the int64 range
float32    ``float`` or ``np.float32``
float64    ``float`` (``np.float64`` is a ``float``)
string     ``str``
bytes      ``bytes``
array      ``np.ndarray`` whose dtype equals the schema type and whose element
           count fits the shape (one ``-1`` dimension takes any multiple)
=========  =====================================================================
"""

import functools
import math
import re

import numpy as np

from recordio.mindrecord import codec
from recordio.errors import FormatError, SchemaError

__all__ = ["Schema"]

SCALAR_TYPES = ("int32", "int64", "float32", "float64", "string", "bytes")
ARRAY_TYPES = ("int32", "int64", "float32", "float64")
INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
FLT32_LIMIT = float(np.finfo(np.float32).max) * (1 + 2.0 ** -24)   # larger values round to inf
_NAME = re.compile(r"^[0-9a-zA-Z_]+$")
_NUMPY_SCALAR = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}


class Field:
    """One schema field: name, type, shape (None for scalars) and its numpy dtype."""

    __slots__ = ("name", "type", "shape", "dtype", "is_blob", "compressed")

    def __init__(self, name, type_, shape, compressed):
        self.name, self.type, self.shape = name, type_, shape
        self.dtype = np.dtype(_NUMPY_SCALAR[type_]).newbyteorder("<") if type_ in _NUMPY_SCALAR else None
        self.is_blob = shape is not None or type_ == "bytes"
        self.compressed = compressed and shape is not None and type_ in INT_RANGE

    def spec(self):
        return {"type": self.type} if self.shape is None else {"shape": list(self.shape), "type": self.type}


def _check_field(name, spec):
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SchemaError(f"field {name!r} should be composed of '0-9', 'a-z', 'A-Z' or '_'")
    if not isinstance(spec, dict) or "type" not in spec:
        raise SchemaError(f"field {name!r}: expected a dict with a 'type', found {spec!r}")
    extra = set(spec) - {"type", "shape"}
    if extra:
        raise SchemaError(f"field {name!r}: unknown attribute(s) {sorted(extra)}")
    type_, shape = spec["type"], spec.get("shape")
    if shape is None:
        if "shape" in spec or type_ not in SCALAR_TYPES:
            raise SchemaError(f"field {name!r}: type {type_!r} is not one of {', '.join(SCALAR_TYPES)}")
        return type_, None
    if type_ not in ARRAY_TYPES:
        raise SchemaError(f"field {name!r}: arrays must be one of {', '.join(ARRAY_TYPES)}, found {type_!r}")
    if not isinstance(shape, (list, tuple)) or not shape or not all(
            type(d) is int and (d > 0 or d == -1) for d in shape) or list(shape).count(-1) > 1:
        raise SchemaError(f"field {name!r}: shape must be a non-empty list of positive ints with at most "
                          f"one -1, found {shape!r}")
    return type_, tuple(shape)


class Schema:
    """A validated MindRecord schema (one ``schema[0]`` object of the header)."""

    def __init__(self, fields, version="3.0"):
        if not isinstance(fields, dict) or not fields:
            raise SchemaError(f"schema must be a non-empty dict of field specs, found {fields!r}")
        checked = {name: _check_field(name, spec) for name, spec in fields.items()}
        self.compressed = version >= "3.0" and any(
            shape is not None and t in INT_RANGE for t, shape in checked.values())
        self.fields = {n: Field(n, t, s, self.compressed) for n, (t, s) in sorted(checked.items())}
        self.blob_fields = [f.name for f in self.fields.values() if f.is_blob]
        self.raw_fields = [f.name for f in self.fields.values() if not f.is_blob]
        # (field, the plain Python type that needs no conversion, int range): floats always convert
        self._raw_plan = [(f, str if f.type == "string" else int if f.type in INT_RANGE else None,
                           *INT_RANGE.get(f.type, (None, None))) for f in map(self.fields.get, self.raw_fields)]
        self._blob_plan = [self.fields[n] for n in self.blob_fields]
        #: numeric array fields of variable shape, whose element counts (tokens) the ``.db`` records
        self.counted = [f.name for f in self._blob_plan if f.dtype is not None and -1 in f.shape]

    def to_json(self):
        return {name: f.spec() for name, f in self.fields.items()}

    def __eq__(self, other):
        return isinstance(other, Schema) and self.to_json() == other.to_json()

    # --- writing ---------------------------------------------------------------------------------

    def encode_row(self, row, index):
        """Validate one row; return ``(raw_values, raw_bytes, blob_bytes, bytes_saved_by_compression)``.

        ``raw_values`` are the raw fields' Python values in ``raw_fields`` order.
        """
        if not isinstance(row, dict):
            raise SchemaError(f"row {index}: expected a dict, found {type(row).__name__}")
        raw_values = []
        for field, plain_type, low, high in self._raw_plan:
            value = row.get(field.name, row)
            if type(value) is plain_type and (low is None or low <= value <= high):
                raw_values.append(value)          # the common case: a plain int or str in range
            else:
                raw_values.append(self._scalar(field, row, index))
        parts, saved = [], 0
        for field in self._blob_plan:
            value = row.get(field.name, row)
            if type(value) is bytes and field.shape is None:
                parts.append(value)
                continue
            part, part_saved = self._blob_part(field, row, index)
            parts.append(part)
            saved += part_saved
        try:
            raw = codec.pack_raw(self.raw_fields, raw_values) if self.raw_fields else codec.DUMMY_RAW
        except UnicodeEncodeError as exc:
            raise _unencodable(index, self.raw_fields, raw_values, exc) from None
        return raw_values, raw, codec.join_blob(parts), saved

    def _value(self, field, row, index):
        try:
            return row[field.name]
        except KeyError:
            raise SchemaError(f"row {index}: field {field.name!r} is missing (expected {field.type}"
                              f"{'' if field.shape is None else f' array of shape {list(field.shape)}'})") from None

    def _scalar(self, field, row, index):
        value = self._value(field, row, index)
        kind = type(value)
        if field.type in INT_RANGE:
            if kind is not int and kind is not _NUMPY_SCALAR[field.type]:
                raise _type_error(index, field, f"int or np.{field.type}", value)
            low, high = INT_RANGE[field.type]
            value = int(value)
            if not low <= value <= high:
                raise SchemaError(f"row {index}: field {field.name!r}: expected an {field.type} in "
                                  f"[{low}, {high}], found {value}")
            return value
        if field.type in ("float32", "float64"):
            if kind is not float and kind is not _NUMPY_SCALAR[field.type]:
                raise _type_error(index, field, f"float or np.{field.type}", value)
            value = float(value)
            if field.type == "float32" and abs(value) > FLT32_LIMIT and value != math.inf and value != -math.inf:
                raise SchemaError(f"row {index}: field {field.name!r}: expected a float32, found {value!r}, "
                                  f"which is out of the float32 range")
            return value
        if kind is not str:
            raise _type_error(index, field, "str", value)
        return value

    def _blob_part(self, field, row, index):
        return self.encode_part(field, self._value(field, row, index), index)

    def encode_part(self, field, value, index):
        """Validate ``value`` of blob field ``field`` (row ``index``); return ``(part bytes, bytes saved)``."""
        if field.shape is None:
            if type(value) is not bytes:
                raise _type_error(index, field, "bytes", value)
            return value, 0
        if not isinstance(value, np.ndarray):
            raise _type_error(index, field, f"np.ndarray of {field.type}", value)
        if value.dtype != field.dtype and value.dtype.name != field.type:
            raise _dtype_error(field, value, index)
        _check_shape(field, value, index)
        if field.compressed:
            packed = codec.compress_ints(value)
            return packed, value.size * value.itemsize - len(packed)
        return np.ascontiguousarray(value, dtype=field.dtype).tobytes(), 0

    # --- reading ---------------------------------------------------------------------------------

    def decoder(self, columns=None):
        """``(decode, needs_raw, needs_blob)`` for the selected columns.

        ``decode(raw_dict, blob_bytes, where)`` returns the row dict, its keys in the order of
        ``columns`` when given (else raw fields, then blob fields); a value that does not fit the
        schema raises :class:`FormatError` naming ``where`` and the field.
        """
        wanted = set(self.fields) if columns is None else set(columns)
        raw = [(n, _raw_caster(self.fields[n])) for n in self.raw_fields if n in wanted]
        blobs = [(i, n, _part_decoder(self.fields[n])) for i, n in enumerate(self.blob_fields) if n in wanted]
        nblob = len(self.blob_fields)
        split = codec.split_blob
        natural = [n for n, _ in raw] + [n for _, n, _ in blobs]
        # keys are placed first, in the asked order; filling them in keeps that order
        template = None if columns is None or list(columns) == natural else dict.fromkeys(columns)

        def decode(record, blob, where):
            row = {} if template is None else template.copy()
            name = None
            try:
                for name, cast in raw:
                    row[name] = cast(record[name])
                if blobs:
                    name = None
                    parts = (blob,) if nblob == 1 else split(blob, nblob)
                    for i, name, part_decode in blobs:
                        row[name] = part_decode(parts[i])
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise _decode_error(exc, where, name) from None
            return row

        return decode, bool(raw), bool(blobs)


def _decode_error(exc, where, name):
    if isinstance(exc, KeyError):
        return FormatError(f"{where}: raw record lacks field {name!r}")
    if isinstance(exc, FormatError) or name is None:
        return FormatError(f"{where}: {exc}")
    return FormatError(f"{where}: field {name!r}: {exc}")


def _raw_caster(field):
    """A function that checks one msgpack value against the field's type and converts it."""
    kind = field.type
    if kind == "string":
        def cast(value):
            if type(value) is not str:
                raise ValueError(f"expected a string, found {_short(value)}")
            return value
    elif kind in INT_RANGE:
        low, high = INT_RANGE[kind]
        make = field.dtype.type

        def cast(value):
            if type(value) is not int or not low <= value <= high:
                raise ValueError(f"expected an {kind}, found {_short(value)}")
            return make(value)
    else:
        make = field.dtype.type

        def cast(value):
            if type(value) is not float and type(value) is not int:
                raise ValueError(f"expected a {kind}, found {_short(value)}")
            return make(value)
    return cast


def _part_decoder(field):
    """A function from one blob part (bytes) to the field's value."""
    if field.shape is None:
        return bytes
    dtype, shape, compressed = field.dtype, field.shape, field.compressed
    if compressed and shape == (-1,):             # token rows: the decoded array is the value
        return functools.partial(codec.decompress_ints, dtype=dtype)

    def decode(part):
        if compressed:
            flat = codec.decompress_ints(part, dtype)
        elif len(part) % dtype.itemsize:
            raise ValueError(f"{len(part)} bytes is not a whole number of {field.type} elements")
        else:
            flat = np.frombuffer(part, dtype=dtype).copy()
        try:
            return flat.reshape(shape)
        except ValueError:
            raise ValueError(f"{flat.size} elements do not fit shape {list(shape)}") from None
    return decode


def _unencodable(index, names, values, exc):
    """A string that UTF-8 cannot encode (a lone surrogate): name its row and field."""
    for name, value in zip(names, values):
        if type(value) is str:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as bad:
                return SchemaError(f"row {index}: field {name!r}: expected a UTF-8 encodable string, found "
                                   f"{_short(value)} ({bad.reason} at position {bad.start})")
    return SchemaError(f"row {index}: {exc}")


def _type_error(index, field, expected, value):
    return SchemaError(f"row {index}: field {field.name!r}: expected {expected} for schema type "
                       f"{field.type}, found {type(value).__name__} {_short(value)}")


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_NO_VALID_DATA = "There is no valid data which can be written by 'write_raw_data' to mindrecord file."


def _dtype_error(field, value, index):
    """An array whose dtype is not the field's type: refused, as MindSpore 2.10 refuses the row (it
    compares ``str(array.dtype)`` with the schema type; an int64 array for an int32 field included)."""
    hint = f"; cast it with .astype(np.{field.type})" if value.dtype.kind in "iuf" else ""
    return SchemaError(f"row {index}: field {field.name!r}: expected dtype {field.type}, found "
                       f"{value.dtype.name}{hint}. {_NO_VALID_DATA} Nothing of this call is written.")


def _check_shape(field, value, index):
    fixed = math.prod(d for d in field.shape if d != -1)
    ok = value.size % fixed == 0 if -1 in field.shape else value.size == fixed
    if not ok:
        raise SchemaError(f"row {index}: field {field.name!r}: expected shape {list(field.shape)}, "
                          f"found shape {list(value.shape)} ({value.size} elements)")
