"""Parquet / Arrow <-> MindRecord.

:func:`convert_parquet` turns Parquet files, Arrow IPC (Feather) files or a folder of
them into records, one conversion unit per row group or record batch, with the schema mapped from the Arrow types
(:mod:`arrow_types`); the original Arrow types go into ``desc`` so that :func:`to_arrow`
can give them back. :func:`to_arrow` is the reverse: a dataset's scalar columns (and,
when asked for, bytes and 1-D array columns) as a ``pyarrow.Table`` for pandas, Polars
or DuckDB; :func:`write_arrow` writes it as Parquet or Arrow IPC (Feather).
"""

import json
import os

import numpy as np

from recordio.converters import engine
from recordio.errors import SchemaError
from recordio.extras import requires

EXTENSIONS = (".parquet", ".pq", ".arrow", ".feather", ".ipc")   # arrow_files.EXTENSIONS, without pyarrow

__all__ = ["ParquetSource", "convert_parquet", "to_arrow", "write_arrow"]


def _parquet_files(paths):
    paths = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(os.path.join(path, n) for n in os.listdir(path) if n.lower().endswith(EXTENSIONS))
            if not found:
                raise FileNotFoundError(f"{path}: no {', '.join(EXTENSIONS)} files in this folder")
            files.extend(found)
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return [os.path.abspath(f) for f in files]


def _schema(files, columns):
    from recordio.converters.arrow_files import read_schema
    from recordio.converters.arrow_types import field_spec

    first = read_schema(files[0])
    names = list(columns) if columns else first.names
    unknown = [c for c in names if c not in first.names]
    if unknown:
        raise SchemaError(f"{files[0]}: no column(s) {', '.join(map(repr, unknown))} "
                          f"(columns: {', '.join(first.names)})")
    for path in files[1:]:
        other = read_schema(path)
        for name in names:
            if name not in other.names or other.field(name).type != first.field(name).type:
                found = other.field(name).type if name in other.names else "no such column"
                raise SchemaError(f"{path}: column {name!r} is {found}, but {first.field(name).type} in "
                                  f"{files[0]}; all files must share the schema")
    return {name: field_spec(name, first.field(name).type) for name in names}, \
        {name: str(first.field(name).type) for name in names}


class ParquetSource:
    """Parquet (or Arrow IPC) files as conversion units of one row group (record batch) each."""

    kind = "parquet"
    chunk_rows = 4096

    def __init__(self, paths, columns=None, index_fields=None):
        self.files = _parquet_files(paths)
        self.schema, types = _schema(self.files, columns)
        self.columns = list(self.schema)
        self.index_fields = list(index_fields or [])
        self.desc = json.dumps({"source": "parquet", "arrow_types": types})

    def units(self):
        from recordio.converters.arrow_files import pieces

        units = []
        for path in self.files:
            first = 0
            for i, rows in pieces(path):
                if rows:
                    units.append((path, i, rows, first))
                first += rows
        return units

    def unit_rows(self, unit):
        return unit[2]

    def where(self, unit):
        from recordio.converters.arrow_files import piece_name

        return f"{unit[0]} [{piece_name(unit[0])} {unit[1]}]"

    def facts(self):
        return {"columns": self.columns, "index_fields": self.index_fields,
                "files": [[f, os.path.getsize(f)] for f in self.files]}

    def read(self, unit):
        from recordio.converters.arrow_files import read_piece
        from recordio.converters.arrow_types import column_values

        table = read_piece(unit[0], unit[1], self.columns)
        values = [column_values(name, table.column(name).combine_chunks(), self.schema[name], self.where(unit),
                                unit[3]) for name in self.columns]
        return [dict(zip(self.columns, row)) for row in zip(*values)]


def convert_parquet(paths, destination, *, columns=None, index_fields=None, **options):
    """Convert Parquet files into ``destination``; see :func:`engine.convert` for ``options``."""
    return engine.convert(ParquetSource(paths, columns, index_fields), destination, **options)


def _export_columns(schema, columns, path):
    if columns is None:
        return [n for n, spec in schema.items() if "shape" not in spec and spec["type"] != "bytes"]
    for name in columns:
        if name not in schema:
            raise SchemaError(f"{path}: no field {name!r} (fields: {', '.join(schema)})")
        shape = schema[name].get("shape")
        if shape and len(shape) > 1:
            raise SchemaError(f"{path}: field {name!r} has shape {shape}; to_arrow exports scalars, bytes "
                              f"and 1-D arrays")
    return list(columns)


def to_arrow(path, columns=None):
    """A ``pyarrow.Table`` of the dataset's columns (default: every int, float and string field)."""
    with requires("Parquet/Arrow conversion", "arrow"):
        import pyarrow as pa

    import recordio
    from recordio.converters.arrow_types import arrow_type

    info = recordio.describe(path)
    names = _export_columns(info["schema"], columns, path)
    if not names:
        raise SchemaError(f"{path}: no scalar field to export (fields: {', '.join(info['schema'])}); "
                          f"name the columns to export")
    values = {n: [] for n in names}
    with recordio.FileReader(path, columns=names) as reader:
        for row in reader:
            for n in names:
                values[n].append(row[n])
    arrays = [pa.array(_plain(values[n]), type=arrow_type(info["schema"][n])) for n in names]
    return _original_types(pa.table(arrays, names=names), info["desc"])


def _plain(values):
    if values and isinstance(values[0], np.ndarray):
        return [v.reshape(-1) for v in values]
    return np.asarray(values) if values and isinstance(values[0], np.generic) else values


def _original_types(table, desc):
    """Cast columns back to the Arrow types recorded by :func:`convert_parquet`, where it recorded them."""
    with requires("Parquet/Arrow conversion", "arrow"):
        import pyarrow as pa

    try:
        types = json.loads(desc).get("arrow_types", {})
    except (ValueError, AttributeError):
        return table
    for i, name in enumerate(table.column_names):
        try:
            original = pa.type_for_alias(types[name])
        except (KeyError, ValueError):
            continue
        table = table.set_column(i, name, table.column(i).cast(original))
    return table


def write_arrow(table, out):
    """Write ``table`` as Parquet (``.parquet``/``.pq``) or Arrow IPC/Feather (``.arrow``/``.feather``/``.ipc``)."""
    with requires("Parquet/Arrow conversion", "arrow"):
        import pyarrow.feather as feather
        import pyarrow.parquet as pq

    ext = os.path.splitext(os.fspath(out))[1].lower()
    if ext in (".parquet", ".pq"):
        pq.write_table(table, out)
    elif ext in (".arrow", ".feather", ".ipc"):
        feather.write_feather(table, out, compression="uncompressed")
    else:
        raise ValueError(f"{out}: unknown output format {ext!r}; use .parquet, .arrow or .feather")
