"""Where a dataset's bytes live, behind one small interface, so that the read path never asks.

A storage gives the reader what it needs of a dataset's files:

==============================  ===============================================================
``local``                       what to open: the path (or list of paths) of the data files on
                                this machine (for a dataset at a URL: its image in the cache)
``open(path, identity)``        a descriptor of a data file, refused if the path names another file
``map(path, size, fd)``         a read-only map of the file
``fetch(path, mm, start, end)`` bytes [start, end) of the file (a slice of its map; through the
                                cache, fetched first, for a dataset at a URL)
``ensure(path, start, end)``    make bytes [start, end) present (a local file: always)
``contiguous``                  True when ``mm`` itself holds every byte (``fetch`` is ``mm[start:end]``,
                                and rows may be cut from the map directly)
``watch(path, ..., checksums)`` check every page it fetches against its checksum (at a URL)
``plan(spans, depth, workers)`` the reads to come, in order (a URL: prefetched in spans)
``advance()``                   one row read (paces the prefetch)
``list()`` / ``stat(path)``     the data files; a file's size
``rename(text)``                ``text`` with local paths replaced by what the user named
``close()``                     release what it holds
==============================  ===============================================================

:class:`~recordio.mindrecord.storage.local.LocalStorage` is the local one (the ``os`` calls and
nothing else); :mod:`~recordio.mindrecord.storage.remote` the one behind URLs (``store``: the
fsspec/HTTP requests, ``cache``: the node-local page cache and its bound ``cache_bound``,
``prefetch`` and ``span_plan``: an epoch's reads fetched ahead, ``fetch_checks``: page checksums
on every fetch) with ``upload`` for writing to one. :func:`open_storage` picks the one a path
needs; the remote modules are imported only for a URL.
"""

import contextlib

from recordio.mindrecord.storage.urls import is_url

__all__ = ["is_url", "local_files", "open_storage"]


def open_storage(file_name, *, storage_options=None, cache_dir=None, cache_limit=None, index=True):
    """The storage of the dataset ``file_name`` (a path, a URL or a list of either): local files as they
    are, a URL through the node-local cache (its headers and ``.db`` files fetched; with ``index=False``
    every object whole, since the page table is walked through every page)."""
    if not is_url(file_name):
        from recordio.mindrecord.storage.local import LocalStorage
        return LocalStorage(file_name)
    from recordio.mindrecord.storage.remote import open_remote
    remote = open_remote(file_name, cache_dir, cache_limit, storage_options, index=index)
    if not index:
        remote.ensure_all()
    return remote


@contextlib.contextmanager
def local_files(path, storage_options=None, cache_dir=None, whole=False):
    """``(local, remote)``: ``path`` itself and None for local paths; for URLs the cached image's local
    name(s) and its remote storage, with every object fetched whole when ``whole`` (verification)."""
    if not is_url(path):
        yield path, None
        return
    from recordio.mindrecord.storage.remote import open_remote
    remote = open_remote(path, cache_dir=cache_dir, storage_options=storage_options)
    try:
        if whole:
            remote.ensure_all()
        yield remote.local, remote
    finally:
        remote.close()
