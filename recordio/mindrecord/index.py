"""The ``.db`` index of a data file: SQLite tables INDEXES and SHARD_NAME, plus our checksums.

``INDEXES`` has one row per row of the shard with the in-page offsets of its raw
and blob entries (FORMAT.md §6); MindSpore reads it to locate rows. recordio adds
``RECORDIO_CHECKSUMS`` (one row per page: algorithm, page id, byte range, digest);
MindSpore ignores tables it does not know.
"""

import os
import sqlite3

from recordio.errors import IndexFileError

__all__ = ["INDEX_COLUMNS", "create_index", "db_path", "read_checksums", "read_locations",
           "read_shard_name", "write_checksums"]

INDEX_COLUMNS = ("ROW_ID", "PAGE_ID_RAW", "PAGE_OFFSET_RAW", "PAGE_OFFSET_RAW_END", "ROW_GROUP_ID",
                 "PAGE_ID_BLOB", "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END")
SQL_TYPES = {"int32": "INTEGER", "int64": "INTEGER", "float32": "REAL", "float64": "REAL", "string": "TEXT"}
CHECKSUM_TABLE = "RECORDIO_CHECKSUMS"
META_TABLE = "RECORDIO_META"


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
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA page_size=4096")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("BEGIN")
        conn.execute(create_ddl([(f, SQL_TYPES[t]) for f, t in index_fields]))
        conn.execute("CREATE TABLE SHARD_NAME(NAME TEXT NOT NULL)")
        conn.execute("INSERT INTO SHARD_NAME (NAME) VALUES (?)", (shard_name,))
        names = list(INDEX_COLUMNS)
        for j, (field, _) in enumerate(index_fields):
            names += [f"INC_{j}", column_name(field)]
        marks = ",".join("?" * len(names))
        conn.executemany(f"INSERT INTO INDEXES ({','.join(names)}) VALUES ({marks})", rows)
        if checksums is not None:
            _insert_checksums(conn, checksums[0], checksums[1])
        if meta:
            _insert_meta(conn, meta)
        conn.execute("COMMIT")
    finally:
        conn.close()


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
    """Open a ``.db`` read-only (works on read-only mounts); a missing file is an IndexFileError."""
    if not os.path.isfile(path):
        raise IndexFileError(f"{path}: index file is missing; every data file needs its .db beside it "
                             f"(read without it with FileReader(..., use_index=False))")
    if os.path.getsize(path) < 8:
        raise IndexFileError(f"{path}: index file of {os.path.getsize(path)} bytes is not an SQLite database")
    try:
        return sqlite3.connect(f"file:{_quote(path)}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: cannot open index file: {exc}") from None


def _quote(path):
    return os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _query(conn, path, sql):
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: index file is not a MindRecord index ({exc}; query: {sql})") from None


def read_shard_name(conn, path):
    rows = _query(conn, path, "SELECT NAME FROM SHARD_NAME")
    if not rows:
        raise IndexFileError(f"{path}: SHARD_NAME table is empty")
    return rows[0][0]


def read_locations(conn, path):
    """(row_group_id, blob_start, blob_end, raw_page, raw_start, raw_end) arrays ordered by ROW_ID."""
    import numpy as np  # imported here: the count path (count_rows) must not load numpy

    rows = _query(conn, path, "SELECT ROW_ID, ROW_GROUP_ID, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END, "
                              "PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END FROM INDEXES ORDER BY ROW_ID")
    try:
        table = np.array(rows, dtype=np.int64).reshape(len(rows), 7)
    except (ValueError, TypeError, OverflowError):
        raise IndexFileError(f"{path}: INDEXES holds non-integer locations") from None
    if len(rows) and not np.array_equal(table[:, 0], np.arange(len(rows))):
        raise IndexFileError(f"{path}: INDEXES ROW_ID values are not 0..{len(rows) - 1}")
    return table[:, 1:]


def row_id_span(conn, path):
    """``MAX(ROW_ID) + 1`` (0 when empty): the row count of a well-formed index, from its primary key
    without a table scan. Readers check every ROW_ID; counting needs only this."""
    value = _query(conn, path, "SELECT MAX(ROW_ID) FROM INDEXES")[0][0]
    return 0 if value is None else int(value) + 1


def read_checksums(conn, path):
    """``{page_id: (algorithm, nbytes, row_start, row_end, digest)}``, or None without the table."""
    exists = _query(conn, path, f"SELECT name FROM sqlite_master WHERE type='table' AND name='{CHECKSUM_TABLE}'")
    if not exists:
        return None
    rows = _query(conn, path, f"SELECT PAGE_ID, ALGORITHM, NBYTES, ROW_START, ROW_END, DIGEST FROM {CHECKSUM_TABLE}")
    return {r[0]: tuple(r[1:]) for r in rows}


def read_meta(conn, path):
    exists = _query(conn, path, f"SELECT name FROM sqlite_master WHERE type='table' AND name='{META_TABLE}'")
    if not exists:
        return {}
    return dict(_query(conn, path, f"SELECT KEY, VALUE FROM {META_TABLE}"))
