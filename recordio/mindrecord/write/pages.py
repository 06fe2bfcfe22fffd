"""MindSpore's page allocation for one shard (FORMAT.md §4.4): the page allocators of a writer.

:class:`ShardPages` keeps a shard's page list, its last BLOB and RAW pages and the
bytes of the last RAW page (needed for the raw-page shift). :meth:`ShardPages.add`
takes one call's entries for this shard and returns the ``(page_id, offset, bytes)``
writes to perform; :meth:`ShardPages.locations` walks the pages as MindSpore's index
generator does (§4.3) to give every row's entry offsets for the ``.db``. A call's blobs or raws are a
list of ``bytes`` or a :class:`~recordio.mindrecord.read.column_forms.BytesColumn` (one buffer and its offsets,
as a columnar write hands them over; its entries are cut from the buffer in one pass).

:class:`StreamingPages` is the writer's: it forgets rows once their locations are handed to the
``.db`` (``index_stream``) and does the raw-page shift in the staged file; :class:`AppendPages`
continues an existing shard.
"""

import numpy as np

from recordio.mindrecord import codec
from recordio.mindrecord.checksums import BlockHasher
from recordio.mindrecord.format import BLOB, ENTRY_PREFIX, RAW, Page, entry_prefix
from recordio.mindrecord.read.column_forms import BytesColumn
from recordio.mindrecord.write.index_stream import LengthSpool

__all__ = ["AppendPages", "ShardPages", "StreamingPages"]


class ShardPages:
    def __init__(self, shard_id, page_size, pages=(), raw_tail=b""):
        self.shard_id = shard_id
        self.page_size = page_size
        self.pages = list(pages)
        self.blob_lengths = []      # per row id: 8 + len(blob)
        self.raw_lengths = []       # per row id: 8 + len(raw)
        blobs = [p for p in self.pages if p.kind == BLOB]
        raws = [p for p in self.pages if p.kind == RAW]
        self.last_blob = blobs[-1] if blobs else None
        self.last_raw = raws[-1] if raws else None
        self.raw_tail = bytearray(raw_tail)   # used bytes of last_raw
        self.extents = {}                     # page_id -> bytes of its slot written (checksum coverage)
        self.hashers = {}                     # page_id -> running digest of pages made here (from byte 0)

    @property
    def rows(self):
        return self.last_blob.end_row if self.last_blob else 0

    def _new_page(self, kind, type_id, **kw):
        page = Page(len(self.pages), kind, type_id, self.shard_id, **kw)
        self.pages.append(page)
        self.hashers[page.page_id] = BlockHasher()
        return page

    def _cut_groups(self, rb, rr):
        ps = self.page_size
        nb = self.last_blob.size if self.last_blob else 0
        nr = self.last_raw.size - self.last_raw.groups[-1][1] if self.last_raw and self.last_raw.groups else 0
        groups, current = [], []
        for i in range(len(rb)):
            if nb == 0 or nb + rb[i] > ps or nr + rr[i] > ps:
                groups.append(current)
                current, nb, nr = [i], rb[i], rr[i]
            else:
                current.append(i)
                nb += rb[i]
                nr += rr[i]
        groups.append(current)
        return groups

    def add(self, blobs, raws):
        """Place one call's rows (lists of blob and raw bytes); return the writes to perform."""
        rb, rr = _entry_lengths(blobs), _entry_lengths(raws)
        self.blob_lengths += rb
        self.raw_lengths += rr
        groups = self._cut_groups(rb, rr)
        writes = []
        blob_pages = self._place_blobs(groups, blobs, rb, writes)
        self._shift_if_needed(groups[0], rr, writes)
        self._place_raws(groups, blob_pages, raws, rr, writes)
        for page_id, offset, data in writes:
            hasher = self.hashers.get(page_id)
            if hasher is not None:       # each slot is written once, front to back: hash as we go
                if offset == self.extents.get(page_id, 0):
                    hasher.update(data)
                else:
                    del self.hashers[page_id]
            self.extents[page_id] = max(self.extents.get(page_id, 0), offset + len(data))
        return writes

    def digests(self):
        """``{page_id: digest}`` of the pages whose every byte passed through :meth:`add`."""
        return {page_id: h.hexdigest() for page_id, h in self.hashers.items()}

    def _place_blobs(self, groups, blobs, rb, writes):
        pages = [self.last_blob]
        first = groups[0]
        if first:
            lb = self.last_blob
            writes.append((lb.page_id, lb.size, _entries(blobs, first)))
            lb.size += sum(rb[i] for i in first)
            lb.end_row += len(first)
        for group in groups[1:]:
            prev = self.last_blob
            start = prev.end_row if prev else 0
            page = self._new_page(BLOB, prev.type_id + 1 if prev else 0, start_row=start,
                                  end_row=start + len(group), size=sum(rb[i] for i in group))
            writes.append((page.page_id, 0, _entries(blobs, group)))
            self.last_blob = page
            pages.append(page)
        return pages

    def _shift_if_needed(self, first, rr, writes):
        lr = self.last_raw
        if not first or lr.size + sum(rr[i] for i in first) <= self.page_size:
            return
        moved_id, offset = lr.groups.pop()
        moved = bytes(self.raw_tail[offset:lr.size])
        lr.size = offset
        page = self._new_page(RAW, lr.page_id + 1, size=len(moved), groups=[[moved_id, 0]])
        writes.append((page.page_id, 0, moved))
        self.last_raw = page
        self.raw_tail = bytearray(moved)

    def _place_raws(self, groups, blob_pages, raws, rr, writes):
        for k, group in enumerate(groups):
            if not group:
                continue
            need = sum(rr[i] for i in group)
            lr = self.last_raw
            if lr is None or lr.size + need > self.page_size:
                lr = self._new_page(RAW, lr.page_id + 1 if lr else 0)
                self.last_raw = lr
                self.raw_tail = bytearray()
            if k > 0:
                lr.groups.append([blob_pages[k].type_id, lr.size])
            data = _entries(raws, group)
            writes.append((lr.page_id, lr.size, data))
            self.raw_tail += data
            lr.size += need


class StreamingPages(ShardPages):
    """:class:`ShardPages` that forgets the entry lengths of rows once their locations are taken, and
    keeps no copy of the last RAW page: the raw-page shift is done in the staged file by
    ``copy(src_page, src_offset, dst_page, n, hasher)`` (every earlier call's writes are there), a
    chunk at a time, feeding the new page's digest as writing it would."""

    def __init__(self, shard_id, page_size, copy, directory=None, pages=(), raw_tail=b"", first_row=0):
        super().__init__(shard_id, page_size, pages, raw_tail)
        self._copy = copy
        self._lengths = LengthSpool(directory)         # entry lengths of the rows not taken (< 2^32: a page)
        self.taken = first_row                          # rows whose locations were handed out
        self._blob_at = 0                               # where in ``pages`` to look for the next group
        self._raw_at = (0, 0)                           # (page index, group index) of the next group's record
        self._group = None                              # the row group being taken, when partly taken

    def add(self, blobs, raws):
        writes = super().add(blobs, raws)
        self._lengths.push(self.blob_lengths, self.raw_lengths)
        self.blob_lengths.clear()
        self.raw_lengths.clear()
        self.raw_tail = bytearray()
        return writes

    def pending(self, blob_lengths, raw_lengths):
        """Entry lengths (prefix included) of existing rows from ``first_row`` on, before any add."""
        self._lengths.push(blob_lengths, raw_lengths)

    def close(self):
        """Drop the spooled entry lengths (the writer committed or aborted)."""
        self._lengths.close()

    def _shift_if_needed(self, first, rr, writes):
        """:meth:`ShardPages._shift_if_needed`, the moved bytes copied within the file."""
        lr = self.last_raw
        if not first or lr.size + sum(rr[i] for i in first) <= self.page_size:
            return
        moved_id, offset = lr.groups.pop()
        n = lr.size - offset
        lr.size = offset
        page = self._new_page(RAW, lr.page_id + 1, size=n, groups=[[moved_id, 0]])
        self._copy(lr.page_id, offset, page.page_id, n, self.hashers.get(page.page_id))
        self.extents[page.page_id] = n
        self.last_raw = page

    def take(self, everything=False, limit=1 << 12):
        """``(n, 8)`` INDEXES locations (row, raw page, raw start, raw end, group, blob page, blob start,
        blob end) of at most ``limit`` rows not taken yet whose row group is final (``everything``:
        whose group is final or current); an empty array when there are none."""
        end = self.rows if everything or self.last_blob is None else self.last_blob.start_row
        if self.taken >= end:
            return np.zeros((0, 8), dtype=np.int64)
        if self._group is None:
            bp = self._next_blob_page()
            raw_page, offset = self._raw_place(bp.type_id)
            self._group = [bp, raw_page, offset, 0]          # blob page, raw page, next raw and blob offsets
        bp, raw_page, raw_pos, blob_pos = self._group
        n = min(limit, bp.end_row - self.taken)
        rb, rr = self._lengths.take(n)
        raw_end = raw_pos + np.cumsum(rr)
        blob_end = blob_pos + np.cumsum(rb)
        out = np.stack([np.arange(self.taken, self.taken + n, dtype=np.int64), np.full(n, raw_page),
                        raw_end - rr, raw_end, np.full(n, bp.type_id), np.full(n, bp.page_id),
                        blob_end - rb, blob_end], axis=1)
        self.taken += n
        self._group[2:] = [int(raw_end[-1]), int(blob_end[-1])]
        if self.taken == bp.end_row:
            self._group = None
        return out

    def _next_blob_page(self):
        while True:
            page = self.pages[self._blob_at]
            self._blob_at += 1
            if page.kind == BLOB and page.start_row == self.taken:
                return page

    def _raw_place(self, group):
        """(raw page id, offset) of ``group``'s records: groups sit in RAW pages in order."""
        at, k = self._raw_at
        while True:
            page = self.pages[at]
            if page.kind == RAW:
                for j in range(k, len(page.groups)):
                    if page.groups[j][0] == group:
                        self._raw_at = (at, j + 1)
                        return page.page_id, page.groups[j][1]
            at, k = at + 1, 0


class AppendPages(StreamingPages):
    """:class:`StreamingPages` continuing an existing shard (an append): the rows before ``first_row``
    keep the locations their ``.db`` has; the raw-page shift takes the moved bytes from the last RAW
    page's bytes kept in memory (``raw_tail``, at most a page), since bytes written to an existing page
    reach the file only at commit."""

    def __init__(self, shard_id, page_size, pages, raw_tail, first_row, directory=None):
        super().__init__(shard_id, page_size, None, directory, pages, raw_tail, first_row)

    def add(self, blobs, raws):
        writes = ShardPages.add(self, blobs, raws)
        self._lengths.push(self.blob_lengths, self.raw_lengths)
        self.blob_lengths.clear()
        self.raw_lengths.clear()
        return writes

    _shift_if_needed = ShardPages._shift_if_needed


def _entry_lengths(items):
    if isinstance(items, BytesColumn):
        return (items.lengths() + ENTRY_PREFIX).tolist()
    return [ENTRY_PREFIX + len(item) for item in items]


def _entries(items, rows):
    """The page entries of ``items[i]`` for ``i`` in ``rows`` (consecutive row numbers)."""
    if isinstance(items, BytesColumn):
        return codec.page_entries(items.buffer, items.offsets[rows[0]:rows[-1] + 2])
    parts = []
    for i in rows:
        parts.append(entry_prefix(len(items[i])))
        parts.append(items[i])
    return b"".join(parts)
