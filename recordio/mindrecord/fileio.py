"""Writes that either complete or raise.

``os.pwrite``/``os.write`` may write fewer bytes than asked (a file size limit, a nearly full disk,
a signal); every place recordio writes bytes by descriptor goes through :func:`pwrite_all`, which
retries the rest and raises an ``OSError`` naming the file, the offset and how much was written when
no progress is possible. ``ENOSPC``, ``EFBIG`` and ``EIO`` reach the caller as they are, with the
file named; the writers then abort (staged files removed, the published dataset untouched).
"""

import errno
import os

__all__ = ["pwrite_all"]


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
