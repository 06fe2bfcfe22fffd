"""Crash-safe publication of a dataset: staging files, a writer lock, and the rename order.

Protocol (see docs/atomic-commit.md for the argument):

1. Every file is written under a hidden staging name in the target directory,
   ``.<name>.rio-<token>.tmp`` (data) and ``.<name>.db.rio-<token>.tmp`` (index), while
   the writer holds an exclusive ``flock`` on ``.rio-<token>.lock`` (locked before it becomes
   visible under that name, and before any staging file exists).
2. At commit all staged files are completed and fsync-ed, then the directory.
3. Publish: (a) every target ``.db`` that exists is removed — from here on no old
   shard opens, since a shard needs its ``.db``; (b) the data files are renamed into
   place; (c) the ``.db`` files are renamed into place, shard 0 last. Until the last
   rename at least one shard lacks its ``.db``, so the dataset does not open; after it,
   every shard is new. The directory is fsync-ed between the steps.

A dataset is therefore always either the old one (intact until step 3a) or the new one
or does not open. Staging files of a writer that died are recognised by their
``rio-<token>`` tag and removed by :func:`clean_stale` only when no live process holds
that token's lock.
"""

import fcntl
import glob
import os
import re

from recordio.errors import FormatError
from recordio.mindrecord import encryption
from recordio.mindrecord.journals import lock_held, lock_path

__all__ = ["CommitOnExit", "Staging", "clean_stale", "fsync_dir", "fsync_file", "fsync_path", "lock_is_free"]

_TMP = re.compile(r"^\..+\.rio-([0-9a-f]{16})\.tmp$")
_LOCK = re.compile(r"^\.rio-([0-9a-f]{16})\.lock$")
_JOURNAL = re.compile(r"^\..+\.rio-([0-9a-f]{16})\.journal$")


class CommitOnExit:
    """``with writer:`` commits when the block ends normally and aborts when it raises."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


def fsync_path(path):
    """fsync a file or a folder (a folder's entries: renames and new names) by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_dir = fsync_file = fsync_path


def lock_is_free(path):
    """True when no live process holds the writer lock file ``path`` (or it does not exist); a link or a
    special file is not a lock recordio made: False, so that its files are left alone."""
    try:
        return not lock_held(path)
    except FormatError:
        return False


def clean_stale(directory):
    """Remove staging files of dead writers in ``directory``; return the removed paths."""
    removed = []
    names = os.listdir(directory)
    tokens = {m.group(1) for n in names if (m := _TMP.match(n) or _LOCK.match(n))}
    journals = {m.group(1) for n in names if (m := _JOURNAL.match(n))}
    for token in tokens - journals:     # an interrupted append is finished by recovery.recover first
        lock = lock_path(directory, token)
        if not lock_is_free(lock):
            continue
        for path in glob.glob(os.path.join(glob.escape(directory), f".*.rio-{token}.tmp")):
            os.unlink(path)
            removed.append(path)
        if os.path.exists(lock):
            os.unlink(lock)
            removed.append(lock)
    return removed


class Staging:
    """Staging names and the lock of one writer for the data files ``targets``."""

    def __init__(self, targets):
        self.targets = [os.path.abspath(t) for t in targets]
        self.directory = os.path.dirname(self.targets[0])
        self.token = os.urandom(8).hex()
        self._lock_path = lock_path(self.directory, self.token)
        self._data = [self.staged(t) for t in self.targets]
        self._dbs = [self.staged(t + ".db") for t in self.targets]
        # The lock is taken under a name cleaners ignore, then renamed into view, so that no
        # cleaner can ever see this writer's lock file unlocked.
        fresh = self._lock_path + ".new"
        self._lock_fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        os.rename(fresh, self._lock_path)

    def staged(self, target):
        return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.rio-{self.token}.tmp")

    def data_paths(self):
        return list(self._data)

    def db_paths(self):
        return list(self._dbs)

    def publish(self, fsync=True):
        """Steps 2 and 3 of the protocol (``fsync=False`` keeps the order but skips the syncs)."""
        sync_dir = fsync_dir if fsync else (lambda d: None)
        if encryption.key() is not None:           # MindSpore's set_enc_key: publish encrypted files
            for path in self.data_paths() + self.db_paths():
                encryption.encrypt_file(path, tmp=self.staged(path + ".enc"))
        if fsync:
            for path in self.data_paths() + self.db_paths():
                fsync_file(path)
        sync_dir(self.directory)
        for path in [t + ".db" for t in self.targets]:
            if os.path.lexists(path):
                os.unlink(path)
        sync_dir(self.directory)
        for staged, target in zip(self.data_paths(), self.targets):
            os.replace(staged, target)
        sync_dir(self.directory)
        for staged, target in reversed(list(zip(self.db_paths(), self.targets))):
            os.replace(staged, target + ".db")
        sync_dir(self.directory)
        self.release()

    def abort(self):
        """Remove every staged file of this writer and release the lock."""
        for path in self.data_paths() + self.db_paths():
            if os.path.exists(path):
                os.unlink(path)
        self.release()

    def release(self):
        if self._lock_fd is not None:
            os.unlink(self._lock_path)
            os.close(self._lock_fd)
            self._lock_fd = None
