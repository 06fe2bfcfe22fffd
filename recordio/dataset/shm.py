"""Moving numpy arrays between processes through shared memory, not through pickled bytes.

An object is pickled with protocol 5: the small pickle stream and the raw buffers of its numpy
arrays (out of band) are written to one file in ``/dev/shm`` (tmpfs: memory, no disk). The
receiver maps the file, unlinks it, and unpickles with views into the mapping, so a large array
is copied once, by the sender, and never runs through the pickler.

Files are named ``rio-<owner pid>-<token>-<n>``: the process that owns a pool can remove every
file it may have left behind (a killed worker, an iterator closed mid-flight) with :func:`sweep`.
"""

import errno
import glob
import mmap
import os
import pickle
import struct
import tempfile

__all__ = ["dump", "load", "prefix_for", "sweep"]

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
FALLBACK_DIR = tempfile.gettempdir()
_HEAD = struct.Struct("<QQ")


def prefix_for(token):
    """The path prefix of the files of one pool owned by this process."""
    return os.path.join(SHM_DIR, f"rio-{os.getpid()}-{token}-")


def _fallback(prefix):
    return os.path.join(FALLBACK_DIR, os.path.basename(prefix))


def dump(obj, path):
    """Write ``obj`` to ``path``; numpy buffers go out of band. Returns the path written, which is
    in the temporary folder instead when ``/dev/shm`` is full (small in containers)."""
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    parts = [_HEAD.pack(len(stream), len(raws)), struct.pack(f"<{len(raws)}Q", *[r.nbytes for r in raws]),
             stream, *raws]
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
