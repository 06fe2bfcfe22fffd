"""Creating and changing a ``.db`` (:mod:`~recordio.mindrecord.index` reads one): INDEXES and SHARD_NAME
exactly as MindSpore 2.10 writes them, in one transaction whose rows may be added as they become known
(:class:`IndexBuilder`), and recordio's own checksum and meta tables."""

import errno
import sqlite3

from recordio.errors import IndexFileError
from recordio.mindrecord.index import CHECKSUM_TABLE, INDEX_COLUMNS, META_TABLE, column_name

__all__ = ["IndexBuilder", "create_ddl", "create_index", "update_checksums", "write_checksums", "write_meta"]

SQL_TYPES = {"int32": "INTEGER", "int64": "INTEGER", "float32": "REAL", "float64": "REAL", "string": "TEXT"}


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
