"""The dataset behind the pages: facts, rows by position or by filter, counts and facets.

Rows come from a :class:`recordio.FileReader` (a local folder, or a URL through the remote reader,
which fetches only the rows read); which rows match a filter, how many, and the facets come from
the ``.db`` files (:mod:`recordio.view.db`). Nothing is written. A dataset that cannot be opened
keeps its error (``error``) for the pages to show; a row that cannot be read raises for that row only.
"""

from __future__ import annotations

import collections
import threading

from recordio.errors import RecordIOError
from recordio.view import db, filters, pages

MAX_PAGE = 200               # rows on one page
DEFAULT_PAGE = 50
OPEN_DBS = 64                # .db connections kept open
FACET_VALUES = 30            # values shown per facet
FACET_SCAN = 2000            # distinct values read per shard for a facet
SAMPLE = 10_000              # rows sampled to tell a field of too many values (no value counts then)
HIST_BINS = 20
_NUMERIC = ("int32", "int64", "float32", "float64")


class Source:
    """The dataset ``path`` opened read-only; every method is safe to call from several threads."""

    def __init__(self, path, storage_options=None, cache_dir=None):
        self.path = path
        self.options = {"storage_options": storage_options, "cache_dir": cache_dir}
        self._lock = threading.RLock()
        self._dbs: collections.OrderedDict = collections.OrderedDict()
        self._counts: collections.OrderedDict = collections.OrderedDict()
        self._facets: collections.OrderedDict = collections.OrderedDict()
        self._anchors = pages.Anchors()
        self._info = None
        self.error = None
        self.reader = None
        try:
            from recordio.mindrecord import FileReader

            self.reader = FileReader(path, **self.options)
        except (RecordIOError, OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    # --- facts ------------------------------------------------------------------------------------

    @property
    def ok(self) -> bool:
        return self.reader is not None

    def require(self):
        if self.reader is None:
            raise RecordIOError(self.error)
        return self.reader

    @property
    def rows(self) -> int:
        return len(self.require())

    @property
    def schema(self) -> dict:
        return dict(self.require().schema)

    @property
    def index_fields(self) -> list:
        return self.require().index_fields

    def info(self) -> dict:
        """``recordio.describe`` of the dataset (cached): schema, shards, sizes, checksums present."""
        with self._lock:
            if self._info is None:
                from recordio.mindrecord import describe

                self._info = describe(self.path, **self.options)
            return self._info

    def close(self):
        with self._lock:
            while self._dbs:
                self._dbs.popitem()[1].close()
            if self.reader is not None:
                self.reader.close()

    # --- the .db files ----------------------------------------------------------------------------

    def _conn(self, k):
        conn = self._dbs.get(k)
        if conn is None:
            conn = self._dbs[k] = db.connect(db.db_path(self.reader.files[k]))
            if len(self._dbs) > OPEN_DBS:
                self._dbs.popitem(last=False)[1].close()
        self._dbs.move_to_end(k)
        return conn

    def _each_db(self, sql, params):
        """``(shard k, first global row of k, result rows)`` of ``sql`` on every shard's ``.db``."""
        reader = self.require()
        start = 0
        for k, count in enumerate(reader.file_row_counts):
            yield k, start, db.query(self._conn(k), db.db_path(reader.files[k]), sql, params)
            start += count

    def conditions(self, texts):
        return filters.parse_all(texts, self.schema, self.index_fields)

    def shard_counts(self, conditions) -> list:
        """Matching rows in each shard (cached per filter)."""
        key = tuple(conditions)
        with self._lock:
            if key not in self._counts:
                if not conditions:
                    self._counts[key] = list(self.require().file_row_counts)
                else:
                    where, params = filters.where_sql(conditions)
                    sql = f"SELECT COUNT(*) FROM INDEXES WHERE {where}"
                    self._counts[key] = [rows[0][0] for _, _, rows in self._each_db(sql, params)]
                if len(self._counts) > 256:
                    self._counts.popitem(last=False)
            self._counts.move_to_end(key)
            return self._counts[key]

    def count(self, conditions) -> int:
        return sum(self.shard_counts(conditions))

    def page_rows(self, conditions, offset, limit) -> list:
        """Global row numbers of matches ``offset .. offset+limit`` (ascending). Each shard's part is read
        from the nearest position a page served before left (:mod:`recordio.view.pages`), or from the
        shard's end when nearer: paging on, back, or to the last page costs one page, not ``offset``."""
        limit = max(0, min(int(limit), MAX_PAGE))
        offset = max(0, int(offset))
        if not conditions:
            return list(range(offset, min(offset + limit, self.rows)))
        counts = self.shard_counts(conditions)
        reader = self.require()
        where, params = filters.where_sql(conditions)
        found: list = []
        start, skip = 0, offset
        with self._lock:
            for k, (n, total) in enumerate(zip(counts, reader.file_row_counts)):
                if skip >= n:
                    skip -= n
                elif len(found) < limit:
                    stop = min(n, skip + limit - len(found))
                    marks, path = self._anchors.of(tuple(conditions), k), db.db_path(reader.files[k])
                    ids = pages.read(self._conn(k), path, where, params, marks, n, skip, stop)
                    found += [start + r for r in ids]
                    skip = 0
                start += total
        return found

    def read(self, row):
        """Row ``row`` as a dict (its fields' values from the data files)."""
        with self._lock:
            return self.require()[row]

    # --- facets -----------------------------------------------------------------------------------

    def facet_ready(self, field, conditions) -> bool:
        return (field, tuple(conditions)) in self._facets

    def facet(self, field, conditions) -> dict:
        """Value counts of the indexed ``field`` among the matches (the top ones), and for a numeric
        field a histogram of ``HIST_BINS`` bins (cached per filter)."""
        key = (field, tuple(conditions))
        with self._lock:
            if key not in self._facets:
                self._facets[key] = self._facet(field, conditions)
                if len(self._facets) > 256:
                    self._facets.popitem(last=False)
            self._facets.move_to_end(key)
            return self._facets[key]

    def _facet(self, field, conditions):
        if field not in self.index_fields:
            raise ValueError(f"{field!r} is not an indexed field (indexed: {', '.join(self.index_fields) or 'none'})")
        kind = self.schema[field]["type"]
        where, params = filters.where_sql(conditions)
        col = db.column(field)
        facet = {"field": field, "type": kind, "complete": False, "distinct": None, "values": [], "sampled": None}
        if self._many_values(col, where, params):
            facet["sampled"] = f"more than {FACET_SCAN} distinct values in {SAMPLE} rows: no value counts"
        else:
            counts, complete = self._value_counts(col, where, params)
            top = sorted(counts.items(), key=lambda vn: (-vn[1], str(vn[0])))[:FACET_VALUES]
            facet.update(complete=complete and len(counts) <= FACET_VALUES, distinct=len(counts),
                         values=[{"value": v, "count": n} for v, n in top])
        if kind in _NUMERIC:
            facet["histogram"] = self._histogram(col, kind, where, params)
        return facet

    def _many_values(self, col, where, params):
        sql = f"SELECT COUNT(DISTINCT {col}) FROM (SELECT {col} FROM INDEXES WHERE {where} LIMIT {SAMPLE})"
        return any(rows[0][0] > FACET_SCAN for _, _, rows in self._each_db(sql, params))

    def _value_counts(self, col, where, params):
        sql = (f"SELECT {col}, COUNT(*) AS n FROM INDEXES WHERE {where} GROUP BY {col} "
               f"ORDER BY n DESC LIMIT {FACET_SCAN}")
        counts: collections.Counter = collections.Counter()
        complete = True
        for _, _, rows in self._each_db(sql, params):
            complete &= len(rows) < FACET_SCAN
            counts.update({value: n for value, n in rows})
        return counts, complete

    def _histogram(self, col, kind, where, params):
        """Bins over [min, max] of the matches, each counted by the same conditions its link filters by
        (``low <= x < high``, the last bin ``<= max``; integers bins of whole numbers)."""
        low = high = None
        for _, _, rows in self._each_db(f"SELECT MIN({col}), MAX({col}) FROM INDEXES WHERE {where}", params):
            a, b = rows[0]
            if a is not None:
                low, high = (a, b) if low is None else (min(low, a), max(high, b))
        if low is None:
            return []
        bins = histogram_bins(low, high, kind.startswith("int"))
        sums = ", ".join(f"SUM({col} >= ? AND {col} {'<=' if b['closed'] else '<'} ?)" for b in bins)
        edges = [v for b in bins for v in (b["low"], b["high"])]
        for _, _, rows in self._each_db(f"SELECT {sums} FROM INDEXES WHERE {where}", [*edges, *params]):
            for b, n in zip(bins, rows[0]):
                b["count"] += n or 0
        return bins


def histogram_bins(low, high, integer, most=HIST_BINS) -> list:
    """At most ``most`` bins covering [low, high]: ``{"low", "high", "closed", "count": 0}``; ``closed``
    bins include their ``high`` (every integer bin, and the last one)."""
    if integer:
        width = max(1, -(-(high - low + 1) // most))
        return [{"low": a, "high": min(a + width - 1, high), "closed": True, "count": 0}
                for a in range(low, high + 1, width)]
    if high == low:
        return [{"low": low, "high": high, "closed": True, "count": 0}]
    step = (high - low) / most
    edges = [low + i * step for i in range(most)] + [high]
    return [{"low": a, "high": b, "closed": i == most - 1, "count": 0} for i, (a, b) in enumerate(zip(edges, edges[1:]))]
