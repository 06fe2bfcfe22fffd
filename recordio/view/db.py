"""The dataset's ``.db`` files opened read-only with the hardening recordio's readers use.

Each ``.db`` must be a regular file (not a symlink) in its data file's folder. SQLite opens it
through a ``mode=ro&immutable=1`` URI with ``trusted_schema=OFF``, ``query_only=ON`` and
``cell_size_check=ON``, no attached database (``SQLITE_LIMIT_ATTACHED`` = 0), values capped at the
file's size; a schema holding views, triggers or virtual tables is refused before any query; every
query runs under a time limit. No public helper of ``recordio.mindrecord`` hands out such a
connection, so these settings are restated here (docs/view.md).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
import urllib.parse

from recordio.errors import IndexFileError

QUERY_SECONDS = 10.0          # a query still running after this is interrupted


def db_path(data_file):
    """The index file of ``data_file`` (FORMAT.md §6: the data file's name + ``.db``)."""
    return os.fspath(data_file) + ".db"


def column(field):
    """The INDEXES column of an index field (FORMAT.md §6: ``<field>_0``, quoted)."""
    return '"' + "".join(c if c.isalnum() or c == "_" else "_" for c in field) + '_0"'


def _checked_size(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise IndexFileError(f"{path}: index file is missing (every data file needs its .db beside it)") from None
    if not stat.S_ISREG(st.st_mode):
        raise IndexFileError(f"{path}: index file is not a regular file (a symlink or a special file is refused)")
    if st.st_size < 8:
        raise IndexFileError(f"{path}: index file of {st.st_size} bytes is not an SQLite database")
    return st.st_size


def connect(path):
    """A hardened read-only connection to the ``.db`` at ``path`` (see the module docstring)."""
    size = _checked_size(path)
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: cannot open index file: {exc}") from None
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(size, 1 << 16))
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        for pragma in ("trusted_schema=OFF", "query_only=ON", "cell_size_check=ON"):
            conn.execute(f"PRAGMA {pragma}")
        _check_schema(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise IndexFileError(f"{path}: index file is not a MindRecord index ({exc})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _check_schema(conn, path):
    objects = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    for kind, name, sql in objects:
        virtual = kind == "table" and str(sql or "").lstrip().upper().split()[:2] == ["CREATE", "VIRTUAL"]
        if kind in ("view", "trigger") or virtual:
            raise IndexFileError(f"{path}: the index file holds {kind} {str(name)[:80]!r}; a MindRecord index "
                                 f"has plain tables only")
    if "INDEXES" not in {name for kind, name, _ in objects if kind == "table"}:
        raise IndexFileError(f"{path}: index file is not a MindRecord index (no INDEXES table)")


def query(conn, path, sql, params=(), seconds=QUERY_SECONDS):
    """``conn.execute(sql, params).fetchall()`` interrupted after ``seconds``; errors name the file."""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        why = f"interrupted after {seconds:g} s" if "interrupt" in str(exc) else str(exc)
        raise IndexFileError(f"{path}: index query failed ({why}; query: {sql})") from None
    finally:
        conn.set_progress_handler(None, 0)
