"""MindSpore's page allocation for one shard (FORMAT.md §4.4), as pure state + planned writes.

:class:`ShardPages` keeps a shard's page list, its last BLOB and RAW pages and the
bytes of the last RAW page (needed for the raw-page shift). :meth:`ShardPages.add`
takes one call's entries for this shard and returns the ``(page_id, offset, bytes)``
writes to perform; :meth:`ShardPages.locations` walks the pages as MindSpore's index
generator does (§4.3) to give every row's entry offsets for the ``.db``. A call's blobs or raws are a
list of ``bytes`` or a :class:`~recordio.mindrecord.read.columns.BytesColumn` (one buffer and its offsets,
as a columnar write hands them over; its entries are cut from the buffer in one pass).
"""


from recordio.mindrecord import codec
from recordio.mindrecord.checksums import new_hasher
from recordio.mindrecord.read.columns import BytesColumn
from recordio.mindrecord.format import BLOB, ENTRY_PREFIX, RAW, Page, entry_prefix

__all__ = ["ShardPages"]


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
        self.hashers[page.page_id] = new_hasher()
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
