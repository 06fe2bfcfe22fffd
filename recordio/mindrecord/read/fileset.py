"""Opening a dataset's files: headers, siblings, ``.db`` checks and row locations.

:func:`open_shards` turns a path (any shard) or an explicit list of data files into
:class:`Shard` records that hold, per row, the absolute byte ranges of its raw record
and blob (entry prefixes excluded). Locations come from the ``.db`` (as MindSpore
reads them) or, with ``use_index=False``, from walking the header's page table.
Everything is checked against the header and the file size, so a damaged file gives
a :class:`FormatError` naming it, never a crash or wrong data.
"""

import os

import numpy as np

from recordio.mindrecord import format as fmt
from recordio.mindrecord import index
from recordio.mindrecord.read import location_sources, locations
from recordio.mindrecord.read.location_checks import PageTable
from recordio.mindrecord.read import page_walk
from recordio.errors import FormatError
from recordio.mindrecord.format import BLOB, RAW
from recordio.mindrecord.schema import Schema

__all__ = ["Shard", "open_shards"]

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
        self.page_table = None          # location_checks.PageTable, set by open_shards
        self.source = None              # where blocks of locations come from (location_sources.DbBlocks/TableBlocks)

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
    blocks (:mod:`recordio.mindrecord.read.locations`): with ``walk`` (a local reader) walked from the data
    file's pages block by block (:mod:`recordio.mindrecord.read.page_walk`, the ``.db`` checked at open and
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
        shard.page_table = PageTable(shard)
        if use_index:
            shard.source = location_sources.open_db_facts(shard, keep=len(shards) <= location_sources.KEEP_OPEN)
            if walk and page_walk.enabled():
                shard.source = page_walk.WalkBlocks(shard, shard.source, locations.BLOCK_ROWS)
        else:
            _locate_from_pages(shard)
            _check_locations(shard)
            shard.source = location_sources.TableBlocks(shard)
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


def _locate_from_pages(shard):
    """Every row's locations by walking the page table and the entries' length prefixes (FORMAT.md
    §4.3), without the ``.db``."""
    locs = page_walk.walk_shard(shard, locations.BLOCK_ROWS)
    shard.raw, shard.blob = locs[:, 0:2].copy(), locs[:, 2:4].copy()


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
