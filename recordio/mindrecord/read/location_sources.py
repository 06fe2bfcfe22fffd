"""Where a shard's blocks of row locations come from: its ``.db`` (:class:`DbBlocks`: one ``ROW_ID``
range query a block, checked as it loads; :func:`open_db_facts` checks at open what needs no row) or
locations computed whole at open (:class:`TableBlocks`)."""

from __future__ import annotations

import collections
import os
import threading

import numpy as np

from recordio.errors import DatasetChangedError, IndexFileError
from recordio.mindrecord import index
from recordio.mindrecord.read.location_checks import absolute, check_inside, check_tiling

__all__ = ["KEEP_OPEN", "DbBlocks", "TableBlocks", "open_db_facts"]

KEEP_OPEN = 32                   # datasets of up to this many shards keep their .db open from open time
TABLE_CACHE = 256                # checksum tables a process keeps (one per .db; most recently used)
_COLUMNS = ("ROW_ID", "ROW_GROUP_ID", "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END", "PAGE_ID_RAW", "PAGE_OFFSET_RAW",
            "PAGE_OFFSET_RAW_END")
# (.db path, identity) -> its checksum table, least recently used first
_TABLES: collections.OrderedDict = collections.OrderedDict()
_TABLES_LOCK = threading.Lock()
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM INDEXES WHERE ROW_ID >= ? AND ROW_ID < ? ORDER BY ROW_ID"


class DbBlocks:
    """Blocks of one shard's locations read from its ``.db`` (one connection per process, opened when
    first needed and refused with :class:`DatasetChangedError` if the ``.db`` is no longer the file
    the dataset was opened with)."""

    def __init__(self, shard, identity, conn=None):
        self.shard, self.identity = shard, identity
        self.db = index.db_path(shard.path)
        self._conn, self._pid = conn, os.getpid() if conn is not None else None
        self.keep = conn is not None       # opened with the dataset: kept until the reader closes
        self.rows_read = 0           # INDEXES rows fetched (what the scale tests count)
        self.queries = 0             # range queries made (what the first-epoch tests count)
        self.text_queries = 0        # of which answered as one text per column (no Python object per row)
        self._lock = threading.Lock()

    def _connection(self):
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        before = _identity(self.db)
        conn = index.connect_ro(self.db)
        if before != self.identity or _identity(self.db) != self.identity:
            conn.close()
            raise DatasetChangedError(f"{self.db}: the index was replaced after this reader opened the dataset; "
                                      f"open a new reader to read the new version")
        self._conn, self._pid = conn, os.getpid()
        return conn

    def load(self, a, b):
        """Checked absolute locations of local rows ``[a, b)`` from the ``.db``."""
        lo = max(a - 1, 0)                       # the previous row: where this block's first entry starts
        with self._lock:
            table = self._fetch(lo, b)
        self.rows_read += len(table)
        self.queries += 1
        if len(table) != b - lo or not np.array_equal(table[:, 0], np.arange(lo, b)):
            raise IndexFileError(f"{self.db}: INDEXES ROW_ID values are not 0..{self.shard.count - 1}")
        return self._checked(a, b, table[:, 1:])

    def _fetch(self, lo, b):
        """INDEXES rows of ``ROW_ID`` ``[lo, b)`` in ``ROW_ID`` order, as an ``(n, 7)`` int64 array: one
        text per column when every value is an integer, else row by row (what says which is not)."""
        conn = self._connection()
        table = index.integer_columns(conn, _SELECT, _COLUMNS, (lo, b))
        if table is not None:
            self.text_queries += 1
            ids = table[:, 0]
            return table if (ids[1:] > ids[:-1]).all() else table[np.argsort(ids, kind="stable")]
        rows = index.query_args(conn, self.db, _SELECT, (lo, b))
        try:
            return np.array(rows, dtype=np.int64).reshape(len(rows), 7)
        except (ValueError, TypeError, OverflowError):
            raise IndexFileError(f"{self.db}: INDEXES holds non-integer locations") from None

    def _checked(self, a, b, table):
        """Absolute locations of rows ``[a, b)`` from their table rows (``table`` starts at row ``a - 1``
        when ``a > 0``), after every check of the page table's tiling and the file's bounds."""
        if len(table) and (table.min() < 0 or table.max() >= index.MAX_LOCATION):
            raise IndexFileError(f"{self.db}: INDEXES holds a location outside [0, 2^48)")
        lo = max(a - 1, 0)
        prev = table[0] if lo < a else np.zeros(6, np.int64)
        table = table[a - lo:]
        check_tiling(self.shard, table, np.arange(a, b, dtype=np.int64), prev, self.db)
        locs = absolute(self.shard, table)
        check_inside(self.shard, locs, a)
        return locs

    def read_checksums(self):
        """The ``.db``'s checksum table (``index.read_checksums``), or None without one: read once a process
        per ``.db`` file (its path and identity: device, inode, size, modification time), so that a new
        reader of the same dataset (each pass of a pipeline) does not read it again. The table is shared:
        its users never change it."""
        key = (self.db, self.identity)
        with _TABLES_LOCK:
            if key in _TABLES:
                _TABLES.move_to_end(key)
                return _TABLES[key]
        table = self._read_checksums()
        with _TABLES_LOCK:
            _TABLES[key] = table
            while len(_TABLES) > TABLE_CACHE:
                _TABLES.popitem(last=False)
        return table

    def _read_checksums(self):
        with self._lock:
            kept = self._conn is not None and self._pid == os.getpid()
            try:
                return index.read_checksums(self._connection(), self.db)
            finally:
                if not kept and self._conn is not None:
                    self._conn.close()          # many shards: no connection stays open for this
                    self._conn = None

    def release(self):
        """Close the connection unless it was opened with the dataset (an LRU of connections evicts)."""
        if not self.keep:
            self.close()

    def close(self):
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self):
        return {"shard": self.shard, "identity": self.identity, "db": self.db, "_conn": None, "_pid": None,
                "keep": False, "rows_read": 0, "queries": 0, "text_queries": 0}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


class TableBlocks:
    """Blocks sliced from locations computed whole at open (``use_index=False``: the page walk)."""

    def __init__(self, shard):
        self.shard = shard
        self.rows_read = 0
        self.queries = 0

    def read_checksums(self):
        return self.shard.checksums

    def release(self):
        pass

    def load(self, a, b):
        s = self.shard
        return np.concatenate([s.raw[a:b], s.blob[a:b]], axis=1).astype(np.int64)

    def close(self):
        pass


def _identity(path):
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def open_db_facts(shard, keep=True):
    """Open a shard's ``.db`` and check what needs no row: its shard name, and that its ``ROW_ID`` values
    span exactly the header's row count. Sets ``db_meta`` (checksums, one row per page, are read by
    :meth:`DbBlocks.read_checksums` when a reader verifies); returns a
    :class:`DbBlocks` (holding the connection for this process when ``keep``)."""
    db = index.db_path(shard.path)
    before = _identity(db) if os.path.lexists(db) else None
    conn = index.connect_ro(db)
    try:
        name = index.read_shard_name(conn, db)
        real = os.path.basename(os.path.realpath(shard.path))
        if name != real:
            raise IndexFileError(f"{db}: index belongs to data file {name!r}, not {real!r} "
                                 f"(files must not be renamed)")
        found = index.row_id_span(conn, db)
        if found != shard.count:
            raise IndexFileError(f"{db}: index lists {found} rows but the data file's header has {shard.count}")
        if found and index.min_row_id(conn, db) != 0:
            raise IndexFileError(f"{db}: INDEXES ROW_ID values are not 0..{shard.count - 1}")
        shard.db_meta = index.read_meta(conn, db)
        identity = _identity(db)
        if before != identity:
            raise DatasetChangedError(f"{db}: the index changed while it was being opened")
    except BaseException:
        conn.close()
        raise
    if not keep:
        conn.close()
        conn = None
    return DbBlocks(shard, identity, conn)
