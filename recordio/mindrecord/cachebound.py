"""``cache_limit``: which cached blocks a reader gives back when it holds more than its bound.

A reader's fetches are *runs* of blocks (:mod:`pagecache`). Past the bound, runs are evicted:

* ``"future"`` (the default once the reader knows the epoch's order, :meth:`FileReader.prefetch`):
  the run whose next read comes last in that order (never again first) — Belady's choice, which the
  sampler makes possible because it knows the whole epoch in advance;
* ``"lru"``: the run read least recently (the baseline the benchmark compares with; also the
  policy while no order is known).
"""

from __future__ import annotations

import bisect
import threading

__all__ = ["Bound"]


class Bound:
    def __init__(self, limit, block, policy="future"):
        if policy not in ("future", "lru"):
            raise ValueError(f"cache policy must be 'future' or 'lru', not {policy!r}")
        self.limit, self.block, self.policy = int(limit), block, policy
        self.next_use = None                 # (path, first, end) -> position of the next read of a block, or inf
        self._runs = {}                      # (path, first block) -> [end block, last use tick]
        self._starts = {}                    # path -> sorted first blocks
        self._held = 0
        self._tick = 0
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"limit": self.limit, "block": self.block, "policy": self.policy}

    def __setstate__(self, state):
        self.__init__(**state)

    def fetched(self, path, a, b):
        """Blocks [a, b) of ``path`` were fetched; returns the runs ``(path, a, b)`` to evict."""
        with self._lock:
            self._tick += 1
            self._runs[(path, a)] = [b, self._tick]
            bisect.insort(self._starts.setdefault(path, []), a)
            self._held += (b - a) * self.block
            return self._victims((path, a)) if self._held > self.limit else []

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

    def _victims(self, keep):
        out = []
        for key in sorted((k for k in self._runs if k != keep), key=self._rank, reverse=True):
            if self._held <= self.limit:
                break
            end, _ = self._runs.pop(key)
            self._starts[key[0]].remove(key[1])
            self._held -= (end - key[1]) * self.block
            out.append((key[0], key[1], end))
        return out
