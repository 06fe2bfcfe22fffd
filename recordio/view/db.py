"""The dataset's ``.db`` files, opened as recordio's readers open them, and queries with a time limit.

:func:`connect` is the readers' own hardened read-only connection (``recordio.mindrecord.index.connect_ro``:
a regular file inside its folder, ``mode=ro&immutable=1``, ``trusted_schema=OFF``, ``query_only=ON``,
no attached database, values capped at the file's size, views, triggers and virtual tables refused
before any query); :func:`query` adds the view's time limit to each query (docs/view.md).
"""

from __future__ import annotations

import sqlite3
import time

from recordio.errors import IndexFileError
from recordio.mindrecord.index import column_name, connect_ro, db_path

__all__ = ["QUERY_SECONDS", "column", "connect", "db_path", "query"]

QUERY_SECONDS = 10.0          # a query still running after this is interrupted


def column(field):
    """The INDEXES column of an index field, quoted for SQL (FORMAT.md §6)."""
    name = column_name(field)
    return name if name.startswith('"') else f'"{name}"'


def connect(path):
    """A hardened read-only connection to the ``.db`` at ``path``."""
    try:
        conn = connect_ro(path)
    except sqlite3.Error as exc:
        raise IndexFileError(f"{path}: index file is not a MindRecord index ({exc})") from None
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'INDEXES'").fetchone():
        conn.close()
        raise IndexFileError(f"{path}: index file is not a MindRecord index (no INDEXES table)")
    return conn


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
