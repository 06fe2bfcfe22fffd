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

The cache holds at most :data:`~recordio.mindrecord.read.slot_pool.CACHE_BYTES` (``RECORDIO_LOCATION_CACHE_MB``) of locations, 32
bytes per row: a dataset that fits is read with one block load per block; a larger one evicts.
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from recordio.mindrecord.read.slot_pool import pool_for, pool_of

__all__ = ["BLOCK_ROWS", "RUN_BLOCKS", "Locations"]

BLOCK_ROWS = 256                 # rows per block: a miss costs one short range query (~0.5 ms)
RUN_BLOCKS = 64                  # blocks one query loads when the cache holds every block (16,384 rows)
SCATTERED = 8                    # a batch of rows in this many blocks or more is scattered (a shuffled one)
MAX_OPEN = 4                     # .db connections open at once per dataset beyond KEEP_OPEN ones (reopened on demand)


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
        self.pool.put(b, locs)
        if self._whole:
            self._ready[b:b + end - q] = b"\x01" * (end - q)
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
        fetched once (from the cache, or loaded and checked), whatever the number of rows. A scattered
        batch (rows in :data:`SCATTERED` blocks or more) from a source whose loads are cheap one by one
        (``cheap_loads``: a walk, which keeps a mark at each block start it passes) loads only its own
        blocks, not runs: a shuffled first batch does not load (and copy into the cache) the locations
        of runs of rows it does not read.
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
        scattered = len(cuts) >= SCATTERED
        for lo, hi in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [len(rows)]]).tolist()):
            which = order[lo:hi]
            k = int(shard[which[0]])
            q = int(local[which[0]]) // self.block
            run = not (scattered and getattr(self.sources[k], "cheap_loads", False))
            out[which] = self.block_of(k, q, run)[local[which] - q * self.block]
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
        shared = pool_of(self.token) is not None
        self.pool, self.token = pool_for(int(self.block_base[-1]), self.block, self.token)
        if shared:                   # the blocks this copy's origin saw are in the shared pool
            self._flat = self.pool.data.reshape(-1, 4)
            self._ready_np = np.frombuffer(self._ready, np.uint8)
        else:
            self._fast()
