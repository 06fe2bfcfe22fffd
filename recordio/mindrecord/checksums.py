"""Checksums of every byte of a data file: the header region and each page slot.

A page *slot* is ``[HS + p*PS, HS + (p+1)*PS)`` cut at the end of the file; slot ``-1``
is the header region ``[0, HS)``. Together the slots cover the whole file. Each slot's
digest covers its *extent* — every byte ever written there: the used bytes, and stale
bytes a raw-page shift left behind — and the rest of the slot is a hole that must read
as zeros (``verify`` checks it). So any changed byte is caught, and neither the writer
nor a reader with ``verify=True`` ever reads the holes. Digests are xxh3-64 (the
``xxhash`` package), named in the table so that another algorithm can be added later.
"""

import os

import xxhash

from recordio.mindrecord import format as fmt
from recordio.mindrecord.format import BLOB

__all__ = ["ALGORITHM", "HEADER_SLOT", "compute", "slot_range"]

ALGORITHM = "xxh3_64"
HEADER_SLOT = -1
_CHUNK = 8 << 20


def slot_range(header_size, page_size, page_id, file_size):
    """Absolute [start, end) of a slot (``page_id`` -1 is the header region)."""
    if page_id == HEADER_SLOT:
        return 0, min(header_size, file_size)
    start = fmt.page_offset(header_size, page_size, page_id)
    return start, max(start, min(start + page_size, file_size))


def digest_range(fd, start, end):
    h = xxhash.xxh3_64()
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(_CHUNK, end - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        pos += len(chunk)
    return h.hexdigest()


def new_hasher():
    return xxhash.xxh3_64()


def digest_bytes(data):
    return xxhash.xxh3_64_hexdigest(data)


def row_range(page, pages, total_rows):
    """(first_row, end_row) of the rows whose bytes a slot holds."""
    if page is None:
        return 0, total_rows
    if page.kind == BLOB:
        return page.start_row, page.end_row
    by_group = {p.type_id: p for p in pages if p.kind == BLOB}
    spans = [(by_group[g].start_row, by_group[g].end_row) for g, _ in page.groups if g in by_group]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (0, 0)


def scan_extent(fd, start, end, at_least=0):
    """Bytes from ``start`` up to the last non-zero byte before ``end`` (for files whose writer is unknown)."""
    pos = end
    while pos > start + at_least:
        lo = max(start + at_least, pos - _CHUNK)
        chunk = os.pread(fd, pos - lo, lo)
        stripped = len(chunk.rstrip(b"\x00"))
        if stripped:
            return lo + stripped - start
        pos = lo
    return at_least


def compute(fd, header_size, page_size, pages, header_length, extents=None, only=None, digests=None):
    """Rows ``(page_id, nbytes, row_start, row_end, digest)`` for the header and every page slot.

    ``extents``: ``{slot: bytes written}`` known to the writer; other slots are scanned for
    their last non-zero byte. ``header_length``: bytes of the header (prefix and JSON).
    ``only``: a set of slot ids to compute (others are left out). ``digests``: ``{slot: digest}``
    already computed while writing (those slots are not read back).
    """
    digests = digests or {}
    size = os.fstat(fd).st_size
    total = fmt.blob_rows(pages)
    extents = extents or {}
    out = []
    for page in [None] + list(pages):
        slot = HEADER_SLOT if page is None else page.page_id
        if only is not None and slot not in only:
            continue
        start, end = slot_range(header_size, page_size, slot, size)
        if page is None:              # the header padding is zero by definition (verify checks it)
            n = header_length
        else:
            n = max(page.size, extents[slot]) if slot in extents else scan_extent(fd, start, end, page.size)
        digest = digests[slot] if slot in digests and n == extents.get(slot) else digest_range(fd, start, start + n)
        out.append((slot, n, *row_range(page, pages, total), digest))
    return out
