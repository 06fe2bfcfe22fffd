"""Row locations, loaded lazily in blocks into a bounded cache shared by forked processes.

Opening a dataset reads headers and, per ``.db``, a few facts (its shard name, ``MIN``/``MAX`` of
``ROW_ID``, the checksum and meta tables): nothing per row. A row's location (the absolute byte
ranges of its raw record and blob) is read when first needed, with the rest of its **block**
(:data:`BLOCK_ROWS` consecutive rows of one shard, one ``ROW_ID`` range query on the primary key)
and, when the cache holds every block, the blocks after it that are not loaded yet (a run of up to
:data:`RUN_BLOCKS`, still one query: a first epoch pays a query per run, not per block),
and every check opening used to do on the whole ``.db`` is done on that block, with the same
errors: ``ROW_ID`` continuity, locations inside the page table's tiling (FORMAT.md §4.3), inside
their page's used bytes and inside the file.

Blocks live in a :class:`SlotPool`: a direct-mapped cache of fixed-size slots in one anonymous
shared memory map, created at open. DataLoader workers forked from the opening process share it
(a block loaded by one worker is there for all; no copy per worker; the map is numpy arrays, never
per-row Python objects). Slots are written under a lock and read without one, seqlock-style: a
reader copies a row and keeps it only if the slot's sequence number did not move meanwhile.
A reader pickled into a ``spawn`` process gets a private pool of its own.

The cache holds at most :data:`CACHE_BYTES` (``RECORDIO_LOCATION_CACHE_MB``) of locations, 32
bytes per row: a dataset that fits is read with one block load per block; a larger one evicts.
"""

from __future__ import annotations

import collections
import mmap
import os
import threading
import weakref

import numpy as np

from recordio.errors import DatasetChangedError, FormatError, IndexFileError
from recordio.mindrecord import format as fmt
from recordio.mindrecord import index

__all__ = ["BLOCK_ROWS", "CACHE_BYTES", "RUN_BLOCKS", "DbBlocks", "Locations", "SlotPool", "TableBlocks"]

BLOCK_ROWS = 256                 # rows per block: a miss costs one short range query (~0.5 ms)
RUN_BLOCKS = 64                  # blocks one query loads when the cache holds every block (16,384 rows)
KEEP_OPEN = 32                   # datasets of up to this many shards keep their .db open from open time
MAX_OPEN = 4                     # .db connections open at once per dataset beyond KEEP_OPEN ones (reopened on demand)
CACHE_BYTES = int(float(os.environ.get("RECORDIO_LOCATION_CACHE_MB", "1024")) * (1 << 20))
ROW_BYTES = 32                   # raw start, raw end, blob start, blob end: int64 each
_COLUMNS = ("ROW_ID", "ROW_GROUP_ID", "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END", "PAGE_ID_RAW", "PAGE_OFFSET_RAW",
            "PAGE_OFFSET_RAW_END")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM INDEXES WHERE ROW_ID >= ? AND ROW_ID < ? ORDER BY ROW_ID"


# --- the page table of a shard, as arrays -----------------------------------------------------------

class PageTable:
    """What the header's page table says about the rows of one shard, as numpy arrays (O(pages))."""

    def __init__(self, shard):
        pages = shard.pages
        self.header_size, self.page_size = shard.header["header_size"], shard.header["page_size"]
        blobs = sorted((p for p in pages if p.kind == fmt.BLOB), key=lambda p: p.start_row)
        raw_of = {g: (p.page_id, off) for p in pages if p.kind == fmt.RAW for g, off in p.groups}
        self.starts = np.array([p.start_row for p in blobs], dtype=np.int64)
        self.group = np.array([p.type_id for p in blobs], dtype=np.int64)
        self.raw_page = np.array([raw_of.get(p.type_id, (-1, 0))[0] for p in blobs] or [-1], dtype=np.int64)
        self.raw_off = np.array([raw_of.get(p.type_id, (-1, 0))[1] for p in blobs] or [0], dtype=np.int64)
        by_group = sorted((p.type_id, p.page_id) for p in pages if p.kind == fmt.BLOB)
        self.group_ids = np.array([g for g, _ in by_group], dtype=np.int64)
        self.group_pages = np.array([q for _, q in by_group], dtype=np.int64)
        self.sizes = np.array([p.size for p in pages] or [0], dtype=np.int64)
        self.is_raw = np.array([p.kind == fmt.RAW for p in pages] or [False])
        self.npages = len(pages)


# --- loading and checking one block ------------------------------------------------------------------

def check_tiling(shard, table, rows, prev, db):
    """Bind INDEXES rows ``rows`` (their ``table`` rows: group, blob start/end, raw page, raw start/end)
    to the entries the page table gives them (FORMAT.md §4.3); ``prev`` is the table row of
    ``rows[0] - 1`` (zeros for row 0).

    Row ``r`` is in the row group of the BLOB page whose row range holds it, the RAW page listing that
    group holds its record, and each group's entries follow one another from the group's offset (0 in
    its BLOB page). With the length prefixes (checked by ``FileReader(verify=True)`` as rows are read)
    this makes the locations exactly those of the page-table walk, so a ``.db`` cannot point a row at
    another's bytes."""
    if not len(table):
        return
    pt = shard.page_table
    nb = len(pt.starts)
    owner = np.clip(np.searchsorted(pt.starts, rows, side="right") - 1, 0, max(nb - 1, 0))
    group = pt.group[owner] if nb else rows * 0 - 1
    first = pt.starts[owner] == rows if nb else rows < 0
    raw_page, raw_off = pt.raw_page[owner], pt.raw_off[owner]
    prev_blob_end = np.concatenate([[prev[2]], table[:-1, 2]])
    prev_raw_end = np.concatenate([[prev[5]], table[:-1, 5]])
    ok = ((table[:, 0] == group) & (table[:, 3] == raw_page)
          & (table[:, 1] == np.where(first, 0, prev_blob_end))
          & (table[:, 4] == np.where(first, raw_off, prev_raw_end)))
    if not ok.all():
        at = int(np.argmin(ok))
        row = int(rows[at])
        raise IndexFileError(f"{db}: INDEXES row {row} gives locations {table[at].tolist()} (group, blob "
                             f"start/end, raw page, raw start/end), which are not where the page table "
                             f"places row {row}: the index is foreign or damaged")


def absolute(shard, table):
    """``(n, 4)`` absolute [raw start, raw end, blob start, blob end) of ``table`` rows (in-page
    offsets as INDEXES stores them: group, blob start/end, raw page, raw start/end)."""
    pt = shard.page_table
    hs, ps = pt.header_size, pt.page_size
    groups = table[:, 0]
    at = np.clip(np.searchsorted(pt.group_ids, groups), 0, max(len(pt.group_ids) - 1, 0))
    found = pt.group_ids[at] == groups if len(pt.group_ids) else groups < -1
    if not found.all():
        bad = int(groups[int(np.argmin(found))])
        raise FormatError(f"{shard.path}: a row refers to row group {bad}, which has no BLOB page")
    blob_base = hs + pt.group_pages[at] * ps + fmt.ENTRY_PREFIX
    raw_base = hs + table[:, 3] * ps + fmt.ENTRY_PREFIX
    out = np.empty((len(table), 4), dtype=np.int64)
    out[:, 0] = raw_base + table[:, 4]
    out[:, 1] = raw_base - fmt.ENTRY_PREFIX + table[:, 5]
    out[:, 2] = blob_base + table[:, 1]
    out[:, 3] = blob_base - fmt.ENTRY_PREFIX + table[:, 2]
    return out


def check_inside(shard, locs, first_row):
    """Every range inside its page's used bytes and the file (rows numbered from ``first_row``)."""
    pt = shard.page_table
    hs, ps = pt.header_size, pt.page_size
    for name, ranges, want_raw in (("raw record", locs[:, 0:2], True), ("blob", locs[:, 2:4], False)):
        if not len(ranges):
            continue
        page = (ranges[:, 0] - fmt.ENTRY_PREFIX - hs) // ps
        inside = (page >= 0) & (page < pt.npages)
        safe_page = np.where(inside, page, 0)
        page_end = hs + safe_page * ps + pt.sizes[safe_page]
        ok = inside & (pt.is_raw[safe_page] == want_raw) & (ranges[:, 0] <= ranges[:, 1]) & \
            (ranges[:, 1] <= page_end) & (ranges[:, 1] <= shard.size)
        if not ok.all():
            at = int(np.argmin(ok))
            raise FormatError(f"{shard.path}: row {first_row + at}: its {name} at bytes {ranges[at].tolist()} "
                              f"lies outside its page's used bytes or the file (size {shard.size}); "
                              f"the file is truncated or its index is foreign")


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
        """The ``.db``'s checksum table (``index.read_checksums``), or None without one."""
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


# --- the shared cache -------------------------------------------------------------------------------

class SlotPool:
    """A direct-mapped cache of blocks in one anonymous shared map: ``slots`` slots of ``block``
    rows. Block ``b`` lives in slot ``b % slots``; ``keys[slot]`` is the block it holds (-1: none)
    and ``seqs[slot]`` is odd while a writer changes it."""

    def __init__(self, slots, block):
        self.slots, self.block = slots, block
        head = 16 * slots
        self._map = mmap.mmap(-1, max(head + slots * block * ROW_BYTES, 1))    # shared with forked children
        self.keys = np.frombuffer(self._map, dtype=np.int64, count=slots, offset=0)
        self.seqs = np.frombuffer(self._map, dtype=np.int64, count=slots, offset=8 * slots)
        self.data = np.frombuffer(self._map, dtype=np.int64, count=slots * block * 4,
                                  offset=head).reshape(slots, block, 4)
        self.keys[:] = -1
        self._lock = _fork_lock()
        self.shared = True

    def get_row(self, b, i):
        """Row ``i`` of block ``b`` as a list of 4 ints, or None when the slot holds another block."""
        slot = b % self.slots
        seq = int(self.seqs[slot])
        if seq & 1 or self.keys[slot] != b:
            return None
        row = self.data[slot, i].tolist()
        return row if int(self.seqs[slot]) == seq else None

    def get_block(self, b, n):
        """A copy of the first ``n`` rows of block ``b``, or None."""
        slot = b % self.slots
        seq = int(self.seqs[slot])
        if seq & 1 or self.keys[slot] != b:
            return None
        out = self.data[slot, :n].copy()
        return out if int(self.seqs[slot]) == seq else None

    def put(self, b, locs):
        slot = b % self.slots
        with self._lock:
            self.seqs[slot] += 1
            self.keys[slot] = -1
            self.data[slot, :len(locs)] = locs
            self.keys[slot] = b
            self.seqs[slot] += 1


def _fork_lock():
    """A lock shared with forked children: a POSIX semaphore, as ``multiprocessing``'s fork-context
    ``Lock`` makes it, without importing ``multiprocessing`` (sockets, subprocesses, ...) on the open path."""
    try:
        import _multiprocessing
        return _multiprocessing.SemLock(1, 1, 1, f"/rio-{os.getpid()}-{os.urandom(6).hex()}", True)
    except (ImportError, AttributeError, OSError):      # no named semaphores here: multiprocessing's own
        import multiprocessing
        return multiprocessing.get_context("fork").Lock()


_POOLS: "weakref.WeakValueDictionary[str, SlotPool]" = weakref.WeakValueDictionary()


def pool_for(total_blocks, block, token=None):
    """The pool of ``token`` when this process has it (it, or the process it was forked from, opened
    the dataset), else a new one sized for ``total_blocks`` blocks within :data:`CACHE_BYTES`."""
    pool = _POOLS.get(token) if token else None
    if pool is None:
        slots = max(1, min(total_blocks, CACHE_BYTES // (block * ROW_BYTES)))
        pool = SlotPool(slots, block)
        token = os.urandom(8).hex()
        _POOLS[token] = pool
    return pool, token


# --- a dataset's locations ---------------------------------------------------------------------------

class Locations:
    """Where every row of a dataset is, by (shard, local row) or in bulk by global row.

    ``sources``: one block source per shard (:class:`DbBlocks` or :class:`TableBlocks`);
    ``counts``: rows per shard.
    """

    def __init__(self, sources, counts, block=None):
        self.sources = sources
        self.block = block or BLOCK_ROWS
        self.counts = np.asarray(counts, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        per = -(-self.counts // self.block)
        self.block_base = np.concatenate([[0], np.cumsum(per)]).astype(np.int64)
        self._block_base = self.block_base.tolist()
        self.pool, self.token = pool_for(int(self.block_base[-1]), self.block)
        self._open = collections.OrderedDict()       # shards whose source was used, least recent first
        self._open_lock = threading.Lock()
        self._fast()

    def _fast(self):
        """Per process: which blocks this process saw in a pool that never evicts (one slot per block)."""
        nblocks = int(self.block_base[-1])
        self._whole = self.pool.slots >= nblocks
        self._ready = bytearray(nblocks)            # stays zero when the pool evicts
        self._ready_np = np.frombuffer(self._ready, np.uint8)
        self._flat = self.pool.data.reshape(-1, 4)

    def prime(self):
        """Load (and so check) the first block of the first shard that has rows: what opening a dataset
        reads per row, whatever its size; forked workers share it."""
        for k, n in enumerate(self.counts.tolist()):
            if n:
                self.block_of(k, 0, run=False)
                return

    @property
    def rows_read(self):
        return sum(s.rows_read for s in self.sources)

    def row(self, k, local):
        """``[raw start, raw end, blob start, blob end]`` of local row ``local`` of shard ``k``."""
        q, i = divmod(local, self.block)
        b = self._block_base[k] + q
        if self._ready[b]:               # a pool with a slot per block: a block once there stays
            return self._flat[b * self.block + i].tolist()
        got = self.pool.get_row(b, i)
        if got is None:
            got = self._load(k, q, b)[i].tolist()
        elif self._whole:
            self._ready[b] = 1
        return got

    def block_of(self, k, q, run=True):
        """Locations of block ``q`` of shard ``k`` (an ``(n, 4)`` int64 array); ``run``: a miss may load
        the blocks after it in the same query (:meth:`_load`)."""
        b = self._block_base[k] + q
        n = min(self.block, int(self.counts[k]) - q * self.block)
        got = self.pool.get_block(b, n)
        if got is None:
            return self._load(k, q, b, run)
        if self._whole:                  # loaded by another process: here for good
            self._ready[b] = 1
        return got

    def shard_rows(self, k, a, b):
        """Locations of local rows ``[a, b)`` of shard ``k``."""
        if b <= a:
            return np.zeros((0, 4), dtype=np.int64)
        q0, q1 = a // self.block, (b - 1) // self.block
        parts = [self.block_of(k, q) for q in range(q0, q1 + 1)]
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts)
        off = a - q0 * self.block
        return whole[off:off + b - a]

    def _load(self, k, q, b, run=True):
        """Load block ``q`` of shard ``k`` (global block ``b``) and return its locations. In a pool with
        a slot per block, the blocks after it that are not here yet come with it, up to
        :data:`RUN_BLOCKS` in one query: a first epoch makes one query per run, not per block, in any
        order (a shuffled epoch's first batches load whole runs that later batches find here)."""
        start, count = q * self.block, int(self.counts[k])
        end = q + 1
        if self._whole and run:
            last = min(q + RUN_BLOCKS, -(-count // self.block))
            while end < last and not self._ready[b + end - q]:
                end += 1
        locs = self.sources[k].load(start, min(end * self.block, count))
        for i in range(end - q):
            self.pool.put(b + i, locs[i * self.block:(i + 1) * self.block])
            if self._whole:
                self._ready[b + i] = 1
        locs = locs[:self.block]
        with self._open_lock:                   # fetch threads share the reader
            self._open[k] = None
            self._open.move_to_end(k)
            oldest = self._open.popitem(last=False)[0] if len(self._open) > MAX_OPEN else None
        if oldest is not None:
            self.sources[oldest].release()
        return locs

    def bulk(self, rows):
        """Row locations for an array of global rows (vectorised, for batched reads).

        ``rows``: int array of global row numbers in ``[0, total)`` (checked by the caller).
        Returns ``(shard, local, locs)``: int64 arrays of each row's shard index and local row, and an
        ``(n, 4)`` int64 array of its absolute ``[raw start, raw end, blob start, blob end)``. The page
        of a range is ``(start - 8 - header_size) // page_size`` and its in-page offset
        ``start - 8 - header_size - page * page_size``. Each block that holds a requested row is
        fetched once (from the cache, or loaded and checked), whatever the number of rows.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(self.counts) == 1 and self._whole and len(rows) and self._ready_np[rows // self.block].all():
            return np.zeros(len(rows), np.int64), rows, self._flat[rows]    # one shard, every block here
        shard = np.searchsorted(self.starts, rows, side="right") - 1
        local = rows - self.starts[shard]
        blocks = self.block_base[shard] + local // self.block
        out = np.empty((len(rows), 4), dtype=np.int64)
        if not len(rows):
            return shard, local, out
        if self._whole and self._ready_np[blocks].all():   # every block already here
            return shard, local, self._flat[blocks * self.block + (local % self.block)]
        order = np.argsort(blocks, kind="stable")
        sorted_blocks = blocks[order]
        cuts = np.flatnonzero(np.diff(sorted_blocks)) + 1
        for lo, hi in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [len(rows)]]).tolist()):
            which = order[lo:hi]
            k = int(shard[which[0]])
            q = int(local[which[0]]) // self.block
            out[which] = self.block_of(k, q)[local[which] - q * self.block]
        return shard, local, out

    def close(self):
        for s in self.sources:
            s.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        # a forked copy finds the pool by its token; a spawned one makes its own
        state["pool"] = state["_flat"] = state["_ready_np"] = None
        state["_open"] = collections.OrderedDict()
        state["_open_lock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._open_lock = threading.Lock()
        shared = self.token in _POOLS
        self.pool, self.token = pool_for(int(self.block_base[-1]), self.block, self.token)
        if shared:                   # the blocks this copy's origin saw are in the shared pool
            self._flat = self.pool.data.reshape(-1, 4)
            self._ready_np = np.frombuffer(self._ready, np.uint8)
        else:
            self._fast()
