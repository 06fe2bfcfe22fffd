"""Checksums of every byte of a data file: the header region and each page slot.

A page *slot* is ``[HS + p*PS, HS + (p+1)*PS)`` cut at the end of the file; slot ``-1``
is the header region ``[0, HS)``. Together the slots cover the whole file. Each slot's
digest covers its *extent* — every byte ever written there: the used bytes, and stale
bytes a raw-page shift left behind — and the rest of the slot is a hole that must read
as zeros (``verify`` checks it). So any changed byte is caught, and neither the writer
nor a reader with ``verify=True`` ever reads the holes. Digests are xxh3-64 (the
``xxhash`` package), named in the table's ALGORITHM column:

* ``xxh3_64:1048576`` (:data:`ALGORITHM`, what recordio writes): one digest per **block** of
  :data:`BLOCK_BYTES` of the extent, the last block cut at its end; DIGEST holds their 16-hex-digit
  digests one after another (block ``b`` covers extent bytes ``[b*B, (b+1)*B)``; an empty extent has
  one digest, of no bytes). A reader's first touch of a row then hashes only the blocks its bytes
  lie in, not the whole page.
* ``xxh3_64`` (:data:`SLOT_ALGORITHM`, files written before): one digest of the whole extent.
"""

import functools
import os

import xxhash

from recordio.mindrecord import format as fmt
from recordio.mindrecord.format import BLOB

__all__ = ["ALGORITHM", "BLOCK_BYTES", "HEADER_SLOT", "SLOT_ALGORITHM", "BlockHasher", "block_size", "compute",
           "digest_blocks", "slot_range"]

BLOCK_BYTES = 1 << 20
SLOT_ALGORITHM = "xxh3_64"
ALGORITHM = f"{SLOT_ALGORITHM}:{BLOCK_BYTES}"
DIGEST_CHARS = 16                      # an xxh3-64 hex digest
HEADER_SLOT = -1
_CHUNK = 8 << 20                       # a multiple of BLOCK_BYTES


@functools.lru_cache(maxsize=64)
def block_size(algorithm):
    """Bytes a digest of ``algorithm`` covers: None for one digest per slot (:data:`SLOT_ALGORITHM`),
    the block size of ``xxh3_64:N``, 0 for an algorithm this version does not know."""
    if algorithm == SLOT_ALGORITHM:
        return None
    name, _, size = str(algorithm).partition(":")
    return int(size) if name == SLOT_ALGORITHM and size.isdigit() and 0 < int(size) < 1 << 40 else 0


def block_count(nbytes, block):
    """Digests of an extent of ``nbytes`` in blocks of ``block`` (1 for one digest per slot)."""
    return 1 if not block else max(1, -(-nbytes // block))


class BlockHasher:
    """A running digest of bytes fed front to back, as the table form of :data:`ALGORITHM` (one
    xxh3-64 per :data:`BLOCK_BYTES`): ``update``, ``hexdigest``, as xxhash's own hashers."""

    def __init__(self, block=BLOCK_BYTES):
        self.block, self.done, self.fill, self.hasher = block, [], 0, xxhash.xxh3_64()

    def update(self, data):
        view = memoryview(data).cast("B")
        while len(view):
            take = min(self.block - self.fill, len(view))
            self.hasher.update(view[:take])
            self.fill += take
            view = view[take:]
            if self.fill == self.block:
                self.done.append(self.hasher.hexdigest())
                self.hasher, self.fill = xxhash.xxh3_64(), 0

    def hexdigest(self):
        tail = [self.hasher.hexdigest()] if self.fill or not self.done else []
        return "".join(self.done + tail)


def digest_blocks(data, block=BLOCK_BYTES):
    """The table digest of ``data`` (a bytes-like extent) in blocks of ``block``."""
    hasher = BlockHasher(block)
    hasher.update(data)
    return hasher.hexdigest()


def slot_range(header_size, page_size, page_id, file_size):
    """Absolute [start, end) of a slot (``page_id`` -1 is the header region)."""
    if page_id == HEADER_SLOT:
        return 0, min(header_size, file_size)
    start = fmt.page_offset(header_size, page_size, page_id)
    return start, max(start, min(start + page_size, file_size))


def digest_range(fd, start, end, block=None):
    """The digest of bytes [start, end) of ``fd``: one xxh3-64, or in blocks of ``block``."""
    h = BlockHasher(block) if block else xxhash.xxh3_64()
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
    """Rows ``(page_id, nbytes, row_start, row_end, digest)`` for the header and every page slot, their
    digests in the form of :data:`ALGORITHM`.

    ``extents``: ``{slot: bytes written}`` known to the writer; other slots are scanned for
    their last non-zero byte. ``header_length``: bytes of the header (prefix and JSON).
    ``only``: a set of slot ids to compute (others are left out). ``digests``: ``{slot: digest}``
    already computed while writing, by :class:`BlockHasher` (those slots are not read back).
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
        digest = (digests[slot] if slot in digests and n == extents.get(slot)
                  else digest_range(fd, start, start + n, BLOCK_BYTES))
        out.append((slot, n, *row_range(page, pages, total), digest))
    return out
