"""The ``.db`` index of a data file: SQLite tables INDEXES and SHARD_NAME, plus our checksums.

``INDEXES`` has one row per row of the shard with the in-page offsets of its raw
and blob entries (FORMAT.md §6); MindSpore reads it to locate rows. recordio adds
``RECORDIO_CHECKSUMS`` (one row per page: algorithm, page id, byte range, digest);
MindSpore ignores tables it does not know. This module opens a ``.db`` as a file that may come from
anywhere and reads it; :mod:`~recordio.mindrecord.index_write` creates and changes one.
"""

import json
import os
import sqlite3
import warnings

from recordio.errors import FormatError, IndexFileError
from recordio.mindrecord import format as fmt

__all__ = ["INDEX_COLUMNS", "column_name", "connect_ro", "db_path", "read_checksums", "read_locations",
           "read_shard_name"]

INDEX_COLUMNS = ("ROW_ID", "PAGE_ID_RAW", "PAGE_OFFSET_RAW", "PAGE_OFFSET_RAW_END", "ROW_GROUP_ID",
                 "PAGE_ID_BLOB", "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END")
CHECKSUM_TABLE = "RECORDIO_CHECKSUMS"
META_TABLE = "RECORDIO_META"
KNOWN_TABLES = ("INDEXES", "SHARD_NAME", CHECKSUM_TABLE, META_TABLE)
ELEMENTS_KEY = "elements"      # meta key: {field: total elements} of the variable-shape array fields
MAX_LOCATION = 1 << 48          # in-page offsets and page ids of INDEXES: anything larger is damage
MAX_NAME = 4096                 # bytes of SHARD_NAME.NAME


def db_path(data_path):
    return data_path + ".db"


def column_name(field):
    """The INDEXES column of an index field (quoted when it starts with a digit, as SQL requires)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in field) + "_0"
    return f'"{name}"' if name[0].isdigit() else name


def connect_ro(path):
    """Open a ``.db`` read-only, as a file that may come from anywhere (see docs/threat-model.md).

    The file must be a regular file in its folder (a symlink leading out is refused); SQLite opens
    it read-only and immutable with ``trusted_schema=OFF`` and ``query_only=ON``, no extension can
    be loaded, values are capped at the file's size, and the schema is checked before any query:
    views, triggers and virtual tables are refused and never run. A missing file is an IndexFileError.
    """
    size = _check_file(path)
    try:
        conn = sqlite3.connect(f"file:{_quote(path)}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: cannot open index file: {exc}") from None
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(size, 1 << 16))
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        for pragma in ("trusted_schema=OFF", "query_only=ON", "cell_size_check=ON"):
            conn.execute(f"PRAGMA {pragma}")
        check_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def require_db(path):
    """Raise MindSpore's message (an IndexFileError) when the ``.db`` at ``path`` does not exist."""
    if not os.path.lexists(path):
        raise IndexFileError(f"The input: {path} is not exists. Please check whether {path} exists and do "
                             f"not rename the mindrecord file and meta file. Every data file needs its .db "
                             f"beside it (read without it with FileReader(..., use_index=False)).")


def _check_file(path):
    """The size of the ``.db`` at ``path``, a regular file of at least 8 bytes inside its folder."""
    try:
        fmt.check_inside(path)
    except FormatError as exc:
        raise IndexFileError(str(exc)) from None
    require_db(path)
    try:
        os.close(fmt.open_regular(path, missing=IndexFileError))
    except FormatError as exc:
        raise IndexFileError(str(exc)) from None
    size = os.path.getsize(path)
    if size < 8:
        raise IndexFileError(f"{_NOT_A_DB}{path}: index file of {size} bytes is not an SQLite database")
    return size


def check_schema(conn, path):
    """Refuse a ``.db`` whose schema holds views, triggers or virtual tables, or whose known tables are
    not plain tables of stored columns (a foreign ``.db`` must never make SQLite run its code)."""
    objects = _query(conn, path, "SELECT type, name, tbl_name, sql FROM sqlite_master")
    for kind, name, _, sql in objects:
        if kind in ("view", "trigger") or (kind == "table" and str(sql or "").lstrip()[:20].upper()
                                            .split()[:2] == ["CREATE", "VIRTUAL"]):
            raise IndexFileError(f"{path}: the index file holds {kind} {str(name)[:80]!r}; a MindRecord index "
                                 f"has plain tables only (views, triggers and virtual tables are refused)")
    tables = {name for kind, name, _, _ in objects if kind == "table"}
    for table in set(KNOWN_TABLES) & tables:
        hidden = _query(conn, path, f"SELECT name FROM pragma_table_xinfo('{table}') WHERE hidden != 0")
        if hidden:
            raise IndexFileError(f"{path}: table {table} has generated or hidden column(s) "
                                 f"{[h[0] for h in hidden][:4]}; a MindRecord index stores plain columns")
    for table in ("INDEXES", "SHARD_NAME"):
        if table not in tables:
            raise IndexFileError(f"{path}: index file is not a MindRecord index (no {table} table)")


_NOT_A_DB = ("Failed to execute the sql [ SELECT NAME from SHARD_NAME; ] while verifying meta file, file is "
             "not a database. Please check the meta file: ")


def _quote(path):
    return os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _query(conn, path, sql):
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error as exc:
        prefix = _NOT_A_DB if "not a database" in str(exc) else ""
        raise IndexFileError(f"{prefix}{path}: index file is not a MindRecord index ({exc}; query: {sql})") from None


def query_args(conn, path, sql, args):
    """The rows of ``sql`` with ``args`` on the index ``path``; :class:`IndexFileError` naming it if it fails."""
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: index file is not a MindRecord index ({exc}; query: {sql})") from None


def integer_columns(conn, select, names, args):
    """The rows of ``select`` (which yields the columns ``names``) as an ``(n, len(names))`` int64 array,
    fetched as one text per column (``group_concat``) that numpy parses: no Python object per row,
    which is most of what a row costs through ``fetchall``. None when that cannot be trusted to be the
    same rows (no rows, a value that is not an integer, a query error): the caller then fetches the
    rows one by one, which says what is wrong."""
    import numpy as np                          # here: counting rows imports no numpy

    texts = ", ".join(f"count({name}), group_concat({name}, ' ')" for name in names)
    try:
        got = conn.execute(f"SELECT count(*), {texts} FROM ({select})", args).fetchone()
    except sqlite3.Error:
        return None
    count, columns = got[0], []
    for values, text in zip(got[1::2], got[2::2]):
        column = _integers(text, count) if values == count else None       # no NULL left out
        if column is None:
            return None
        columns.append(column)
    return np.stack(columns, axis=1)


def _integers(text, count):
    """``count`` integers written by SQLite with single spaces between them, or None: only digits,
    minus signs and exactly ``count - 1`` spaces (a REAL has a '.' or 'e', a TEXT holding spaces
    adds some), every one of them parsed."""
    if not count or type(text) is not str or text.count(" ") != count - 1 or \
            not text.isascii() or text.encode().translate(None, b"0123456789- "):
        return None
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # numpy's word for 'stopped early'
        values = np.fromstring(text, dtype=np.int64, sep=" ")
    return values if len(values) == count else None


def read_shard_name(conn, path):
    """The data file name the ``.db`` belongs to: one plain file name (else IndexFileError)."""
    rows = _query(conn, path, "SELECT typeof(NAME), length(CAST(NAME AS BLOB)) FROM SHARD_NAME LIMIT 2")
    if len(rows) != 1:
        raise IndexFileError(f"{path}: SHARD_NAME table holds {'no' if not rows else 'several'} rows, "
                             f"expected one")
    kind, length = rows[0]
    if kind != "text" or length is None or length > MAX_NAME:
        raise IndexFileError(f"{path}: SHARD_NAME holds a {kind} of {length} bytes, expected a file name")
    name = _query(conn, path, "SELECT NAME FROM SHARD_NAME LIMIT 1")[0][0]
    try:
        return fmt.check_file_name(name, f"{path}: SHARD_NAME")
    except FormatError as exc:
        raise IndexFileError(str(exc)) from None


def read_locations(conn, path):
    """(row_group_id, blob_start, blob_end, raw_page, raw_start, raw_end) arrays ordered by ROW_ID."""
    import numpy as np  # imported here: the count path (count_rows) must not load numpy

    rows = _query(conn, path, "SELECT ROW_ID, ROW_GROUP_ID, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END, "
                              "PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END FROM INDEXES ORDER BY ROW_ID")
    try:
        table = np.array(rows, dtype=np.int64).reshape(len(rows), 7)
    except (ValueError, TypeError, OverflowError):
        raise IndexFileError(f"{path}: INDEXES holds non-integer locations") from None
    if len(rows) and (table.min() < 0 or table.max() >= MAX_LOCATION):
        raise IndexFileError(f"{path}: INDEXES holds a location outside [0, 2^48)")
    if len(rows) and not np.array_equal(table[:, 0], np.arange(len(rows))):
        raise IndexFileError(f"{path}: INDEXES ROW_ID values are not 0..{len(rows) - 1}")
    return table[:, 1:]


def row_count(conn, path):
    """Rows of INDEXES (checked against the header before any row is fetched)."""
    return _query(conn, path, "SELECT COUNT(*) FROM INDEXES")[0][0]


def row_id_span(conn, path):
    """``MAX(ROW_ID) + 1`` (0 when empty): the row count of a well-formed index, from its primary key
    without a table scan. Readers check every ROW_ID; counting needs only this."""
    value = _query(conn, path, "SELECT MAX(ROW_ID) FROM INDEXES")[0][0]
    if value is not None and (type(value) is not int or not 0 <= value < MAX_LOCATION):
        raise IndexFileError(f"{path}: INDEXES holds ROW_ID {str(value)[:40]!r}, expected a row number")
    return 0 if value is None else value + 1


def min_row_id(conn, path):
    """``MIN(ROW_ID)`` (None when empty), from the primary key without a table scan."""
    value = _query(conn, path, "SELECT MIN(ROW_ID) FROM INDEXES")[0][0]
    if value is not None and type(value) is not int:
        raise IndexFileError(f"{path}: INDEXES holds ROW_ID {str(value)[:40]!r}, expected a row number")
    return value


def read_checksums(conn, path):
    """``{page_id: (algorithm, nbytes, row_start, row_end, digest)}``, or None without the table."""
    exists = _query(conn, path, f"SELECT name FROM sqlite_master WHERE type='table' AND name='{CHECKSUM_TABLE}'")
    if not exists:
        return None
    rows = _query(conn, path, f"SELECT PAGE_ID, ALGORITHM, NBYTES, ROW_START, ROW_END, DIGEST FROM {CHECKSUM_TABLE}")
    for row in rows:
        if not (all(type(row[i]) is int and -1 <= row[i] < MAX_LOCATION for i in (0, 2, 3, 4))
                and type(row[1]) is str and type(row[5]) is str):
            raise IndexFileError(f"{path}: {CHECKSUM_TABLE} row {str(row)[:120]} has values of the wrong "
                                 f"type (expected PAGE_ID, NBYTES, ROW_START, ROW_END integers and ALGORITHM, "
                                 f"DIGEST text)")
    return {r[0]: tuple(r[1:]) for r in rows}


def read_meta(conn, path):
    exists = _query(conn, path, f"SELECT name FROM sqlite_master WHERE type='table' AND name='{META_TABLE}'")
    if not exists:
        return {}
    rows = _query(conn, path, f"SELECT KEY, VALUE FROM {META_TABLE}")
    return {k: v for k, v in rows if type(k) is str and type(v) is str}


def parse_elements(meta, path, fields):
    """The element totals ``{field: n}`` a shard's meta table records for ``fields`` (the schema's
    variable-shape array fields), or None when it records none (a ``.db`` not written by recordio, or
    appended to by a writer that did not know the old totals)."""
    text = meta.get(ELEMENTS_KEY)
    if text is None or not fields:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        found = text
    if not (isinstance(found, dict) and sorted(found) == sorted(fields)
            and all(type(v) is int and v >= 0 for v in found.values())):
        raise IndexFileError(f"{path}: {META_TABLE} '{ELEMENTS_KEY}' should map the fields {sorted(fields)} "
                             f"to element counts, found {str(text)[:200]!r}")
    return found


def recorded_elements(data_path, fields):
    """Element totals of ``fields`` that the ``.db`` of ``data_path`` records, as an int64 array in
    ``fields`` order, or None (no ``.db``, or it records none)."""
    db = db_path(data_path)
    if not fields or not os.path.exists(db):
        return None
    conn = connect_ro(db)
    try:
        found = parse_elements(read_meta(conn, db), db, fields)
    finally:
        conn.close()
    import numpy as np                 # counting rows never needs numpy; writers have it loaded

    return None if found is None else np.array([found[f] for f in fields], dtype=np.int64)
