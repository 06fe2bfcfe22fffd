"""The ``.db`` of a shard being written, filled as rows' locations become final: writer memory that
does not grow with the row count.

A row's location is final once its row group is: MindSpore's page algorithm (FORMAT.md §4.4) only
ever moves the *current* row group (the raw-page shift), so every row before the current BLOB page's
first row is where it will stay. :class:`StreamingPages` keeps entry lengths for the current group
only (compact arrays, no Python int per row) and hands out the final rows' INDEXES locations;
:class:`ValueSpool` keeps the rows' index values in an anonymous file beside the dataset until
their locations are final; :class:`IndexStream` inserts both into the staged ``.db`` through one
transaction (:class:`index.IndexBuilder`), in row order, as :func:`staging.build_index` does at
commit. The statements, their order and the transaction are the same, so the ``.db`` is too.
"""

from __future__ import annotations

import functools
import os
import tempfile
from array import array

import msgpack
import numpy as np

from recordio.mindrecord import index
from recordio.mindrecord.format import BLOB, RAW
from recordio.mindrecord.pages import ShardPages

__all__ = ["IndexStream", "StreamingPages", "ValueSpool"]

_READ = 1 << 20
_packb = functools.partial(msgpack.packb, use_bin_type=True)


class StreamingPages(ShardPages):
    """:class:`ShardPages` that forgets the entry lengths of rows once their locations are taken, and
    keeps no copy of the last RAW page: the raw-page shift is done in the staged file by
    ``copy(src_page, src_offset, dst_page, n, hasher)`` (every earlier call's writes are there), a
    chunk at a time, feeding the new page's digest as writing it would."""

    def __init__(self, shard_id, page_size, copy):
        super().__init__(shard_id, page_size)
        self._copy = copy
        self._rb, self._rr = array("I"), array("I")    # entry lengths of the rows not taken (< 2^32: a page)
        self.taken = 0                                  # rows whose locations were handed out
        self._blob_at = 0                               # where in ``pages`` to look for the next group
        self._raw_at = (0, 0)                           # (page index, group index) of the next group's record
        self._group = None                              # the row group being taken, when partly taken

    def add(self, blobs, raws):
        writes = super().add(blobs, raws)
        self._rb.extend(self.blob_lengths)
        self._rr.extend(self.raw_lengths)
        self.blob_lengths.clear()
        self.raw_lengths.clear()
        self.raw_tail = bytearray()
        return writes

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

    def take(self, everything=False, limit=1 << 14):
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
        rb = np.frombuffer(self._rb, dtype=np.uint32, count=n).astype(np.int64)
        rr = np.frombuffer(self._rr, dtype=np.uint32, count=n).astype(np.int64)
        del self._rb[:n], self._rr[:n]
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


class ValueSpool:
    """A first-in first-out file of index values (tuples of int, float, str), anonymous (unlinked at
    creation) and in ``directory``, so that memory holds a read buffer only."""

    def __init__(self, directory):
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".rio-values-")
        self._fd = self._file.fileno()
        self._written = self._read = 0
        self._unpacker = msgpack.Unpacker(use_list=False, raw=False, strict_map_key=False,
                                          max_buffer_size=0)
        self._call, self._left = (), 0                  # the call being taken and how much of it is

    def push(self, values):
        """Append a list of tuples (one msgpack array: the spool holds calls, not rows)."""
        view = memoryview(_packb(values))
        while view:
            done = os.pwrite(self._fd, view, self._written)
            self._written += done
            view = view[done:]

    def take(self, n):
        """The next ``n`` tuples pushed, as a list."""
        out = []
        while len(out) < n:
            if self._left >= len(self._call):
                self._call, self._left = self._next_call(), 0
            got = self._call[self._left:self._left + n - len(out)]
            self._left += len(got)
            out.extend(got)
        if self._left >= len(self._call):
            self._call, self._left = [], 0            # do not hold a call's values longer than needed
        return out

    def _next_call(self):
        while True:
            for item in self._unpacker:
                return item
            chunk = os.pread(self._fd, _READ, self._read)
            if not chunk:
                raise RuntimeError("index value spool: fewer values than rows")
            self._read += len(chunk)
            self._unpacker.feed(chunk)

    def close(self):
        self._file.close()


class IndexStream:
    """One shard's staged ``.db``, filled as :meth:`flush` finds rows whose locations are final."""

    def __init__(self, db, shard_name, index_fields, directory, cache_kib=2000):
        self.fields = len(index_fields)
        self.builder = index.IndexBuilder(db, shard_name, index_fields, cache_kib)
        self.values = ValueSpool(directory) if self.fields else None

    def push(self, values):
        """The index values of rows just written (in row order)."""
        if self.values is not None:
            self.values.push(values)

    def flush(self, pages, everything=False):
        """Insert the rows of ``pages`` (a :class:`StreamingPages`) whose locations are final, a bounded
        number at a time."""
        while True:
            locations = pages.take(everything)
            if not len(locations):
                return
            columns = [col.tolist() for col in locations.T]
            if self.fields:
                zeros = [0] * len(locations)
                values = self.values.take(len(locations))
                for j in range(self.fields):
                    columns += [zeros, [_sql_value(v[j]) for v in values]]
            self.builder.add(zip(*columns))

    def finish(self, pages, checksums, meta):
        self.flush(pages, everything=True)
        self.builder.finish(checksums, meta)
        self._close_values()

    def abort(self):
        self.builder.abort()
        self._close_values()

    def _close_values(self):
        if self.values is not None:
            self.values.close()
            self.values = None


def _sql_value(value):
    if type(value) is float and value != value:
        return None
    return value
