"""The ``.db`` index of a data file: SQLite tables INDEXES and SHARD_NAME, plus our checksums.

``INDEXES`` has one row per row of the shard with the in-page offsets of its raw
and blob entries (FORMAT.md §6); MindSpore reads it to locate rows. recordio adds
``RECORDIO_CHECKSUMS`` (one row per page: algorithm, page id, byte range, digest);
MindSpore ignores tables it does not know.
"""

import errno
import json
import os
import sqlite3
import warnings

from recordio.errors import FormatError, IndexFileError
from recordio.mindrecord import format as fmt

__all__ = ["INDEX_COLUMNS", "create_index", "db_path", "read_checksums", "read_locations",
           "read_shard_name", "write_checksums"]

INDEX_COLUMNS = ("ROW_ID", "PAGE_ID_RAW", "PAGE_OFFSET_RAW", "PAGE_OFFSET_RAW_END", "ROW_GROUP_ID",
                 "PAGE_ID_BLOB", "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END")
SQL_TYPES = {"int32": "INTEGER", "int64": "INTEGER", "float32": "REAL", "float64": "REAL", "string": "TEXT"}
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


def create_ddl(index_fields):
    """The exact CREATE TABLE statement MindSpore 2.10 stores for INDEXES."""
    head = ("CREATE TABLE INDEXES(  ROW_ID               INT  NOT NULL, PAGE_ID_RAW          INT  NOT NULL, "
            "PAGE_OFFSET_RAW      INT  NOT NULL, PAGE_OFFSET_RAW_END  INT  NOT NULL, ROW_GROUP_ID         INT  "
            "NOT NULL, PAGE_ID_BLOB         INT  NOT NULL, PAGE_OFFSET_BLOB     INT  NOT NULL, "
            "PAGE_OFFSET_BLOB_END INT  NOT NULL")
    extra = "".join(f",INC_{j} INT, {column_name(name)} {sql}" for j, (name, sql) in enumerate(index_fields))
    key = ",".join(["ROW_ID"] + [f"INC_{j}" for j in range(len(index_fields))])
    return f"{head}{extra}, PRIMARY KEY({key}))"


def create_index(path, shard_name, index_fields, rows, checksums=None, meta=None):
    """Write a new ``.db`` at ``path`` in one transaction.

    ``index_fields`` is a list of ``(field, schema_type)``; ``rows`` an iterable of tuples
    ``(8 location ints..., INC_0, value_0, INC_1, value_1, ...)`` in insertion order; ``checksums`` and
    ``meta`` as for :func:`write_checksums` / :func:`write_meta`. The file is a staging file
    that the caller fsyncs, so SQLite's own syncs are turned off.
    """
    builder = IndexBuilder(path, shard_name, index_fields)
    try:
        builder.add(rows)
    except BaseException:
        builder.abort()
        raise
    builder.finish(checksums, meta)


class IndexBuilder:
    """A ``.db`` built in one transaction, its INDEXES rows added as they become known
    (:func:`create_index` in steps: the same statements in the same order, so the same file).

    SQLite keeps at most ``cache_kib`` of pages in memory; the rest are in the file.
    """

    def __init__(self, path, shard_name, index_fields, cache_kib=2000):
        self._begin(path, index_fields, cache_kib, [("PRAGMA page_size=4096", ())], [
            (create_ddl([(f, SQL_TYPES[t]) for f, t in index_fields]), ()),
            ("CREATE TABLE SHARD_NAME(NAME TEXT NOT NULL)", ()),
            ("INSERT INTO SHARD_NAME (NAME) VALUES (?)", (shard_name,))])

    @classmethod
    def continuing(cls, path, index_fields, first_row, cache_kib=2000):
        """A builder over ``path``, a private copy of a shard's ``.db``, that keeps its INDEXES rows
        before ``first_row`` and adds the rest anew (an append: only the rows whose locations may move
        and the new rows are written)."""
        builder = cls.__new__(cls)
        builder._begin(path, index_fields, cache_kib, [], [("DELETE FROM INDEXES WHERE ROW_ID >= ?", (int(first_row),))],
                       foreign="cannot continue the index")
        return builder

    def _begin(self, path, index_fields, cache_kib, before, work, foreign=None):
        """Open ``path`` without syncs or journal, run ``before``, then begin the builder's one transaction
        and run ``work`` in it. A full disk or an I/O error is an ``OSError``; with ``foreign`` (a file
        not made here) any other SQLite error is an :class:`IndexFileError` saying so."""
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        setup = [("PRAGMA synchronous=OFF", ()), ("PRAGMA journal_mode=OFF", ()),
                 (f"PRAGMA cache_size=-{int(cache_kib)}", ()), ("BEGIN", ())]
        try:
            for sql, args in [*before, *setup, *work]:
                self.conn.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            self.abort()
            error = _as_os_error(exc, path)
            if error is exc and foreign is not None:
                raise IndexFileError(f"{path}: {foreign}: {exc}") from None
            if error is exc and not isinstance(exc, sqlite3.OperationalError):
                raise
            raise error from exc
        except BaseException:
            self.abort()
            raise
        self._insert = _insert_statement(index_fields)

    def add(self, rows):
        """Insert INDEXES rows (tuples as for :func:`create_index`), in order."""
        try:
            self.conn.executemany(self._insert, rows)
        except sqlite3.OperationalError as exc:
            raise _as_os_error(exc, self.path) from exc

    def finish(self, checksums=None, meta=None):
        """Add the checksum and meta tables, commit and close."""
        try:
            if checksums is not None:
                _insert_checksums(self.conn, checksums[0], checksums[1])
            if meta:
                _insert_meta(self.conn, meta)
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise _as_os_error(exc, self.path) from exc
        finally:
            self.conn.close()

    def abort(self):
        """Close without committing (the caller removes the file)."""
        self.conn.close()


def _insert_statement(index_fields):
    names = list(INDEX_COLUMNS)
    for j, (field, _) in enumerate(index_fields):
        names += [f"INC_{j}", column_name(field)]
    return f"INSERT INTO INDEXES ({','.join(names)}) VALUES ({','.join('?' * len(names))})"


def _as_os_error(exc, path):
    """SQLite's "disk is full" / "disk I/O error" as the ``OSError`` the other writes raise."""
    text = str(exc)
    if "full" in text:
        return OSError(errno.ENOSPC, f"{path}: writing the index failed: {text}")
    if "I/O" in text or "too large" in text:
        return OSError(errno.EIO, f"{path}: writing the index failed: {text}")
    return exc


def _insert_checksums(conn, algorithm, rows):
    conn.execute(f"DROP TABLE IF EXISTS {CHECKSUM_TABLE}")
    conn.execute(f"CREATE TABLE {CHECKSUM_TABLE}(ALGORITHM TEXT NOT NULL, PAGE_ID INT NOT NULL, "
                 f"NBYTES INT NOT NULL, ROW_START INT NOT NULL, ROW_END INT NOT NULL, "
                 f"DIGEST TEXT NOT NULL, PRIMARY KEY(PAGE_ID))")
    conn.executemany(f"INSERT INTO {CHECKSUM_TABLE} VALUES (?,?,?,?,?,?)", ((algorithm,) + tuple(c) for c in rows))


def _insert_meta(conn, items):
    conn.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE}(KEY TEXT PRIMARY KEY, VALUE TEXT NOT NULL)")
    conn.executemany(f"INSERT OR REPLACE INTO {META_TABLE} VALUES (?, ?)", sorted(items.items()))


def write_checksums(path, algorithm, checksums):
    """Add (or replace) the checksum table of an existing ``.db``.

    ``checksums``: iterable of ``(page_id, nbytes, row_start, row_end, digest)``: the digest
    covers ``nbytes`` bytes from the start of the slot (page ``-1`` is the header region)
    and the slot holds rows ``[row_start, row_end)`` of the shard.
    """
    _transaction(path, lambda conn: _insert_checksums(conn, algorithm, checksums))


def update_checksums(path, algorithm, checksums):
    """Replace some rows of an existing checksum table (e.g. the header's after a header rewrite)."""
    def work(conn):
        conn.executemany(f"INSERT OR REPLACE INTO {CHECKSUM_TABLE} VALUES (?,?,?,?,?,?)",
                         ((algorithm,) + tuple(c) for c in checksums))
    _transaction(path, work)


def write_meta(path, items):
    """Store recordio's facts about the shard (writer version, header digest) as key/value rows."""
    _transaction(path, lambda conn: _insert_meta(conn, items))


def _transaction(path, work):
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        work(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


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
