"""Moving numpy arrays between processes through shared memory, not through pickled bytes.

An object is pickled with protocol 5: the small pickle stream and the raw buffers of its numpy
arrays (out of band) are written to one file in ``/dev/shm`` (tmpfs: memory, no disk). The
receiver reads the file into one buffer, unlinks it, and unpickles with views into that buffer,
so a large array is copied once on each side and never runs through the pickler.

Files are named ``rio-<owner pid>-<token>-<n>``: the process that owns a pool can remove every
file it may have left behind (a killed worker, an iterator closed mid-flight) with :func:`sweep`.
"""

import glob
import os
import pickle
import struct
import tempfile

__all__ = ["dump", "load", "prefix_for", "sweep"]

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_HEAD = struct.Struct("<QQ")


def prefix_for(token):
    """The path prefix of the files of one pool owned by this process."""
    return os.path.join(SHM_DIR, f"rio-{os.getpid()}-{token}-")


def dump(obj, path):
    """Write ``obj`` to ``path``; numpy buffers go out of band."""
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = struct.pack(f"<{len(raws)}Q", *[r.nbytes for r in raws])
    with open(path, "wb") as f:
        f.write(_HEAD.pack(len(stream), len(raws)))
        f.write(sizes)
        f.write(stream)
        for r in raws:
            f.write(r)


def load(path):
    """Read back what :func:`dump` wrote and remove the file."""
    with open(path, "rb") as f:
        data = bytearray(os.fstat(f.fileno()).st_size)
        f.readinto(data)
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
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
    return removed
