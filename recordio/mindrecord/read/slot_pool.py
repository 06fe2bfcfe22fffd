"""The cache of row locations shared by forked processes: a direct-mapped pool of fixed-size slots in
one anonymous shared memory map, written under a lock and read without one, seqlock-style (see
:mod:`~recordio.mindrecord.read.locations`)."""

from __future__ import annotations

import mmap
import os
import weakref

import numpy as np

__all__ = ["CACHE_BYTES", "ROW_BYTES", "SlotPool", "pool_for", "pool_of"]

CACHE_BYTES = int(float(os.environ.get("RECORDIO_LOCATION_CACHE_MB", "1024")) * (1 << 20))
ROW_BYTES = 32                   # raw start, raw end, blob start, blob end: int64 each


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
        """Block ``b`` holds ``locs`` (at most ``block`` rows); ``locs`` of more rows are blocks ``b, b + 1,
        ...`` one after another, written with one copy when their slots follow one another."""
        count = max(1, -(-len(locs) // self.block))
        slot = b % self.slots
        if count > 1 and slot + count > self.slots:              # the run wraps: block by block
            for i in range(count):
                self.put(b + i, locs[i * self.block:(i + 1) * self.block])
            return
        end, full = slot + count, len(locs) // self.block
        with self._lock:
            self.seqs[slot:end] += 1
            self.keys[slot:end] = -1
            if count == 1:
                self.data[slot, :len(locs)] = locs
            else:
                self.data[slot:slot + full] = locs[:full * self.block].reshape(full, self.block, 4)
                if full < count:
                    self.data[slot + full, :len(locs) - full * self.block] = locs[full * self.block:]
            self.keys[slot:end] = np.arange(b, b + count)
            self.seqs[slot:end] += 1


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
    pool = pool_of(token)
    if pool is None:
        slots = max(1, min(total_blocks, CACHE_BYTES // (block * ROW_BYTES)))
        pool = SlotPool(slots, block)
        token = os.urandom(8).hex()
        _POOLS[token] = pool
    return pool, token


def pool_of(token):
    """The pool of ``token`` when this process has it (it, or the process it was forked from, made it)."""
    return _POOLS.get(token) if token else None
