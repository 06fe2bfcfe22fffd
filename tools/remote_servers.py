"""Servers on 127.0.0.1 for the remote tests and ``recordio bench --suite remote``.

* :class:`RangeServer`: a standard-library HTTP server of one folder, with ``Range`` (206), ``ETag``
  and ``If-Match`` (412), that logs every request;
* :class:`FaultProxy`: an HTTP proxy in front of it (or of the S3 server: every method and header is
  forwarded) that adds latency and, at a seeded rate, answers 500, drops the connection, or sends a
  truncated body; it logs what it forwarded;
* :func:`moto_server`: moto's S3-compatible server, used through s3fs as a real bucket would be;
* :func:`blob_rows` / :func:`write_blob_rows`: the rows of the remote tests (~3 KB blobs).
"""

from __future__ import annotations

import http.client
import http.server
import os
import random
import re
import threading
import time

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def _etag(st):
    return f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'


class _Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


class _FolderHandler(_Quiet):
    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body):
        path = os.path.join(self.server.root, self.path.lstrip("/").split("?")[0])
        rng = self.headers.get("Range")
        self.server.log.append((self.command, self.path, rng))
        try:
            st = os.stat(path)
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        etag = _etag(st)
        if self.headers.get("If-Match") not in (None, etag):
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, end, status = 0, st.st_size, 200
        m = _RANGE.match(rng or "")
        if m:
            start = int(m.group(1))
            end = min(st.st_size, int(m.group(2)) + 1) if m.group(2) else st.st_size
            status = 206
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{st.st_size}")
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class _Running:
    def __init__(self, server):
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def log(self):
        return self.server.log

    @property
    def faults(self):
        return self.server.faults

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RangeServer(_Running):
    """Serve ``root`` at ``self.url``; ``self.log`` lists ``(method, path, Range header)``."""

    def __init__(self, root):
        server = _Server(("127.0.0.1", 0), _FolderHandler)
        server.root, server.log = os.fspath(root), []
        super().__init__(server)


class _ProxyHandler(_Quiet):
    def do_HEAD(self):
        self._forward()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD

    def _forward(self):
        s = self.server
        s.log.append((self.command, self.path, self.headers.get("Range")))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if s.latency_s:
            time.sleep(s.latency_s)
        with s.lock:
            roll, kind = s.rng.random(), s.rng.choice(("500", "drop", "truncate"))
        fault = kind if roll < s.fault_rate else None
        if fault == "truncate" and self.command != "GET":
            fault = None                                  # only a GET has a body to cut
        if fault is not None:
            s.faults.append(fault)
        if fault == "500":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if fault == "drop":
            self.close_connection = True
            return
        conn = s.upstream()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        s.pool.put(conn) if not resp.will_close else conn.close()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP | {"date", "server"}:
                self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            if fault == "truncate" and len(data) > 1:
                self.wfile.write(data[: len(data) // 2])
                self.close_connection = True
                return
            self.wfile.write(data)


_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class FaultProxy(_Running):
    """Forward to ``upstream`` (a :class:`RangeServer`), ``latency_s`` later per request, failing a
    ``fault_rate`` share of requests (500, dropped connection or truncated body; seeded)."""

    def __init__(self, upstream, latency_s=0.0, fault_rate=0.0, seed=0):
        import queue

        server = _Server(("127.0.0.1", 0), _ProxyHandler)
        host, port = upstream if isinstance(upstream, tuple) else upstream.server.server_address[:2]
        server.pool = queue.SimpleQueue()

        def upstream_conn():
            try:
                return server.pool.get_nowait()
            except queue.Empty:
                return http.client.HTTPConnection(host, port, timeout=60)

        server.upstream = upstream_conn
        server.latency_s, server.fault_rate = latency_s, fault_rate
        server.rng, server.lock = random.Random(seed), threading.Lock()
        server.log, server.faults = [], []
        super().__init__(server)


class moto_server:
    """moto's S3 server on 127.0.0.1 in its own process (a context manager: in a thread of this process it
    would share the GIL with the reader it serves); ``options`` are s3fs's storage_options."""

    def __init__(self):
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.setdefault(name, "testing")
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        self._proc = None

    def __enter__(self):
        import socket
        import subprocess
        import sys

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self._proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self._proc.kill()
                    raise RuntimeError("moto's S3 server did not start (is moto[server] installed?)") from None
                time.sleep(0.1)
        self.address = ("127.0.0.1", port)
        self.endpoint = f"http://127.0.0.1:{port}"
        self.options = self.options_for(self.endpoint)
        return self

    def __exit__(self, *exc):
        self._proc.kill()
        self._proc.wait()

    @staticmethod
    def options_for(endpoint):
        """s3fs storage options for the server at ``endpoint`` (or a proxy in front of it)."""
        return {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
                "client_kwargs": {"region_name": "us-east-1"}}

    def bucket(self, name):
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=name)
        return self.bucket_fs()

    def bucket_fs(self):
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.options)


BLOB_SCHEMA = {"id": {"type": "int64"}, "label": {"type": "int32"}, "data": {"type": "bytes"}}


def blob_rows(n, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return [{"id": np.int64(i), "label": np.int32(i % 7),
             "data": rng.integers(0, 256, int(rng.integers(500, 5000)), dtype=np.uint8).tobytes()}
            for i in range(n)]


def write_blob_rows(target, rows, shard_num, **options):
    """Write ``rows`` to ``target`` (a path or a URL) in 32 KiB pages, ``id`` indexed."""
    from recordio import FileWriter

    with FileWriter(target, shard_num=shard_num, overwrite=True, **options) as w:
        w.set_page_size(1 << 15)
        w.add_schema(BLOB_SCHEMA, "blobs")
        w.add_index(["id"])
        w.write_raw_data(rows)


class proxy_process:
    """A :class:`FaultProxy` in its own process (a context manager; ``url``), so that a benchmark's
    proxy does not share the GIL with the reader it measures."""

    def __init__(self, upstream, latency_s=0.0):
        self.upstream, self.latency_s = upstream, latency_s

    def __enter__(self):
        import subprocess
        import sys

        host, port = self.upstream
        self._proc = subprocess.Popen([sys.executable, "-m", "recordio.tools.remote_servers", host, str(port),
                                       str(self.latency_s)], stdout=subprocess.PIPE, text=True)
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self._proc.kill()
            raise RuntimeError("the proxy process did not start")
        return self

    def __exit__(self, *exc):
        self._proc.kill()
        self._proc.wait()


if __name__ == "__main__":
    import sys

    with FaultProxy((sys.argv[1], int(sys.argv[2])), latency_s=float(sys.argv[3])) as _proxy:
        print(_proxy.url, flush=True)
        threading.Event().wait()
