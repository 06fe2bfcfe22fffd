"""What the page table says about a shard's rows, as numpy arrays, and the checks every block of
row locations passes as it loads (FORMAT.md §4.3): each row where the page table's tiling places it,
and inside its page's used bytes and the file."""

from __future__ import annotations

import numpy as np

from recordio.errors import FormatError, IndexFileError
from recordio.mindrecord import format as fmt

__all__ = ["PageTable", "absolute", "check_inside", "check_tiling"]


class PageTable:
    """What the header's page table says about the rows of one shard, as numpy arrays (O(pages))."""

    def __init__(self, shard):
        pages = shard.pages
        self.header_size, self.page_size = shard.header["header_size"], shard.header["page_size"]
        blobs = sorted((p for p in pages if p.kind == fmt.BLOB), key=lambda p: p.start_row)
        raw_of = {g: (p.page_id, off) for p in pages if p.kind == fmt.RAW for g, off in p.groups}
        self.starts = np.array([p.start_row for p in blobs], dtype=np.int64)
        self.group = np.array([p.type_id for p in blobs], dtype=np.int64)
        self.raw_page = np.array([raw_of.get(p.type_id, (-1, 0))[0] for p in blobs] or [-1], dtype=np.int64)
        self.raw_off = np.array([raw_of.get(p.type_id, (-1, 0))[1] for p in blobs] or [0], dtype=np.int64)
        by_group = sorted((p.type_id, p.page_id) for p in pages if p.kind == fmt.BLOB)
        self.group_ids = np.array([g for g, _ in by_group], dtype=np.int64)
        self.group_pages = np.array([q for _, q in by_group], dtype=np.int64)
        self.sizes = np.array([p.size for p in pages] or [0], dtype=np.int64)
        self.is_raw = np.array([p.kind == fmt.RAW for p in pages] or [False])
        self.npages = len(pages)


def check_tiling(shard, table, rows, prev, db):
    """Bind INDEXES rows ``rows`` (their ``table`` rows: group, blob start/end, raw page, raw start/end)
    to the entries the page table gives them (FORMAT.md §4.3); ``prev`` is the table row of
    ``rows[0] - 1`` (zeros for row 0).

    Row ``r`` is in the row group of the BLOB page whose row range holds it, the RAW page listing that
    group holds its record, and each group's entries follow one another from the group's offset (0 in
    its BLOB page). With the length prefixes (checked by ``FileReader(verify=True)`` as rows are read)
    this makes the locations exactly those of the page-table walk, so a ``.db`` cannot point a row at
    another's bytes."""
    if not len(table):
        return
    pt = shard.page_table
    nb = len(pt.starts)
    owner = np.clip(np.searchsorted(pt.starts, rows, side="right") - 1, 0, max(nb - 1, 0))
    group = pt.group[owner] if nb else rows * 0 - 1
    first = pt.starts[owner] == rows if nb else rows < 0
    raw_page, raw_off = pt.raw_page[owner], pt.raw_off[owner]
    prev_blob_end = np.concatenate([[prev[2]], table[:-1, 2]])
    prev_raw_end = np.concatenate([[prev[5]], table[:-1, 5]])
    ok = ((table[:, 0] == group) & (table[:, 3] == raw_page)
          & (table[:, 1] == np.where(first, 0, prev_blob_end))
          & (table[:, 4] == np.where(first, raw_off, prev_raw_end)))
    if not ok.all():
        at = int(np.argmin(ok))
        row = int(rows[at])
        raise IndexFileError(f"{db}: INDEXES row {row} gives locations {table[at].tolist()} (group, blob "
                             f"start/end, raw page, raw start/end), which are not where the page table "
                             f"places row {row}: the index is foreign or damaged")


def absolute(shard, table):
    """``(n, 4)`` absolute [raw start, raw end, blob start, blob end) of ``table`` rows (in-page
    offsets as INDEXES stores them: group, blob start/end, raw page, raw start/end)."""
    pt = shard.page_table
    hs, ps = pt.header_size, pt.page_size
    groups = table[:, 0]
    at = np.clip(np.searchsorted(pt.group_ids, groups), 0, max(len(pt.group_ids) - 1, 0))
    found = pt.group_ids[at] == groups if len(pt.group_ids) else groups < -1
    if not found.all():
        bad = int(groups[int(np.argmin(found))])
        raise FormatError(f"{shard.path}: a row refers to row group {bad}, which has no BLOB page")
    blob_base = hs + pt.group_pages[at] * ps + fmt.ENTRY_PREFIX
    raw_base = hs + table[:, 3] * ps + fmt.ENTRY_PREFIX
    out = np.empty((len(table), 4), dtype=np.int64)
    out[:, 0] = raw_base + table[:, 4]
    out[:, 1] = raw_base - fmt.ENTRY_PREFIX + table[:, 5]
    out[:, 2] = blob_base + table[:, 1]
    out[:, 3] = blob_base - fmt.ENTRY_PREFIX + table[:, 2]
    return out


def check_inside(shard, locs, first_row):
    """Every range inside its page's used bytes and the file (rows numbered from ``first_row``)."""
    pt = shard.page_table
    hs, ps = pt.header_size, pt.page_size
    for name, ranges, want_raw in (("raw record", locs[:, 0:2], True), ("blob", locs[:, 2:4], False)):
        if not len(ranges):
            continue
        page = (ranges[:, 0] - fmt.ENTRY_PREFIX - hs) // ps
        inside = (page >= 0) & (page < pt.npages)
        safe_page = np.where(inside, page, 0)
        page_end = hs + safe_page * ps + pt.sizes[safe_page]
        ok = inside & (pt.is_raw[safe_page] == want_raw) & (ranges[:, 0] <= ranges[:, 1]) & \
            (ranges[:, 1] <= page_end) & (ranges[:, 1] <= shard.size)
        if not ok.all():
            at = int(np.argmin(ok))
            raise FormatError(f"{shard.path}: row {first_row + at}: its {name} at bytes {ranges[at].tolist()} "
                              f"lies outside its page's used bytes or the file (size {shard.size}); "
                              f"the file is truncated or its index is foreign")
