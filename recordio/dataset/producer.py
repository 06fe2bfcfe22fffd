"""Who runs a pipeline's generator: a producer thread prefetching into a bounded queue, or the consumer's
own thread while a thread would overlap nothing (:class:`PipelineProducer`, used by
:class:`~recordio.dataset.iterators.ItemStream`)."""

import itertools
import queue
import threading
import time

from recordio.dataset.stopqueue import POLL_S, StopQueue

__all__ = ["PipelineProducer"]


class PipelineProducer:
    """Runs the pipeline's messages (one generator, driven by one thread at a time): in a producer
    thread that prefetches into a bounded queue, or in the consumer's own thread (``inline``: one
    output per ``next``; for a DataLoader worker, whose process is the parallelism).

    ``adaptive``: start threaded, and run inline while the consumer does next to nothing between
    outputs (under :data:`OWN_S` each, and mostly waiting: a thread overlaps nothing then, and costs
    two thread switches an output); go back to a thread once the consumer's own work between outputs
    is worth overlapping (over twice that: a training step). The outputs and their order are the same
    either way; only who runs the generator changes, at an output boundary. ``start_inline``: begin
    in the consumer's thread (the previous iterator of the pipeline ended there).
    """

    WINDOW = 16          # outputs measured before a switch is considered
    OWN_S = 100e-6       # the consumer's mean time between outputs under which a thread cannot pay
    IDLE = 0.1           # ... and its share of the consumer's waits for the thread's outputs

    def __init__(self, root, ctx, epochs, skip, prefetch, inline=False, adaptive=False, start_inline=False):
        self.finish = None             # applied to each item's columns where the item is made (conversion)
        self._messages = self._run(root, ctx, epochs, skip)
        self.queue = StopQueue(prefetch)
        self.stop = threading.Event()
        self._pause = threading.Event()
        self.thread = None
        self.adaptive = adaptive and not inline
        self.inline = inline or (self.adaptive and start_inline)
        self._reset_clock()

    def _run(self, root, ctx, epochs, skip):
        try:
            for k, epoch in enumerate(epochs):
                items = root._items(ctx, epoch)
                try:
                    for item in itertools.islice(items, skip if k == 0 else 0, None):
                        if self.finish is not None:
                            item.cols = self.finish(item.cols)
                        yield ("item", epoch, item)
                finally:
                    getattr(items, "close", lambda: None)()
                yield ("end", epoch, None)
            yield ("done", None, None)
        except Exception as e:  # noqa: BLE001 - re-raised by the consumer, as from the thread
            _name_origin(e, root)
            yield ("error", None, e)
        finally:
            ctx.close()

    def _drive(self):
        """The producer thread: messages into the queue until the end, a stop or a pause."""
        try:
            while not self._pause.is_set():
                msg = next(self._messages, ("done", None, None))
                if not self.queue.put_unless(self.stop, msg) or msg[0] in ("done", "error"):
                    return
            self.queue.put_unless(self.stop, ("paused", None, None))
        except BaseException as e:  # noqa: BLE001 - carried to the consumer and re-raised there
            self.queue.put_unless(self.stop, ("error", None, e))

    def _start_thread(self):
        self._pause.clear()
        self.thread = threading.Thread(target=self._drive, daemon=True, name="recordio-pipeline")
        self.inline = False
        self.thread.start()

    def _reset_clock(self):
        self._count, self._own, self._spent, self._since = 0, 0.0, 0.0, None

    def next(self, block=True):
        """The next message; None when ``block`` is False and none is ready (threaded)."""
        now = time.perf_counter()
        own = 0.0 if self._since is None else now - self._since      # the consumer's time since the last
        if self.inline:
            msg = next(self._messages, ("done", None, None))
        else:
            if self.thread is None:
                self._start_thread()
            msg = self._get(block)
            if msg is None:
                return None
            if msg[0] == "paused":                 # the thread stopped at an output boundary: go on here
                self.thread.join()
                self.inline = True
                self._reset_clock()
                return self.next(block)
        done = time.perf_counter()
        if self.adaptive and msg[0] == "item":
            self._count += 1
            self._own += own
            self._spent += done - now
            self._since = done
            if self._count >= self.WINDOW:
                mean = self._own / self._count
                if (not self.inline and not self._pause.is_set() and mean < self.OWN_S
                        and self._own < self.IDLE * self._spent):
                    self._pause.set()              # the thread finishes what it holds, then hands over
                elif self.inline and mean > 2 * self.OWN_S:
                    self._start_thread()
                self._reset_clock()
        return msg

    def _get(self, block):
        while block or self.thread.is_alive() or not self.queue.empty():
            try:
                return self.queue.get(timeout=POLL_S)
            except queue.Empty:
                if not self.thread.is_alive() and self.queue.empty():
                    return ("done", None, None)
        return None

    def close(self):
        self.stop.set()
        if self.thread is not None and self.thread.is_alive():
            self.thread.join(timeout=30)
        if self.thread is None or not self.thread.is_alive():
            self._messages.close()


def _name_origin(e, root):
    """An op's error on a row (``e.recordio_row``) also names where the row comes from (its file)."""
    row = getattr(e, "recordio_row", None)
    if row is None or getattr(e, "recordio_origin", False):
        return
    try:
        origin = root._row_origin(int(row))
    except Exception:  # noqa: BLE001 - the error being raised matters more than this note
        origin = None
    if origin is not None:
        e.add_note(f"recordio: source row {int(row)} is {origin}")
        e.recordio_origin = True
