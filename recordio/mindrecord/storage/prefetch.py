"""Prefetch: fetch what a reader will read next, in the order it will read it.

The pipeline knows each epoch's order before it starts (the sampler's permutation, this rank's
share of it); ``span_plan`` turns it into requests (spans of up to a few MiB, each with the
position of the first row needing it). :class:`Prefetcher` issues them in that order, each once its
first row is within ``depth`` rows of the reader, with a bounded pool of ``workers`` threads making
the span's blocks present in the node cache; the reader then finds them there. A fetch that fails in
the background is left to the reader, which fetches again and raises the error where the row is
read. The same order gives the cache bound each block's next use (``cache_bound``), so eviction
drops what is needed last.
"""

from __future__ import annotations

import bisect
import collections
import concurrent.futures
import threading

__all__ = ["Prefetcher", "next_use_of"]

DEPTH = 128
WORKERS = 16


def next_use_of(spans, block, position):
    """``next_use(path, first_block)``: where in ``spans`` (one tuple of ``(path, start, end)`` per row,
    in reading order) that block is read next from ``position()`` on, or ``inf``."""
    uses = collections.defaultdict(list)
    for i, row in enumerate(spans):
        for path, start, end in row:
            for b in range(start // block, (end + block - 1) // block):
                uses[(path, b)].append(i)

    def next_use(path, first, end=None):
        """The next read of block ``first`` (of any block in [first, end) when ``end`` is given)."""
        at, best = position(), float("inf")
        for b in range(first, first + 1 if end is None else end):
            seen = uses.get((path, b))
            if seen:
                j = bisect.bisect_left(seen, at)
                if j < len(seen) and seen[j] < best:
                    best = seen[j]
        return best

    return next_use


class Prefetcher:
    """Fetch ``pieces`` (``(path, start, end, first)``, ordered by ``first``) through ``ensure(path, start,
    end)``, each once ``first`` is less than :meth:`advance`'s count plus ``depth``, ``workers`` at a time."""

    def __init__(self, ensure, pieces, depth=DEPTH, workers=WORKERS):
        self._ensure, self._pieces = ensure, pieces
        self.depth, self.workers = depth, workers
        self.consumed = 0
        self._stop = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="recordio-prefetch", daemon=True)
        self._thread.start()

    def advance(self, n=1):
        with self._cond:
            self.consumed += n
            self._cond.notify_all()

    def _piece(self, path, start, end):
        if self._stop:
            return
        try:
            self._ensure(path, start, end)
        except Exception:          # the reader fetches again and raises where the row is read
            return

    def _run(self):
        with concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="recordio-fetch") as pool:
            pending = set()
            for path, start, end, first in self._pieces:
                with self._cond:
                    while not self._stop and first >= self.consumed + self.depth:
                        self._cond.wait(0.05)
                if self._stop:
                    break
                pending.add(pool.submit(self._piece, path, start, end))
                if len(pending) >= 2 * self.workers:
                    _, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)

    def close(self):
        """Stop fetching ahead and wait for the requests in flight (idempotent)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
