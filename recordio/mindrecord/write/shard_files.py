"""The files of a dataset being written: staged data files, headers, ``.db`` files, checksums.

Files are created with mode ``0o666`` minus the process umask (usually ``0644``), not
MindSpore's forced ``0600``: datasets are commonly shared between users and jobs.
"""

import functools
import json
import os
import resource
import warnings

import xxhash

from recordio import __version__
from recordio.mindrecord import format as fmt
from recordio.mindrecord.fileio import pwrite_all
from recordio.mindrecord.checksums import ALGORITHM
from recordio.mindrecord.checksums import compute as checksums_of
from recordio.mindrecord.index import ELEMENTS_KEY
from recordio.mindrecord.write.index_stream import IndexStream
from recordio.mindrecord.write.pages import StreamingPages

__all__ = ["ShardFiles", "split_counts"]


def split_counts(n, shards, held=None):
    """Rows per shard for a call of ``n`` rows: ``n // shards`` each, and the ``n % shards`` leftover
    rows go to the shards ``held`` (their current row counts) says hold the fewest rows, lowest index
    first. Deterministic and derived from the dataset itself, so appends continue it and one-row
    calls fill every shard; a call that is a multiple of ``shards`` splits as MindSpore does."""
    q, r = divmod(n, shards)
    held = held or [0] * shards
    fewest = set(sorted(range(shards), key=lambda i: (held[i], i))[:r])
    return [q + 1 if i in fewest else q for i in range(shards)]


class ShardFiles:
    """Staged data files of one writer and their page allocators (``states``, one :class:`StreamingPages`
    a shard): ``add_rows`` places a call's rows of one shard, writes their bytes and adds them to the
    staged ``.db`` as their locations become final; ``finish`` publishes."""

    def __init__(self, staging, header_size, page_size, checksums=True, fsync=True, index_fields=()):
        self.staging = staging
        self.checksums, self.fsync = checksums, fsync
        self.header_size = header_size
        self.page_size = page_size
        self._rotation = 0
        self.fds = []
        self.streams = []
        count = len(staging.targets)
        ensure_descriptors(3 * count)           # data file, .db and index value spool per shard
        cache_kib = max(64, min(512, (16 << 10) // count))   # SQLite pages in memory per staged .db
        try:
            for path in staging.data_paths():
                self.fds.append(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666))
            for db, target in zip(staging.db_paths(), staging.targets):
                self.streams.append(IndexStream(db, os.path.basename(target), index_fields,
                                                staging.directory, cache_kib))
        except BaseException:
            self.abort()
            raise
        self.states = [StreamingPages(i, page_size, functools.partial(self.copy, i), staging.directory)
                       for i in range(count)]

    def add_rows(self, shard, blobs, raws, values):
        """One call's rows of ``shard`` (their blobs, raw records and index values): placed in pages,
        written, and indexed once their locations are final."""
        self.write(shard, self.states[shard].add(blobs, raws))
        self.index_rows(shard, values)

    def next_rotating(self, shards):
        shard = self._rotation % shards
        self._rotation += 1
        return shard

    def write(self, shard, writes):
        fd, path = self.fds[shard], self.staging.data_paths()[shard]
        for page_id, offset, data in writes:
            pwrite_all(fd, data, fmt.page_offset(self.header_size, self.page_size, page_id) + offset, path)

    def copy(self, shard, src_page, src_offset, dst_page, n, hasher=None, chunk=1 << 20):
        """Copy ``n`` bytes from ``src_offset`` of page ``src_page`` to the start of page ``dst_page`` of
        ``shard`` (the raw-page shift), a chunk at a time, feeding ``hasher``."""
        fd, path = self.fds[shard], self.staging.data_paths()[shard]
        src = fmt.page_offset(self.header_size, self.page_size, src_page) + src_offset
        dst = fmt.page_offset(self.header_size, self.page_size, dst_page)
        for done in range(0, n, chunk):
            data = os.pread(fd, min(chunk, n - done), src + done)
            if len(data) != min(chunk, n - done):
                raise OSError(f"{path}: read {len(data)} of {min(chunk, n - done)} bytes at {src + done}")
            pwrite_all(fd, data, dst + done, path)
            if hasher is not None:
                hasher.update(data)

    def index_rows(self, shard, values):
        """The index values of rows just written to ``shard``; rows whose locations are final go to its
        ``.db``."""
        self.streams[shard].push(values)
        self.streams[shard].flush(self.states[shard])

    def finish(self, shards, header, index_values=None, index_fields=None, independent=False):
        """Write headers and complete the ``.db`` files in the staging names, then publish them.
        (``index_values`` and ``index_fields`` went to the ``.db`` files as rows were written.)"""
        names = [os.path.basename(t) for t in self.staging.targets]
        for i, (fd, shard) in enumerate(zip(self.fds, shards)):
            blob = header_bytes(self.header_size, self.page_size, header, shard, names, i, independent)
            pwrite_all(fd, blob, 0, self.staging.data_paths()[i])
            rows = checksums_of(fd, self.header_size, self.page_size, shard.pages, len(blob),
                                shard.extents, digests=shard.digests()) if self.checksums else None
            self.streams[i].finish(shard, None if rows is None else (ALGORITHM, rows),
                                   index_meta(blob, header["elements"][i]))
        self.streams = []
        warn_encrypt_tail(self.fds, self.staging.targets)
        self._close_fds()
        self.staging.publish(fsync=self.fsync)

    def _close_fds(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def abort(self):
        for stream in self.streams:
            stream.abort()
        self.streams = []
        self._close_fds()
        self.staging.abort()


def ensure_descriptors(count):
    """Raise the soft limit on open files when a writer needs ``count`` of them (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = count + 64
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else min(need, hard), hard))


def header_bytes(header_size, page_size, header, shard, names, i, independent=False):
    """The header of shard ``i`` (``independent``: a one-file dataset, as parallel_writer writes)."""
    addresses, shard_id = ([names[i]], 0) if independent else (names, i)
    for page in shard.pages:
        page.shard_id = shard_id       # MindSpore files pages under this id when it opens one file
    compression = header["file_compression_sizes"][i] if independent else header["compression_size"]
    return fmt.encode_header(header_size, page_size, header["index_fields"], shard.pages,
                             compression, header["schema"], header["blob_fields"],
                             header["desc"], addresses, shard_id)


def index_meta(header_blob, elements=None):
    """recordio's facts about a shard, for its ``.db``'s meta table: the writer, the header's digest and,
    when known and the schema has any, the element counts of its variable-shape array fields
    (``{field: total}``, the token count of a token dataset)."""
    meta = {"writer": f"recordio {__version__}", "header_xxh3": xxhash.xxh3_64_hexdigest(header_blob)}
    if elements:
        meta[ELEMENTS_KEY] = json.dumps(elements, sort_keys=True)
    return meta


def warn_encrypt_tail(fds, targets):
    for fd, target in zip(fds, targets):
        size = os.fstat(fd).st_size
        if size >= len(fmt.ENCRYPT_TAIL) and os.pread(fd, 7, size - 7) == fmt.ENCRYPT_TAIL:
            warnings.warn(f"{target} ends with the bytes 'ENCRYPT' (the end of its last value): recordio "
                          f"reads it, but MindSpore will take it for an encrypted file and refuse it",
                          stacklevel=5)
