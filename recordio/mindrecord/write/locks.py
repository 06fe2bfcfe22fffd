"""One writer per dataset: a lock held from the writer's creation to the end of its publish.

The lock is ``flock`` on ``.<shard 0 name>.rio.lock`` beside the dataset, so the OS releases it when
the process dies; it excludes writers in other processes and other threads alike (each writer opens
the file itself). The holder removes the file before it unlocks; a writer that opened the file just
before that checks, once it holds the lock, that the file it locked is still the one at the path,
and starts again otherwise. Readers never take it.
"""

import fcntl
import os

from recordio.errors import DatasetExistsError

__all__ = ["DatasetLock"]


class DatasetLock:
    """The write lock of the dataset whose shard 0 is ``first_target``; released by :meth:`release`."""

    def __init__(self, first_target):
        folder, name = os.path.split(os.path.abspath(first_target))
        self.path = os.path.join(folder, f".{name}.rio.lock")
        self._fd = None
        for _ in range(100):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise DatasetExistsError(f"{first_target}: the dataset is being written by another writer (it "
                                         f"holds {self.path}); wait for it to commit or abort") from None
            if self._still_at_path(fd):
                self._fd = fd
                return
            os.close(fd)                      # we locked a file its holder had just removed: again
        raise DatasetExistsError(f"{first_target}: could not take the writer lock {self.path}")

    def _still_at_path(self, fd):
        try:
            at_path = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (at_path.st_dev, at_path.st_ino) == (mine.st_dev, mine.st_ino)

    def release(self):
        """Remove the lock file and give the lock back (safe to call twice)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._still_at_path(fd):
                os.unlink(self.path)
        finally:
            os.close(fd)

    def __del__(self):
        self.release()
