"""A MindRecord dataset behind URLs, read through the node-local cache (``cache``).

:func:`open_remote` makes a local image of the dataset's folder in the cache: for each data file a
sparse file of the object's size holding, at first, only its header; each ``.db`` whole (SQLite needs
a local file, and it is small). Everything that opens local datasets (``open_shards``, counts,
``describe``) then runs unchanged on the image; the reader asks :meth:`RemoteDataset.read` for the
bytes of a row, which fetches the blocks covering them on demand. What is fetched when:

=====================  =======================================================================
opening / counting     each data file's header (its first 16 KiB, more for a longer header) and
                       each ``.db`` whole; no data page
reading a row          the blocks (4 KiB) covering its raw record and its blob, adjacent missing
                       blocks in one request
an epoch (``plan``)    spans of up to 4 MiB over the rows it reads (``span_plan``), in the order
                       of first need; a row read before its span was fetched fetches the span
``verify``             every object whole (every byte is checked)
=====================  =======================================================================

Every fetch that completes a page of a dataset with checksums checks it (``fetch_checks``).
"""

from __future__ import annotations

import bisect
import concurrent.futures
import hashlib
import os

from recordio.errors import MissingFileError
from recordio.mindrecord import fileio
from recordio.mindrecord import format as fmt
from recordio.mindrecord.storage.urls import is_url
from recordio.mindrecord.storage.cache_bound import Bound, NodeCount
from recordio.mindrecord.storage.prefetch import DEPTH, WORKERS, Prefetcher, next_use_of
from recordio.mindrecord.storage.cache import BLOCK, CachedObject, default_cache_dir, scan_held
from recordio.mindrecord.storage.fetch_checks import FetchChecks
from recordio.mindrecord.storage.store import Store, url_join

__all__ = ["RemoteDataset", "open_remote"]

OPEN_WORKERS = 16             # objects opened at a time (a HEAD and a header read each, and the .db)
_FIRST_READ = 1 << 14          # the smallest header_size: a first header read never reaches a page


class RemoteDataset:
    """The cached image of a remote dataset: ``local`` is what to open (one path, or a list); the storage
    interface of :mod:`recordio.mindrecord.storage` for the reader."""

    contiguous = False          # a map of the image holds only the blocks fetched: read through :meth:`fetch`

    def __init__(self, urls, local, objects, store, cache_limit=None, cache_policy="future", count=None):
        self.urls = urls
        self.local = local
        self.objects = objects              # local path -> CachedObject
        self.store = store
        self._bound = None if cache_limit is None else Bound(cache_limit, BLOCK, cache_policy, count)
        if self._bound is not None:         # blocks already cached (other readers, other jobs) are evictable
            for obj in objects.values():
                for a, b in obj.present_runs():
                    self._bound.fetched(obj_path(obj), a, b, check=False)
        self._prefetch = None
        self._named: dict = {}              # the reader's path of a file -> its CachedObject
        self._spans: dict = {}              # the reader's path -> (starts, ends, firsts) of the plan's spans
        self.checks = FetchChecks()
        for obj in objects.values():
            obj.on_fetch, obj.check = self._fetched, self.checks

    @property
    def stats(self) -> dict:
        """This process's requests, bytes and retries against the store."""
        return dict(self.store.stats)

    def url_of(self, local_path) -> str:
        return self.objects[os.path.realpath(local_path)].url

    def object(self, local_path) -> CachedObject:
        obj = self._named.get(local_path)
        if obj is None:
            obj = self._named[local_path] = self.objects[os.path.realpath(local_path)]
        return obj

    def read(self, local_path, start, end) -> bytes:
        obj = self.object(local_path)
        prefetch = self._prefetch
        if prefetch is not None and obj.missing(start, end):
            self._demand(prefetch, local_path, obj, start, end)
        if self._bound is not None:
            self._bound.touched(obj_path(obj), start // BLOCK, (end + BLOCK - 1) // BLOCK)
        return obj.read(start, end)

    def ensure(self, local_path, start, end):
        self.object(local_path).ensure(start, end)

    def fetch(self, local_path, mm, start, end) -> bytes:
        """Bytes [start, end) of the file (``mm``, its map, is not used: the bytes come through the cache)."""
        return self.read(local_path, start, end)

    open = staticmethod(fileio.open_checked)
    map = staticmethod(fileio.map_readonly)

    def list(self) -> list[str]:
        return fmt.dataset_paths(self.local)

    def stat(self, local_path) -> int:
        return self.object(local_path).size

    def watch(self, local_path, header_size, page_size, size, checksums):
        """Check every fetch that completes a page of ``local_path`` against ``checksums``."""
        self.checks.add(local_path, header_size, page_size, size, checksums)

    def rename(self, text: str) -> str:
        """``text`` with each cached file's local path replaced by its URL (for messages and reports)."""
        for obj in sorted(self.objects.values(), key=lambda o: -len(o.path)):
            text = text.replace(obj.path, obj.url)
        return text

    def ensure_all(self):
        """Fetch every object whole (verification reads every byte)."""
        for obj in self.objects.values():
            obj.ensure(0, obj.size)

    # --- the epoch's order: prefetch and the bound ---------------------------------------------------

    def plan(self, spans, depth=DEPTH, workers=WORKERS):
        """The rows the reader reads next, in order (``(path, start, end)`` per range of a row): fetch them
        ahead in spans (``span_plan``) and give the bound their next uses. Replaces the previous plan."""
        from recordio.mindrecord.storage.span_plan import plan_spans       # numpy: not needed to count rows

        self.stop_prefetch()
        pieces = plan_spans(spans, BLOCK, None if self._bound is None else self._bound.limit,
                            marks=lambda path: self.object(path).marks())
        by_path: dict = {}
        for path, a, b, first in sorted(pieces, key=lambda p: (p[0], p[1])):
            table = by_path.setdefault(path, ([], [], []))
            for column, value in zip(table, (a, b, first)):
                column.append(value)
        self._spans = by_path
        self._prefetch = Prefetcher(self.ensure, pieces, depth, workers)
        if self._bound is not None:
            self._bound.next_use = next_use_of([[(os.path.realpath(p), a, b) for p, a, b in row] for row in spans],
                                               BLOCK, lambda: self._prefetch.consumed)

    def _demand(self, prefetch, local_path, obj, start, end):
        """A row read before its span was fetched: fetch the planned spans covering it (those due within
        the prefetch depth), not the row alone."""
        table = self._spans.get(local_path)
        if table is None:
            return
        starts, ends, firsts = table
        due = prefetch.consumed + prefetch.depth
        k = bisect.bisect_right(starts, start) - 1
        while k >= 0 and ends[k] > start:           # spans of two windows may share a block
            k -= 1
        for i in range(max(k, 0), len(starts)):
            if starts[i] >= end:
                break
            if ends[i] > start and firsts[i] < due:
                obj.ensure(starts[i], ends[i])

    def advance(self):
        """One more row was read (paces the prefetch)."""
        if self._prefetch is not None:
            self._prefetch.advance()

    def stop_prefetch(self):
        if self._prefetch is not None:
            self._prefetch.close()
            self._prefetch = None

    def _fetched(self, obj, a, b):
        if self._bound is not None:
            for path, x, y in self._bound.fetched(obj_path(obj), a, b):
                for u, v in self.objects[path].evict(x, y):     # being fetched here: still the bound's
                    self._bound.fetched(path, u, v, check=False)

    def close(self):
        self.stop_prefetch()
        for obj in self.objects.values():
            obj.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_prefetch=None, _named={}, _spans={})
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for obj in self.objects.values():
            obj.on_fetch, obj.check = self._fetched, self.checks


def _folder(cache_dir, folder_url):
    key = hashlib.sha256(folder_url.encode()).hexdigest()[:16]
    tail = "".join(c if c.isalnum() or c in "-_." else "_" for c in folder_url.rstrip("/").rsplit("/", 1)[-1])
    return os.path.join(cache_dir, f"{tail[:40]}-{key}")


def _cached(store, cache_dir, url, whole=False, count=None):
    try:
        size, etag = store.identity(url)
    except FileNotFoundError:
        what = ("its index; a dataset whose shard 0 index is missing is not there, or not completely "
                "uploaded yet" if url.endswith(".db") else "a data file of the dataset")
        raise MissingFileError(f"{url}: no such object ({what})") from None
    name = fmt.check_file_name(url.rsplit("/", 1)[-1], url)
    obj = CachedObject(_folder(cache_dir, url.rsplit("/", 1)[0]), name, url, size, etag, store, count=count)
    if whole:
        obj.ensure(0, size)
    return obj


def _header_names(obj):
    """The shard names in the header of the data file ``obj`` (its header fetched first)."""
    obj.ensure(0, min(obj.size, _FIRST_READ))
    prefix = obj.read(0, min(obj.size, fmt.HEADER_PREFIX))
    length = fmt.header_length(prefix, obj.url, obj.size)
    obj.ensure(0, fmt.HEADER_PREFIX + length)
    return fmt.FileHeader.read(obj.path).header["shard_addresses"]


def _opened(store, cache_dir, url, count, index):
    """``(cache entry, shard names of its header)`` of the data file at ``url``: its header fetched,
    and its ``.db`` whole when ``index``."""
    obj = _cached(store, cache_dir, url, count=count)
    names = _header_names(obj)
    if index:
        _cached(store, cache_dir, url + ".db", whole=True).close()
    return obj, names


def open_remote(file_name, cache_dir=None, cache_limit=None, storage_options=None, index=True,
                cache_policy="future") -> RemoteDataset:
    """The cached image of the dataset at the URL ``file_name`` (any shard; its siblings come from its
    header) or at a list of URLs (exactly those): headers and ``.db`` files fetched (``OPEN_WORKERS``
    objects at a time), pages not."""
    store = Store(storage_options)
    cache_dir = os.path.abspath(os.fspath(cache_dir or default_cache_dir()))
    urls = [file_name] if isinstance(file_name, str) else list(file_name)
    os.makedirs(cache_dir, exist_ok=True)
    count = NodeCount(cache_dir, scan_held)
    count.value()                           # the node's counter, made from the maps on first use
    with concurrent.futures.ThreadPoolExecutor(OPEN_WORKERS, thread_name_prefix="recordio-open") as pool:
        if isinstance(file_name, str):
            first, names = _opened(store, cache_dir, file_name, count, index)
            siblings = [url_join(file_name, fmt.check_file_name(os.path.basename(n), file_name)) for n in names]
            siblings = [u for u in dict.fromkeys(siblings) if u != file_name]
            found = [first] + [obj for obj, _ in pool.map(lambda u: _opened(store, cache_dir, u, count, index),
                                                          siblings)]
        else:
            found = [obj for obj, _ in pool.map(lambda u: _opened(store, cache_dir, u, count, index), urls)]
    objects = {obj_path(obj): obj for obj in found}
    local = objects[obj_path(next(iter(objects.values())))].path if isinstance(file_name, str) \
        else [o.path for o in objects.values()]
    return RemoteDataset(urls, local, objects, store, cache_limit, cache_policy, count)


def obj_path(obj):
    return os.path.realpath(obj.path)
