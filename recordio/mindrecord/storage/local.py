"""A dataset's files on this machine: the storage interface (see :mod:`recordio.mindrecord.storage`)
as plain ``os`` calls and memory maps."""

import os

from recordio.mindrecord import fileio
from recordio.mindrecord import format as fmt

__all__ = ["LocalStorage"]


class LocalStorage:
    """The local files ``local`` (a path, or a list of paths) of a dataset."""

    contiguous = True           # a file's map holds every byte of it

    def __init__(self, local):
        self.local = local

    def list(self) -> list[str]:
        """The data files of the dataset (the header's siblings of a path; exactly those of a list)."""
        return fmt.dataset_paths(self.local)

    def stat(self, path) -> int:
        """The size of the file ``path`` in bytes."""
        return os.stat(path).st_size

    @staticmethod
    def open(path, identity) -> int:
        """A descriptor of ``path``, refused when the path now names another file than ``identity``."""
        return fileio.open_checked(path, identity)

    @staticmethod
    def map(path, size, fd):
        """A read-only map of the ``size`` bytes of ``path`` through ``fd``."""
        return fileio.map_readonly(path, size, fd)

    @staticmethod
    def fetch(path, mm, start, end) -> bytes:
        return mm[start:end]

    def ensure(self, path, start, end):
        pass

    def watch(self, path, header_size, page_size, size, checksums):
        pass                        # local reads check pages through the reader's checks, on first touch

    def plan(self, spans, depth, workers):
        pass

    def advance(self):
        pass

    @staticmethod
    def rename(text) -> str:
        return text

    def close(self):
        pass
