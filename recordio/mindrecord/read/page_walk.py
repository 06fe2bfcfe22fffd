"""Row locations from the data file itself: a walk of its pages' length prefixes, block by block.

A row's bytes are where the page table and the entries' length prefixes put them (FORMAT.md §4.3):
row ``r`` of the row group of BLOB page ``g`` is the ``r - start``-th ``[u64 n][n bytes]`` entry from
offset 0 of that page, and its raw record the same entry from the group's offset in the RAW page that
lists the group. :class:`WalkBlocks` computes a block of locations by reading those prefixes from a
memory map of the data file in compiled code (``codec.walk_entries``): no SQLite row reaches Python,
which is what a fresh process's first pass used to spend most of its time on (docs/benchmarks.md).

The ``.db`` still answers what only it knows (its shard name and row span, checked at open; the
checksum table; index-field queries), and its locations are compared with the walk's on the first
block each process loads of each shard and, under ``FileReader(verify=True)``, on every block. A ``.db`` whose locations
disagree with the data file is an :class:`IndexFileError`, as before; without ``verify`` a later
damaged ``.db`` row is not read at all, so it cannot point a row at another's bytes.

Walks start at a group's first entry or at a **mark**: the prefix positions of a block's first row,
kept for every block start the walk passed, so a block is never walked twice from its group's start.
``RECORDIO_LOCATIONS=db`` reads every location from the ``.db`` instead (MindSpore's way).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from recordio.errors import FormatError, IndexFileError
from recordio.mindrecord import codec, fileio
from recordio.mindrecord import format as fmt

__all__ = ["WalkBlocks", "enabled", "walk_shard"]


def enabled():
    """Whether readers locate rows by walking the data file (``RECORDIO_LOCATIONS`` is not ``db``)."""
    return os.environ.get("RECORDIO_LOCATIONS", "walk").strip().lower() != "db"


class _Groups:
    """A shard's row groups in row order, as arrays: rows ``[start, end)``, the absolute first byte and
    used-bytes end of each group's BLOB entries and of its RAW records (O(pages))."""

    def __init__(self, shard):
        hs, ps = shard.header["header_size"], shard.header["page_size"]
        blobs = sorted((p for p in shard.pages if p.kind == fmt.BLOB and p.end_row > p.start_row),
                       key=lambda p: p.start_row)
        raw_of = {g: (p, off) for p in shard.pages if p.kind == fmt.RAW for g, off in p.groups}
        at = 0
        for p in blobs:
            if p.start_row != at:
                raise FormatError(f"{shard.path}: the page table does not reach every row 0..{shard.count - 1} "
                                  f"(BLOB page {p.page_id} starts at row {p.start_row}, expected {at})")
            if p.type_id not in raw_of:
                raise FormatError(f"{shard.path}: row group {p.type_id} (BLOB page {p.page_id}) is listed by "
                                  f"no RAW page")
            at = p.end_row
        if at != shard.count:
            raise FormatError(f"{shard.path}: the page table does not reach every row 0..{shard.count - 1}")
        self.start = np.array([p.start_row for p in blobs], dtype=np.int64)
        self.end = np.array([p.end_row for p in blobs], dtype=np.int64)
        self.blob_page = [p.page_id for p in blobs]
        self.blob_first = [hs + p.page_id * ps for p in blobs]
        self.blob_limit = [hs + p.page_id * ps + p.size for p in blobs]
        raws = [raw_of[p.type_id] for p in blobs]
        for p, (r, off) in zip(blobs, raws):
            if not 0 <= off <= r.size:
                raise FormatError(f"{shard.path}: RAW page {r.page_id} places row group {p.type_id} at offset "
                                  f"{off}, outside its {r.size} used bytes")
        self.raw_page = [r.page_id for r, _ in raws]
        self.raw_first = [hs + r.page_id * ps + off for r, off in raws]
        self.raw_limit = [hs + r.page_id * ps + r.size for r, _ in raws]

    def of(self, row):
        return int(np.searchsorted(self.start, row, side="right")) - 1


def walk_shard(shard, block=256):
    """Every row's absolute ``[raw start, raw end, blob start, blob end)`` of ``shard``, walked without
    its ``.db`` (``FileReader(use_index=False)``, ``recordio verify``)."""
    walker = WalkBlocks(shard, None, block)
    try:
        return walker.load(0, shard.count)
    finally:
        walker.close()


class WalkBlocks:
    """Blocks of one shard's locations from walking its pages; ``db`` (a ``location_sources.DbBlocks``, or None
    to walk without one) is the shard's ``.db``: checksums come from it, and its locations are
    compared with the walk's on the blocks :meth:`compare` is asked for (or read instead of walked,
    with ``verify_all``)."""

    def __init__(self, shard, db, block):
        self.shard, self.db, self.block = shard, db, block
        self.groups = _Groups(shard)
        nblocks = -(-shard.count // block)
        self._marks = np.full((nblocks, 2), -1, dtype=np.int64)   # block q: its first row's blob, raw prefix
        self._mm = None
        self._lock = threading.Lock()
        self.verify_all = False
        self.fd = None                # a descriptor of the data file the reader holds open (not ours)
        self._db_seen = False         # this process compared a block with the .db
        self.walked = 0               # entries walked (what the tests count)
        self.loads = 0                # blocks (or runs of blocks) loaded

    # --- what the block sources share (location_sources.DbBlocks' interface) ---

    @property
    def cheap_loads(self):
        """A block costs little to load alone (its walk starts at a mark), unless each load reads the ``.db``."""
        return not self.verify_all

    @property
    def rows_read(self):
        return self.db.rows_read if self.db is not None else 0

    @property
    def queries(self):
        return self.db.queries if self.db is not None else 0

    def read_checksums(self):
        return self.db.read_checksums() if self.db is not None else self.shard.checksums

    def release(self):
        """Let go of the ``.db`` connection unless the dataset keeps it open (few shards); the map is the
        reader's to close (its bound on open files)."""
        if self.db is not None:
            self.db.release()

    def _unmap(self):
        with self._lock:
            if self._mm is not None:
                self._mm.close()
            self._mm = None

    def close(self):
        if self.db is not None:
            self.db.close()
        self._unmap()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_mm"] = state["_lock"] = state["fd"] = None
        state["_db_seen"] = False
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # --- the walk ---

    def compare(self, a, b):
        """Locations of rows ``[a, b)``, walked and compared with the ``.db``'s (which are checked as
        ``DbBlocks.load`` checks them)."""
        walked = self._walked(a, b)
        listed = self.db.load(a, b)
        if not np.array_equal(walked, listed):
            at = int(np.argmax((walked != listed).any(axis=1)))
            raise IndexFileError(f"{self.db.db}: INDEXES row {a + at} gives the byte ranges "
                                 f"{listed[at].tolist()} (raw record, blob), but the data file's pages put "
                                 f"that row at {walked[at].tolist()}: the index is foreign or damaged")
        return walked

    def load(self, a, b):
        """Absolute ``[raw start, raw end, blob start, blob end)`` of local rows ``[a, b)`` (``a`` a block
        start), every entry inside its page's used bytes. The first block a process loads is compared
        with the ``.db``; with ``verify_all`` (``FileReader(verify=True)``) the ``.db``'s locations are
        read and checked instead, and the reader checks them against each entry's length prefix."""
        self.loads += 1
        if self.db is None or b <= a:
            return self._walked(a, b)
        if self.verify_all:              # the .db's own checks, then each prefix as rows are read
            return self.db.load(a, b)
        if not self._db_seen:
            head = min(b, a + self.block)
            self._db_seen = True
            first = self.compare(a, head)
            return first if head == b else np.concatenate([first, self._walked(head, b)])
        return self._walked(a, b)

    def _walked(self, a, b):
        out = np.empty((b - a, 4), dtype=np.int64)
        with self._lock:
            mm = self._map()
            r = a
            while r < b:
                i = self.groups.of(r)
                hi = min(b, int(self.groups.end[i]))
                blob, raw = self._from(mm, i, r, hi)
                out[r - a:hi - a, 0] = raw[:-1] + fmt.ENTRY_PREFIX
                out[r - a:hi - a, 1] = raw[1:]
                out[r - a:hi - a, 2] = blob[:-1] + fmt.ENTRY_PREFIX
                out[r - a:hi - a, 3] = blob[1:]
                r = hi
        return out

    def _from(self, mm, i, r, hi):
        """Prefix positions of the blob and raw entries of rows ``[r, hi)`` of group ``i`` (and the end of
        the last), walked from the nearest mark at or before ``r``."""
        g, B = self.groups, self.block
        start = int(g.start[i])
        at, pos = start, (g.blob_first[i], g.raw_first[i])
        q = r // B
        while q * B > start:                  # the nearest mark in this group
            if self._marks[q, 0] >= 0:
                at, pos = q * B, tuple(self._marks[q].tolist())
                break
            q -= 1
        blob = self._walk(mm, pos[0], at, hi, g.blob_limit[i], "blob", g.blob_page[i])
        raw = self._walk(mm, pos[1], at, hi, g.raw_limit[i], "raw record", g.raw_page[i])
        first = -(-(at + 1) // B) * B          # block starts inside the group the walk passed: marks
        last = min(hi, int(g.end[i]) - 1)
        if first <= last:
            ks = np.arange(first, last + 1, B)
            self._marks[ks // B, 0] = blob[ks - at]
            self._marks[ks // B, 1] = raw[ks - at]
        return blob[r - at:], raw[r - at:]

    def _walk(self, mm, pos, first_row, end_row, limit, name, page_id):
        got, bad = codec.walk_entries(mm, pos, end_row - first_row, limit)
        self.walked += end_row - first_row
        if bad >= 0:
            row = first_row + bad
            raise FormatError(f"{self.shard.path}: row {row}: its {name} entry at byte {int(got[bad])} runs "
                              f"past the used bytes of page {page_id} (which end at byte {limit}): the file "
                              f"is truncated or damaged")
        return got

    def mapped(self):
        """The read-only map of the data file the walk reads (the reader reads rows through it too: one
        map, its pages faulted in once). Closing it is the caller's; the next call maps the file again."""
        with self._lock:
            return self._map()

    def _map(self):
        if self._mm is not None and not self._mm.closed:
            return self._mm
        path = self.shard.path
        fd = self.fd if self.fd is not None else fileio.open_checked(path, self.shard.identity)
        try:
            self._mm = fileio.map_readonly(path, self.shard.size, fd)
        finally:
            if fd != self.fd:
                os.close(fd)
        return self._mm
