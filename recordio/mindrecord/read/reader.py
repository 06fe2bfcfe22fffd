"""FileReader: a MindRecord dataset as a Python sequence of row dicts.

Two kinds of position: a **row** is the global position in the dataset (shards in
``shard_addresses`` or list order, then each shard's ``ROW_ID``); a **local row** is
the position inside one shard file. ``reader[i]`` takes rows; the ``.db`` speaks
local rows.

Rows are dicts: numpy scalars of the schema dtype, arrays reshaped to the schema
shape, ``str`` and ``bytes`` (SPEC §2). Data files are memory-mapped; at most
:data:`MAX_OPEN_FILES` maps are open at once, so datasets with many shards do not
exhaust file descriptors. A reader can be pickled and used after ``fork`` or under
``spawn``: maps are reopened in the new process.
"""

from __future__ import annotations

import bisect
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgpack
import numpy as np

from recordio import config
from recordio.errors import FormatError, ParamTypeError, SchemaError
from recordio.mindrecord import encryption
from recordio.mindrecord.codec import unpack_raw
from recordio.mindrecord.format import RAW, page_offset
from recordio.mindrecord.journals import check_journals
from recordio.mindrecord.params import check_num_consumer, check_path_param
from recordio.mindrecord.read.fileset import open_shards, require_given
from recordio.mindrecord.read.shard_set import RowWhere, ShardSet
from recordio.mindrecord.storage import open_storage

__all__ = ["FileReader"]

_unpackb = functools.partial(msgpack.unpackb, raw=False, strict_map_key=False)


class SchemaView(dict):
    """The schema as a dict (``reader.schema``) that can also be called (MindSpore's ``schema()``)."""

    def __call__(self):
        return dict(self)


class FileReader:
    """Read a MindRecord dataset (MindSpore's ``FileReader``, plus the sequence protocol).

    Args:
        file_name: any data file of the dataset (its siblings are found from its header),
            or a list of data files (read exactly those, in that order).
        num_consumer: accepted for MindSpore compatibility; reading needs no threads.
        columns: field names to return, in this order (default: all; raw fields first, then
            blob fields).
        verify: ``None`` (default): check each page against its checksum the first time a row from it
            is read, when the dataset has checksums (recordio writes them; MindSpore's files have
            none) and ``config.get_page_checks()``; ``False``: no checks. ``True``: require the
            checksums, check each page as above, and bind every row to its bytes: the index's
            locations must tile the pages as the page table lays rows out (checked at open, with or
            without ``verify``) and each entry's length prefix must match (checked as the row is read).
            Values still come only from the data file.
        use_index: locate rows through the ``.db`` (as MindSpore does); ``False`` walks the
            header's page table instead, for datasets whose ``.db`` files are lost.
        storage_options, cache_dir, cache_limit: for a dataset at a URL (``s3://``, ``http(s)://``, ...,
            see docs/howto-remote.md): the fsspec options, the node-local cache folder and its bound in
            bytes, over every process using the folder (``None``: unbounded).
    """

    def __init__(self, file_name: str | os.PathLike | Sequence[str | os.PathLike], num_consumer: int = 4,
                 columns: Sequence[str] | None = None, operator: Any = None, *, verify: bool | None = None,
                 use_index: bool = True, storage_options: dict | None = None, cache_dir: str | None = None,
                 cache_limit: int | None = None) -> None:
        storage = open_storage(file_name, storage_options=storage_options, cache_dir=cache_dir,
                               cache_limit=cache_limit, index=use_index)
        file_name = storage.local
        try:
            shards, schema = self._open(file_name, storage, use_index, num_consumer)
            _check_columns(columns, schema)
        except BaseException:
            self._close_opened(storage)
            raise
        self._schema = schema
        self._columns = None if columns is None else list(columns)
        self._starts = np.cumsum([0] + [s.count for s in shards]).tolist()
        self._decode, self._need_raw, self._need_blob = schema.decoder(self._columns)
        self._next_row = 0          # get_next()'s position: one pass over the rows, as in MindSpore
        checks = "strict" if verify else None
        if verify is None and storage.contiguous and config.get_page_checks():
            checks = "pages"        # at a URL, every fetch is checked instead (storage.watch)
        try:
            self._files = ShardSet(shards, storage, checks)
        except BaseException:
            self._close_opened(storage)
            raise

    def _open(self, file_name, storage, use_index, num_consumer):
        for name in file_name if isinstance(file_name, (list, tuple)) else [file_name]:
            check_path_param(name)
        check_num_consumer(num_consumer)
        self._plain = None
        try:
            if encryption.key() is None:    # an encrypted dataset is never appended to: no journals
                require_given(file_name, use_index)
                check_journals(file_name)
            target, self._plain = encryption.plaintext_of(file_name)      # decrypted copies when a key is set
            return open_shards(target, use_index, walk=storage.contiguous)
        except FormatError as exc:
            if encryption.key() is not None:
                raise
            encryption.explain(file_name, exc)

    def _close_opened(self, storage):
        if getattr(self, "_plain", None) is not None:
            self._plain.close()
        storage.close()

    # --- facts ----------------------------------------------------------------------------------

    @property
    def schema(self) -> SchemaView:
        """``{field: {"type": ..., ["shape": [...]]}}``; also callable, as in MindSpore."""
        return SchemaView(self._schema.to_json())

    @property
    def fields(self) -> dict:
        """``{name: Field}``: each field's type, numpy dtype, shape and place (raw record or blob)."""
        return self._schema.fields

    @property
    def typed_schema(self):
        """The dataset's :class:`~recordio.mindrecord.schema.Schema` (fields with their dtypes and
        shapes, raw and blob field order, the row decoder)."""
        return self._schema

    @property
    def files(self) -> list[str]:
        """Paths of the data files, in dataset order."""
        return [s.path for s in self._files.shards]

    @property
    def file_row_counts(self) -> list[int]:
        """Rows in each data file, in dataset order."""
        return [s.count for s in self._files.shards]

    @property
    def file_sizes(self) -> list[int]:
        """Bytes of each data file, in dataset order (as opened)."""
        return [s.size for s in self._files.shards]

    @property
    def is_remote(self) -> bool:
        """Whether the dataset is read through the cache from a URL."""
        return not self._files.storage.contiguous

    @property
    def shard_set(self) -> ShardSet:
        """The open files (:class:`~recordio.mindrecord.read.shard_set.ShardSet`): shards, locations, maps."""
        return self._files

    @property
    def index_fields(self) -> list[str]:
        """Names of the fields indexed in the ``.db`` files."""
        return [f["index_field"] for f in self._files.shards[0].header["index_fields"] or []]

    @property
    def header(self) -> dict:
        """The first file's header (dict; ``page`` holds that file's pages)."""
        return self._files.shards[0].header

    def len(self) -> int:
        """Number of rows (MindSpore's method name)."""
        return len(self)

    def __len__(self) -> int:
        return self._starts[-1]

    # --- rows -----------------------------------------------------------------------------------

    def __getitem__(self, item: int | slice) -> Any:
        if type(item) is not int:
            if isinstance(item, slice):
                return self.__getitems__(range(*item.indices(len(self))))
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
                raise TypeError(f"rows are indexed by int or slice, not {type(item).__name__}")
        i = int(item)
        n = self._starts[-1]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {item} is out of range for a dataset of {n} rows")
        k = bisect.bisect_right(self._starts, i) - 1 if len(self._starts) > 2 else 0
        local = i - self._starts[k]
        return self._read_at(k, local, *self._files.row(k, local))

    def __getitems__(self, indices: Sequence[int] | np.ndarray) -> list[dict]:
        """Rows at ``indices`` (the batched fetch protocol of ``torch.utils.data``): read as one batch of
        columns (:meth:`read_batch`), then split into rows equal to ``self[i]``, value for value.
        A ``DataLoader`` with workers over a reader hands its batches over fastest with
        ``collate_fn=recordio.collate`` (``default_collate``'s batches, through a shared ring)."""
        from recordio.mindrecord.read import columns
        idx = columns.row_numbers(indices, len(self))
        return columns.rows_of(self._read_columns(idx, self._read_names(), "list"), len(idx))

    def _read_names(self) -> list[str]:
        """The fields a row of this reader holds, in row order."""
        return self._columns or list(self._schema.raw_fields) + list(self._schema.blob_fields)

    def __iter__(self) -> Iterator[dict]:
        where = self._files.locations
        block = where.block
        for k, count in enumerate(self.file_row_counts):
            for first in range(0, count, block):
                locs = where.block_of(k, first // block)
                for local, (rs, re_, bs, be) in enumerate(locs.tolist(), first):
                    yield self._read_at(k, local, rs, re_, bs, be)

    def read_batch(self, rows: slice | range | Sequence[int] | np.ndarray,
                   columns: Sequence[str] | None = None, *, bytes_form: str = "array") -> dict:
        """Rows ``rows`` (a slice, a range or any int array; negative rows count from the end) as one
        dict of columns, built without a Python step per value where the layout allows
        (``recordio.mindrecord.read.columns``): numeric scalars as 1-D arrays, strings as lists, arrays as
        ``(n, *shape)`` arrays (a list where ``-1`` shapes differ), bytes as an ``(n, L)`` uint8 array
        (a ``BytesColumn`` of offsets and one buffer where lengths differ). Row ``j`` of each column
        equals ``self[rows[j]]``; values are copies, so none keeps a map open after :meth:`close`.
        ``columns``: fields to read, in this order (default: this reader's columns). ``bytes_form``:
        ``"arrays"`` gives bytes as a list of 1-D uint8 arrays, ``"list"`` as ``bytes`` (the pipeline's
        forms; see the column reader)."""
        from recordio.mindrecord.read import columns as column_reader
        names = self._read_names()
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise ParamTypeError("columns", "list", f"Got {columns!r}; columns is a list of field names.")
            unknown = [c for c in columns if c not in self._schema.fields]
            if unknown:
                raise SchemaError(f"read_batch: column(s) {', '.join(unknown)} not in the schema; the "
                                  f"schema's fields are {', '.join(self._schema.fields)}")
            names = list(columns)
        return self._read_columns(column_reader.row_numbers(rows, len(self)), names, bytes_form)

    def _read_columns(self, idx, names, bytes_form):
        from recordio.mindrecord.read import columns as column_reader
        if self._files.closed:
            raise ValueError(f"{self.files[0]}: I/O on a closed FileReader; open a new reader")
        return column_reader.read_columns(self._files, self._schema, idx, names, bytes_form)

    def get_next(self) -> Iterator[dict]:
        """Yield the rows in order, once (MindSpore's generator method).

        As in MindSpore, ``get_next()`` is one pass over the dataset shared by every call: a second
        call continues where the first stopped and yields nothing once all rows were yielded, and
        :meth:`close` ends it. Iterate over the reader itself, or index it, for a fresh pass.
        """
        while not self._files.closed and self._next_row < len(self):
            row = self[self._next_row]
            self._next_row += 1
            yield row

    def _read_at(self, k, local, rs, re_, bs, be):
        """Row ``local`` of shard ``k`` from its raw range [rs, re_) and blob range [bs, be)."""
        files = self._files
        mm = files.maps.get(k) or files.buffer(k)
        checks = files.checks
        if checks is not None and checks.left:
            checks.row(files, k, rs, re_, bs, be, self._need_raw, self._need_blob)
        direct = files.direct                     # local: slices of the map (the hot path, inline)
        if not direct:
            files.storage.advance()
        record = blob = None
        if self._need_raw:
            raw = mm[rs:re_] if direct else files.fetch(k, mm, rs, re_)    # a fetch's own errors pass as they are
            try:
                record = _unpackb(raw)
            except Exception as exc:       # msgpack raises several unrelated types on bad input
                raise FormatError(f"{files.shards[k].path}: row {local}: corrupt raw record (msgpack): "
                                  f"{exc}") from None
        if self._need_blob:
            blob = mm[bs:be] if direct else files.fetch(k, mm, bs, be)
        return self._decode(record, blob, RowWhere(files.shards[k].path, local))

    def batch_columns(self, idx: np.ndarray, names: Sequence[str], bytes_form: str = "array") -> dict:
        """:meth:`read_batch` without its checks, for a caller that gives rows it already checked: ``idx``
        an int64 array of rows in ``[0, len)``, ``names`` fields of the schema (the pipeline's batches)."""
        return self._read_columns(idx, names, bytes_form)

    def prefetch(self, rows: Sequence[int] | np.ndarray, depth: int = 128, workers: int = 16) -> None:
        """Fetch the rows at ``rows`` ahead of reading them, in that order (a dataset at a URL; a local
        dataset needs nothing): ``depth`` rows ahead of this reader's reads, ``workers`` requests at a
        time; under ``cache_limit`` the blocks needed last in this order are evicted first. The
        pipeline calls it with each epoch's order; a new call replaces the previous plan."""
        if not self.is_remote:
            return
        files = self._files
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        shard, _, locs = files.bulk(idx) if idx.size else (np.zeros(0, np.int64), None, np.zeros((0, 4)))
        paths = self.files
        spans = [[(paths[k], rs, re_)] * self._need_raw + [(paths[k], bs, be)] * self._need_blob
                 for k, (rs, re_, bs, be) in zip(shard.tolist(), locs.tolist())]
        blob_bytes = int((locs[:, 3] - locs[:, 2]).sum()) if len(locs) else 0
        raw_pages = [(s.path, _page_start(s, p), _page_start(s, p) + p.size)
                     for s in files.shards for p in s.pages if p.kind == RAW]
        if self._need_raw and raw_pages and sum(b - a for _, a, b in raw_pages) <= blob_bytes // 50:
            spans.insert(0, raw_pages)          # small raw records: their pages whole, one request each
        files.storage.plan(spans, depth, workers)

    def index_column(self, field: str) -> np.ndarray:
        """Values of an indexed scalar field for every row, in row order, as a numpy array.

        The values are always those of the data files: the raw records are decoded (blob
        pages are never read). MindSpore's ``.db`` cuts strings at NUL and a ``.db`` may
        have been copied from another dataset, so it is not trusted for values.
        """
        if field not in self._schema.fields or self._schema.fields[field].is_blob:
            raise ValueError(f"{field!r} is not a scalar field of this dataset")
        decode, _, _ = self._schema.decoder([field])
        values = []
        files = self._files
        block = files.locations.block
        for k, shard in enumerate(files.shards):
            mm = files.buffer(k)
            for first in range(0, shard.count, block):
                locs = files.locations.block_of(k, first // block)[:, :2].tolist()
                for local, (start, end) in enumerate(locs, first):
                    values.append(decode(unpack_raw(files.fetch(k, mm, start, end)), None,
                                         f"{shard.path}: row {local}")[field])
        dtype = self._schema.fields[field].dtype or object
        return np.array(values, dtype=dtype)

    # --- files ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the memory maps and files. A closed reader yields no more rows from
        :meth:`get_next` (as MindSpore's) and raises ``ValueError`` when read otherwise; its facts
        (``len``, ``schema``, ...) stay available. Closing again does nothing."""
        self._files.close()
        if self._plain is not None:
            self._plain.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def order_columns(self, columns: Sequence[str]) -> None:
        """Return the same fields with their keys in ``columns`` order (MindDataset's sorted order)."""
        if sorted(columns) != sorted(self._columns or self._schema.fields):
            raise ValueError(f"order_columns: {columns} are not the selected fields")
        self._columns = list(columns)
        self._decode, _, _ = self._schema.decoder(self._columns)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_decode"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._decode, _, _ = self._schema.decoder(self._columns)

    def __repr__(self):
        return f"FileReader({self.files[0]!r}, files={len(self.files)}, rows={len(self)})"


def _check_columns(columns, schema):
    """``columns`` a list of the schema's field names (MindSpore's errors otherwise)."""
    if columns is None:
        return
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ParamTypeError("columns", "list", f"Got {columns!r}; columns is a list of field names.")
    unknown = [c for c in columns if c not in schema.fields]
    if unknown:
        error = SchemaError(f"Invalid data, column name: {', '.join(unknown)} can not found in schema. "
                            f"Please check the 'columns' parameter: the schema's fields are "
                            f"{', '.join(schema.fields)}.")
        setattr(error, "unknown_columns", unknown)   # MindDataset reports it when its pipeline first runs
        raise error


def _page_start(shard, page):
    return page_offset(shard.header["header_size"], shard.header["page_size"], page.page_id)
