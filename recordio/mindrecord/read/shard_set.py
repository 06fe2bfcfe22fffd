"""The open files of a reader: its shards, their storage, descriptors and maps, row locations and checks.

:class:`ShardSet` is what the reader (:mod:`~recordio.mindrecord.read.reader`) and the column reader
(:mod:`~recordio.mindrecord.read.columns`) read rows through: where a row is (:meth:`row`,
:meth:`bulk`), its bytes (:meth:`fetch`, :meth:`buffer`) and its pages' checks (``checks``). Data
files are memory-mapped; at most :data:`MAX_OPEN_FILES` maps are open at once, so datasets with
many shards do not exhaust file descriptors. A set can be pickled and used after ``fork`` or under
``spawn``: maps are reopened in the new process, each file checked to be the one opened.
"""

from __future__ import annotations

import collections
import os

from recordio.mindrecord.read.checks import PageChecks
from recordio.mindrecord.read.locations import Locations

__all__ = ["KEEP_OPEN", "MAX_OPEN_FILES", "RowWhere", "ShardSet"]

MAX_OPEN_FILES = 64
KEEP_OPEN = 32           # datasets of up to this many files keep them open from open time, so that a
                         # replaced dataset still reads as the version opened; larger ones open files on
                         # demand and refuse (DatasetChangedError) a file that is no longer the one opened


class RowWhere:
    """``"<file>: row <n>"``, formatted only when an error message needs it."""

    __slots__ = ("path", "row")

    def __init__(self, path, row):
        self.path, self.row = path, row

    def __str__(self):
        return f"{self.path}: row {self.row}"


class ShardSet:
    """The shards ``shards`` (``fileset.Shard``) of a dataset in ``storage``. ``checks``: check pages on
    first touch (``"strict"``: ``verify=True``; ``"pages"``: when the dataset has checksums; None: no)."""

    def __init__(self, shards, storage, checks=None):
        self.shards = shards
        self.storage = storage
        self.direct = storage.contiguous        # a storage whose maps hold every byte: rows are map slices
        self.closed = False
        self.maps: collections.OrderedDict = collections.OrderedDict()
        self._fds: dict[int, int] = {}
        if len(shards) <= KEEP_OPEN:
            for k in range(len(shards)):
                self._fds[k] = self._open(k)
        for k, shard in enumerate(shards):
            shard.source.verify_all = checks == "strict"   # a walking source then reads the .db's locations,
            shard.source.fd = self._fds.get(k)              # checked, and maps the file this set holds open
        self.locations = Locations([s.source for s in shards], [s.count for s in shards])
        self.locations.prime()
        self.checks = None if checks is None else PageChecks(shards, strict=checks == "strict")
        if not storage.contiguous:             # at a URL every fetched page is checked (docs/howto-remote.md)
            for shard in shards:
                sums = shard.checksums if checks == "strict" else shard.source.read_checksums()
                storage.watch(shard.path, shard.header["header_size"], shard.header["page_size"], shard.size, sums)

    def _open(self, k):
        shard = self.shards[k]
        return self.storage.open(shard.path, shard.identity)

    def where(self, k, local) -> RowWhere:
        return RowWhere(self.shards[k].path, local)

    def row(self, k, local):
        """``(raw_start, raw_end, blob_start, blob_end)`` of row ``local`` of shard ``k``."""
        return self.locations.row(k, local)

    def bulk(self, rows):
        """``(shard, local, locs)`` of many rows (``Locations.bulk``)."""
        return self.locations.bulk(rows)

    def fetch(self, k, mm, start, end) -> bytes:
        """Bytes [start, end) of shard ``k`` (``mm``: its map, from :meth:`buffer`)."""
        return self.storage.fetch(self.shards[k].path, mm, start, end)

    def buffer(self, k):
        """The map of shard ``k`` (opened, or moved to the front of the open maps)."""
        mm = self.maps.get(k)
        if mm is not None and mm.closed:          # a walking source's map, closed with its source
            del self.maps[k]
            mm = None
        if mm is not None:
            self.maps.move_to_end(k)
            return mm
        if self.closed:
            raise ValueError(f"{self.shards[k].path}: I/O on a closed FileReader; open a new reader")
        shard = self.shards[k]
        mapped = getattr(shard.source, "mapped", None)
        if mapped is not None:            # a walking source: one map of the file for the walk and the reads
            mm = mapped()
        else:
            kept = self._fds.get(k)
            fd = kept if kept is not None else self._open(k)
            try:
                mm = self.storage.map(shard.path, shard.size, fd)
            finally:
                if kept is None:
                    os.close(fd)
        self.maps[k] = mm
        if len(self.maps) > MAX_OPEN_FILES:
            self.maps.popitem(last=False)[1].close()
        return mm

    def descriptor(self, k):
        """The descriptor this set keeps open for shard ``k`` of a local dataset (None: none kept, or the
        bytes come through a cache)."""
        return self._fds.get(k) if self.storage.contiguous else None

    def one_buffer(self, shard_ids):
        """The map holding every row of ``shard_ids`` when they are all in one shard of a storage whose
        maps hold every byte (rows can be cut from it directly); else None."""
        first = int(shard_ids[0])
        if self.storage.contiguous and (len(self.shards) == 1 or (shard_ids == first).all()):
            return self.maps.get(first) or self.buffer(first)
        return None

    def check_row(self, k, locs, need_raw, need_blob):
        """Check the blocks a row of shard ``k`` at ``locs`` (raw start, raw end, blob start, blob end) is
        read from (once each), when this set checks pages."""
        if self.checks is not None:
            self.checks.row(self, k, *locs, need_raw, need_blob)

    def check_rows(self, shard_ids, locs, need_raw, need_blob):
        """Check the pages of many rows (``shard_ids``, ``(n, 4)`` locations, as :meth:`bulk` gives them)."""
        if self.checks is not None:
            self.checks.rows(self, shard_ids, locs, need_raw, need_blob)

    def close(self):
        self.closed = True
        self.storage.close()
        where = getattr(self, "locations", None)
        if where is not None:            # the .db connections (and the walks' maps) of this process
            where.close()
        while self.maps:
            self.maps.popitem()[1].close()
        while self._fds:
            os.close(self._fds.popitem()[1])

    def __del__(self, _close=os.close):
        # os.close bound at definition: at interpreter exit the module's globals may be None already
        for fd in getattr(self, "_fds", {}).values():
            try:
                _close(fd)
            except OSError:
                pass

    def __getstate__(self):
        state = self.__dict__.copy()
        state["maps"] = collections.OrderedDict()
        state["_fds"] = {}                      # a copy reopens by path, checking it is the same file
        return state
