"""FileWriter: rows -> pages -> shard files + ``.db`` indexes, published atomically at commit.

MindSpore's API and page algorithm, so that the same calls give byte-identical data
files. Differences (SPEC §4): a bad row raises and its call writes nothing; leftover
rows of a call go to the first shards; the ``.db`` keeps whole strings and stores NaN
as NULL; header/page sizes always apply; empty single blobs are stored as given.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from recordio.mindrecord.write import columns as columnar
from recordio.mindrecord import format as fmt
from recordio.mindrecord import index
from recordio.mindrecord.write.locks import DatasetLock
from recordio.mindrecord.write.commit import CommitOnExit, Staging, clean_stale
from recordio.errors import (DatasetExistsError, FormatError, MRMDefineIndexError, MRMGetMetaError,
                             MRMInvalidSchemaError, ParamTypeError, SchemaError)
from recordio.mindrecord import encryption
from recordio.mindrecord.params import check_bool, check_path_param
from recordio.mindrecord.write.pages import StreamingPages
from recordio.mindrecord.write.recovery import recover, writer_files
from recordio.mindrecord.schema import Schema
from recordio.mindrecord.storage.urls import is_url
from recordio.mindrecord.storage.upload import Upload
from recordio.mindrecord.write.shard_files import ShardFiles, split_counts

__all__ = ["FileWriter"]


class FileWriter(CommitOnExit):
    """Write rows into ``shard_num`` MindRecord files (MindSpore's ``FileWriter``).

    ``with FileWriter(...) as w:`` commits on a clean exit and publishes nothing when
    the block raises. Nothing is visible at the target path before :meth:`commit`.

    Beyond MindSpore's arguments: ``checksums`` (default True) stores a checksum of every
    page in each ``.db`` (``verify``/``FileReader(verify=True)`` use them; MindSpore ignores
    them); ``fsync`` (default True) makes commit durable before it returns.
    """

    def __init__(self, file_name: str | os.PathLike, shard_num: int = 1, overwrite: bool = False, *,
                 checksums: bool = True, fsync: bool = True, storage_options: dict | None = None) -> None:
        self._upload = None
        if is_url(file_name):                   # staged and committed here, then uploaded (upload.py)
            check_bool(overwrite, "overwrite")
            self._upload = Upload(file_name, shard_num, overwrite, storage_options)
            file_name, overwrite = self._upload.local_name, True
        names = fmt.shard_file_names(check_path_param(file_name), shard_num)
        check_bool(overwrite, "overwrite")
        if encryption.key() is not None and shard_num != 1:
            raise RuntimeError("When encode mode is enabled, the automatic sharding function is unavailable. "
                               f"shard_num is {shard_num} (MindSpore decrypts only the files it is given): write "
                               "one file per FileWriter.")
        directory = os.path.dirname(os.path.abspath(names[0]))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"directory {directory} of {file_name} does not exist")
        self._targets = [os.path.abspath(n) for n in names]
        self._overwrite, self._append = overwrite, False
        self._options = {"checksums": bool(checksums), "fsync": bool(fsync)}
        self._lock = DatasetLock(self._targets[0])          # one writer per dataset, until publish
        self._check_targets()
        self._header_size = fmt.DEFAULT_HEADER_SIZE
        self._page_size = fmt.DEFAULT_PAGE_SIZE
        self._schema: Any = None
        self._desc = ""
        self._index_fields: list[str] = []
        self._index_set = False
        self._files: Any = None     # ShardFiles, created at the first write
        self._shards: Any = None
        self._compression_size = 0
        self._file_compression: dict[int, int] = {}
        self._parallel: bool | None = None
        self._committed = False

    @classmethod
    def open_for_append(cls, file_name: str | os.PathLike, *, checksums: bool = True,
                        fsync: bool = True) -> FileWriter:
        """A writer that adds rows to the existing dataset of ``file_name`` (any of its shards).

        Schema, index fields and sizes come from the dataset. Until :meth:`commit` the
        dataset keeps its old content; a crash at any point leaves its old rows readable.
        """
        from recordio.mindrecord.write.append import open_appending

        start = open_appending(file_name, bool(checksums), bool(fsync))
        writer = cls.__new__(cls)
        writer._upload, writer._targets, writer._lock = None, start.targets, start.lock
        writer._overwrite, writer._append = False, True
        writer._options = {"checksums": bool(checksums), "fsync": bool(fsync)}
        writer._header_size, writer._page_size = start.header_size, start.page_size
        writer._schema, writer._desc, writer._index_fields = start.schema, start.desc, start.index_fields
        writer._index_set, writer._parallel, writer._committed = True, False, False
        writer._compression_size, writer._file_compression = start.compression_size, {}
        writer._index_values, writer._elements = None, start.elements
        writer._files, writer._shards = start.files, start.files.states
        return writer

    # --- configuration (MindSpore names) ----------------------------------------------------------

    def add_schema(self, content: dict, desc: str | None = None) -> int:
        """Set the schema (once); returns the schema id, always 0."""
        if self._schema is not None:
            raise SchemaError("the schema is already added; a dataset has exactly one schema")
        if desc is not None and not isinstance(desc, str):
            raise TypeError(f"desc must be a str, got {type(desc).__name__}")
        try:
            self._schema = Schema(content)
        except SchemaError as exc:
            raise MRMInvalidSchemaError(str(exc)) from None
        self._desc = desc or ""
        return 0

    def add_index(self, index_fields: list[str]) -> None:
        """Select the scalar fields that get ``.db`` columns (default: every scalar field)."""
        if self._schema is None:
            raise MRMGetMetaError("Failed to get meta info. add_index needs a schema: call add_schema first")
        if not isinstance(index_fields, list):
            raise ParamTypeError("index_fields", "list")
        if not index_fields:
            raise SchemaError(f"index_fields must be a non-empty list of field names, got {index_fields!r}")
        self._require_not_started("add_index")
        before = list(self._index_fields)
        try:
            for name in index_fields:
                self._check_index_field(name)
                self._index_fields.append(name)
            _check_index_columns(self._index_fields)            # before any row is written
        except BaseException:
            self._index_fields = before
            raise
        self._index_set = True

    def _check_index_field(self, name):
        fields = self._schema.fields
        if not isinstance(name, str) or name not in fields:
            raise SchemaError(f"Invalid input, 'index_fields': {name} can not found in schema: "
                              f"{', '.join(fields)}. Please use 'add_index' function to add proper "
                              f"'index_fields'.")
        if fields[name].is_blob:
            raise MRMDefineIndexError(f"Failed to set field {name} since it's not primitive type: it is a "
                                      f"{fields[name].type} {'array' if fields[name].shape else 'field'}; "
                                      f"only scalar fields can be indexed")
        if name[0].isdigit():
            raise SchemaError(f"index field {name!r} starts with a digit; MindSpore cannot query such a "
                              f".db column, so it cannot be indexed (it is still stored and read)")
        if name in self._index_fields:
            raise SchemaError(f"index field {name!r} is added repeatedly")
        _check_index_columns(self._index_fields + [name])

    def set_header_size(self, header_size: int) -> None:
        """Bytes reserved for each file's header (16 KiB..128 MiB, multiple of 4; default 16 MiB)."""
        self._require_not_started("set_header_size")
        self._header_size = fmt.check_header_size(header_size)

    def set_page_size(self, page_size: int) -> None:
        """Bytes of each page (32 KiB..256 MiB, multiple of 4; default 32 MiB)."""
        self._require_not_started("set_page_size")
        self._page_size = fmt.check_page_size(page_size)

    def _require_not_started(self, what):
        if self._files is not None:
            raise RuntimeError(f"{what} must be called before the first write_raw_data")

    def _check_targets(self):
        for target in self._targets:                # a writer never follows a link out of its folder
            for path in (target, target + ".db"):
                fmt.check_inside(path, "FileWriter")
                if os.path.exists(path) and not os.path.isfile(path):
                    raise FormatError(f"Invalid file, mindrecord files already exist. Please check file path: "
                                      f"{path}. It exists and is not a regular file; a writer replaces files only.")
        if self._overwrite or self._append:
            return
        existing = [p for t in self._targets for p in (t, t + ".db") if os.path.lexists(p)]
        if existing:
            raise DatasetExistsError(f"Invalid file, mindrecord files already exist. Please check file path: "
                                     f"{existing[0]}. If you do not want to keep the files, set the "
                                     f"'overwrite' parameter to True and try again, or use "
                                     f"FileWriter.open_for_append to add rows.")

    # --- writing ----------------------------------------------------------------------------------

    @property
    def index_fields(self) -> list[str]:
        """Fields that get ``.db`` columns: those given to add_index, else every scalar field."""
        if self._index_set:
            return list(self._index_fields)
        return [f for f in self._schema.raw_fields if not f[0].isdigit()]   # see _check_index_field

    def _start(self, what="write_raw_data"):
        if self._schema is None:
            raise SchemaError("no schema: call add_schema before write_raw_data or commit")
        failure = getattr(self, "_failure", None)
        if failure is not None:
            raise RuntimeError(f"{self._targets[0]}: an earlier write failed ({type(failure).__name__}: "
                               f"{failure}); the writer aborted and published nothing") from failure
        if self._committed:
            raise RuntimeError(f"Not allowed to call `{what}` on flushed MindRecord files. The dataset is "
                               f"committed; use FileWriter.open_for_append to add rows.")
        if self._files is None:
            _check_index_columns(self.index_fields)
            self._check_targets()
            recover(*writer_files(self._targets))
            clean_stale(os.path.dirname(self._targets[0]))
            fields = [(f, self._schema.fields[f].type) for f in self.index_fields]
            self._files = ShardFiles(Staging(self._targets), self._header_size, self._page_size,
                                     index_fields=fields, **self._options)
            self._shards = self._files.states
            self._index_values = None            # they go to the staged .db files as rows are written
            self._elements = [np.zeros(len(self._schema.counted), np.int64) for _ in self._targets]

    def write_raw_data(self, raw_data: list[dict], parallel_writer: bool = False) -> None:
        """Validate every row of ``raw_data`` (a list of dicts), then write them all.

        A bad row raises :class:`SchemaError` naming the row, field, expected and found;
        the call then writes nothing and later calls still work.
        """
        if not isinstance(parallel_writer, bool):
            raise TypeError("parallel_writer must be a bool")
        if not isinstance(raw_data, list):
            raise ParamTypeError("raw_data", "list")
        if not raw_data:
            raise SchemaError("There is no valid data which can be written by 'write_raw_data' to mindrecord "
                              "file: raw_data is an empty list")
        self._start_call(parallel_writer)
        self._write(self._encode(raw_data), parallel_writer)

    def write_columns(self, columns: dict, parallel_writer: bool = False) -> None:
        """Write rows given as columns (``{field: column}``, one length): the same files, checks and
        errors as :meth:`write_raw_data` of the rows they stand for (``write/columns.py`` lists the columns
        taken: numpy arrays for numbers, lists of ``str``/``bytes``/arrays, a ``BytesColumn``)."""
        if not isinstance(parallel_writer, bool):
            raise TypeError("parallel_writer must be a bool")
        n = columnar.column_length(columns)
        if not n:
            raise SchemaError("There is no valid data which can be written by 'write_columns' to mindrecord "
                              "file: the columns are empty")
        self._start_call(parallel_writer)
        extra = sorted(set(columns) - set(self._schema.fields))
        if extra:
            warnings.warn(f"field(s) {extra} are not in the schema and are not stored", stacklevel=2)
        encoded = columnar.encode_columns(self._schema, columns, n, self.index_fields,
                                          self._page_size - fmt.ENTRY_PREFIX)
        if encoded is None:              # a value the column checks refuse: its row names it (or it passes)
            encoded = self._encode(columnar.rows_of(self._schema, columns, n))
        self._write(encoded, parallel_writer)

    def _start_call(self, parallel_writer):
        self._start()
        if self._parallel is None:
            self._parallel = parallel_writer
        elif self._parallel != parallel_writer:
            raise RuntimeError(f"The parameter `parallel_writer` must be consistent during use. The first call "
                               f"gave {self._parallel}, this one {parallel_writer}.")

    def _write(self, encoded, parallel_writer):
        if not len(encoded[0]):
            return
        try:
            if parallel_writer:
                self._write_rotating(encoded)
            else:
                self._write_split(encoded)
        except BaseException as exc:   # a failed write (disk full, a size limit, EIO): nothing is published
            self.abort()
            self._failure = exc
            raise

    def _encode(self, raw_data):
        schema, limit = self._schema, self._page_size - fmt.ENTRY_PREFIX
        index_pos = [schema.raw_fields.index(f) for f in self.index_fields]
        raws, blobs, values, saved, extra = [], [], [], 0, set()
        counted, elements = schema.counted, []
        for i, row in enumerate(raw_data):
            if not isinstance(row, dict):
                raise ParamTypeError("raw_data item", "dict", f"In raw_data, row {i} is a {type(row).__name__}.")
            raw_values, raw, blob, row_saved = schema.encode_row(row, i)
            if len(blob) > limit or len(raw) > limit:
                kind, size = ("blob", len(blob)) if len(blob) > limit else ("raw record", len(raw))
                raise SchemaError(f"row {i}: its {kind} of {size} bytes does not fit in a page of "
                                  f"{self._page_size} bytes; raise it with set_page_size()")
            if len(row) != len(schema.fields):     # every schema field is present: more keys are extra
                extra.update(k for k in row if k not in schema.fields)
            raws.append(raw)
            blobs.append(blob)
            values.append(tuple(raw_values[p] for p in index_pos))
            saved += row_saved
            if counted:
                elements.append([row[f].size for f in counted])
        if extra:
            warnings.warn(f"field(s) {sorted(extra)} are not in the schema and are not stored", stacklevel=3)
        return raws, blobs, values, saved, np.array(elements, dtype=np.int64).reshape(len(raws), len(counted))

    def _write_split(self, encoded):
        raws, blobs, values, saved, elements = encoded
        start = 0
        held = [pages.rows for pages in self._shards]
        for shard, count in zip(range(len(self._shards)), split_counts(len(raws), len(self._shards), held)):
            if count:
                self._write_shard(shard, raws[start:start + count], blobs[start:start + count],
                                  values[start:start + count])
                self._count_elements(shard, elements[start:start + count])
            start += count
        self._compression_size += saved

    def _write_rotating(self, encoded):
        raws, blobs, values, saved, elements = encoded
        shard = self._files.next_rotating(len(self._shards))
        self._write_shard(shard, raws, blobs, values)
        self._count_elements(shard, elements)
        self._compression_size += saved
        self._file_compression[shard] = self._file_compression.get(shard, 0) + saved

    def _count_elements(self, shard, elements):
        """Add the rows' element counts of the variable-shape array fields to ``shard``'s totals (kept in
        its ``.db``; a total that is unknown (an append to a dataset written without them) stays unknown)."""
        totals = self._elements[shard]
        if totals is not None and elements.size:
            self._elements[shard] = totals + elements.sum(axis=0)

    def _write_shard(self, shard, raws, blobs, values):
        self._files.add_rows(shard, blobs, raws, values)

    # --- commit -----------------------------------------------------------------------------------

    def commit(self) -> None:
        """Write headers and indexes and publish the dataset atomically."""
        self._start("commit")
        try:
            self._check_targets()
            self._files.finish(self._shards, self._header_fields(), self._index_values,
                               [(f, self._schema.fields[f].type) for f in self.index_fields],
                               independent=bool(self._parallel))
        except BaseException:
            self._files.abort()
            self._release()
            raise
        self._committed = True
        self._release()
        upload = getattr(self, "_upload", None)        # None for an appending writer too
        if upload is not None:
            upload.publish(self._targets)

    def _release(self):
        for shard in getattr(self, "_shards", None) or []:
            if isinstance(shard, StreamingPages):
                shard.close()
        lock = getattr(self, "_lock", None)
        if lock is not None:
            lock.release()

    def _header_fields(self):
        sizes = [max(0, self._file_compression.get(i, 0)) for i in range(len(self._shards))]
        return {"index_fields": self.index_fields, "compression_size": max(0, self._compression_size),
                "file_compression_sizes": sizes,      # parallel_writer: each file is its own dataset
                "schema": self._schema.to_json(), "blob_fields": self._schema.blob_fields,
                "desc": self._desc, "elements": [None if t is None else dict(zip(self._schema.counted, t.tolist()))
                                                 for t in self._elements]}

    def abort(self) -> None:
        """Drop everything written so far; the target path is left as it was."""
        if self._files is not None and not self._committed:
            self._files.abort()
            self._committed = True
        self._release()                       # an aborted writer writes no more: another may start


    def __del__(self):
        files = getattr(self, "_files", None)
        if files is not None and not getattr(self, "_committed", True):
            files.abort()


SQLITE_MAX_COLUMNS = 2000        # SQLite's default SQLITE_MAX_COLUMN
_INDEX_BASE_COLUMNS = len(index.INDEX_COLUMNS)   # ROW_ID and the raw/blob page ids and offsets
_COLUMNS_PER_FIELD = 2           # each index field: a page-offset column and its value column


def _check_index_columns(fields):
    """The ``.db`` must be creatable: SQLite column names ignore case, so two index fields may not
    differ only in case, and a table has at most :data:`SQLITE_MAX_COLUMNS` columns."""
    columns = _INDEX_BASE_COLUMNS + _COLUMNS_PER_FIELD * len(fields)
    if columns > SQLITE_MAX_COLUMNS:
        raise SchemaError(f"{len(fields)} index fields need {columns} .db columns, more than SQLite's "
                          f"{SQLITE_MAX_COLUMNS}; index at most {(SQLITE_MAX_COLUMNS - _INDEX_BASE_COLUMNS) // 2} "
                          f"fields with add_index([...])")
    seen = {}
    for name in fields:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise SchemaError(f"fields {other!r} and {name!r} differ only in case, so their .db index columns "
                              f"would clash; index one of them with add_index([...])")
