"""Page checksums on every read of a remote dataset, not only under ``verify=True``.

A dataset written by recordio records digests of each page slot (and of the header region) in its
``.db`` (:mod:`checksums`): one per 1 MiB block, or, in files written before, one per slot. Reading
through the cache, a fetch usually brings whole pages (the epoch's spans cover them), so checking
them costs one hash of bytes just received. After a fetch has written its bytes and before it marks
them present, :class:`FetchChecks` hashes each block (or slot) the fetch completes (its other bytes
already present); a mismatch leaves the bytes unmarked (never served, from this process or another
sharing the cache) and is a :class:`ChecksumError` naming the URL and the byte range. A block never
whole in the cache (a reader needing a few of its rows) is not checked; ``verify=True`` fetches and
checks every page a row is read from.
"""
from __future__ import annotations

import bisect
import os

from recordio.errors import ChecksumError
from recordio.mindrecord.checksums import (DIGEST_CHARS, HEADER_SLOT, block_count, block_size, digest_bytes,
                                           slot_range)

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
            block = block_size(algorithm)
            count = block_count(nbytes, block)
            if block == 0 or nbytes <= 0 or start + nbytes > end or len(digest) != count * DIGEST_CHARS:
                continue                 # another algorithm, or a table the reader's verify will refuse
            what = "header" if slot == HEADER_SLOT else f"page {slot} (rows {row_start}..{row_end - 1})"
            step = block or nbytes       # a digest per block: a fetch that completes a block checks it
            for b in range(count):
                lo = start + b * step
                rows.append((lo, min(lo + step, start + nbytes), digest[b * DIGEST_CHARS:(b + 1) * DIGEST_CHARS],
                             what))
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
