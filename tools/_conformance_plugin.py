"""The pytest plugin of ``recordio conformance``: each test's outcome, one JSON line at a time.

Copied into a folder on the test process's ``PYTHONPATH`` and loaded with ``-p
_conformance_plugin``. It writes to ``$RECORDIO_CONFORMANCE_RESULTS`` (appending, flushed per line,
so a run killed half-way keeps what it finished):

    {"kind": "item", "nodeid": ..., "key": ...}        every collected test (after --deselect)
    {"kind": "start", "nodeid": ...}                    a test begins
    {"kind": "report", "nodeid", "when", "outcome", "message"}
    {"kind": "collect_error", "nodeid": <module>, "message": ...}
    {"kind": "finished"}

On recordio's side it first sets ``config.set_order_mode`` / ``set_bytes_form`` from
``$RECORDIO_CONFORMANCE_ORDER_MODE`` / ``$RECORDIO_CONFORMANCE_BYTES_FORM`` (``--order-mode``,
``--bytes-form``).

``key`` names a test the same way on both sides: ``path::function``, and for a parametrized test
``path::function[#k]`` (its k-th case), since pytest's own ids print the parameter values, which
differ between MindSpore's objects and recordio's. With ``$RECORDIO_CONFORMANCE_TIMEOUT`` seconds, a
test still running after that long fails (SIGALRM).
"""

import json
import os
import re
import signal

import pytest

_OUT = None
_EXCEPTION_LINE = re.compile(r"^E\s+([\w.]+(Error|Exception|Exit|Interrupt)\b.*)")


class ConformanceTimeout(Exception):
    """A test ran past the runner's per-test limit."""


def _write(record):
    global _OUT
    if _OUT is None:
        _OUT = open(os.environ["RECORDIO_CONFORMANCE_RESULTS"], "a", encoding="utf-8")
    _OUT.write(json.dumps(record) + "\n")
    _OUT.flush()


def keys(items):
    """{nodeid: key} for the collected ``items`` (see the module docstring)."""
    seen = {}
    out = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        base = f"{path}::{getattr(item, 'originalname', item.name)}"
        if getattr(item, "callspec", None) is None:
            out[item.nodeid] = base
            continue
        k = seen.get(base, 0)
        seen[base] = k + 1
        out[item.nodeid] = f"{base}[#{k}]"
    return out


def first_line(report):
    """The first line that says why ``report`` failed or skipped."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):                      # a skip: (path, line, reason)
        return str(longrepr[2]).splitlines()[0] if longrepr[2] else "skipped"
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        lines = [line.strip() for line in crash.message.strip().splitlines()]
        if lines[0].startswith("Regex pattern did not match"):     # pytest.raises(match=...): show both
            return " ".join(lines[:3])
        return lines[0]
    text = str(longrepr)
    for line in text.splitlines():
        match = _EXCEPTION_LINE.match(line)
        if match:
            return match.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors or lines or ["(no message)"])[0]


def pytest_configure(config):
    """recordio's side: the order mode and bytes form ``recordio conformance`` was asked for."""
    if os.environ.get("RECORDIO_CONFORMANCE_MODE") != "recordio":
        return
    from recordio import config as settings
    settings.set_order_mode(os.environ.get("RECORDIO_CONFORMANCE_ORDER_MODE", "recordio"))
    settings.set_bytes_form(os.environ.get("RECORDIO_CONFORMANCE_BYTES_FORM", "uint8"))


def pytest_collection_finish(session):
    for nodeid, key in keys(session.items).items():
        _write({"kind": "item", "nodeid": nodeid, "key": key})


def pytest_collectreport(report):
    if report.failed:
        _write({"kind": "collect_error", "nodeid": report.nodeid, "message": first_line(report)})


def pytest_runtest_logstart(nodeid, location):
    _write({"kind": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report):
    message = "" if report.passed else first_line(report)
    _write({"kind": "report", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "message": message})


def _alarm(signum, frame):
    raise ConformanceTimeout(f"the test ran past {os.environ['RECORDIO_CONFORMANCE_TIMEOUT']} s "
                             "(recordio conformance --timeout)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    limit = float(os.environ.get("RECORDIO_CONFORMANCE_TIMEOUT") or 0)
    if limit <= 0:
        return (yield)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def pytest_sessionfinish(session, exitstatus):
    _write({"kind": "finished", "exitstatus": int(exitstatus)})
