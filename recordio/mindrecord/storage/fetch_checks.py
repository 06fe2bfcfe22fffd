"""Page checksums on every read of a remote dataset, not only under ``verify=True``.

A dataset written by recordio records a digest of each page slot (and of the header region) in its
``.db`` (:mod:`checksums`). Reading through the cache, a fetch usually brings whole pages (the
epoch's spans cover them), so checking them costs one hash of bytes just received. After a fetch
has written its bytes and before it marks them present, :class:`FetchChecks` hashes each page the
fetch completes (its other blocks already present); a mismatch leaves the blocks unmarked (never
served, from this process or another sharing the cache) and is a :class:`ChecksumError` naming the
URL and the byte range. A page never whole in the cache (a reader needing a few of its rows) is not
checked; ``verify=True`` fetches and checks every page a row is read from.
"""

from __future__ import annotations

import bisect
import os

from recordio.errors import ChecksumError
from recordio.mindrecord.checksums import ALGORITHM, HEADER_SLOT, digest_bytes, slot_range

__all__ = ["FetchChecks"]


class FetchChecks:
    """The page digests of some cached objects (by local path); called as a fetch's check."""

    def __init__(self):
        self._tables: dict = {}          # realpath -> (starts, ends, digests, labels), by start

    def add(self, path, header_size, page_size, size, checksums):
        """Register a data file's checksum table (``{slot: (algorithm, nbytes, row_start, row_end,
        digest)}``, ``None`` without one: nothing to check)."""
        rows = []
        for slot, (algorithm, nbytes, row_start, row_end, digest) in (checksums or {}).items():
            start, end = slot_range(header_size, page_size, slot, size)
            if algorithm != ALGORITHM or nbytes <= 0 or start + nbytes > end:
                continue                 # another algorithm, or a table the reader's verify will refuse
            what = "header" if slot == HEADER_SLOT else f"page {slot} (rows {row_start}..{row_end - 1})"
            rows.append((start, start + nbytes, digest, what))
        if rows:
            rows.sort()
            self._tables[os.path.realpath(path)] = tuple(map(list, zip(*rows)))

    def __bool__(self):
        return bool(self._tables)

    def __call__(self, obj, lo, hi):
        """Check the pages that bytes [lo, hi) of ``obj``, just written, complete."""
        table = self._tables.get(os.path.realpath(obj.path))
        if table is None:
            return
        starts, ends, digests, labels = table
        for k in range(bisect.bisect_right(ends, lo), bisect.bisect_left(starts, hi)):
            start, end = starts[k], ends[k]
            if (start < lo and obj.missing(start, lo)) or (end > hi and obj.missing(hi, end)):
                continue                 # not whole yet: checked by the fetch that completes it
            if digest_bytes(os.pread(obj.fd, end - start, start)) != digests[k]:
                raise ChecksumError(f"{obj.url} bytes {start}..{end - 1}: {labels[k]} does not match its "
                                    f"checksum: the object is corrupt (the fetched bytes are not used)")
