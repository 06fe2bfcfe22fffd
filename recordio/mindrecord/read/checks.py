"""Page checksums on a reader's first touch of each page, and ``verify=True``'s binding of rows to bytes.

A dataset written by recordio records a digest of each page slot and of the header region in its
``.db`` (:mod:`recordio.mindrecord.checksums`). A local reader checks a page the first time it reads
a row from it — by default whenever the dataset has checksums (``FileReader(verify=False)`` or
``config.set_page_checks(False)`` turn it off; MindSpore's files have none, and nothing is checked).
The check hashes the page's written bytes once, so a page costs one pass over it the first time
and nothing afterwards: once every page of a file was checked, a row costs one flag test. The
first touch of a large page by a random row reads that page whole (at most the page size, 32 MiB
by default, hashed at several GB/s); a pass over the dataset reads each page once either way.
Which pages were checked is kept per process, by file (device, inode, size and modification time)
and by each page's recorded digest: another reader of the same unchanged file in the process (a new
epoch's reader, a second ``FileReader``) does not hash them again; a file changed in place, or a page
whose recorded digest changed, is checked again.
A dataset at a URL checks every page its fetches complete instead (``fetch_checks``).

``verify=True`` (``strict``) also requires the checksums (a :class:`ChecksumError` without them) and
checks each entry's 8-byte length prefix against the index (binding every row to the bytes the page
table gives it; the tiling is checked at open).
"""

from __future__ import annotations

import os

import numpy as np

from recordio.errors import ChecksumError
from recordio.mindrecord.checksums import HEADER_SLOT, digest_bytes, new_hasher, slot_range
from recordio.mindrecord.format import BLOB, ENTRY_PREFIX

__all__ = ["PageChecks", "require_checksums"]

# (st_dev, st_ino, st_size, st_mtime_ns) of a data file -> the (slot, digest) pairs any reader of this
# process checked: a page whose recorded digest changed (an append rewrote it) is checked again
_CHECKED: dict[tuple, set] = {}


class PageChecks:
    """The checks of the open files ``shards``; ``strict``: ``verify=True``. A shard's table is read from
    its ``.db`` on first use. Each call takes ``files``, the reader's open files (maps, locations, storage:
    a :class:`~recordio.mindrecord.read.shard_set.ShardSet`), which holds this object."""

    def __init__(self, shards, strict=False):
        self.shards, self.strict = shards, strict
        self._checked: list[set] = [set() for _ in shards]
        self._done = [False] * len(shards)        # every slot checked, or nothing to check
        self.left = len(shards)                   # shards not done (0: a row needs no check)
        self._shared: list = [None] * len(shards)  # the process's (slot, digest) pairs checked, per shard
        self._hs = np.array([s.header["header_size"] for s in shards], dtype=np.int64)
        self._ps = np.array([s.header["page_size"] for s in shards], dtype=np.int64)
        sizes = [len(s.pages) + 1 for s in shards]           # slot -1 (the header) first, then each page
        self._base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) + 1
        self._ok = np.zeros(sum(sizes), dtype=bool)          # slots this reader needs no more work for
        if strict:
            for shard in shards:
                shard.checksums = shard.source.read_checksums()
            require_checksums(shards)

    def _table(self, k):
        shard = self.shards[k]
        if shard.checksums is None and not self.strict:
            shard.checksums = shard.source.read_checksums() or {}
            if not shard.checksums:
                self._finish(k)
                return shard.checksums
            self._shared[k] = shared = _process_set(shard)
            if shared:                      # pages with these digests another reader here checked already
                self._checked[k].update(s for s, row in shard.checksums.items() if (s, row[4]) in shared)
                self._mark(k, self._checked[k])
                if len(self._checked[k]) >= len(shard.checksums):
                    self._finish(k)
        return shard.checksums

    def _finish(self, k):
        if not self._done[k]:
            self._done[k] = True
            self.left -= 1
            self._mark(k, range(-1, len(self.shards[k].pages)))

    def row(self, files, k, raw_start, blob_start, need_raw, need_blob):
        """Check the pages that a row of shard ``k`` at these offsets is read from (once each)."""
        if self._done[k]:
            return
        shard = self.shards[k]
        self.page(files, k, HEADER_SLOT)
        if need_raw:
            self.page(files, k, shard.page_of(raw_start))
        if need_blob:
            self.page(files, k, shard.page_of(blob_start))

    def rows(self, files, shard_ids, locs, need_raw, need_blob):
        """Check the pages of many rows (``shard_ids`` and ``(n, 4)`` locations, as ``Locations.bulk``):
        the distinct (shard, page) pairs found with one sort, nothing at all once every shard is done."""
        if not self.left or not (need_raw or need_blob):
            return
        offsets = [locs[:, 0]] * need_raw + [locs[:, 2]] * need_blob
        ids = np.concatenate([shard_ids] * len(offsets)) if len(offsets) > 1 else shard_ids
        offsets = np.concatenate(offsets) if len(offsets) > 1 else offsets[0]
        pages = (offsets - self._hs[ids]) // self._ps[ids]
        at = self._base[ids] + pages
        if self._ok[np.clip(at, 0, len(self._ok) - 1)].all() and (at < len(self._ok)).all():
            return                             # every page of the batch checked: one gather, no sort
        keys = np.sort(ids * (1 << 32) + pages)
        if len(keys) > 1:                      # distinct keys (np.unique would import more of numpy)
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        for key in keys.tolist():
            k = key >> 32
            if not self._done[k]:
                self.page(files, k, HEADER_SLOT)
                self.page(files, k, key & 0xFFFFFFFF, mapped=True)

    def _mark(self, k, slots):
        at = [self._base[k] + s for s in slots if -1 <= s < len(self.shards[k].pages)]
        self._ok[at] = True

    def page(self, files, k, slot, mapped=False):
        """Check a page slot (or the header region, slot -1) of shard ``k`` against its checksum, once.
        ``mapped``: hash it through the file's map (a batch reads the page's rows from the map next, so
        its pages are mapped in either way); else through a descriptor, so that reading a row or a few
        does not leave the whole page mapped into the process."""
        checked = self._checked[k]
        if slot in checked or self._done[k]:
            return
        table = self._table(k)
        if not table or slot in checked:
            self._mark(k, [slot])
            return
        shard = self.shards[k]
        if slot not in table:                   # a page the table does not cover (strict refused it at open)
            checked.add(slot)
            self._mark(k, [slot])
            return
        _, nbytes, row_start, row_end, digest = table[slot]
        start, end = slot_range(shard.header["header_size"], shard.header["page_size"], slot, shard.size)
        files.storage.ensure(shard.path, start, end)          # at a URL: the page whole, then checked
        if start + nbytes > end or _digest(files, k, start, start + nbytes, mapped) != digest:
            what = "header" if slot == HEADER_SLOT else f"page {slot}"
            raise ChecksumError(f"{shard.path}: {what} (rows {row_start}..{row_end - 1}) does not match its "
                                f"checksum: the file is corrupt")
        if self.strict and slot != HEADER_SLOT:
            _check_prefixes(files.buffer(k), shard, self._page_entries(files, k, slot, start, end))
        checked.add(slot)
        self._mark(k, [slot])
        if self._shared[k] is not None:
            self._shared[k].add((slot, digest))
        if len(checked) >= len(table):
            self._finish(k)

    def _page_entries(self, files, k, slot, start, end):
        """Rows ``(data_start, data_end, row, is_blob)`` of the entries of page ``slot`` of shard ``k`` (the
        rows its page-table entry gives it) whose length prefix lies in the byte range [start, end)."""
        shard = self.shards[k]
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
                locs = files.locations.shard_rows(k, a, b)
                rows = np.arange(a, b, dtype=np.int64)
                parts.append(np.stack([locs[:, col], locs[:, col + 1], rows, rows * 0 + (col == 2)], axis=1))
        entries = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)
        inside = (entries[:, 0] >= start + ENTRY_PREFIX) & (entries[:, 0] < end + ENTRY_PREFIX)
        return entries[inside]


def _process_set(shard):
    """The ``(slot, digest)`` pairs of ``shard``'s file already checked in this process (a set shared by
    its readers), or None when the path no longer names the file that was opened."""
    try:
        st = os.stat(shard.path)
    except OSError:
        return None
    if (st.st_dev, st.st_ino) != tuple(shard.identity) or st.st_size != shard.size:
        return None
    return _CHECKED.setdefault((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), set())


_CHUNK = 1 << 20


def _digest(files, k, start, end, mapped=False):
    """Digest of bytes [start, end) of shard ``k``: from its map without a copy (``mapped``, or a dataset
    read through a cache), else read through its descriptor a chunk at a time into one buffer (the
    page's bytes do not stay mapped into the process: a first row does not add a page or two to its
    resident memory)."""
    fd = None if mapped else files.descriptor(k)
    if fd is None:
        with memoryview(files.buffer(k)) as view:
            return digest_bytes(view[start:end])
    hasher, chunk = new_hasher(), memoryview(bytearray(min(_CHUNK, max(end - start, 1))))
    pos = start
    while pos < end:
        n = os.preadv(fd, [chunk[:min(len(chunk), end - pos)]], pos)
        if n <= 0:
            break                                   # the file shrank: the digest will not match
        hasher.update(chunk[:n])
        pos += n
    return hasher.hexdigest()


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


def require_checksums(shards):
    """``verify=True``: every shard has a checksum for its header and each of its pages."""
    for shard in shards:
        if shard.checksums is None:
            raise ChecksumError(f"{shard.path}.db has no checksums (the file was not written by recordio); "
                                f"add them with `recordio verify --add-checksums`")
        missing = [p for p in [HEADER_SLOT] + [p.page_id for p in shard.pages] if p not in shard.checksums]
        if missing:
            raise ChecksumError(f"{shard.path}.db has no checksum for page(s) {missing}")
