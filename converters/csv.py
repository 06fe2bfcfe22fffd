"""CSV files -> records, with MindSpore's ``CsvToMR`` schema rules (read by pandas).

The first line names the columns. Each column's type is the one pandas infers for the whole
file: ``int64`` -> int64, ``float64`` -> float64, ``bool`` -> int32 (0/1), anything else ->
string (the cell's text). A column name made of digits only is refused, as MindSpore
refuses it. An empty cell raises an error naming the file, line and column (MindSpore's
``CsvToMR`` aborts the process on one), or its row is skipped and listed (``skip_bad``).
Every column is indexed unless told otherwise.
"""

import functools
import json
import os

from recordio.converters import engine
from recordio.converters.tomr.common import import_optional
from recordio.errors import SchemaError

__all__ = ["CsvSource", "convert_csv", "csv_rows", "csv_schema", "read_csv"]


def read_csv(path):
    """The whole CSV file as a pandas DataFrame (cached while the file is unchanged)."""
    st = os.stat(path)
    return _read_csv(os.fspath(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=2)
def _read_csv(path, mtime_ns, size):
    pandas = import_optional("pandas", "csv")
    return pandas.read_csv(path)


def _field_type(dtype):
    name = str(dtype)
    return {"int64": "int64", "float64": "float64", "bool": "int32"}.get(name, "string")


def check_columns(df, columns, path, missing=SchemaError):
    """``columns`` (all of the file's when None) after MindSpore's checks; a column the file lacks
    raises ``missing`` (``CsvToMR`` raises MindSpore's RuntimeError)."""
    if columns:
        for col in columns:
            if col not in df.columns:
                raise missing(f"The parameter columns_list is illegal, column {col} does not exist.")
    else:
        columns = list(df.columns)
    for col in columns:
        if str(col).isdigit():
            raise ValueError(f"The first line content: {col} of the CSV file is used as a column name and "
                             f"does not allow starting with a number.")
    if not columns:
        raise RuntimeError(f"Failed to generate schema from csv file {path}.")
    return list(columns)


def csv_schema(df, columns):
    """MindSpore's schema for ``columns`` of ``df``."""
    return {col: {"type": _field_type(df[col].dtype)} for col in columns}


def csv_rows(df, columns, start, stop, path, skipped=None):
    """Rows ``start:stop`` of ``df`` as dicts of plain Python values typed as :func:`csv_schema` says.

    A row with an empty cell raises ValueError naming the file, line and column, or, when a
    ``skipped`` list is given, is left out and appended to it as ``(where, reason)``.
    """
    part = df.iloc[start:stop]
    empty = part[columns].isna().to_numpy()
    values = {col: _values(part[col]) for col in columns}
    rows = []
    for i in range(len(part)):
        if empty[i].any():
            col = columns[int(empty[i].argmax())]
            where = f"{path}: line {start + i + 2}"
            reason = f"{where}, column {col!r}: the cell is empty (a MindRecord field needs a value in every row)"
            if skipped is None:
                raise ValueError(reason)
            skipped.append((where, reason))
            continue
        rows.append({col: values[col][i] for col in columns})
    return rows


def _values(series):
    kind = _field_type(series.dtype)
    if series.isna().any():                       # only the rows without gaps are used
        series = series.where(series.notna(), 0 if kind != "string" else "")
    if kind == "int64":
        return [int(v) for v in series.to_numpy()]
    if kind == "float64":
        return [float(v) for v in series.to_numpy()]
    if kind == "int32":
        return [int(bool(v)) for v in series.to_numpy()]
    return [str(v) for v in series.tolist()]


class CsvSource:
    """The rows of one CSV file as conversion units of up to ``CHUNK`` rows."""

    kind = "csv"
    CHUNK = 10_000
    chunk_rows = 1024

    def __init__(self, path, columns=None, index_fields=None, skip_bad=False):
        self.path = os.path.abspath(os.fspath(path))
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"{self.path}: no such CSV file")
        df = read_csv(self.path)
        self.columns = check_columns(df, columns, self.path)
        self.count = len(df)
        self.schema = csv_schema(df, self.columns)
        self.index_fields = self.columns if index_fields is None else list(index_fields)
        self.skip_bad = bool(skip_bad)
        self.desc = json.dumps({"source": "csv", "file": os.path.basename(self.path), "columns": self.columns})

    def units(self):
        return [(start, min(start + self.CHUNK, self.count)) for start in range(0, self.count, self.CHUNK)]

    def unit_rows(self, unit):
        return unit[1] - unit[0]

    def where(self, unit):
        return f"{self.path} [lines {unit[0] + 2}:{unit[1] + 2}]"

    def facts(self):
        st = os.stat(self.path)
        return {"path": self.path, "columns": self.columns, "index": self.index_fields,
                "size": st.st_size, "mtime_ns": st.st_mtime_ns, "skip_bad": self.skip_bad}

    def read(self, unit):
        skipped = [] if self.skip_bad else None
        rows = csv_rows(read_csv(self.path), self.columns, unit[0], unit[1], self.path, skipped)
        return engine.PartialRows(rows, skipped or ())


def convert_csv(path, destination, *, columns=None, index_fields=None, skip_bad=False, **options):
    """Convert the CSV file ``path``; see :func:`engine.convert` for ``options``.

    ``columns``: the columns to convert (default: all); ``index_fields``: the columns to index
    in the ``.db`` (default: every converted column, as MindSpore's ``CsvToMR``).
    With ``skip_bad``, a row with an empty cell is left out and listed in ``Summary.skipped``.
    """
    return engine.convert(CsvSource(path, columns, index_fields, skip_bad), destination, skip_bad=skip_bad,
                          **options)
