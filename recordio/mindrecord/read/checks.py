"""Page checksums on a reader's first touch of the bytes it reads, and ``verify=True``'s binding of rows to bytes.

A dataset written by recordio records, in its ``.db``, a digest of each 1 MiB block of each page slot
and of the header region (:mod:`recordio.mindrecord.checksums`; files written before record one digest
per slot). A local reader checks the blocks a row's bytes lie in the first time it reads them — by
default whenever the dataset has checksums (``FileReader(verify=False)`` or
``config.set_page_checks(False)`` turn it off; MindSpore's files have none, and nothing is checked) —
and the file's header on its first row. Each block is hashed once, so a row's first touch costs
one hash of at most two blocks per field kind (its raw record's and its blob's, 1 MiB each, a few more
for a blob larger than a block), a pass over the dataset hashes each byte once, and once every block
of a file was checked a row costs one flag test. A slot with one digest (a file written before) is
hashed whole on its first touch, as before. The reader keeps its bookkeeping in 1 MiB units of each
slot (:data:`UNIT`): a row's raw and blob ranges, each with its 8-byte length prefix, map to the units
they cover, and a unit is marked once the digest covering it matched.
Which blocks were checked is kept per process, by file (device, inode, size and modification time)
and by each block's recorded digest: another reader of the same unchanged file in the process (a new
epoch's reader, a second ``FileReader``) does not hash them again; a file changed in place, or a block
whose recorded digest changed, is checked again.
A dataset at a URL checks every block its fetches complete instead (``fetch_checks``).

``verify=True`` (``strict``) also requires the checksums (a :class:`ChecksumError` without them),
checks a page whole on its first touch and checks each of its entries' 8-byte length prefixes against
the index (binding every row to the bytes the page table gives it; the tiling is checked at open).
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from recordio.errors import ChecksumError
from recordio.mindrecord.checksums import (BLOCK_BYTES, DIGEST_CHARS, HEADER_SLOT, block_count, block_size,
                                           digest_bytes, new_hasher, slot_range)
from recordio.mindrecord.format import BLOB, ENTRY_PREFIX

__all__ = ["UNIT", "PageChecks", "require_checksums"]

UNIT = BLOCK_BYTES          # bytes of a slot one flag of a reader's bookkeeping stands for

# (st_dev, st_ino, st_size, st_mtime_ns) of a data file -> the (slot, block bytes, block, digest) keys any
# reader of this process checked: a block whose recorded digest changed (an append rewrote it) is checked again
_CHECKED: dict[tuple, set] = {}


class PageChecks:
    """The checks of the open files ``shards``; ``strict``: ``verify=True``. A shard's table is read from
    its ``.db`` on first use. Each call takes ``files``, the reader's open files (maps, locations, storage:
    a :class:`~recordio.mindrecord.read.shard_set.ShardSet`), which holds this object.

    Unit ``u`` of shard ``k`` is ``base[k] + (slot + 1) * per[k] + (offset in slot) // UNIT``; ``_ok[u]``
    says no more work is needed for it."""

    def __init__(self, shards, strict=False):
        self.shards, self.strict = shards, strict
        self._checked: list[set] = [set() for _ in shards]     # (slot, block) digests matched, per shard
        self._left: list = [None] * len(shards)                # digests of the table not matched yet
        self._done = [False] * len(shards)        # every block checked, or nothing to check
        self.left = len(shards)                   # shards not done (0: a row needs no check)
        self._shared: list = [None] * len(shards)  # the process's checked keys, per shard
        self._hs = np.array([s.header["header_size"] for s in shards], dtype=np.int64)
        self._ps = np.array([s.header["page_size"] for s in shards], dtype=np.int64)
        self._per = -(-np.maximum(self._hs, self._ps) // UNIT)
        sizes = (np.array([len(s.pages) for s in shards], dtype=np.int64) + 1) * self._per
        self._base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._sizes = sizes.tolist()
        self._ok = bytearray(int(sizes.sum()))               # units this reader needs no more work for
        self._ok_np = np.frombuffer(self._ok, np.uint8)
        self._plain = list(zip(self._hs.tolist(), self._ps.tolist(), self._per.tolist(), self._base.tolist()))
        self._plain_base = self._base.tolist()
        if strict:
            for shard in shards:
                shard.checksums = shard.source.read_checksums()
            require_checksums(shards)

    # --- which units a read covers ---

    def _units(self, ids, starts, ends):
        """Units of the byte ranges ``[starts, ends)`` (each inside one page slot) of shards ``ids``."""
        n = len(starts)
        both = self._unit_of(ids, np.concatenate([starts, ends - 1]), twice=True)
        first, last = both[:n], both[n:]
        span = last - first
        if not span.any():
            return first
        if not (span > 1).any():
            return np.concatenate([first, last[span > 0]])
        counts = span + 1
        steps = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(first, counts) + steps

    def _unit_of(self, ids, pos, twice=False):
        """Units of the bytes at ``pos`` (past the header region) of shards ``ids`` (given once for both
        halves of ``pos`` when ``twice``)."""
        if len(self._plain) == 1:                       # one shard: its numbers as plain ints
            hs, ps, per, base = self._plain[0]
        else:
            ids = np.concatenate([ids, ids]) if twice else ids
            hs, ps, per, base = self._hs[ids], self._ps[ids], self._per[ids], self._base[ids]
        inside = pos - hs
        slot = inside // ps
        return base + (slot + 1) * per + (inside - slot * ps) // UNIT

    def row(self, files, k, rs, re_, bs, be, need_raw, need_blob):
        """Check the blocks that a row of shard ``k`` with raw range [rs, re_) and blob range [bs, be) is
        read from (once each): plain int arithmetic, the hot path of ``reader[i]``."""
        if self._done[k]:
            return
        hs, ps, per, base = self._plain[k]
        for lo, hi in ((rs - ENTRY_PREFIX, re_),) * need_raw + ((bs - ENTRY_PREFIX, be),) * need_blob:
            slot = (lo - hs) // ps if lo >= hs else -1
            start = hs + slot * ps if slot >= 0 else 0
            at = base + (slot + 1) * per
            for unit in range((lo - start) // UNIT, (hi - 1 - start) // UNIT + 1):
                if not self._ok[at + unit]:
                    self.page(files, k, HEADER_SLOT)
                    self._check(files, k, slot, unit, mapped=False)

    def rows(self, files, shard_ids, locs, need_raw, need_blob):
        """Check the blocks of many rows (``shard_ids`` and ``(n, 4)`` locations, as ``Locations.bulk``):
        the distinct units found with one sort, nothing at all once every shard is done."""
        if not self.left or not (need_raw or need_blob):
            return
        cols = [0] * need_raw + [2] * need_blob
        ids = np.concatenate([shard_ids] * len(cols)) if len(cols) > 1 else shard_ids
        starts = np.concatenate([locs[:, c] for c in cols]) if len(cols) > 1 else locs[:, cols[0]]
        ends = np.concatenate([locs[:, c + 1] for c in cols]) if len(cols) > 1 else locs[:, cols[0] + 1]
        units = self._units(ids, starts - ENTRY_PREFIX, ends)
        if self._ok_np[units].all():
            return                             # every block of the batch checked: one gather, no sort
        self._check_units(files, units, mapped=True)

    def _check_units(self, files, units, mapped):
        todo = units[self._ok_np[units] == 0]
        for u in sorted(set(todo.tolist())):           # a few distinct units, most often one
            if self._ok[u]:
                continue
            k = bisect.bisect_right(self._plain_base, u) - 1
            if self._done[k]:
                continue
            _, _, per, base = self._plain[k]
            self.page(files, k, HEADER_SLOT)
            self._check(files, k, (u - base) // per - 1, (u - base) % per, mapped)

    # --- the checks ---

    def _table(self, k):
        shard = self.shards[k]
        if self._left[k] is not None:
            return shard.checksums
        if shard.checksums is None:
            shard.checksums = shard.source.read_checksums() or {}
        table = shard.checksums
        self._left[k] = sum(block_count(row[1], block_size(row[0])) for row in table.values())
        if not table:
            self._finish(k)
            return table
        self._shared[k] = shared = None if self.strict else _process_set(shard)
        if shared:                      # blocks with these digests another reader here checked already
            for slot, row in table.items():
                for b, key in enumerate(_keys(slot, row)):
                    if key in shared:
                        self._matched(k, slot, b, row)
        return table

    def _finish(self, k):
        if not self._done[k]:
            self._done[k] = True
            self.left -= 1
            base = int(self._base[k])
            self._ok[base:base + self._sizes[k]] = b"\x01" * self._sizes[k]

    def _mark_slot(self, k, slot, lo=0, hi=None):
        """Mark units ``[lo, hi)`` of ``slot`` of shard ``k`` (to the slot's end without ``hi``)."""
        per = int(self._per[k])
        at = int(self._base[k]) + (slot + 1) * per
        hi = per if hi is None else min(hi, per)
        if hi > lo:
            self._ok[at + lo:at + hi] = b"\x01" * (hi - lo)

    def page(self, files, k, slot, mapped=False):
        """Check a whole page slot (or the header region, slot -1) of shard ``k`` against its checksums, once;
        under ``strict`` also its entries' length prefixes. ``mapped``: hash through the file's map (a
        batch reads its rows from the map next), else through a descriptor, so that reading a row or a
        few does not leave its blocks mapped into the process."""
        table = self._table(k)
        if self._done[k]:
            return
        row = table.get(slot)
        if row is None:                        # a slot the table does not cover (strict refused it at open)
            self._mark_slot(k, slot)
            return
        for b in range(block_count(row[1], block_size(row[0]))):
            self._check_block(files, k, slot, b, row, mapped)
        if self.strict and slot != HEADER_SLOT:
            shard = self.shards[k]
            start, end = slot_range(shard.header["header_size"], shard.header["page_size"], slot, shard.size)
            _check_prefixes(files.buffer(k), shard, self._page_entries(files, k, slot, start, end))

    def _check(self, files, k, slot, unit, mapped):
        """Check the digest covering unit ``unit`` of ``slot`` of shard ``k`` (under ``strict``: the page)."""
        table = self._table(k)
        if self._done[k]:
            return
        row = table.get(slot)
        if row is None or self.strict:
            self.page(files, k, slot, mapped)
            return
        block = block_size(row[0])
        if not block:
            self._check_block(files, k, slot, 0, row, mapped)
            return
        last = min(block_count(row[1], block), -(-(unit + 1) * UNIT // block))
        for b in range(unit * UNIT // block, max(last, unit * UNIT // block + 1)):
            self._check_block(files, k, slot, b, row, mapped)         # every digest the unit overlaps
        self._mark_slot(k, slot, unit, unit + 1)

    def _check_block(self, files, k, slot, b, row, mapped):
        """Check digest ``b`` of ``slot`` of shard ``k`` (table row ``row``), once."""
        if (slot, b) in self._checked[k]:
            return
        shard, block = self.shards[k], block_size(row[0])
        start, end = slot_range(shard.header["header_size"], shard.header["page_size"], slot, shard.size)
        lo, hi = _digest_range(row, start, b)
        files.storage.ensure(shard.path, lo, hi)            # at a URL: the block, then checked
        expected = row[4][b * DIGEST_CHARS:(b + 1) * DIGEST_CHARS] if block else row[4]
        if start + row[1] > end or block == 0 or _digest(files, k, lo, hi, mapped) != expected:
            what = "header" if slot == HEADER_SLOT else f"page {slot}"
            where = f" at bytes {lo}..{hi - 1}" if block else ""
            known = "" if block != 0 else f" (unknown checksum algorithm {row[0]!r})"
            raise ChecksumError(f"{shard.path}: {what} (rows {row[2]}..{row[3] - 1}) does not match its checksum"
                                f"{where}{known}: the file is corrupt")
        self._matched(k, slot, b, row)

    def _matched(self, k, slot, b, row):
        """Digest ``b`` of ``slot`` of shard ``k`` matched: mark the units it covers (the slot's last one
        also the rest of the slot, bytes no row lies in), count it, share it."""
        if (slot, b) in self._checked[k]:
            return
        self._checked[k].add((slot, b))
        block = block_size(row[0])
        count = block_count(row[1], block)
        if not block:
            self._mark_slot(k, slot)
        else:                                  # the units it covers whole
            self._mark_slot(k, slot, -(-b * block // UNIT), None if b == count - 1 else (b + 1) * block // UNIT)
        if self._shared[k] is not None:
            self._shared[k].add(_keys(slot, row)[b])
        self._left[k] -= 1
        if self._left[k] <= 0:
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


def _keys(slot, row):
    """The keys of a table row's digests in the process's set: (slot, block bytes, block, digest)."""
    block = block_size(row[0]) or 0
    digest = row[4]
    if not block:
        return [(slot, 0, 0, digest)]
    return [(slot, block, b, digest[b * DIGEST_CHARS:(b + 1) * DIGEST_CHARS])
            for b in range(block_count(row[1], block))]


def _digest_range(row, start, b):
    """Absolute [lo, hi) of digest ``b`` of a table row whose slot starts at ``start``."""
    block, nbytes = block_size(row[0]), row[1]
    if not block:
        return start, start + nbytes
    lo = start + b * block
    return lo, min(lo + block, start + nbytes)


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
