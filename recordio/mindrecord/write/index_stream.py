"""The ``.db`` of a shard being written, filled as rows' locations become final: writer memory that
does not grow with the row count.

A row's location is final once its row group is: MindSpore's page algorithm (FORMAT.md §4.4) only
ever moves the *current* row group (the raw-page shift), so every row before the current BLOB page's
first row is where it will stay. ``pages.StreamingPages`` keeps the entry lengths of the rows not
handed out yet in an anonymous file (:class:`LengthSpool`; no Python int per row) and hands out the
final rows' INDEXES locations; :class:`ValueSpool` keeps the rows' index values in another until
their locations are final; :class:`IndexStream` inserts both into the staged ``.db`` through one
transaction (:class:`index_write.IndexBuilder`), in row order.

An append (``pages.AppendPages``) continues a shard the same way: its staged ``.db`` is a copy of the
old one without the rows of the last row group, whose lengths and values are handed in first
(``StreamingPages.pending``), so an append reads one row group of the old dataset, not all of it.
"""

from __future__ import annotations

import os
import tempfile

import msgpack
import numpy as np

from recordio.mindrecord import index_write
from recordio.mindrecord.fileio import pwrite_all

__all__ = ["IndexStream", "LengthSpool", "ValueSpool"]

_READ = 1 << 16


class LengthSpool:
    """A first-in first-out file of entry lengths (blob, raw; uint32 pairs), anonymous and in
    ``directory``: the rows of a group that is not final yet (millions when rows are tiny and a page is
    large) cost the writer no memory. Pushes are buffered and written a megabyte at a time."""

    _FLUSH = 1 << 20

    def __init__(self, directory=None):
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".rio-lengths-")
        self._fd = self._file.fileno()
        self._buffer = bytearray()               # pushed, not in the file yet (after the file's rows)
        self._written = self._read = 0           # bytes in the file, bytes of it taken

    def push(self, blob_lengths, raw_lengths):
        pairs = np.empty((len(blob_lengths), 2), dtype=np.uint32)
        pairs[:, 0], pairs[:, 1] = blob_lengths, raw_lengths
        self._buffer += pairs.tobytes()
        if len(self._buffer) >= self._FLUSH:
            pwrite_all(self._fd, self._buffer, self._written, "entry length spool")
            self._written += len(self._buffer)
            self._buffer = bytearray()

    def take(self, n):
        """The next ``n`` pairs pushed, as two int64 arrays (blob lengths, raw lengths)."""
        want = 8 * n
        data = os.pread(self._fd, min(want, self._written - self._read), self._read) if self._written > self._read else b""
        self._read += len(data)
        if len(data) < want:
            rest = want - len(data)
            data += self._buffer[:rest]
            del self._buffer[:rest]
            self._read = self._written = 0          # the file is all taken: reuse it from the start
        if len(data) != want:
            raise RuntimeError(f"entry length spool: {len(data) // 8} of {n} rows")
        pairs = np.frombuffer(data, dtype=np.uint32).reshape(n, 2).astype(np.int64)
        return pairs[:, 0], pairs[:, 1]

    def close(self):
        self._file.close()


class ValueSpool:
    """A first-in first-out file of index values (tuples of int, float, str), anonymous (unlinked at
    creation) and in ``directory``, so that memory holds a read buffer only. A push is one msgpack
    array (one pack per call); taking unpacks its tuples one at a time, so that no call is held whole."""

    def __init__(self, directory):
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".rio-values-")
        self._fd = self._file.fileno()
        self._written = self._read = 0
        self._unpacker = msgpack.Unpacker(use_list=False, raw=False, strict_map_key=False,
                                          max_buffer_size=0)
        self._left = 0                                   # tuples left in the array being taken
        self._pack = msgpack.Packer(use_bin_type=True, autoreset=True).pack    # one per spool: not thread-safe

    def push(self, values):
        """Append a list of tuples."""
        data = self._pack(values)
        pwrite_all(self._fd, data, self._written, "index value spool")
        self._written += len(data)

    def take(self, n):
        """The next ``n`` tuples pushed, as a list."""
        out, unpack = [], self._unpacker.unpack
        while len(out) < n:
            try:
                if not self._left:
                    self._left = self._unpacker.read_array_header()
                    continue
                while self._left and len(out) < n:
                    out.append(unpack())
                    self._left -= 1
            except msgpack.OutOfData:
                self._feed()
        return out

    def _feed(self):
        chunk = os.pread(self._fd, _READ, self._read)
        if not chunk:
            raise RuntimeError("index value spool: fewer values than rows")
        self._read += len(chunk)
        self._unpacker.feed(chunk)

    def close(self):
        self._file.close()


class IndexStream:
    """One shard's staged ``.db``, filled as :meth:`flush` finds rows whose locations are final."""

    def __init__(self, db, shard_name, index_fields, directory, cache_kib=512, first_row=None):
        self.fields = len(index_fields)
        self.builder = (index_write.IndexBuilder(db, shard_name, index_fields, cache_kib) if first_row is None else
                        index_write.IndexBuilder.continuing(db, index_fields, first_row, cache_kib))
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
