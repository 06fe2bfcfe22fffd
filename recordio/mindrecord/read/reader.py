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
import collections
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgpack
import numpy as np

from recordio.mindrecord.checksums import HEADER_SLOT, digest_bytes, slot_range
from recordio.mindrecord.codec import unpack_raw
from recordio.mindrecord.format import ENTRY_PREFIX
from recordio.errors import ChecksumError, FormatError, ParamTypeError, SchemaError
from recordio.mindrecord import encryption, fileio
from recordio.mindrecord.params import check_num_consumer, check_path_param
from recordio.mindrecord.write.recovery import check_journals
from recordio.mindrecord.read.fileset import open_shards, require_given
from recordio.mindrecord.format import BLOB, RAW, page_offset
from recordio.mindrecord.read.locations import Locations
from recordio.mindrecord.storage.store import is_url
from recordio.mindrecord.storage.remote import open_remote

__all__ = ["FileReader"]

MAX_OPEN_FILES = 64
KEEP_OPEN = 32           # datasets of up to this many files keep them open from open time, so that a
                         # replaced dataset still reads as the version opened; larger ones open files on
                         # demand and refuse (DatasetChangedError) a file that is no longer the one opened
_CHUNK = 4096
_unpackb = functools.partial(msgpack.unpackb, raw=False, strict_map_key=False)


class _Where:
    """``"<file>: row <n>"``, formatted only when an error message needs it."""

    __slots__ = ("path", "row")

    def __init__(self, path, row):
        self.path, self.row = path, row

    def __str__(self):
        return f"{self.path}: row {self.row}"


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
        verify: check each page's checksum the first time a row from it is read, and bind every
            row to its bytes: the index's locations must tile the pages as the page table lays rows
            out (checked at open, with or without ``verify``) and each entry's length prefix must
            match (checked as the row is read). Values still come only from the data file.
        use_index: locate rows through the ``.db`` (as MindSpore does); ``False`` walks the
            header's page table instead, for datasets whose ``.db`` files are lost.
        storage_options, cache_dir, cache_limit: for a dataset at a URL (``s3://``, ``http(s)://``, ...,
            see docs/howto-remote.md): the fsspec options, the node-local cache folder and its bound in
            bytes, over every process using the folder (``None``: unbounded).
    """

    def __init__(self, file_name: str | os.PathLike | Sequence[str | os.PathLike], num_consumer: int = 4,
                 columns: Sequence[str] | None = None, operator: Any = None, *, verify: bool = False,
                 use_index: bool = True, storage_options: dict | None = None, cache_dir: str | None = None,
                 cache_limit: int | None = None) -> None:
        self._remote = None
        if is_url(file_name):
            self._remote = open_remote(file_name, cache_dir, cache_limit, storage_options, index=use_index)
            file_name = self._remote.local
            if not use_index:
                self._remote.ensure_all()           # the page table is walked through every page
        for name in file_name if isinstance(file_name, (list, tuple)) else [file_name]:
            check_path_param(name)
        check_num_consumer(num_consumer)
        self._plain = None
        try:
            if encryption.key() is None:    # an encrypted dataset is never appended to: no journals
                require_given(file_name, use_index)
                check_journals(file_name)
            target, self._plain = encryption.plaintext_of(file_name)      # decrypted copies when a key is set
            shards, schema = open_shards(target, use_index, walk=self._remote is None)
        except FormatError as exc:
            if self._plain is not None:
                self._plain.close()
            if encryption.key() is not None:
                raise
            encryption.explain(file_name, exc)
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise ParamTypeError("columns", "list", f"Got {columns!r}; columns is a list of field names.")
            unknown = [c for c in columns if c not in schema.fields]
            if unknown:
                if self._plain is not None:
                    self._plain.close()
                error = SchemaError(f"Invalid data, column name: {', '.join(unknown)} can not found in schema. "
                                    f"Please check the 'columns' parameter: the schema's fields are "
                                    f"{', '.join(schema.fields)}.")
                setattr(error, "unknown_columns", unknown)   # MindDataset reports it when its pipeline first runs
                raise error
        self._shards = shards
        self._schema = schema
        self._columns = None if columns is None else list(columns)
        self._verify = verify
        self._starts = np.cumsum([0] + [s.count for s in shards]).tolist()
        self._decode, self._need_raw, self._need_blob = schema.decoder(self._columns)
        self._maps: collections.OrderedDict = collections.OrderedDict()
        self._fds: dict[int, int] = {}
        self._closed = False
        self._next_row = 0          # get_next()'s position: one pass over the rows, as in MindSpore
        if len(shards) <= KEEP_OPEN:
            for k in range(len(shards)):
                self._fds[k] = self._open_checked(k)
        for k, shard in enumerate(shards):
            shard.source.verify_all = verify      # a walking source then reads the .db's locations, checked
            shard.source.fd = self._fds.get(k)    # and maps the file this reader holds open
        self._where = Locations([s.source for s in shards], [s.count for s in shards])
        self._where.prime()
        self._verified: list[set] = [set() for _ in shards]
        if verify:
            for shard in shards:
                shard.checksums = shard.source.read_checksums()      # one row per page: only to verify
            _require_checksums(shards)
        if self._remote is not None:            # every fetched page is checked (docs/howto-remote.md)
            for shard in shards:
                sums = shard.checksums if verify else shard.source.read_checksums()
                self._remote.checks.add(shard.path, shard.header["header_size"], shard.header["page_size"],
                                        shard.size, sums)

    def _open_checked(self, k):
        """A descriptor of shard ``k``'s file, refused if the path now names another file (the dataset
        was replaced since this reader, or the one it was pickled from, opened it)."""
        shard = self._shards[k]
        return fileio.open_checked(shard.path, shard.identity)

    # --- facts ----------------------------------------------------------------------------------

    @property
    def schema(self) -> SchemaView:
        """``{field: {"type": ..., ["shape": [...]]}}``; also callable, as in MindSpore."""
        return SchemaView(self._schema.to_json())

    @property
    def files(self) -> list[str]:
        """Paths of the data files, in dataset order."""
        return [s.path for s in self._shards]

    @property
    def file_row_counts(self) -> list[int]:
        """Rows in each data file, in dataset order."""
        return [s.count for s in self._shards]

    @property
    def index_fields(self) -> list[str]:
        """Names of the fields indexed in the ``.db`` files."""
        return [f["index_field"] for f in self._shards[0].header["index_fields"] or []]

    @property
    def header(self) -> dict:
        """The first file's header (dict; ``page`` holds that file's pages)."""
        return self._shards[0].header

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
        k = bisect.bisect_right(self._starts, i) - 1 if len(self._shards) > 1 else 0
        local = i - self._starts[k]
        return self._read_at(k, local, *self._where.row(k, local))

    def __getitems__(self, indices: Sequence[int] | np.ndarray) -> list[dict]:
        """Rows at ``indices`` (the batched fetch protocol of ``torch.utils.data``): read as one batch of
        columns (:meth:`read_batch`), then split into rows equal to ``self[i]``, value for value.
        A ``DataLoader`` with workers over a reader hands its batches over fastest with
        ``collate_fn=recordio.collate`` (``default_collate``'s batches, through a shared ring)."""
        from recordio.mindrecord.read.columns import read_columns, row_numbers, rows_of
        idx = row_numbers(indices, len(self))
        return rows_of(read_columns(self, idx, self._read_names(), bytes_form="list"), len(idx))

    def _read_names(self) -> list[str]:
        """The fields a row of this reader holds, in row order."""
        return self._columns or list(self._schema.raw_fields) + list(self._schema.blob_fields)

    def __iter__(self) -> Iterator[dict]:
        block = self._where.block
        for k, shard in enumerate(self._shards):
            for first in range(0, shard.count, block):
                locs = self._where.block_of(k, first // block)
                for local, (rs, re_, bs, be) in enumerate(locs.tolist(), first):
                    yield self._read_at(k, local, rs, re_, bs, be)

    def read_batch(self, rows: slice | range | Sequence[int] | np.ndarray,
                   columns: Sequence[str] | None = None) -> dict:
        """Rows ``rows`` (a slice, a range or any int array; negative rows count from the end) as one
        dict of columns, built without a Python step per value where the layout allows
        (``recordio.mindrecord.read.columns``): numeric scalars as 1-D arrays, strings as lists, arrays as
        ``(n, *shape)`` arrays (a list where ``-1`` shapes differ), bytes as an ``(n, L)`` uint8 array
        (a ``BytesColumn`` of offsets and one buffer where lengths differ). Row ``j`` of each column
        equals ``self[rows[j]]``; values are copies, so none keeps a map open after :meth:`close`.
        ``columns``: fields to read, in this order (default: this reader's columns)."""
        from recordio.mindrecord.read.columns import read_columns, row_numbers
        names = self._read_names()
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise ParamTypeError("columns", "list", f"Got {columns!r}; columns is a list of field names.")
            unknown = [c for c in columns if c not in self._schema.fields]
            if unknown:
                raise SchemaError(f"read_batch: column(s) {', '.join(unknown)} not in the schema; the "
                                  f"schema's fields are {', '.join(self._schema.fields)}")
            names = list(columns)
        if self._closed:
            raise ValueError(f"{self._shards[0].path}: I/O on a closed FileReader; open a new reader")
        return read_columns(self, row_numbers(rows, len(self)), names)

    def get_next(self) -> Iterator[dict]:
        """Yield the rows in order, once (MindSpore's generator method).

        As in MindSpore, ``get_next()`` is one pass over the dataset shared by every call: a second
        call continues where the first stopped and yields nothing once all rows were yielded, and
        :meth:`close` ends it. Iterate over the reader itself, or index it, for a fresh pass.
        """
        while not self._closed and self._next_row < len(self):
            row = self[self._next_row]
            self._next_row += 1
            yield row

    def _read_at(self, k, local, rs, re_, bs, be):
        """Row ``local`` of shard ``k`` from its raw range [rs, re_) and blob range [bs, be)."""
        mm = self._maps.get(k) or self._map(k)
        if self._remote is not None:
            self._remote.advance()
        if self._verify:
            self._check_row(k, rs, bs)
        record = blob = None
        if self._need_raw:
            raw = mm[rs:re_] if self._remote is None else self._remote.read(self._shards[k].path, rs, re_)
            try:
                record = _unpackb(raw)
            except Exception as exc:       # msgpack raises several unrelated types on bad input
                raise FormatError(f"{self._shards[k].path}: row {local}: corrupt raw record (msgpack): "
                                  f"{exc}") from None
        if self._need_blob:
            blob = mm[bs:be] if self._remote is None else self._remote.read(self._shards[k].path, bs, be)
        return self._decode(record, blob, _Where(self._shards[k].path, local))

    def _bytes(self, k, mm, start, end):
        """Bytes [start, end) of shard ``k``: from its map, or through the cache for a remote dataset."""
        if self._remote is None:
            return mm[start:end]
        return self._remote.read(self._shards[k].path, start, end)

    def prefetch(self, rows: Sequence[int] | np.ndarray, depth: int = 128, workers: int = 16) -> None:
        """Fetch the rows at ``rows`` ahead of reading them, in that order (a dataset at a URL; a local
        dataset needs nothing): ``depth`` rows ahead of this reader's reads, ``workers`` requests at a
        time; under ``cache_limit`` the blocks needed last in this order are evicted first. The
        pipeline calls it with each epoch's order; a new call replaces the previous plan."""
        if self._remote is None:
            return
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        shard, _, locs = self._where.bulk(idx) if idx.size else (np.zeros(0, np.int64), None, np.zeros((0, 4)))
        paths = [s.path for s in self._shards]
        spans = [[(paths[k], rs, re_)] * self._need_raw + [(paths[k], bs, be)] * self._need_blob
                 for k, (rs, re_, bs, be) in zip(shard.tolist(), locs.tolist())]
        blob_bytes = int((locs[:, 3] - locs[:, 2]).sum()) if len(locs) else 0
        raw_pages = [(s.path, fmt_page_offset(s, p), fmt_page_offset(s, p) + p.size)
                     for s in self._shards for p in s.pages if p.kind == RAW]
        if self._need_raw and raw_pages and sum(b - a for _, a, b in raw_pages) <= blob_bytes // 50:
            spans.insert(0, raw_pages)          # small raw records: their pages whole, one request each
        self._remote.plan(spans, depth, workers)

    def _check_row(self, k, rs, bs):
        shard = self._shards[k]
        self._check_page(k, HEADER_SLOT)
        if self._need_raw:
            self._check_page(k, shard.page_of(rs))
        if self._need_blob:
            self._check_page(k, shard.page_of(bs))

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
        block = self._where.block
        for k, shard in enumerate(self._shards):
            mm = self._map(k)
            for first in range(0, shard.count, block):
                locs = self._where.block_of(k, first // block)[:, :2].tolist()
                for local, (start, end) in enumerate(locs, first):
                    values.append(decode(unpack_raw(self._bytes(k, mm, start, end)), None, f"{shard.path}: row {local}")[field])
        dtype = self._schema.fields[field].dtype or object
        return np.array(values, dtype=dtype)

    # --- files ----------------------------------------------------------------------------------

    def _map(self, k):
        mm = self._maps.get(k)
        if mm is not None and mm.closed:          # a walking source's map, closed with its source
            del self._maps[k]
            mm = None
        if mm is not None:
            self._maps.move_to_end(k)
            return mm
        if self._closed:
            raise ValueError(f"{self._shards[k].path}: I/O on a closed FileReader; open a new reader")
        shard = self._shards[k]
        mapped = getattr(shard.source, "mapped", None)
        if mapped is not None:            # a walking source: one map of the file for the walk and the reads
            mm = mapped()
        else:
            mm = _map_file(shard, self._fds.get(k), lambda: self._open_checked(k))
        self._maps[k] = mm
        if len(self._maps) > MAX_OPEN_FILES:
            self._maps.popitem(last=False)[1].close()
        return mm

    def _check_page(self, k, slot):
        """Check a page slot (or the header region, slot -1) against its checksum, once."""
        if slot in self._verified[k]:
            return
        shard = self._shards[k]
        _, nbytes, row_start, row_end, digest = shard.checksums[slot]
        start, end = slot_range(shard.header["header_size"], shard.header["page_size"], slot, shard.size)
        if self._remote is not None:
            self._remote.ensure(shard.path, start, end)          # the page whole, then checked
        if start + nbytes > end or _digest_view(self._map(k), start, start + nbytes) != digest:
            what = "header" if slot == HEADER_SLOT else f"page {slot}"
            raise ChecksumError(f"{shard.path}: {what} (rows {row_start}..{row_end - 1}) does not match its "
                                f"checksum: the file is corrupt")
        if slot != HEADER_SLOT:
            _check_prefixes(self._map(k), shard, self._page_entries(k, slot, start, end))
        self._verified[k].add(slot)

    def _page_entries(self, k, slot, start, end):
        """Rows ``(data_start, data_end, row, is_blob)`` of the entries of page ``slot`` of shard ``k`` (the
        rows its page-table entry gives it) whose length prefix lies in the byte range [start, end)."""
        shard = self._shards[k]
        page = shard.pages[slot]
        if page.kind == BLOB:
            spans, col = [(page.start_row, page.end_row)], 2
        else:
            pt = shard.page_table
            at = np.searchsorted(pt.group_ids, [g for g, _ in page.groups]).tolist()
            spans = [(shard.pages[int(pt.group_pages[i])].start_row, shard.pages[int(pt.group_pages[i])].end_row)
                     for i, (g, _) in zip(at, page.groups) if i < len(pt.group_ids) and pt.group_ids[i] == g]
            col = 0
        parts = []
        for a, b in spans:
            a, b = max(a, 0), min(b, shard.count)
            if b > a:
                locs = self._where.shard_rows(k, a, b)
                rows = np.arange(a, b, dtype=np.int64)
                parts.append(np.stack([locs[:, col], locs[:, col + 1], rows, rows * 0 + (col == 2)], axis=1))
        entries = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)
        inside = (entries[:, 0] >= start + ENTRY_PREFIX) & (entries[:, 0] < end + ENTRY_PREFIX)
        return entries[inside]

    def close(self) -> None:
        """Release the memory maps and files. A closed reader yields no more rows from
        :meth:`get_next` (as MindSpore's) and raises ``ValueError`` when read otherwise; its facts
        (``len``, ``schema``, ...) stay available. Closing again does nothing."""
        self._closed = True
        if self._remote is not None:
            self._remote.close()
        if self._plain is not None:
            self._plain.close()
        where = getattr(self, "_where", None)
        if where is not None:            # the .db connections (and the walks' maps) of this process
            where.close()
        while self._maps:
            self._maps.popitem()[1].close()
        while self._fds:
            os.close(self._fds.popitem()[1])

    def __del__(self, _close=os.close):
        # os.close bound at definition: at interpreter exit the module's globals may be None already
        for fd in getattr(self, "_fds", {}).values():
            try:
                _close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _order_columns(self, columns):
        """Return the same fields with their keys in ``columns`` order (MindDataset's sorted order)."""
        if sorted(columns) != sorted(self._columns or self._schema.fields):
            raise ValueError(f"_order_columns: {columns} are not the selected fields")
        self._columns = list(columns)
        self._decode, _, _ = self._schema.decoder(self._columns)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_maps"] = collections.OrderedDict()
        state["_fds"] = {}                      # a copy reopens by path, checking it is the same file
        state["_decode"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._decode, _, _ = self._schema.decoder(self._columns)

    def __repr__(self):
        return f"FileReader({self._shards[0].path!r}, files={len(self._shards)}, rows={len(self)})"


def _digest_view(mm, start, end):
    """Digest of ``mm[start:end]`` without copying it out of the map."""
    with memoryview(mm) as view:
        return digest_bytes(view[start:end])


def _check_prefixes(mm, shard, entries):
    """The 8-byte length prefix in front of each entry of a page equals the entry's length by the index:
    with the index's tiling (checked at open) this binds every row to the bytes the page table gives it."""
    if not len(entries):
        return
    data = np.frombuffer(mm, dtype=np.uint8)
    found = data[(entries[:, 0] - ENTRY_PREFIX)[:, None] + np.arange(ENTRY_PREFIX)].view("<u8").ravel()
    del data
    bad = np.nonzero(found != (entries[:, 1] - entries[:, 0]).astype(np.uint64))[0]
    if bad.size:
        start, end, row, blob = entries[bad[0]].tolist()
        raise ChecksumError(f"{shard.path}: row {row}: its {'blob' if blob else 'raw record'} is {end - start} "
                            f"bytes by the index but {int(found[bad[0]])} by its length prefix: the index is foreign")


def _require_checksums(shards):
    for shard in shards:
        if shard.checksums is None:
            raise ChecksumError(f"{shard.path}.db has no checksums (the file was not written by recordio); "
                                f"add them with `recordio verify --add-checksums`")
        missing = [p for p in [HEADER_SLOT] + [p.page_id for p in shard.pages] if p not in shard.checksums]
        if missing:
            raise ChecksumError(f"{shard.path}.db has no checksum for page(s) {missing}")


def fmt_page_offset(shard, page):
    return page_offset(shard.header["header_size"], shard.header["page_size"], page.page_id)


def _map_file(shard, kept, open_checked):
    """A read-only map of ``shard``'s file through descriptor ``kept`` (None: ``open_checked()`` opens
    one, closed once mapped), refused when the file shrank below the size it was opened with."""
    fd = kept if kept is not None else open_checked()
    try:
        return fileio.map_readonly(shard.path, shard.size, fd)
    finally:
        if kept is None:
            os.close(fd)
