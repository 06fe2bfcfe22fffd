"""Moving numpy arrays between processes through shared memory, not through pickled bytes.

An object is pickled with protocol 5: the small pickle stream and the raw buffers of its numpy
arrays (out of band) are written to one file in ``/dev/shm`` (tmpfs: memory, no disk). The
receiver maps the file, unlinks it, and unpickles with views into the mapping, so a large array
is copied once, by the sender, and never runs through the pickler.

Files are named ``rio-<owner pid>-<token>-<n>``: the process that owns a pool can remove every
file it may have left behind (a killed worker, an iterator closed mid-flight) with :func:`sweep`.

Results that come back often (a map's chunks, each holding a few MB of decoded images) use
:class:`Slots` instead: files the owner hands out again and again, each written by one task at a
time (:func:`dump_slot`, into space reserved with ``posix_fallocate`` and a mapping the worker
keeps) and copied out by the owner through its own kept mapping. A fresh file per chunk costs
the kernel a page allocation and a fault on both sides for every 4 KiB; a slot, after its first
use, costs one copy on each side.
"""

import errno
import glob
import mmap
import os
import pickle
import struct
import tempfile
import threading

import numpy as np

__all__ = ["Slots", "dump", "dump_slot", "load", "prefix_for", "sweep"]

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
FALLBACK_DIR = tempfile.gettempdir()
_HEAD = struct.Struct("<QQ")


def prefix_for(token):
    """The path prefix of the files of one pool owned by this process."""
    return os.path.join(SHM_DIR, f"rio-{os.getpid()}-{token}-")


def _fallback(prefix):
    return os.path.join(FALLBACK_DIR, os.path.basename(prefix))


def _parts(obj):
    """The pieces of a file for ``obj``: header, buffer sizes, pickle stream, the buffers."""
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    return [_HEAD.pack(len(stream), len(raws)), struct.pack(f"<{len(raws)}Q", *[r.nbytes for r in raws]),
            stream, *raws]


def dump(obj, path):
    """Write ``obj`` to ``path``; numpy buffers go out of band. Returns the path written, which is
    in the temporary folder instead when ``/dev/shm`` is full (small in containers)."""
    parts = _parts(obj)
    try:
        _write(path, parts)
    except OSError as e:
        if e.errno != errno.ENOSPC or not path.startswith(SHM_DIR):
            raise
        os.unlink(path)
        path = os.path.join(FALLBACK_DIR, os.path.basename(path))
        _write(path, parts)
    return path


def _write(path, parts):
    with open(path, "wb") as f:
        for part in parts:
            f.write(part)


def load(path):
    """Read back what :func:`dump` wrote and remove the file. The file is mapped, not read: arrays
    are views of its pages (private and writable: a write copies the page), which live until the
    last array made from them is freed."""
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    os.unlink(path)
    view = memoryview(data)
    n_stream, n_bufs = _HEAD.unpack_from(view, 0)
    sizes = struct.unpack_from(f"<{n_bufs}Q", view, _HEAD.size)
    at = _HEAD.size + 8 * n_bufs
    stream = view[at:at + n_stream]
    at += n_stream
    buffers = []
    for size in sizes:
        buffers.append(view[at:at + size])
        at += size
    return pickle.loads(stream, buffers=buffers)


def sweep(prefix):
    """Remove every file left under ``prefix``; returns how many were removed."""
    removed = 0
    paths = glob.glob(glob.escape(prefix) + "*")
    if _fallback(prefix) != prefix:
        paths += glob.glob(glob.escape(_fallback(prefix)) + "*")
    for path in paths:
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
    return removed


# --- reusable result files ------------------------------------------------------------------------------

_SLOT_ROUND = 1 << 20                # slot files grow in whole MiB
_KEPT: dict = {}                     # path -> (size, mmap): the slots this worker process has written


def dump_slot(obj, path):
    """Write ``obj`` into the slot file ``path`` (made or grown as needed); ``("slot", path)``, or
    ``("file", path)`` of a one-off file (:func:`dump`) when the space for the slot cannot be
    reserved (``/dev/shm`` full)."""
    parts = _parts(obj)
    total = sum(memoryview(p).nbytes for p in parts)
    kept = _KEPT.get(path)
    if kept is None or kept[0] < total:
        if kept is not None:
            kept[1].close()
            del _KEPT[path]
        size = -(-total // _SLOT_ROUND) * _SLOT_ROUND
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)      # the pages exist: a write to the map cannot fault (SIGBUS)
            kept = (size, mmap.mmap(fd, size))
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            return "file", dump(obj, _fallback(path) + "-once")
        finally:
            os.close(fd)
        _KEPT[path] = kept
    view, at = memoryview(kept[1]), 0
    try:
        for part in parts:
            part = memoryview(part).cast("B")
            view[at:at + part.nbytes] = part
            at += part.nbytes
    finally:
        view.release()
    return "slot", path


class Slots:
    """The owner's side of reusable result files under ``prefix``: :meth:`take` a slot for a task,
    :meth:`load` what the task wrote (copied out, so the slot is free again at once)."""

    def __init__(self, prefix):
        self.prefix = prefix
        self._free: list[str] = []
        self._made = 0
        self._maps: dict = {}        # path -> (size, mmap)
        self._lock = threading.Lock()

    def take(self) -> str:
        with self._lock:
            if self._free:
                return self._free.pop()
            self._made += 1
            return f"{self.prefix}slot{self._made}"

    def give(self, path: str) -> None:
        """Return a slot whose task ended without a result to load."""
        with self._lock:
            self._free.append(path)

    def load(self, kind: str, path: str, slot: str):
        """The object a task wrote (``dump_slot``'s answer ``(kind, path)`` for ``slot``); the slot is
        free again afterwards."""
        try:
            if kind != "slot":
                return load(path)
            size = os.stat(path).st_size
            held = self._maps.get(path)
            if held is None or held[0] != size:
                if held is not None:
                    held[1].close()
                with open(path, "rb") as f:
                    held = (size, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ))
                self._maps[path] = held
            data = np.frombuffer(held[1], dtype=np.uint8)
            try:
                n_stream, n_bufs = _HEAD.unpack_from(held[1], 0)
                sizes = struct.unpack_from(f"<{n_bufs}Q", held[1], _HEAD.size)
                at = _HEAD.size + 8 * n_bufs
                stream = data[at:at + n_stream].tobytes()
                at += n_stream
                buffers = []
                for nbytes in sizes:
                    buffers.append(data[at:at + nbytes].copy())
                    at += nbytes
            finally:
                del data
            return pickle.loads(stream, buffers=buffers)
        finally:
            self.give(slot)

    def close(self):
        for _, mapping in self._maps.values():
            mapping.close()
        self._maps.clear()
