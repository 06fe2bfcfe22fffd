"""Writing a dataset to a URL: written and committed locally, then uploaded in an order that keeps
readers out of a half-uploaded dataset.

A dataset at a URL "is there" when shard 0's ``.db`` is: every reader opens shard 0's ``.db`` (see
:mod:`remote`), and a missing one is :class:`~recordio.errors.MissingFileError`. So :func:`publish`

1. removes shard 0's ``.db`` (an older dataset at the URL stops opening),
2. removes objects of an older version this one does not have (more shards, or their ``.db``),
3. uploads the data files, then the other shards' ``.db``, and shard 0's ``.db`` last.

A write killed at any step leaves no ``.db`` for shard 0, hence nothing that opens; running the same
write again stages it again and repeats the steps, which completes it (each step can be redone).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil

from recordio.errors import DatasetExistsError
from recordio.mindrecord import format as fmt
from recordio.mindrecord.storage.cache import default_cache_dir
from recordio.mindrecord.storage.store import Store, url_join

__all__ = ["Upload", "WriteTarget", "write_target"]


class Upload:
    """The staging folder and the upload of a :class:`FileWriter` whose target is a URL."""

    def __init__(self, url, shard_num, overwrite, storage_options=None, staging_dir=None):
        self.url = url
        self.names = [os.path.basename(n) for n in fmt.shard_file_names(url.rsplit("/", 1)[-1], shard_num)]
        for name in self.names:
            fmt.check_file_name(name, url)
        self.urls = [url_join(url, name) for name in self.names]
        self.store = Store(storage_options)
        key = hashlib.sha256(url.encode()).hexdigest()[:16]
        root = staging_dir or os.path.join(default_cache_dir(), "uploads")
        self.folder = os.path.join(root, key)
        os.makedirs(self.folder, exist_ok=True)
        self.local_name = os.path.join(self.folder, url.rsplit("/", 1)[-1])
        if not overwrite and self.store.exists(self.urls[0] + ".db"):
            raise DatasetExistsError(f"{self.url}: a dataset is there already (its shard 0 index "
                                     f"{self.urls[0]}.db exists); pass overwrite=True to replace it")

    def publish(self, local_paths):
        """Upload the committed local files (``local_paths``: data files, shard order), then drop them."""
        store, first_db = self.store, self.urls[0] + ".db"
        store.remove(first_db)                                  # from here on nothing opens
        for name in self._stale():
            store.remove(url_join(self.url, name))
        for path, url in zip(local_paths, self.urls):
            store.upload(path, url)
        for path, url in list(zip(local_paths, self.urls))[1:]:
            store.upload(path + ".db", url + ".db")
        store.upload(local_paths[0] + ".db", first_db)          # the dataset is there
        shutil.rmtree(self.folder, ignore_errors=True)

    def _stale(self):
        """Names of objects beside the target that an older version of this dataset left and this one lacks."""
        base = self.url.rsplit("/", 1)[-1]
        pattern = re.compile(re.escape(base) + r"\d*(\.db)?$")
        keep = set(self.names) | {n + ".db" for n in self.names}
        return [n for n in self.store.listdir(self.url.rsplit("/", 1)[0]) if pattern.match(n) and n not in keep]


class WriteTarget:
    """Where a writer that is not :class:`FileWriter` (a converter, a set of :class:`ShardWriter`
    tasks) writes ``destination``: ``path`` is ``destination`` itself for a local path, or a local
    staging path for a URL; :meth:`publish` uploads the committed staged dataset in the order above
    (nothing for a local path). A rerun after a failure stages into the same folder (a resumable
    writer continues there) and publishes again."""

    def __init__(self, destination, shard_num, overwrite=False, storage_options=None, staging_dir=None):
        from recordio.mindrecord.storage.urls import is_url
        self.destination = destination
        self.remote = is_url(destination)
        self._upload = Upload(destination, shard_num, overwrite, storage_options, staging_dir) if self.remote else None
        self.path = self._upload.local_name if self.remote else os.fspath(destination)
        self.shard_num = shard_num

    def files(self):
        """The dataset's data files at ``destination``, shard order."""
        if self._upload is not None:
            return list(self._upload.urls)
        return [os.path.abspath(n) for n in fmt.shard_file_names(self.path, self.shard_num)]

    def publish(self):
        if self._upload is not None:
            self._upload.publish([os.path.abspath(n) for n in fmt.shard_file_names(self.path, self.shard_num)])


def write_target(destination, shard_num, *, overwrite=False, storage_options=None, staging_dir=None) -> WriteTarget:
    """The :class:`WriteTarget` of ``destination`` (a path or a URL) for ``shard_num`` shards; for a
    URL that holds a dataset already, :class:`~recordio.errors.DatasetExistsError` unless
    ``overwrite``. ``staging_dir``: where a URL's dataset is staged (default: the node's cache folder;
    writers on several machines need a folder they all see)."""
    return WriteTarget(os.fspath(destination), shard_num, overwrite, storage_options, staging_dir)
