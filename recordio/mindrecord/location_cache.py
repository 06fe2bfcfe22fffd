"""A node-local cache of each shard's location table, so that a process that opens a dataset after
another one read it (a restarted job, a spawned worker, the next run of a script) reads its row
locations from one memory-mapped array instead of the ``.db`` row by row.

SQLite hands a row to Python at about 1 µs; a first epoch over small rows (CIFAR) spends most of
its time there. With ``RECORDIO_LOCATION_CACHE=1`` (off by default: a reader then writes outside the
dataset's files, which docs/threat-model.md otherwise rules out), a process that has loaded every
location of a shard from the ``.db`` (through :class:`~recordio.mindrecord.locations.DbBlocks`)
writes the shard's table (``INDEXES`` as the reader uses it: group, blob start/end, raw page, raw
start/end; 48 bytes a row, native int64) to ``$RECORDIO_LOCATION_CACHE_DIR`` (default
``~/.cache/recordio/locations``), named by a hash of the shard's path and of the data file's and the
``.db``'s device, inode, size and modification time: a dataset that changes gets a new name, never
a stale table. A table read back goes through every check a ``.db`` block goes through (tiling,
page table, file bounds); one that fails them is removed and the ``.db`` is read instead. Nothing
is ever written beside the dataset; a cache that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile

import numpy as np

__all__ = ["MAX_ROWS", "Collector", "drop", "enabled", "key", "load"]

MAX_ROWS = 1 << 24               # shards up to this many rows are cached (768 MiB of table)
WIDTH = 6                        # group, blob start, blob end, raw page, raw start, raw end


def enabled() -> bool:
    return os.environ.get("RECORDIO_LOCATION_CACHE") == "1"


def folder() -> str:
    return os.environ.get("RECORDIO_LOCATION_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "recordio", "locations")


def key(data_path: str, data_identity: tuple, db_identity: tuple) -> str:
    """The cache name of one shard's table as it is now."""
    text = repr((os.path.realpath(data_path), tuple(data_identity), tuple(db_identity), sys.byteorder, WIDTH))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _file(name: str) -> str:
    return os.path.join(folder(), name + ".locations")


def load(name: str, count: int) -> np.ndarray | None:
    """The cached ``(count, 6)`` int64 table of ``name`` (memory-mapped), or None. (A raw array, not
    ``.npy``: numpy parses an ``.npy`` header with ``ast``, which CPython 3.11 cannot run in two
    threads at once.)"""
    path = _file(name)
    try:
        if os.stat(path).st_size != count * WIDTH * 8:
            drop(name)
            return None
        return np.memmap(path, dtype=np.int64, mode="r", shape=(count, WIDTH))
    except (OSError, ValueError):
        return None


def drop(name: str) -> None:
    try:
        os.unlink(_file(name))
    except OSError:
        pass


def store(name: str, table: np.ndarray) -> None:
    """Write ``table`` atomically (a temporary file renamed into place); any OS error skips it."""
    try:
        os.makedirs(folder(), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder(), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(np.ascontiguousarray(table, dtype=np.int64).tobytes())
            os.replace(tmp, _file(name))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


class Collector:
    """The rows of one shard's table as this process loads them; stored once every row is there."""

    def __init__(self, name: str, count: int):
        self.name = name
        self.table = np.empty((count, WIDTH), dtype=np.int64)
        self.seen = np.zeros(count, dtype=bool)
        self.missing = count

    def add(self, a: int, table: np.ndarray) -> bool:
        """Rows ``[a, a + len(table))``; True once the whole shard was stored."""
        b = a + len(table)
        self.missing -= int(np.count_nonzero(~self.seen[a:b]))
        self.table[a:b] = table
        self.seen[a:b] = True
        if self.missing:
            return False
        store(self.name, self.table)
        return True
