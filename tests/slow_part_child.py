"""A child process of tests/test_compiled.py (started with spawn or forkserver): block a compiled part's
import, use what it speeds up and send back the slow-path warnings it gave."""

import os
import sys
import warnings


class Block:
    """An import finder that refuses one module, as an install without it would."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, name, path=None, target=None):
        if name == self.name:
            raise ImportError(f"No module named {name!r} (blocked by the test)")


def use_blocked(blocked, use_source, fresh_run, queue):
    """Use the part blocked (``use_source`` defines ``USE()``); ``fresh_run``: as a process that no
    parent warned for. Puts the slow-path warnings' texts on ``queue``."""
    if fresh_run:
        os.environ.pop("RECORDIO_SLOW_WARNED", None)       # recordio.compiled.WARNED
    sys.meta_path.insert(0, Block(blocked))
    namespace = {}
    exec(use_source, namespace)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        namespace["USE"]()
    queue.put([str(w.message) for w in seen if "slower path" in str(w.message)])


def tag_warnings():
    """Print each slow-path warning this process gives to stderr as ``SLOWWARN <pid>``, every time (the
    processes of tests/test_compiled.py's run script: its parent, its plain child, its workers)."""
    def show(message, category, filename, lineno, file=None, line=None):
        if "slower path" in str(message):
            print(f"SLOWWARN {os.getpid()}", file=sys.stderr, flush=True)
    warnings.simplefilter("always")
    warnings.showwarning = show
