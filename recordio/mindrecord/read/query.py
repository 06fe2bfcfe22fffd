"""Queries on the ``.db`` index outside the hot paths: rows matching indexed values, and categories.

Answered by SQLite through sqlite-utils on the hardened read-only connections of
:func:`recordio.mindrecord.index.connect_ro`, with parameterized values. Rows are global row
numbers of a :class:`~recordio.mindrecord.read.reader.FileReader` (shards in dataset order, then each
shard's ``ROW_ID``). The ``.db`` answers *which* rows; values are always read from the data files
(a MindSpore-written ``.db`` holds strings cut at their first NUL). ``count`` keeps its own
dependency-free fast path (``recordio.mindrecord.read.count``).
"""

from __future__ import annotations

import math

import numpy as np

from recordio.errors import IndexFileError
from recordio.mindrecord import index

__all__ = ["Categories", "check_rows", "matching_rows", "parse_conditions"]


def _each_database(reader):
    """``(first global row, sqlite_utils.Database)`` for each data file of ``reader``, opened read-only."""
    import sqlite_utils

    start = 0
    for path, count in zip(reader.files, reader.file_row_counts):
        conn = index.connect_ro(index.db_path(path))
        try:
            yield start, sqlite_utils.Database(conn)
        finally:
            conn.close()
        start += count


def parse_conditions(reader, conditions):
    """``[(field, text), ...]`` → ``(where clause, params)`` with each text parsed as its field's type."""
    from recordio.mindrecord.read.description import parse_value

    fields = reader.index_fields
    clauses, params = [], []
    for field, text in conditions:
        if field not in fields:
            raise ValueError(f"{field!r} is not an indexed field (indexed: {', '.join(fields) or 'none'})")
        params.append(parse_value(field, reader.schema[field]["type"], text))
        clauses.append(f"{index.column_name(field)} = ?")
    return " AND ".join(clauses) or "1", params


def matching_rows(reader, conditions) -> np.ndarray:
    """Global row numbers (ascending) whose indexed fields equal ``conditions`` ([(field, text)])."""
    where, params = parse_conditions(reader, conditions)
    found = []
    for start, db in _each_database(reader):
        ids = [r["ROW_ID"] for r in db["INDEXES"].rows_where(where, params, select="ROW_ID", order_by="ROW_ID")]
        found.append(np.asarray(ids, dtype=np.int64) + start)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def _index_text(value, kind):
    """The text SQLite gives an index value (``CAST(x AS TEXT)``), from the data file's value."""
    if kind in ("float32", "float64"):
        value = float(value)
        return "nan" if math.isnan(value) else f"{value:.15g}"
    return str(value) if kind == "string" else str(int(value))


def _agrees(value, text, kind):
    if kind == "string":                     # MindSpore's .db holds strings cut at their first NUL
        return value == text or value.split("\x00", 1)[0] == text
    if kind in ("float32", "float64"):
        try:                                 # "2.50" asks for 2.5; a non-number never agrees
            return text == _index_text(value, kind) or float(text) == float(_index_text(value, kind))
        except ValueError:
            return False
    return text == _index_text(value, kind)


def check_rows(reader, ids, rows, field, text):
    """Refuse rows whose ``field`` (from the data file) is not the index value ``text`` the ``.db`` gave for
    them: a ``.db`` that disagrees with its data file names other rows than the ones asked for."""
    kind = reader.schema[field]["type"]
    starts = np.cumsum([0] + reader.file_row_counts)
    for i, row in zip(np.asarray(ids).tolist(), rows):
        if not _agrees(row[field], text, kind):
            value = row[field].item() if isinstance(row[field], np.generic) else row[field]
            k = int(np.searchsorted(starts, i, side="right") - 1)
            raise IndexFileError(f"{index.db_path(reader.files[k])}: ROW_ID {i - int(starts[k])} is indexed with "
                                 f"{field} = {text!r} but its data file holds {value!r}: the .db disagrees "
                                 f"with its data file (recordio verify tells more)")
    return rows


def _name_sql(field):
    """SQL for a category's name: the index value as text (SQLite's CAST; NULL, a NaN float, as 'nan')."""
    return f"COALESCE(CAST({index.column_name(field)} AS TEXT), 'nan')"


class Categories:
    """An indexed field's values grouped as MindPage's categories: ``names`` (text, sorted), ``counts``,
    and each category's global rows in dataset order (``rows(i)``), from one scan of each ``.db``."""

    def __init__(self, reader, field):
        texts, rows = [], []
        sql = f"SELECT ROW_ID AS r, {_name_sql(field)} AS name FROM INDEXES"
        for start, db in _each_database(reader):
            found = db.execute(sql).fetchall()
            rows.extend(r + start for r, _ in found)
            texts.extend(name for _, name in found)
        names, codes = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True) if texts \
            else (np.zeros(0, str), np.zeros(0, np.int64))
        rows_np = np.asarray(rows, dtype=np.int64)
        order = np.lexsort((rows_np, codes))                 # by category, then by row
        self.names = names.tolist()
        self.counts = np.bincount(codes, minlength=len(self.names)).tolist()
        self._rows = rows_np[order]
        self._starts = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    def rows(self, category: int) -> np.ndarray:
        """Global rows (ascending) of category number ``category``."""
        return self._rows[self._starts[category]:self._starts[category + 1]]
