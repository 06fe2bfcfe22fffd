"""Writes that either complete or raise, and the one way a reader opens and maps a data file.

``os.pwrite``/``os.write`` may write fewer bytes than asked (a file size limit, a nearly full disk,
a signal); every place recordio writes bytes by descriptor goes through :func:`pwrite_all`, which
retries the rest and raises an ``OSError`` naming the file, the offset and how much was written when
no progress is possible. ``ENOSPC``, ``EFBIG`` and ``EIO`` reach the caller as they are, with the
file named; the writers then abort (staged files removed, the published dataset untouched).

A reader (its row reads and its page walk) opens a data file again with :func:`open_checked`, which
refuses a path that now names another file, and maps it with :func:`map_readonly`, which refuses a
file that shrank below the size it was opened with.
"""

import errno
import mmap
import os

from recordio.errors import DatasetChangedError, FormatError

__all__ = ["map_readonly", "open_checked", "pwrite_all"]


def open_checked(path, identity):
    """A read-only descriptor of ``path``, refused (:class:`DatasetChangedError`) if the path names another
    file than ``identity`` (``(st_dev, st_ino)`` when the dataset was opened; falsy: not checked)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    st = os.fstat(fd)
    if identity and (st.st_dev, st.st_ino) != tuple(identity):
        os.close(fd)
        raise DatasetChangedError(f"{path}: the dataset was replaced after this reader opened it (another file "
                                  f"is at the path now); open a new reader to read the new version")
    return fd


def map_readonly(path, size, fd):
    """A read-only map of the whole file behind ``fd``, refused if it is smaller than ``size`` (the size
    the dataset was opened with)."""
    now = os.fstat(fd).st_size
    if now < size:
        raise FormatError(f"{path}: file shrank from {size} to {now} bytes while open")
    return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)


def _name(fd, path):
    return path or f"file descriptor {fd}"


def pwrite_all(fd, data, offset, path=None):
    """Write all of ``data`` at ``offset`` of ``fd``; raise ``OSError`` (naming ``path``) otherwise."""
    try:
        if os.pwrite(fd, data, offset) == len(data):          # the usual case: one call, no copy
            return
    except InterruptedError:
        pass
    except OSError as exc:
        raise OSError(exc.errno, f"{_name(fd, path)}: writing {len(data)} bytes at offset {offset} failed: "
                                 f"{exc.strerror}") from exc
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        try:
            n = os.pwrite(fd, view[done:], offset + done)
        except InterruptedError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, f"{_name(fd, path)}: writing {len(view)} bytes at offset {offset} failed "
                                     f"after {done}: {exc.strerror}") from exc
        if n == 0:
            raise OSError(errno.EIO, f"{_name(fd, path)}: writing {len(view)} bytes at offset {offset} made no "
                                     f"progress after {done} bytes (disk full or a file size limit?)")
        done += n
