"""``spark.read.format("mindrecord")``: the Python data source behind :func:`read_mindrecord`.

Partitions are contiguous runs of rows (``row_runs.plan_reads``), read on the executors into Arrow
batches. Equality filters on the dataset's **index fields** (``col == v``, ``col.isin(...)``, ANDed,
integer or string fields) are pushed down when the session has
``spark.sql.python.filterPushdown.enabled=true``: the ``.db`` of each shard names the matching rows
(one ``ROW_ID`` query), and only those rows are read. The ``.db`` is an index, not the data: every
row it names is read from the data file and compared with the filter, a row whose value differs
only past a NUL (MindSpore's ``.db`` cuts strings there) is dropped, any other difference is an
:class:`~recordio.errors.IndexFileError` naming the ``.db`` and row. A float field, a value of
another type and every other filter stay with Spark.

Options: ``path`` (a data file, a JSON list of them, or a dataset's URL), ``storageOptions`` (JSON: a
URL's fsspec options), ``columns`` (a JSON list), ``numPartitions``,
``pushdown`` (``"true"``: the session pushes filters; :func:`read_mindrecord` sets it from the session).
"""

from __future__ import annotations

import contextlib
import json

import numpy as np

from recordio.errors import IndexFileError
from recordio.extras import requires
from recordio.mindrecord import index
from recordio.mindrecord.read.reader import FileReader
from recordio.mindrecord.read.row_runs import plan_reads
from recordio.mindrecord.storage.store import is_url
from recordio.spark.arrow import columns_batch, rows_batch

with requires("recordio.spark", "spark"):
    from pyspark.sql.datasource import DataSource, DataSourceReader, EqualTo, In, InputPartition

__all__ = ["MindRecordSource", "PARTITIONS_PER_CORE"]

BATCH_BYTES = 8 << 20         # a task yields an Arrow batch every 8 MiB of file bytes
BATCH_ROWS = 4096             # rows of a filtered read fetched at once
PARTITIONS_PER_CORE = 2       # default partitions: this many per core of the cluster, at least one per shard
_PUSHED = {"int32": int, "int64": int, "string": str}


class _Dataset:
    """What the driver learns once about the dataset: files, rows and bytes per file, schema, columns."""

    def __init__(self, options):
        path = options["path"]
        self.given = json.loads(path) if path.startswith("[") else path
        self.remote = isinstance(self.given, str) and is_url(self.given)
        self.storage = json.loads(options["storageOptions"]) if options.get("storageOptions") else None
        columns = json.loads(options["columns"]) if options.get("columns") else None
        with FileReader(self.given, columns=columns, storage_options=self.storage) as reader:   # checks it all
            self.files, self.counts = reader.files, reader.file_row_counts    # (a URL's: its local copies)
            self.sizes = reader.file_sizes
            self.schema, self.index_fields = dict(reader.schema), reader.index_fields
        self.columns = list(columns) if columns is not None else list(self.schema)
        self.partitions = int(options.get("numPartitions") or len(self.files))


class MindRecordSource(DataSource):
    """The ``mindrecord`` format (registered by :func:`recordio.spark.read_mindrecord`)."""

    @classmethod
    def name(cls):
        return "mindrecord"

    def schema(self):
        from recordio.spark.types import spark_schema
        data = _Dataset(self.options)
        return spark_schema(data.schema, data.columns)

    def reader(self, schema):
        data = _Dataset(self.options)
        return FilteringReader(data) if self.options.get("pushdown") == "true" else MindRecordReader(data)


class MindRecordReader(DataSourceReader):
    """Runs of rows, or the rows the ``.db`` names for the pushed filters (picklable). Spark refuses a
    reader with ``pushFilters`` while the session's pushdown setting is off: :class:`FilteringReader`
    adds it."""

    def __init__(self, data):
        self.files, self.counts, self.schema, self.columns = data.files, data.counts, data.schema, data.columns
        self.index_fields, self.partitions_wanted, self.sizes = data.index_fields, data.partitions, data.sizes
        self.given, self.remote, self.storage = data.given, data.remote, data.storage
        self.conditions: list[tuple[str, list]] = []          # (field, allowed values), ANDed

    def _condition(self, f):
        if not isinstance(f, (EqualTo, In)) or len(f.attribute) != 1:
            return None
        field = f.attribute[0]
        kind = self.schema.get(field, {}).get("type") if not self.schema.get(field, {}).get("shape") else None
        if field not in self.index_fields or kind not in _PUSHED:
            return None
        values = list(f.value) if isinstance(f, In) else [f.value]
        want = _PUSHED[kind]
        if not values or any(type(v) is not want or (want is str and "\x00" in v) for v in values):
            return None
        return field, values

    def partitions(self):
        if not self.conditions:
            return [_Part(("runs", run)) for run in plan_reads(self.counts, self.partitions_wanted)]
        found = [(k, rows) for k, rows in enumerate(self._matching()) if len(rows)]
        total = sum(len(r) for _, r in found)
        if not total:
            return [_Part(("rows", []))]
        parts = max(1, min(self.partitions_wanted, total))
        out, cut = [], np.linspace(0, total, parts + 1).astype(np.int64)
        flat = [(k, int(r)) for k, rows in found for r in rows.tolist()]
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
            piece: dict[int, list[int]] = {}
            for k, r in flat[a:b]:
                piece.setdefault(k, []).append(r)
            out.append(_Part(("rows", sorted(piece.items()))))
        return out

    def _matching(self):
        """Per file, the ``ROW_ID``s (ascending) whose index values satisfy every condition."""
        clauses, params = [], []
        for field, values in self.conditions:
            clauses.append(f"{index.column_name(field)} IN ({', '.join('?' * len(values))})")
            params += values
        sql = f"SELECT ROW_ID FROM INDEXES WHERE {' AND '.join(clauses)} ORDER BY ROW_ID"
        out = []
        for path, count in zip(self.files, self.counts):
            conn = index.connect_ro(index.db_path(path))
            try:
                rows = np.array([r[0] for r in conn.execute(sql, params)], dtype=np.int64)
            finally:
                conn.close()
            if len(rows) and (rows.min() < 0 or rows.max() >= count):
                raise IndexFileError(f"{index.db_path(path)}: INDEXES names ROW_ID {int(rows.max())}, outside "
                                     f"the data file's {count} rows")
            out.append(rows)
        return out

    def read(self, partition):
        kind, value = partition.value
        if kind == "runs":
            for f, start, stop in value:
                step = max(1, int(BATCH_BYTES * max(1, self.counts[f]) // max(1, self.sizes[f])))
                with self._open(f, self.columns) as (reader, base):
                    for first in range(start, stop, step):
                        batch = reader.read_batch(slice(base + first, base + min(stop, first + step)))
                        yield columns_batch(batch, self.schema, self.columns)
            return
        needed = list(dict.fromkeys(self.columns + [field for field, _ in self.conditions]))
        for f, rows in value:
            with self._open(f, needed) as (reader, base):
                for a in range(0, len(rows), BATCH_ROWS):
                    ids = rows[a:a + BATCH_ROWS]
                    got = reader.__getitems__([base + i for i in ids])
                    kept = [r for i, r in zip(ids, got) if self._keeps(f, i, r)]
                    if kept:
                        yield rows_batch(kept, self.schema, self.columns)

    @contextlib.contextmanager
    def _open(self, f, columns):
        """A reader of file ``f`` and the global row of its first row: the file alone when local; the
        dataset at its URL otherwise (each executor caches what it fetches, docs/howto-remote.md)."""
        if not self.remote:
            with FileReader([self.files[f]], columns=columns) as reader:
                yield reader, 0
            return
        with FileReader(self.given, columns=columns, storage_options=self.storage) as reader:
            yield reader, sum(self.counts[:f])

    def _keeps(self, f, row_id, row):
        """Whether a row the ``.db`` named satisfies the filters (values from the data file)."""
        for field, values in self.conditions:
            value = row[field]
            value = value.item() if isinstance(value, np.generic) else value
            if value in values:
                continue
            if isinstance(value, str) and "\x00" in value and value.split("\x00", 1)[0] in values:
                return False                  # indexed by the text before its NUL: not an equal value
            raise IndexFileError(f"{index.db_path(self.files[f])}: ROW_ID {row_id} is indexed with {field} in "
                                 f"{values!r} but its data file holds {value!r}: the .db disagrees with its "
                                 f"data file (recordio verify tells more)")
        return True


class FilteringReader(MindRecordReader):
    """The reader when the session pushes filters to Python data sources."""

    def pushFilters(self, filters):
        for f in filters:
            got = self._condition(f)
            if got is None:
                yield f
            else:
                self.conditions.append(got)


class _Part(InputPartition):
    pass

