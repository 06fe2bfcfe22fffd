"""The node-local cache of remote objects: a sparse local file per object and a map of its blocks.

::

    <cache_dir>/<folder key>/<name>                 sparse file of the object's full size
    <cache_dir>/<folder key>/.recordio-cache/<name>.present   one byte per 4 KiB block: 1 = present
    <cache_dir>/<folder key>/.recordio-cache/<name>.json      {"url", "size", "etag"} of the bytes held

The reader memory-maps (or preads) the sparse file exactly as a local data file; before it reads a
byte range it calls :meth:`CachedObject.ensure`, which fetches the missing blocks covering the range
(runs of missing blocks merged into one request, small present gaps included) and marks them. Several
processes share one cache: a fetch holds a POSIX byte-range lock on the blocks' bytes of the
``.present`` file (an open-file-description lock), and threads of one process wait on each other's in-flight blocks, so the node
fetches a block once. :meth:`CachedObject.evict` clears blocks' marks first and punches the holes
after; :meth:`CachedObject.read` re-checks the marks after copying, so a read never returns bytes of
a block evicted under it.

An entry whose object changed (another size or ETag) is replaced by a fresh one (new inodes: a
reader that holds the old files keeps reading the old bytes it already fetched, and its next fetch is
refused by the store).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import struct
import threading
import time

from recordio.mindrecord.storage.cache_bound import HELD_FILE
from recordio.mindrecord.fileio import pwrite_all

__all__ = ["BLOCK", "CachedObject", "cache_info", "clear_cache", "default_cache_dir"]

BLOCK = 4096
MERGE_GAP = 0             # present blocks between two missing runs fetched again to save a request (0: a block is
                          # never fetched twice while cached)
_AUX = ".recordio-cache"
_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")
_PUNCH = 0x02 | 0x01      # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE


def default_cache_dir() -> str:
    """``$RECORDIO_CACHE_DIR``, else ``~/.cache/recordio/remote``."""
    return os.environ.get("RECORDIO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "recordio",
                                                                "remote")


class CachedObject:
    """One remote object held (in part) in a cache folder.

    Args:
        folder: the cache folder of the object's remote folder.
        name: the object's name (the local file's name).
        url, size, etag: the object, as the dataset was opened.
        store: a :class:`~recordio.mindrecord.storage.store.Store` fetching its bytes.
        on_fetch: called with ``(self, first_block, end_block)`` after blocks were fetched (accounting).
        check: called with ``(self, start, end)`` after fetched bytes were written and before they are
            marked present; an exception leaves them unmarked (``fetch_checks``).
        count: a :class:`~recordio.mindrecord.storage.cache_bound.NodeCount` told of every block marked present
            or cleared (data files; ``None`` for the ``.db`` files).
    """

    def __init__(self, folder, name, url, size, etag, store, on_fetch=None, check=None, count=None):
        self.folder, self.name, self.url, self.size, self.etag = folder, name, url, size, etag
        self.store = store
        self.on_fetch = on_fetch
        self.check = check
        self.count = count
        self.path = os.path.join(folder, name)
        self.blocks = (size + BLOCK - 1) // BLOCK
        self._present = os.path.join(folder, _AUX, name + ".present")
        self._meta = os.path.join(folder, _AUX, name + ".json")
        self._fd = self._pfd = None
        self._busy: set = set()
        self._cond = threading.Condition()
        self._prepare()

    # --- the entry ---------------------------------------------------------------------------------

    def _prepare(self):
        os.makedirs(os.path.join(self.folder, _AUX), exist_ok=True)
        want = {"url": self.url, "size": self.size, "etag": self.etag}
        lock = os.open(self._meta + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _read_json(self._meta) != want or not (os.path.exists(self.path) and os.path.exists(self._present)):
                self._create(want)
            self._open()
        finally:
            os.close(lock)

    def _create(self, want):
        """A fresh entry: new sparse file and map, renamed into place (readers of the old keep theirs)."""
        old = _count_present(self._present) if self.count is not None else 0
        for path, size in ((self.path, self.size), (self._present, self.blocks)):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.truncate(size)
            os.replace(tmp, path)
        tmp = f"{self._meta}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(want, f)
        os.replace(tmp, self._meta)
        if old:
            self.count.add(-old * BLOCK)

    def _open(self):
        self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        self._pfd = os.open(self._present, os.O_RDWR | os.O_CLOEXEC)

    @property
    def fd(self):
        """The descriptor of the local (sparse) file."""
        return self._fd

    def close(self):
        for fd in (self._fd, self._pfd):
            if fd is not None:
                os.close(fd)
        self._fd = self._pfd = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_fd=None, _pfd=None, _busy=set(), _cond=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._cond = threading.Condition()
        self._open()

    # --- blocks ------------------------------------------------------------------------------------

    def _span(self, start, end):
        return start // BLOCK, min(self.blocks, (end + BLOCK - 1) // BLOCK)

    def missing(self, start, end) -> list[tuple[int, int]]:
        """Runs ``[a, b)`` of blocks not present in the byte range [start, end)."""
        lo, hi = self._span(start, end)
        return _runs(os.pread(self._pfd, hi - lo, lo), lo)

    def marks(self):
        """The block map: a numpy array of one byte per block (1: present)."""
        import numpy as np

        return np.frombuffer(os.pread(self._pfd, self.blocks, 0), dtype=np.uint8)

    def present_blocks(self) -> int:
        return self.blocks - sum(b - a for a, b in _runs(os.pread(self._pfd, self.blocks, 0), 0))

    def ensure(self, start, end):
        """Make the bytes [start, end) present locally, fetching what is missing."""
        if end <= start or not self.missing(start, end):
            return
        lo, hi = self._span(start, end)
        with self._cond:
            while self._busy.intersection(range(lo, hi)):
                self._cond.wait()
            self._busy.update(range(lo, hi))
        try:
            for a, b in _merge(self.missing(start, end)):
                self._fetch_run(a, b)
        finally:
            with self._cond:
                self._busy.difference_update(range(lo, hi))
                self._cond.notify_all()

    def _fetch_run(self, a, b):
        """Fetch blocks [a, b) under a byte-range lock of their marks (another process may hold it)."""
        _lock(self._pfd, fcntl.F_WRLCK, a, b - a)
        try:
            for x, y in _merge(_runs(os.pread(self._pfd, b - a, a), a)):   # what is still missing
                start, end = x * BLOCK, min(self.size, y * BLOCK)
                pwrite_all(self._fd, self.store.fetch(self.url, start, end, self.etag), start, self.path)
                if self.check is not None:
                    self.check(self, start, end)
                pwrite_all(self._pfd, b"\x01" * (y - x), x, self._present)
                if self.count is not None:
                    self.count.add((y - x) * BLOCK)
                if self.on_fetch is not None:
                    self.on_fetch(self, x, y)
        finally:
            _lock(self._pfd, fcntl.F_UNLCK, a, b - a)

    def read(self, start, end) -> bytes:
        """Bytes [start, end), fetched if needed, and still present after they were copied."""
        while True:
            self.ensure(start, end)
            data = os.pread(self._fd, end - start, start)
            if not self.missing(start, end):
                return data

    def evict(self, a, b):
        """Forget blocks [a, b): marks cleared first, then the bytes released (a hole punched). Blocks
        that a thread of this process is fetching stay (the byte-range lock of the marks excludes other
        processes, not other threads: clearing a block between a fetch's write and its mark would mark
        a punched hole present); they count as present, as they are once fetched. Returns the runs kept
        that way."""
        with self._cond:
            busy = bytes(k in self._busy for k in range(a, b))
            free = _runs(busy, a)                 # runs of blocks no thread here is fetching
            for x, y in free:
                self._busy.update(range(x, y))
        try:
            for x, y in free:
                self._evict_run(x, y)
        finally:
            with self._cond:
                for x, y in free:
                    self._busy.difference_update(range(x, y))
                self._cond.notify_all()
        return _runs(bytes(1 - k for k in busy), a)

    def _evict_run(self, a, b):
        _lock(self._pfd, fcntl.F_WRLCK, a, b - a)
        try:
            held = os.pread(self._pfd, b - a, a).count(b"\x01")
            pwrite_all(self._pfd, b"\x00" * (b - a), a, self._present)
            _punch(self._fd, a * BLOCK, min(self.size, b * BLOCK) - a * BLOCK)
            if held and self.count is not None:
                self.count.add(-held * BLOCK)
        finally:
            _lock(self._pfd, fcntl.F_UNLCK, a, b - a)

    def present_runs(self) -> list[tuple[int, int]]:
        """Runs ``[a, b)`` of blocks present."""
        return _runs(os.pread(self._pfd, self.blocks, 0).translate(_FLIP), 0)


_OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", 38)      # Linux's open-file-description locks
_FLOCK = struct.Struct("hhqqi4x")                      # struct flock: type, whence, start, len, pid


def _lock(fd, kind, start, length):
    """Lock (``F_WRLCK``) or unlock (``F_UNLCK``) bytes [start, start + length) of ``fd``, waiting.

    Open-file-description locks: owned by the descriptor, not the process, so the kernel does not
    report a false deadlock when threads of two processes wait on each other's blocks (a thread
    holds one range at a time, while it fetches, so there is no true one). Threads of one process
    never ask for the same blocks (``CachedObject._busy``). Where OFD locks are missing, POSIX locks,
    retried on EDEADLK."""
    try:
        fcntl.fcntl(fd, _OFD_SETLKW, _FLOCK.pack(kind, 0, start, length, 0))
        return
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    cmd = fcntl.LOCK_EX if kind == fcntl.F_WRLCK else fcntl.LOCK_UN
    while True:
        try:
            fcntl.lockf(fd, cmd, length, start)
            return
        except OSError as exc:
            if exc.errno != errno.EDEADLK:
                raise
            time.sleep(0.01)


def _runs(marks, base):
    """Runs ``[a, b)`` (offset by ``base``) of zero bytes in ``marks``."""
    runs, i, n = [], 0, len(marks)
    while i < n:
        i = marks.find(b"\x00", i)
        if i < 0:
            break
        j = i
        while j < n and marks[j] == 0:
            j += 1
        runs.append((base + i, base + j))
        i = j
    return runs


def _merge(runs, gap=MERGE_GAP):
    out = []
    for a, b in runs:
        if out and a - out[-1][1] <= gap:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _count_present(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\x01")
    except OSError:
        return 0


def scan_held(root) -> int:
    """Bytes of the data files' blocks present in the cache folder ``root`` (by their maps)."""
    held = 0
    for folder in os.listdir(root) if os.path.isdir(root) else []:
        aux = os.path.join(root, folder, _AUX)
        for name in os.listdir(aux) if os.path.isdir(aux) else []:
            if name.endswith(".present") and not name.endswith(".db.present"):
                held += _count_present(os.path.join(aux, name)) * BLOCK
    return held


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


_libc = None


def _punch(fd, offset, length):
    """Release the disk blocks of [offset, offset + length) (zeros are written where holes cannot be)."""
    global _libc
    if length <= 0:
        return
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if _libc.fallocate(fd, _PUNCH, offset, length) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise OSError(err, f"punching a hole at {offset} (+{length}) failed: {os.strerror(err)}")
        pwrite_all(fd, bytes(length), offset)


def cache_info(cache_dir: str | None = None) -> list[dict]:
    """What the cache holds: one dict per cached object (``url``, ``size``, ``cached_bytes``: bytes of
    its blocks present, ``file``: the local copy)."""
    root = os.fspath(cache_dir or default_cache_dir())
    out = []
    for folder in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        aux = os.path.join(root, folder, _AUX)
        for name in sorted(os.listdir(aux)) if os.path.isdir(aux) else []:
            if not name.endswith(".json"):
                continue
            meta = _read_json(os.path.join(aux, name))
            try:
                with open(os.path.join(aux, name[:-5] + ".present"), "rb") as f:
                    held = f.read().count(b"\x01") * BLOCK
            except OSError:
                continue
            if meta is not None:
                out.append({"url": meta["url"], "size": meta["size"], "cached_bytes": min(held, meta["size"]),
                            "file": os.path.join(root, folder, name[:-5])})
    return out


def clear_cache(cache_dir: str | None = None) -> int:
    """Remove every cached object (readers that have it open keep their copies until they close);
    returns the number of objects removed."""
    import shutil

    root = os.fspath(cache_dir or default_cache_dir())
    n = len(cache_info(root))
    for folder in os.listdir(root) if os.path.isdir(root) else []:
        if os.path.isdir(os.path.join(root, folder, _AUX)):
            shutil.rmtree(os.path.join(root, folder), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, HELD_FILE))
    return n
