"""Objects behind URLs (``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``file://``) through fsspec.

The one module that imports fsspec (and, through it, s3fs or aiohttp), and only once a URL is used:
``import recordio`` and every local path never load it. A :class:`Store` answers four questions
about one object — what it is (size and ETag), its bytes in a range, the whole of it, and putting a
local file there — and hides the two ways objects change and fail:

* a range read carries the ETag the object had when the dataset was opened (``If-Match``), so an
  object replaced since is a :class:`DatasetChangedError` naming it, never bytes of two versions;
* transient faults (timeouts, reset connections, 5xx answers, short bodies) are retried with
  exponential backoff, :data:`RETRIES` times; a permanent one is a :class:`RemoteError` naming the
  URL and the byte range.

Credentials and endpoints come as fsspec users give them: the environment, config files, or
``storage_options`` (``{"endpoint_url": ..., "key": ..., "secret": ...}`` for s3fs; the ``client_kwargs``
of fsspec's HTTP file system).
"""

from __future__ import annotations

import os
import re
import threading
import time

from recordio.errors import DatasetChangedError, RemoteError
from recordio.extras import requires
from recordio.mindrecord.storage.urls import is_url

__all__ = ["RETRIES", "Store", "is_url", "url_join"]

RETRIES = 6
BACKOFF_S = 0.05
_TRANSIENT_STATUS = (408, 429, 500, 502, 503, 504)
_stats_lock = threading.Lock()


def url_join(url, name):
    """The URL of ``name`` beside ``url`` (a sibling shard, a ``.db``)."""
    return url.rsplit("/", 1)[0] + "/" + name


class _Changed(Exception):
    pass


class _Transient(Exception):
    pass


def _status(exc):
    for attr in ("status", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    text = str(exc)
    if any(t in text for t in ("PreconditionFailed", "Precondition Failed", "pre-conditions", " 412")):
        return 412
    return None


def _classify(exc):
    """``_Changed``, ``_Transient`` or None (permanent) for an exception of a request."""
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return None
    status = _status(exc)
    if status == 412:
        return _Changed
    if status in _TRANSIENT_STATUS or isinstance(exc, (ConnectionError, TimeoutError, EOFError, _Transient)):
        return _Transient
    if status is not None and 400 <= status < 500:
        return None
    import asyncio

    if isinstance(exc, (OSError, asyncio.TimeoutError)):
        return _Transient
    name = type(exc).__module__ + "." + type(exc).__name__
    if name.startswith(("aiohttp.", "botocore.", "aiobotocore.", "urllib3.", "requests.")):
        return _Transient
    return None


class Store:
    """Reads and writes objects under one URL scheme and set of ``storage_options``.

    Picklable: the fsspec file system is made again in each process (fsspec's event loop does not
    survive ``fork``). ``stats`` counts this process's requests and bytes (for tests and benchmarks).
    """

    def __init__(self, storage_options: dict | None = None, retries: int = RETRIES, backoff_s: float = BACKOFF_S):
        self.storage_options = dict(storage_options or {})
        self.retries = retries
        self.backoff_s = backoff_s
        self.stats = {"requests": 0, "bytes": 0, "retries": 0}
        self._fs: dict = {}
        self._pid = os.getpid()

    def __getstate__(self):
        return {"storage_options": self.storage_options, "retries": self.retries, "backoff_s": self.backoff_s}

    def __setstate__(self, state):
        self.__init__(**state)

    def fs(self, url):
        """``(fsspec file system, path in it)`` for ``url``."""
        if os.getpid() != self._pid:
            self._fs, self._pid = {}, os.getpid()
        scheme = url.split("://", 1)[0]
        fs = self._fs.get(scheme)
        if fs is None:
            with requires("datasets at URLs (s3://, gs://, http(s)://)", "remote"):
                import fsspec

            fs = self._fs[scheme] = fsspec.filesystem(scheme, **self.storage_options)
        path = url if scheme in ("http", "https") else fs._strip_protocol(url)
        return fs, path

    # --- reading ----------------------------------------------------------------------------------

    def identity(self, url) -> tuple[int, str]:
        """``(size, etag)`` of the object at ``url`` (a missing object is ``FileNotFoundError``)."""
        fs, path = self.fs(url)
        if type(fs).__name__ == "HTTPFileSystem":       # fsspec's info() turns a failed HEAD into a GET
            from fsspec.asyn import sync

            return self._retry(url, None, lambda: sync(fs.loop, _http_head, fs, path))
        info = self._retry(url, None, lambda: fs.info(path))
        if info.get("type") == "directory":
            raise FileNotFoundError(f"{url}: no such object (a folder is there)")
        etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("mtime") or ""
        return int(info["size"]), str(etag)

    def exists(self, url) -> bool:
        fs, path = self.fs(url)
        return bool(self._retry(url, None, lambda: fs.exists(path)))

    def fetch(self, url, start, end, etag) -> bytes:
        """Bytes [start, end) of the object at ``url``, which must still have ``etag``."""
        fs, path = self.fs(url)

        def once():
            data = _range(fs, path, start, end, etag)
            if len(data) != end - start:
                raise _Transient(f"short body: {len(data)} of {end - start} bytes")
            return data

        data = self._retry(url, (start, end), once)
        with _stats_lock:
            self.stats["requests"] += 1
            self.stats["bytes"] += len(data)
        return data

    def _retry(self, url, span, call):
        where = url if span is None else f"{url} bytes {span[0]}..{span[1] - 1}"
        for attempt in range(self.retries + 1):
            try:
                return call()
            except Exception as exc:          # fsspec back ends raise many unrelated types
                kind = _classify(exc)
                if kind is _Changed:
                    raise DatasetChangedError(f"{url}: the object changed after the dataset was opened (its "
                                              f"ETag is no longer the one read); open the dataset again") from None
                if kind is None:
                    if isinstance(exc, FileNotFoundError):
                        raise FileNotFoundError(f"{url}: no such object") from None
                    raise RemoteError(f"{where}: {type(exc).__name__}: {exc}") from exc
                if attempt == self.retries:
                    raise RemoteError(f"{where}: failed after {self.retries + 1} attempts: "
                                      f"{type(exc).__name__}: {exc}") from exc
                with _stats_lock:
                    self.stats["retries"] += 1
                time.sleep(self.backoff_s * (2 ** attempt))
        raise AssertionError("unreachable")

    # --- writing ----------------------------------------------------------------------------------

    def upload(self, local, url):
        fs, path = self.fs(url)
        self._retry(url, None, lambda: fs.put_file(local, path))

    def remove(self, url):
        fs, path = self.fs(url)
        try:
            self._retry(url, None, lambda: fs.rm_file(path))
        except FileNotFoundError:
            pass

    def listdir(self, url) -> list[str]:
        """Names of the objects directly under the folder ``url``."""
        fs, path = self.fs(url)
        try:
            entries = self._retry(url, None, lambda: fs.ls(path, detail=False))
        except FileNotFoundError:
            return []
        fs.invalidate_cache()
        return [e.rstrip("/").rsplit("/", 1)[-1] for e in entries]


_SIGNED_S = 3000             # a presigned URL is made for an hour and used for 50 minutes
_signed: dict = {}


def _presigned(fs, path):
    """A presigned GET URL of the S3 object ``path`` (made once, then reused): a range request through it
    costs one plain HTTP GET instead of a signed botocore call (several ms of CPU each)."""
    key = (id(fs), path)
    url, made = _signed.get(key, (None, 0.0))
    if url is None or time.monotonic() - made > _SIGNED_S:
        url = fs.sign(path, expiration=_SIGNED_S + 600)
        _signed[key] = (url, time.monotonic())
    return url


def _http_fs():
    with requires("datasets at URLs (s3://, gs://, http(s)://)", "remote"):
        import fsspec

    return fsspec.filesystem("http")


def _range(fs, path, start, end, etag):
    """One range request, conditional on ``etag`` where the back end can say so."""
    kind = type(fs).__name__
    if kind == "S3FileSystem" and etag:
        try:
            return _http_fs().cat_file(_presigned(fs, path), start=start, end=end, headers={"If-Match": etag})
        except Exception as exc:
            if _status(exc) == 403:                      # expired or refused: sign again, then retry
                _signed.pop((id(fs), path), None)
                raise _Transient(f"presigned URL refused: {exc}") from None
            raise
    if kind == "HTTPFileSystem":
        headers = {"If-Match": etag} if etag else {}
        return fs.cat_file(path, start=start, end=end, headers=headers)
    return fs.cat_file(path, start=start, end=end)


async def _http_head(fs, url):
    session = await fs.set_session()
    async with session.head(fs.encode_url(url), allow_redirects=True, **fs.kwargs) as r:
        if r.status == 404:
            raise FileNotFoundError(url)
        r.raise_for_status()
        if "Content-Length" not in r.headers:
            raise RemoteError(f"{url}: the server gives no size (Content-Length) for the object")
        return int(r.headers["Content-Length"]), r.headers.get("ETag", "")


async def _s3_range(fs, bucket, key, start, end, etag):
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", IfMatch=etag)
    try:
        return await resp["Body"].read()
    finally:
        resp["Body"].close()
