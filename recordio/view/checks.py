"""The overview's "verify" button: ``recordio.verify`` run shard by shard in a background thread, with
its progress and each shard's result readable while it runs (one run at a time)."""

from __future__ import annotations

import threading


class VerifyJob:
    """Verify the dataset's shards one after the other; :meth:`state` says how far it got."""

    def __init__(self, source):
        self._source = source
        self._lock = threading.Lock()
        self._thread = None
        self._state = {"state": "idle", "done": 0, "total": 0, "shards": [], "error": None}

    def start(self) -> dict:
        with self._lock:
            if self._state["state"] != "running":
                targets = self._targets()
                self._state = {"state": "running", "done": 0, "total": len(targets), "shards": [], "error": None}
                self._thread = threading.Thread(target=self._run, args=(targets,), daemon=True,
                                                name="recordio-view-verify")
                self._thread.start()
        return self.state()

    def state(self) -> dict:
        with self._lock:
            return {**self._state, "shards": list(self._state["shards"])}

    def join(self, timeout=None):
        if self._thread is not None:
            self._thread.join(timeout)

    def _targets(self):
        """One list of files per step: each shard alone, or the whole dataset when it does not open."""
        try:
            return [[shard["file"]] for shard in self._source.info()["shards"]]
        except Exception:               # a dataset that does not open is verified whole: verify names the file
            return [self._source.path]

    def _run(self, targets):
        from recordio.mindrecord import verify

        options = self._source.options
        for target in targets:
            try:
                report = verify(target, **options)
                result = {"file": target[0] if isinstance(target, list) else target, "ok": report.ok,
                          "rows": report.rows, "checksums": not report.without_checksums,
                          "regions": report.checked_slots,
                          "problems": [{"file": f, "text": t} for f, t in report.problems]}
            except Exception as exc:       # reported on the page; the server goes on
                result = {"file": str(target), "ok": False, "rows": 0, "checksums": False, "regions": 0,
                          "problems": [{"file": str(target), "text": f"{type(exc).__name__}: {exc}"}]}
            with self._lock:
                self._state["shards"].append(result)
                self._state["done"] += 1
        with self._lock:
            self._state["state"] = "done"
            self._state["ok"] = all(s["ok"] for s in self._state["shards"])
