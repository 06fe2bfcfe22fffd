"""Appending to an existing dataset without ever leaving its old rows unreadable.

MindSpore's page algorithm continues the last BLOB and RAW pages of each shard. Bytes
for *new* pages go straight to the end of the data files, where the old header and
``.db`` never look. Bytes that continue an *existing* page are spooled aside
(``.<name>.spool.rio-<token>.tmp``) and applied only during commit. So until commit,
the old dataset is untouched; a killed writer leaves it readable (its only trace,
bytes after the last old page, is cut off again by the next writer's recovery).

The new ``.db`` of a shard is built under a staging name from a copy of the old one: the rows
before its last row group stay as they are, that group's rows (the raw-page shift may move them)
and the new rows are inserted as their locations become final (``index_stream``), so an append
reads one row group of the old data and holds no more than the writer does. A shard whose ``.db``
is lost gets a new one from the page table.

Commit: the ``.db`` files are completed under their staging names and everything is fsync-ed;
then a journal (``.<shard>.rio-<token>.journal``, one per shard, same content) records
the new headers, the spooled writes and the ``.db`` renames, and is fsync-ed; then the
plan is applied (spooled writes, headers, renames) and the journal removed. A crash
after the journal exists is finished by ``recovery.recover`` (run by writers and by
``recordio repair`` when they find a journal whose writer is dead; readers never write and
ask for a repair instead): applying the plan is idempotent.
"""

import errno
import json
import os
import shutil
import typing

import numpy as np

from recordio.errors import FormatError
from recordio.mindrecord import checksums as sums
from recordio.mindrecord import encryption
from recordio.mindrecord import format as fmt
from recordio.mindrecord.codec import unpack_raw
from recordio.mindrecord.write.commit import Staging, clean_stale, fsync_dir, fsync_file
from recordio.mindrecord import index
from recordio.mindrecord.write.index_stream import IndexStream
from recordio.mindrecord.write.locks import DatasetLock
from recordio.mindrecord.write.pages import AppendPages
from recordio.mindrecord.fileio import pwrite_all
from recordio.mindrecord.write.recovery import apply_plan, finish_plan, journal_paths, remove_journal, repair
from recordio.mindrecord.write.shard_files import header_bytes, index_meta, warn_encrypt_tail
from recordio.mindrecord.read.fileset import open_shards

__all__ = ["AppendFiles", "Appending", "load_shards", "open_appending"]

_CHUNK = 1 << 14          # rows of an old shard read at a time


class Appending(typing.NamedTuple):
    """What a writer adding rows to a dataset starts from: the dataset's facts, its lock (held) and the
    files that take the new rows (:meth:`FileWriter.open_for_append` sets itself up from it)."""

    targets: list
    lock: DatasetLock
    schema: typing.Any
    desc: str
    header_size: int
    page_size: int
    compression_size: int
    index_fields: list
    elements: list
    files: "AppendFiles"


def open_appending(file_name, checksums, fsync) -> Appending:
    """Lock the dataset of ``file_name`` (any of its shards), repair or check it, and open its files for
    new rows; the lock is released if anything after it fails."""
    if encryption.key() is not None:
        encryption.check_key(os.fspath(file_name))      # MindSpore's errors: a plain file, a wrong key
        raise NotImplementedError(f"{file_name}: appending to an encrypted dataset is not supported; "
                                  f"write a new dataset (set_enc_key(None) for plain files)")
    try:
        first = fmt.dataset_paths(file_name)[0]
    except FormatError as exc:
        encryption.explain(file_name, exc)      # an encrypted file: MindSpore's sentence
    lock = DatasetLock(first)                   # before anything is read or repaired
    try:
        shards, schema, with_index = load_shards(os.fspath(file_name))
        header = shards[0].header
        fields = [f["index_field"] for f in header["index_fields"] or []]
        elements = [index.recorded_elements(s.path, schema.counted) for s in shards]
        files = AppendFiles(shards, schema, with_index, [(f, schema.fields[f].type) for f in fields],
                            checksums=checksums, fsync=fsync)
        return Appending([s.path for s in shards], lock, schema, header["schema"][0].get("desc", ""),
                         header["header_size"], header["page_size"], header.get("compression_size", 0), fields,
                         elements, files)
    except BaseException:
        lock.release()
        raise


def load_shards(path):
    """``(shards, schema, with_index)`` of an existing dataset to append to (repaired first; ``with_index``:
    every shard has its ``.db``, so an append keeps their rows and writes only those that may move)."""
    repair(path)
    paths = fmt.dataset_paths(path)
    with_index = all(os.path.exists(index.db_path(p)) for p in paths)
    shards, schema = open_shards(path, use_index=with_index)
    check_writable(shards)
    clean_stale(os.path.dirname(os.path.abspath(shards[0].path)))     # as FileWriter does before writing
    return shards, schema, with_index


def check_writable(shards):
    """An append writes only the dataset's own files: regular files (a ``.db`` may be missing), none a
    symlink leading out of its folder."""
    for shard in shards:
        for path in (shard.path, shard.path + ".db"):
            fmt.check_inside(path, f"{shard.path}: append")
            if os.path.lexists(path):
                os.close(fmt.open_regular(path))


def _shard_state(i, shard, with_index):
    """The :class:`AppendPages` of shard ``i``: the last pages, the last RAW page's bytes, and the rows it
    hands locations out from (its last row group, the only old rows an append may move, with the
    ``.db``; every row without)."""
    pages = shard.pages
    raws = [p for p in pages if p.kind == fmt.RAW]
    blobs = [p for p in pages if p.kind == fmt.BLOB]
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    first = blobs[-1].start_row if with_index and blobs else 0
    with open(shard.path, "rb") as f:
        tail = os.pread(f.fileno(), raws[-1].size, fmt.page_offset(hs, ps, raws[-1].page_id)) if raws else b""
    return AppendPages(i, ps, pages, tail, first, os.path.dirname(os.path.abspath(shard.path)))


def _pending(shard, state, stream, schema):
    """Hand the entry lengths and index values of the old rows from ``state.taken`` on to ``state`` and
    ``stream``, a chunk at a time (locations checked as a reader checks them, not cached)."""
    fields = [f["index_field"] for f in shard.header["index_fields"] or []]
    decode = schema.decoder(fields)[0] if fields else None
    with open(shard.path, "rb") as f:
        for a in range(state.taken, shard.count, _CHUNK):
            locs = shard.source.load(a, min(a + _CHUNK, shard.count))
            state.pending(locs[:, 3] - locs[:, 2] + fmt.ENTRY_PREFIX, locs[:, 1] - locs[:, 0] + fmt.ENTRY_PREFIX)
            if fields:
                stream.push(_index_values(shard, f.fileno(), locs, a, fields, decode))


def _index_values(shard, fd, locs, first, fields, decode):
    """Index values of rows ``first, first + 1, ...`` at ``locs`` (checked against the schema): the
    records of each RAW page's run of rows follow one another, so a run is one read."""
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    page = (locs[:, 0] - fmt.ENTRY_PREFIX - hs) // ps
    cuts = [0, *(np.flatnonzero(np.diff(page)) + 1).tolist(), len(locs)]
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        base, end = int(locs[lo, 0]), int(locs[hi - 1, 1])
        data = os.pread(fd, end - base, base)
        for local, (s, e) in enumerate((locs[lo:hi, :2] - base).tolist(), first + lo):
            record = unpack_raw(data[s:e])
            decode(record, None, f"{shard.path}: row {local}")
            out.append(tuple(record[name] for name in fields))
    return out


def _reserve(fd, at, n):
    """Allocate the blocks of ``[at, at + n)`` where the filesystem can (``ENOSPC`` now, not later)."""
    try:
        os.posix_fallocate(fd, at, n)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


class AppendFiles:
    """The files of an append in progress; the same interface as ``ShardFiles``."""

    def __init__(self, shards, schema, with_index, index_fields, checksums=True, fsync=True):
        header = shards[0].header
        self.targets = [s.path for s in shards]
        self.header_size, self.page_size = header["header_size"], header["page_size"]
        self.checksums, self.fsync = checksums, fsync
        self.staging = Staging(self.targets)
        self.old_sizes = [s.size for s in shards]
        self.old_pages = [len(s.pages) for s in shards]
        self.old_headers = [len(s.header_bytes) for s in shards]
        self.old_checksums = [s.source.read_checksums() for s in shards]
        self.deferred = [[] for _ in shards]
        self.spools = [self.staging.staged(t + ".spool") for t in self.targets]
        self._rotation = 0
        self.plan = None
        self.fds, self.streams, self.states = [], [], []
        try:
            self._open(shards, schema, with_index, index_fields)
        except BaseException:
            self.abort()
            raise
        self._write_journal({"phase": 1, "targets": self.targets, "sizes": self.old_sizes})

    def _open(self, shards, schema, with_index, index_fields):
        """The page state of each shard and its staged ``.db``: a copy of the old one that keeps the rows
        before the last row group (with the ``.db`` files), or a new one; then the old rows that the
        staged ``.db`` does not hold yet go to it as their locations become final, as new rows do."""
        try:
            for i, (shard, db) in enumerate(zip(shards, self.staging.db_paths())):
                state = _shard_state(i, shard, with_index)
                self.states.append(state)
                if with_index:
                    shutil.copyfile(index.db_path(shard.path), db)
                stream = IndexStream(db, os.path.basename(shard.path), index_fields, self.staging.directory,
                                     first_row=state.taken if with_index else None)
                self.streams.append(stream)
                _pending(shard, state, stream, schema)
        finally:
            for shard in shards:
                shard.source.close()
        self.fds = [os.open(t, os.O_RDWR) for t in self.targets]

    def next_rotating(self, shards):
        shard = self._rotation % shards
        self._rotation += 1
        return shard

    def write(self, shard, writes):
        for page_id, offset, data in writes:
            at = fmt.page_offset(self.header_size, self.page_size, page_id) + offset
            if page_id < self.old_pages[shard]:
                self._spool(shard, at, data)
            else:
                pwrite_all(self.fds[shard], data, at, self.targets[shard])

    def _spool(self, shard, at, data):
        with open(self.spools[shard], "ab") as f:
            pos = f.tell()
            f.write(data)
        self.deferred[shard].append([at, pos, len(data)])

    def _preflight(self, plan):
        """Make sure every write the journal will order can be done: reserve the blocks of each
        region (``ENOSPC`` now, not halfway through applying) and rewrite each region's last byte in
        place (a file size limit refuses writes past it even inside the file: ``EFBIG`` now)."""
        for i, shard in enumerate(plan["shards"]):
            regions = [(0, len(shard["header"]) // 2)] + [(at, n) for at, _, n in shard["deferred"]]
            fd = self.fds[i]
            for at, n in regions:
                if n:
                    _reserve(fd, at, n)
                    pwrite_all(fd, os.pread(fd, 1, at + n - 1), at + n - 1, self.targets[i])

    def _write_journal(self, plan):
        text = json.dumps(dict(plan, token=self.staging.token))
        for path in journal_paths(self.targets, self.staging.token):
            with open(path + ".new", "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(path + ".new", path)
        fsync_dir(self.staging.directory)

    def add_rows(self, shard, blobs, raws, values):
        """One call's rows of ``shard``, as ``ShardFiles.add_rows``."""
        self.write(shard, self.states[shard].add(blobs, raws))
        self.index_rows(shard, values)

    def index_rows(self, shard, values):
        """The index values of rows just written to ``shard``; rows whose locations are final go to its
        staged ``.db``."""
        self.streams[shard].push(values)
        self.streams[shard].flush(self.states[shard])

    def finish(self, shard_pages, header, index_values=None, index_fields=None, independent=False):
        names = [os.path.basename(t) for t in self.targets]
        plan = {"phase": 2, "targets": self.targets, "sizes": self.old_sizes, "shards": []}
        for i, shard in enumerate(shard_pages):
            blob = header_bytes(self.header_size, self.page_size, header, shard, names, i, independent)
            blob += b"\x00" * max(0, self.old_headers[i] - len(blob))
            sums_form = self._checksums(i, shard, blob) if self.checksums else None
            db = self.staging.db_paths()[i]
            self.streams[i].finish(shard, sums_form,
                                   index_meta(blob.rstrip(b"\x00"), header["elements"][i]))
            plan["shards"].append({"data": self.targets[i], "header": blob.hex(), "spool": self.spools[i],
                                   "deferred": self.deferred[i], "db_staged": db, "db": self.targets[i] + ".db"})
        for path in [p for p in self.spools if os.path.exists(p)] + self.staging.db_paths():
            fsync_file(path)
        for fd in self.fds:
            os.fsync(fd)
        self._preflight(plan)                 # a write that cannot happen must fail before the journal
        self._write_journal(plan)
        self.plan = plan                      # from here on, failures roll forward, never back
        apply_plan(plan)
        warn_encrypt_tail(self.fds, self.targets)
        self._close()
        finish_plan(plan, self.staging.token)
        self.staging.release()

    def _checksums(self, i, shard, header_blob):
        """``(algorithm, rows)``: the checksum table of the final file, recomputed where bytes change and
        kept elsewhere, in the form of the old table (one digest per slot for a file written before
        block digests, so that one table has one form), else :data:`~recordio.mindrecord.checksums.ALGORITHM`."""
        fd = self.fds[i]
        size = max([os.fstat(fd).st_size] + [at + n for at, _, n in self.deferred[i]])   # the final size
        old = self.old_checksums[i] or {}
        form = sums.SLOT_ALGORITHM if any(row[0] == sums.SLOT_ALGORITHM for row in old.values()) else sums.ALGORITHM
        touched = {sums.HEADER_SLOT} | set(shard.extents) if old else {sums.HEADER_SLOT} | {
            p.page_id for p in shard.pages}
        touched |= {slot for slot, row in old.items() if row[0] != form}
        rows = []
        total = fmt.blob_rows(shard.pages)
        for page in [None] + shard.pages:
            slot = sums.HEADER_SLOT if page is None else page.page_id
            row_range = sums.row_range(page, shard.pages, total)
            if slot not in touched:
                rows.append((slot, old[slot][1], *row_range, old[slot][4]))
                continue
            start, end = sums.slot_range(self.header_size, self.page_size, slot, size)
            n = self._extent(i, slot, page, start, end, old, shard.extents, header_blob)
            data = bytearray(os.pread(fd, n, start).ljust(n, b"\x00"))
            self._overlay(i, data, start, header_blob)
            digest = sums.digest_bytes(bytes(data)) if form == sums.SLOT_ALGORITHM else sums.digest_blocks(data)
            rows.append((slot, n, *row_range, digest))
        return form, rows

    def _extent(self, i, slot, page, start, end, old, extents, header_blob):
        """Bytes of a slot that hold data once the append is applied."""
        if slot == sums.HEADER_SLOT:
            return len(header_blob.rstrip(b"\x00"))
        known = old[slot][1] if slot in old else 0
        if slot not in old and page.page_id < self.old_pages[i]:
            known = sums.scan_extent(self.fds[i], start, min(end, start + self.page_size), 0)
        return max(known, extents.get(slot, 0), page.size)

    def _overlay(self, i, data, start, header_blob):
        end = start + len(data)
        pieces = [(0, header_blob)]
        if self.deferred[i]:
            with open(self.spools[i], "rb") as f:
                pieces += [(at, os.pread(f.fileno(), n, pos)) for at, pos, n in self.deferred[i]]
        for at, piece in pieces:
            lo, hi = max(at, start), min(at + len(piece), end)
            if lo < hi:
                data[lo - start:hi - start] = piece[lo - at:hi - at]

    def _close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def abort(self):
        """Before the journal: cut the files back and drop the staged files; after it: finish."""
        if self.plan is not None:
            self._close()
            apply_plan(self.plan)
            finish_plan(self.plan, self.staging.token)
            self.staging.release()
            return
        for stream in self.streams:
            stream.abort()
        for state in self.states:
            state.close()
        for fd, size in zip(self.fds, self.old_sizes):
            os.ftruncate(fd, size)
        self._close()
        for path in self.spools + self.staging.db_paths():
            if os.path.exists(path):
                os.unlink(path)
        remove_journal(self.targets, self.staging.token)
        self.staging.release()


