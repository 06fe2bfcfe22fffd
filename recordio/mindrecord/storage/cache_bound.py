"""``cache_limit``: which cached blocks a reader gives back when it holds more than its bound.

A reader's fetches are *runs* of blocks (``cache``). Past the bound, runs are evicted:

* ``"future"`` (the default once the reader knows the epoch's order, :meth:`FileReader.prefetch`):
  the run whose next read comes last in that order (never again first) — Belady's choice, which the
  sampler makes possible because it knows the whole epoch in advance;
* ``"lru"``: the run read least recently (the baseline the benchmark compares with; also the
  policy while no order is known).

The bound is per node: :class:`NodeCount` keeps the bytes of data-file blocks present in a cache
folder, over every process using it, and a reader past the bound evicts from its own runs (those it
fetched, and those it found present when it opened) until the node is back under it.
"""

from __future__ import annotations

import bisect
import fcntl
import os
import struct
import threading

__all__ = ["HELD_FILE", "Bound", "NodeCount"]

HELD_FILE = ".recordio-held"


class NodeCount:
    """Bytes of data-file blocks present in the cache folder ``root``, over every process: an 8-byte
    counter in ``<root>/.recordio-held`` changed under an exclusive ``flock``. Callers change the
    block maps first, then the counter; where there is no counter yet, ``scan(root)`` counts the maps
    (which already hold the change)."""

    def __init__(self, root, scan):
        self.root, self.scan = root, scan

    def add(self, delta) -> int:
        """Add ``delta`` bytes; the node's bytes after it."""
        fd = os.open(os.path.join(self.root, HELD_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.pread(fd, 8, 0)
            value = max(0, struct.unpack("<q", raw)[0] + delta) if len(raw) == 8 else self.scan(self.root)
            if delta or len(raw) != 8:
                os.pwrite(fd, struct.pack("<q", value), 0)
            return value
        finally:
            os.close(fd)

    def value(self) -> int:
        return self.add(0)


class Bound:
    """The runs one reader may evict and their order; ``node``: a :class:`NodeCount` (the bound is then
    on the node's bytes, else on this reader's)."""

    def __init__(self, limit, block, policy="future", node=None):
        if policy not in ("future", "lru"):
            raise ValueError(f"cache policy must be 'future' or 'lru', not {policy!r}")
        self.limit, self.block, self.policy, self.node = int(limit), block, policy, node
        self.next_use = None                 # (path, first, end) -> position of the next read of a block, or inf
        self._runs = {}                      # (path, first block) -> [end block, last use tick]
        self._starts = {}                    # path -> sorted first blocks
        self._held = 0
        self._tick = 0
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"limit": self.limit, "block": self.block, "policy": self.policy, "node": self.node}

    def __setstate__(self, state):
        self.__init__(**state)

    def fetched(self, path, a, b, check=True):
        """Blocks [a, b) of ``path`` were fetched (or found present: ``check`` False); returns the runs
        ``(path, a, b)`` to evict."""
        with self._lock:
            self._tick += 1
            if (path, a) in self._runs:
                self._held -= (self._runs[(path, a)][0] - a) * self.block
            else:
                bisect.insort(self._starts.setdefault(path, []), a)
            self._runs[(path, a)] = [b, self._tick]
            self._held += (b - a) * self.block
            if not check:
                return []
            held = self._held if self.node is None else self.node.value()
            return self._victims((path, a), held - self.limit) if held > self.limit else []

    def touched(self, path, a, b):
        """Blocks [a, b) of ``path`` were read (their runs become the most recently used)."""
        with self._lock:
            self._tick += 1
            starts = self._starts.get(path, ())
            i = bisect.bisect_right(starts, a) - 1
            while 0 <= i < len(starts) and starts[i] < b:
                run = self._runs[(path, starts[i])]
                if run[0] > a:
                    run[1] = self._tick
                i += 1

    def _rank(self, key):
        """Eviction order: the larger, the sooner evicted."""
        if self.policy == "future" and self.next_use is not None:
            return (self.next_use(key[0], key[1], self._runs[key][0]), -self._runs[key][1])
        return (0, -self._runs[key][1])

    def _victims(self, keep, excess):
        out = []
        for key in sorted((k for k in self._runs if k != keep), key=self._rank, reverse=True):
            if excess <= 0:
                break
            end, _ = self._runs.pop(key)
            self._starts[key[0]].remove(key[1])
            self._held -= (end - key[1]) * self.block
            excess -= (end - key[1]) * self.block
            out.append((key[0], key[1], end))
        return out
