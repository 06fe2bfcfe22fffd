"""A page of a filter's matches in one shard's ``.db``, read from the nearest known position.

``ORDER BY ROW_ID LIMIT ? OFFSET ?`` makes SQLite step over every match before the page: the last
page of two million matches steps over two million. Here a page starts from an *anchor* instead
(keyset pagination): ``(n, r)`` says the shard's first ``n`` matches have ``ROW_ID < r`` and the
rest ``ROW_ID >= r`` (``r`` is match ``n``'s ``ROW_ID``, or one past match ``n - 1``'s: ROW_IDs are
whole numbers). A page of matches ``start .. stop`` is read forwards from the nearest anchor at or
before ``start`` (``ROW_ID >= r ... OFFSET start - n``), or backwards from the nearest at or after
``stop`` (``ROW_ID < r ORDER BY ROW_ID DESC ... OFFSET n - stop``, then reversed), whichever steps
over fewer matches (SQLite steps backwards 2.2-2.4 times slower); the shard's start ``(0, none)``
and end ``(count, none)`` are anchors too, so the last page is read backwards from the end. Each
page read leaves anchors at its first and last match, so paging forwards or backwards costs one
page; the way to a page far from every anchor is walked in hops of ``STEP`` matches (``LIMIT 1
OFFSET STEP``), each leaving an anchor: the first jump costs what ``OFFSET`` did, a later one near
it at most ``STEP`` matches more than its page.

``ROW_ID`` leads the primary key MindSpore writes (``PRIMARY KEY(ROW_ID, INC_0, ...)``), so SQLite
has an index on it (``sqlite_autoindex_INDEXES_1``; ``ROW_ID`` is an ``INT`` column, not the table's
rowid): ``ROW_ID >= ?`` and ``ROW_ID < ?`` are seeks in it (``EXPLAIN QUERY PLAN``: ``SEARCH INDEXES
USING INDEX sqlite_autoindex_INDEXES_1 (ROW_ID>?)``, ``(ROW_ID<?)``) and ``ORDER BY ROW_ID`` (either
way) walks it without sorting; each match's other columns are then looked up by rowid. Anchors are
facts about immutable files: any anchor gives the same rows as plain ``OFFSET``, so they only change
the cost.
"""

from __future__ import annotations

import bisect
import collections
import functools
import time

from recordio.errors import IndexFileError
from recordio.view import db

FILTERS_KEPT = 256           # filters whose anchors are kept (least recently used dropped)
ANCHORS_KEPT = 1024          # anchors kept per filter and shard (every other one dropped past this)
STEP = 4096                  # on the way to a far page, an anchor every STEP matches
BACKWARDS = 2.5              # a row stepped over backwards costs SQLite 2.2-2.4 forwards (measured)


class Anchors:
    """Known positions per (filter, shard), least recently used filters dropped past ``filters``. Not
    locked: the caller holds its own lock."""

    def __init__(self, filters=FILTERS_KEPT, per_shard=ANCHORS_KEPT):
        self.filters, self.per_shard = filters, per_shard
        self._marks: collections.OrderedDict = collections.OrderedDict()

    def of(self, key, k) -> Marks:
        """The anchors of filter ``key`` in shard ``k`` (kept: :func:`read` adds to them)."""
        shards = self._marks.get(key)
        if shards is None:
            shards = self._marks[key] = {}
            if len(self._marks) > self.filters:
                self._marks.popitem(last=False)
        self._marks.move_to_end(key)
        return shards.setdefault(k, Marks(self.per_shard))


class Marks(list):
    """The ``(n, r)`` anchors of one filter in one shard, sorted by ``n``, at most ``most``."""

    def __init__(self, most):
        super().__init__()
        self.most = most

    def add(self, *anchors):
        """Add ``(n, r)`` anchors (each ``n`` once); past ``most``, every other one is dropped (the rest
        stay evenly spread)."""
        for n, r in anchors:
            i = bisect.bisect_left(self, n, key=_n)
            if i == len(self) or self[i][0] != n:
                self.insert(i, (n, r))
        if len(self) > self.most:
            del self[::2]


def _n(mark):
    return mark[0]


def plan(marks, count, start, stop):
    """How to read matches ``start .. stop`` (``0 <= start < stop <= count``) from ``marks``:
    ``(descending, n, r)``: forwards from anchor ``(n, r)`` (``n <= start``) or backwards from it
    (``n >= stop``), ``r`` None at the shard's start or end; the one stepping over fewer matches, a step
    backwards counted as ``BACKWARDS`` forwards."""
    i = bisect.bisect_right(marks, start, key=_n)
    before = marks[i - 1] if i else (0, None)
    j = bisect.bisect_left(marks, stop, key=_n)
    after = marks[j] if j < len(marks) else (count, None)
    if (after[0] - stop) * BACKWARDS < start - before[0]:
        return True, *after
    return False, *before


def read(conn, path, where, params, marks, count, start, stop):
    """ROW_IDs of matches ``start .. stop`` of one shard (``count`` matches of ``where``), ascending.
    Anchors at the page's first and last match are added to ``marks``, and, when
    the page is far from every anchor, one every ``STEP`` matches on the way to it (the whole way
    within the view's time limit for a query, as one ``OFFSET`` query was)."""
    descending, n, r = plan(marks, count, start, stop)
    query = functools.partial(_ids, conn, path, where, params, descending)
    deadline = time.monotonic() + db.QUERY_SECONDS
    while (n - stop if descending else start - n) > STEP:
        if time.monotonic() >= deadline:
            raise IndexFileError(f"{path}: index query failed (interrupted after {db.QUERY_SECONDS:g} s; query: "
                                 f"the way to match {start} of {where} with {list(params)[:8]}, at match {n})")
        hop = query(r, 1, STEP - 1 if descending else STEP)
        if len(hop) != 1 or type(hop[0]) is not int:
            break
        n, r = n - STEP if descending else n + STEP, hop[0]
        marks.add((n, r))
    ids = query(r, stop - start, n - stop if descending else start - n)
    if descending:
        ids.reverse()
    if len(ids) == stop - start and all(type(i) is int for i in (ids[0], ids[-1])):   # as the count said
        marks.add((start, ids[0]), (stop, ids[-1] + 1))
    return ids


def _ids(conn, path, where, params, descending, r, limit, offset):
    """``limit`` ROW_IDs of matches of ``where`` after skipping ``offset``, from anchor ROW_ID ``r``:
    ascending from ``ROW_ID >= r``, or descending from ``ROW_ID < r`` (from the start or end when None)."""
    sql, args = f"SELECT ROW_ID FROM INDEXES WHERE ({where})", list(params)
    if r is not None:
        sql += " AND ROW_ID < ?" if descending else " AND ROW_ID >= ?"
        args.append(r)
    sql += f" ORDER BY ROW_ID{' DESC' if descending else ''} LIMIT ? OFFSET ?"
    return [row for (row,) in db.query(conn, path, sql, [*args, limit, offset])]
