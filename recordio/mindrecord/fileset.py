"""Opening a dataset's files: headers, siblings, ``.db`` checks and row locations.

:func:`open_shards` turns a path (any shard) or an explicit list of data files into
:class:`Shard` records that hold, per row, the absolute byte ranges of its raw record
and blob (entry prefixes excluded). Locations come from the ``.db`` (as MindSpore
reads them) or, with ``use_index=False``, from walking the header's page table.
Everything is checked against the header and the file size, so a damaged file gives
a :class:`FormatError` naming it, never a crash or wrong data.
"""

import os
import struct

import numpy as np

from recordio.mindrecord import format as fmt
from recordio.mindrecord import index
from recordio.mindrecord import locations, page_walk
from recordio.errors import FormatError
from recordio.mindrecord.format import BLOB, RAW
from recordio.mindrecord.schema import Schema

__all__ = ["Shard", "open_shards"]

_U64LE = struct.Struct("<Q")
_COMPARED = ("header_size", "page_size", "version", "index_fields")


class Shard:
    """One data file of a dataset and where its rows are."""

    __slots__ = ("path", "header", "header_bytes", "size", "pages", "count", "raw", "blob", "checksums",
                 "db_meta", "_entries", "identity", "page_table", "source")

    def __init__(self, file_header):
        fh = file_header
        self.path, self.header, self.header_bytes, self.size = fh.path, fh.header, fh.raw, fh.file_size
        self.pages = fh.pages
        self.count = fh.rows
        self.identity = fh.identity     # the file this shard was read from (a replaced path is another)
        self.raw = self.blob = None            # (n, 2) int64 arrays of absolute [start, end)
        self.checksums = None
        self.db_meta = {}
        self._entries = None
        self.page_table = None          # locations.PageTable, set by open_shards
        self.source = None              # where blocks of locations come from (locations.DbBlocks/TableBlocks)

    def entries_between(self, start, end):
        """Rows ``(data_start, data_end, row, is_blob)`` of the entries whose length prefix lies in the
        absolute byte range [start, end) (a page slot), found by bisection in a sorted copy."""
        if self._entries is None:
            rows = np.arange(self.count, dtype=np.int64)[:, None]
            both = np.concatenate([np.hstack([self.raw, rows, rows * 0]), np.hstack([self.blob, rows, rows * 0 + 1])])
            self._entries = both[np.argsort(both[:, 0], kind="stable")]
        lo, hi = np.searchsorted(self._entries[:, 0], [start + fmt.ENTRY_PREFIX, end + fmt.ENTRY_PREFIX])
        return self._entries[lo:hi]
    def page_of(self, offset):
        """The page id holding absolute ``offset``."""
        return (offset - self.header["header_size"]) // self.header["page_size"]


def require_given(files, use_index=True):
    """MindSpore's first checks of the files a caller names: each exists and has at least 8 bytes, then
    (reading through the index) each one's ``.db`` exists; MissingFileError / IndexFileError with MindSpore's wording."""
    for given in [files] if isinstance(files, (str, os.PathLike)) else files:
        fd = fmt.open_regular(os.fspath(given))
        try:
            fmt.check_least_size(os.fstat(fd).st_size, os.fspath(given))
        finally:
            os.close(fd)
        if use_index:
            index.require_db(index.db_path(os.path.realpath(os.fspath(given))))


def open_shards(files, use_index=True, walk=False):
    """Open a dataset: ``files`` is one data file (siblings found from its header) or a list.

    With ``use_index`` nothing per row is read: each shard's ``source`` gives its locations in checked
    blocks (:mod:`recordio.mindrecord.locations`): with ``walk`` (a local reader) walked from the data
    file's pages block by block (:mod:`recordio.mindrecord.page_walk`, the ``.db`` checked at open and
    on the first block), else read from the ``.db``. Without ``use_index`` the page table is walked
    now and ``raw``/``blob`` hold every row's ranges."""
    require_given(files, use_index)
    if isinstance(files, (str, os.PathLike)):
        paths = fmt.dataset_paths(files)
    else:
        paths = [os.fspath(f) for f in files]
        if not paths:
            raise ValueError("the list of MindRecord files is empty")
        if len(paths) > fmt.MAX_READ_FILES:
            raise ValueError(f"{len(paths)} files exceed the limit of {fmt.MAX_READ_FILES} per dataset")
    shards = [Shard(fmt.FileHeader.read(p)) for p in paths]
    schema = _check_same_metadata(shards)
    for shard in shards:
        _check_pages(shard)
        shard.page_table = locations.PageTable(shard)
        if use_index:
            shard.source = locations.open_db_facts(shard, keep=len(shards) <= locations.KEEP_OPEN)
            if walk and page_walk.enabled():
                shard.source = page_walk.WalkBlocks(shard, shard.source, locations.BLOCK_ROWS)
        else:
            _locate_from_pages(shard)
            _check_locations(shard)
            shard.source = locations.TableBlocks(shard)
    return shards, schema


def _metadata(header):
    schema = header["schema"][0]
    return tuple(header[k] for k in _COMPARED) + (schema.get("schema"), schema.get("blob_fields"))


def _check_same_metadata(shards):
    first = shards[0]
    for shard in shards[1:]:
        if _metadata(shard.header) != _metadata(first.header):
            raise FormatError(f"Invalid file, the metadata of mindrecord file: {shard.path} is different from "
                              f"others, please make sure all the mindrecord files generated by the same script. "
                              f"Its schema, sizes, version or index fields differ from those of {first.path}.")
    try:
        schema = Schema(first.header["schema"][0]["schema"], first.header["version"])
    except ValueError as exc:
        raise FormatError(f"{first.path}: invalid schema in header: {exc}") from None
    if list(first.header["schema"][0].get("blob_fields") or []) != schema.blob_fields:
        raise FormatError(f"{first.path}: header blob_fields {first.header['schema'][0].get('blob_fields')} "
                          f"do not match the schema (expected {schema.blob_fields})")
    return schema


def _check_pages(shard):
    """Page ids in order, sizes within a page and the file, and no more rows than a BLOB page's bytes
    can hold (each row has an entry of at least 8 bytes), so no count from the header outgrows the file."""
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    for i, page in enumerate(shard.pages):
        if page.page_id != i:
            raise FormatError(f"{shard.path}: page {i} has page_id {page.page_id}")
        if not 0 <= page.size <= ps or page.start_row > page.end_row:
            raise FormatError(f"{shard.path}: page {i} has an impossible size or row range")
        if fmt.page_offset(hs, ps, i) + page.size > shard.size:
            raise FormatError(f"{shard.path}: page {i} ends at byte {fmt.page_offset(hs, ps, i) + page.size}, "
                              f"past the end of the file ({shard.size} bytes): the file is truncated")
        if page.kind == BLOB and (page.end_row - page.start_row) * fmt.ENTRY_PREFIX > page.size:
            raise FormatError(f"{shard.path}: BLOB page {i} claims rows {page.start_row}..{page.end_row - 1} "
                              f"but holds only {page.size} bytes")
    blob_ids = [p.type_id for p in shard.pages if p.kind == BLOB]
    if len(set(blob_ids)) != len(blob_ids):
        raise FormatError(f"{shard.path}: two BLOB pages share a row-group id")


def _blob_page_by_group(shard):
    return {p.type_id: p for p in shard.pages if p.kind == BLOB}


def _set_locations(shard, table):
    """``table`` rows: (group, blob_start, blob_end, raw_page, raw_start, raw_end) in-page offsets."""
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    by_group = _blob_page_by_group(shard)
    n = len(table)
    try:
        blob_page = np.array([by_group[g].page_id for g in table[:, 0].tolist()], dtype=np.int64)
    except KeyError as exc:
        raise FormatError(f"{shard.path}: a row refers to row group {exc.args[0]}, which has no BLOB page") from None
    blob_base = hs + blob_page * ps + fmt.ENTRY_PREFIX
    raw_base = hs + table[:, 3] * ps + fmt.ENTRY_PREFIX
    shard.blob = np.stack([blob_base + table[:, 1], blob_base - fmt.ENTRY_PREFIX + table[:, 2]], axis=1)
    shard.raw = np.stack([raw_base + table[:, 4], raw_base - fmt.ENTRY_PREFIX + table[:, 5]], axis=1)
    shard.raw = shard.raw.reshape(n, 2)
    shard.blob = shard.blob.reshape(n, 2)


def _read_page(fd, shard, page):
    data = os.pread(fd, page.size, fmt.page_offset(shard.header["header_size"], shard.header["page_size"],
                                                    page.page_id))
    if len(data) != page.size:
        raise FormatError(f"{shard.path}: page {page.page_id} is cut off: {len(data)} of {page.size} bytes")
    return data


def _entry_ends(data, start, count, where):
    """Offsets (start, end) of ``count`` consecutive entries from ``start`` in page bytes."""
    out, pos = [], start
    for _ in range(count):
        if pos + fmt.ENTRY_PREFIX > len(data):
            raise FormatError(f"{where}: entry at offset {pos} runs past the page's used bytes")
        n = _U64LE.unpack_from(data, pos)[0]
        if pos + fmt.ENTRY_PREFIX + n > len(data):
            raise FormatError(f"{where}: entry at offset {pos} claims {n} bytes, past the page's used "
                              f"{len(data)} bytes")
        out.append((pos, pos + fmt.ENTRY_PREFIX + n))
        pos += fmt.ENTRY_PREFIX + n
    return out


def _locate_from_pages(shard):
    """Locations by walking the page table (FORMAT.md §4.3), without the ``.db``."""
    by_group = _blob_page_by_group(shard)
    rows = {}
    fd = os.open(shard.path, os.O_RDONLY)
    try:
        for raw in (p for p in shard.pages if p.kind == RAW):
            raw_data = _read_page(fd, shard, raw)
            for group, offset in raw.groups:
                bp = by_group.get(group)
                if bp is None:
                    raise FormatError(f"{shard.path}: RAW page {raw.page_id} refers to row group {group}, "
                                      f"which has no BLOB page")
                n = bp.end_row - bp.start_row
                where = f"{shard.path}: page {raw.page_id}"
                raws = _entry_ends(raw_data, offset, n, where)
                blobs = _entry_ends(_read_page(fd, shard, bp), 0, n, f"{shard.path}: page {bp.page_id}")
                for k in range(n):
                    rows[bp.start_row + k] = (group, *blobs[k], raw.page_id, *raws[k])
    finally:
        os.close(fd)
    if sorted(rows) != list(range(shard.count)):
        raise FormatError(f"{shard.path}: the page table does not reach every row 0..{shard.count - 1}")
    _set_locations(shard, np.array([rows[i] for i in range(shard.count)], dtype=np.int64).reshape(-1, 6))


def _check_locations(shard):
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    sizes = np.array([p.size for p in shard.pages] or [0], dtype=np.int64)
    kinds = np.array([p.kind == RAW for p in shard.pages] or [False])
    for name, ranges, want_raw in (("raw record", shard.raw, True), ("blob", shard.blob, False)):
        if not len(ranges):
            continue
        page = (ranges[:, 0] - fmt.ENTRY_PREFIX - hs) // ps
        inside = (page >= 0) & (page < len(shard.pages))
        safe_page = np.where(inside, page, 0)
        page_end = hs + safe_page * ps + sizes[safe_page]
        ok = inside & (kinds[safe_page] == want_raw) & (ranges[:, 0] <= ranges[:, 1]) & \
            (ranges[:, 1] <= page_end) & (ranges[:, 1] <= shard.size)
        if not ok.all():
            row = int(np.argmin(ok))
            raise FormatError(f"{shard.path}: row {row}: its {name} at bytes {ranges[row].tolist()} lies "
                              f"outside its page's used bytes or the file (size {shard.size}); "
                              f"the file is truncated or its index is foreign")
