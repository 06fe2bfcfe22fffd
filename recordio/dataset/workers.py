"""Ordered parallel execution of one pipeline stage: threads by default, processes on request.

Both runners take chunks of work, keep at most ``window`` chunks in flight (the bounded queue that
keeps memory flat) and return results in submission order, so the output never depends on which
worker finished first. Exceptions raised in a worker are re-raised in the consumer as the same
type, with the worker's traceback (threads: the original traceback; processes: attached as the
``__cause__``) and the notes the stage added (which row). A worker process that dies is reported
as :class:`WorkerError` instead of being waited on.

Process workers are forked (the stage's function, lambdas included, is inherited, not pickled);
inputs and outputs cross through :mod:`recordio.dataset.shm` (results through reused slot files).
"""

import collections
import concurrent.futures as cf
import itertools
import multiprocessing
import os
import pickle
import sys
import warnings

from recordio import config
from recordio.dataset import shm
from recordio.errors import WorkerError

__all__ = ["ProcessRunner", "SerialRunner", "ThreadRunner", "cpu_count", "effective_workers", "make_runner"]

_TOKENS = itertools.count()
_WORKER_FN = None


class SerialRunner:
    """Runs chunks in the calling thread (one worker)."""

    def __init__(self, fn):
        self.fn = fn

    def imap(self, chunks):
        for chunk in chunks:
            yield self.fn(chunk)

    def close(self):
        pass


class _PooledRunner:
    def __init__(self, workers, window):
        self.workers = workers
        self.window = max(window, workers)
        self.pool = None

    def imap(self, chunks):
        pending = collections.deque()
        try:
            for chunk in chunks:
                pending.append(self._submit(chunk))
                if len(pending) >= self.window:
                    yield self._result(pending.popleft())
            while pending:
                yield self._result(pending.popleft())
        finally:
            for future in pending:
                future.cancel()

    def _result(self, future):
        return future.result()


class ThreadRunner(_PooledRunner):
    def __init__(self, fn, workers, window):
        super().__init__(workers, window)
        self.fn = fn

    def _submit(self, chunk):
        if self.pool is None:
            self.pool = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="recordio-map")
        return self.pool.submit(self.fn, chunk)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _init_worker(fn):
    global _WORKER_FN
    _WORKER_FN = fn


def _run_task(path_in, slot):
    try:
        result = _WORKER_FN(shm.load(path_in))
    except Exception as e:
        _check_picklable(e)
        raise
    return shm.dump_slot(result, slot)


def _check_picklable(error):
    """An exception that cannot cross back to the consumer is replaced by a WorkerError saying what it was."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any failure to round-trip
        notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", []))
        raise WorkerError(f"{type(error).__name__}: {error}{notes}\n(the original exception cannot be "
                          f"pickled, so it cannot leave the worker process)") from None


def _cuda_initialized():
    """Whether this process already uses CUDA (a forked child could not): then workers come from a
    fork server (the map's function must then be picklable)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_initialized()


class ProcessRunner(_PooledRunner):
    """Chunks run in forked worker processes; data crosses through shared-memory files."""

    def __init__(self, fn, workers, window, name="map"):
        super().__init__(workers, window)
        self.fn = fn
        self.name = name
        self.prefix = shm.prefix_for(next(_TOKENS))
        self.count = itertools.count()
        self.slots = shm.Slots(self.prefix)      # results come back through reused files
        self._slot_of: dict = {}

    def _submit(self, chunk):
        if self.pool is None:
            method = start_method()
            self.pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method),
                                               initializer=_init_worker, initargs=(self.fn,))
        n = next(self.count)
        path_in = shm.dump(chunk, f"{self.prefix}{n}-in")
        slot = self.slots.take()
        try:
            future = self.pool.submit(_run_task, path_in, slot)
        except cf.process.BrokenProcessPool as e:      # a worker died before this chunk was handed out
            raise self._died(e) from e
        self._slot_of[future] = slot
        return future

    def _result(self, future):
        slot = self._slot_of.pop(future)
        try:
            kind, path = future.result()
        except cf.process.BrokenProcessPool as e:
            raise self._died(e) from e
        except BaseException:
            self.slots.give(slot)
            raise
        return self.slots.load(kind, path, slot)

    def _died(self, error):
        codes = [p.exitcode for p in (self.pool._processes or {}).values()] if self.pool else []
        return WorkerError(f"a worker process of {self.name} died (exit codes {codes}); its rows are lost, "
                           f"so the iteration stops")

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        self.slots.close()
        shm.sweep(self.prefix)


def start_method():
    """How worker processes start: ``config.set_multiprocessing_start_method``'s ``"spawn"``, or for
    ``"fork"`` (the default) fork, except where fork cannot serve: a fork server where this process
    already uses CUDA (a forked child could not), spawn off Linux."""
    if config.get_multiprocessing_start_method() == "spawn" or not sys.platform.startswith("linux"):
        return "spawn"
    return "forkserver" if _cuda_initialized() else "fork"


def make_runner(fn, workers, processes, window, name="map"):
    """The runner for a stage with ``workers`` workers (processes if ``processes``).

    Inside a daemonic process (a DataLoader worker), which may not have children, process workers
    become threads.
    """
    if processes and not multiprocessing.current_process().daemon:
        return ProcessRunner(fn, workers, window, name)
    if workers <= 1:
        return SerialRunner(fn)
    return ThreadRunner(fn, workers, window)


def cpu_count():
    """The CPUs this process may run on (its affinity mask: a container's or ``taskset``'s limit)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def effective_workers(requested, asked, what="map"):
    """The workers a stage runs: ``requested``, at most one per CPU (:func:`cpu_count`).

    More workers than CPUs cannot run at once; they only take turns (threads: at the GIL, each turn a
    wake-up and a wait; processes: memory and copies), so a stage runs faster with one per CPU.
    MindSpore refuses ``num_parallel_workers`` above ``multiprocessing.cpu_count()``
    (``ValueError``); recordio runs a script written for a larger machine with what this one has,
    and says so once (``asked``: the number came from the stage's own argument, not from
    ``config.set_num_parallel_workers``, whose value is capped without a word). Values and their order
    do not depend on the number of workers.
    """
    cores = cpu_count()
    if requested <= cores:
        return requested
    if asked:
        warnings.warn(f"{what}: num_parallel_workers={requested} but this process may run on {cores} CPU(s): "
                      f"{cores} worker(s) run (more would only take turns; MindSpore refuses more workers than "
                      f"CPUs)", UserWarning, stacklevel=2)
    return cores
