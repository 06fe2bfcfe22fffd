"""A bounded queue whose blocking calls give up when a stop flag is set.

The pipeline's producer thread and the sink's channel hand data between threads through it; a
blocked ``put`` or ``get`` looks at the stop flag every :data:`POLL_S` seconds, so closing never
waits on a full or empty queue.
"""

import queue
import time

__all__ = ["POLL_S", "StopQueue"]

POLL_S = 0.05          # how often a blocked wait (queues, free device slots) looks at the stop flag


class StopQueue(queue.Queue):
    """``queue.Queue`` with :meth:`put_unless` / :meth:`get_unless` a ``threading.Event``."""

    def put_unless(self, stop, item):
        """Put ``item``; False (not put) once ``stop`` is set."""
        while not stop.is_set():
            try:
                self.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def get_unless(self, stop, deadline=None):
        """The next item; None once ``stop`` is set or past ``deadline`` (``time.monotonic``)."""
        while not stop.is_set():
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if wait <= 0:
                return None
            try:
                return self.get(timeout=wait)
            except queue.Empty:
                continue
        return None
