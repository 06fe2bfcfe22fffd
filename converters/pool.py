"""Shard tasks on a local process pool (the default engine).

Each worker writes whole shards through :func:`shard_task.write_shard` and reports the rows
it wrote on a queue, which the parent drains into the progress bar. The first failing
shard stops the conversion: shards not started are cancelled, running ones finish (their
parts stay, so a rerun resumes), and the failure is raised in the caller.
"""

import concurrent.futures as cf
import multiprocessing
import queue as queue_module

from recordio.converters.shard_task import write_shard
from recordio.errors import WorkerError

__all__ = ["run_pool"]

_reports = None   # the worker's end of the progress queue (set by the pool initializer)


def _init_worker(reports):
    global _reports
    _reports = reports


def _report(rows):
    _reports.put(rows)


def _task(job, shard_id, units):
    return write_shard(job, shard_id, units, _report)


def run_pool(job, tasks, workers, progress):
    """Write the shards ``tasks`` ({shard_id: units}) with up to ``workers`` processes."""
    if workers == 1 or len(tasks) == 1:
        return [write_shard(job, i, units, progress.update) for i, units in tasks.items()]
    ctx = multiprocessing.get_context()     # the platform's default, as torch's DataLoader uses
    reports = ctx.Queue()
    results = []
    with cf.ProcessPoolExecutor(min(workers, len(tasks)), mp_context=ctx, initializer=_init_worker,
                                initargs=(reports,)) as pool:
        pending = {pool.submit(_task, job, i, units): i for i, units in tasks.items()}
        try:
            while pending:
                done, _ = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                _drain(reports, progress)
                for future in done:
                    shard = pending.pop(future)
                    results.append(_result(future, shard))
        except BaseException:
            for future in pending:
                future.cancel()
            raise
        finally:
            _drain(reports, progress)
    return results


def _result(future, shard):
    try:
        return future.result()
    except cf.process.BrokenProcessPool as exc:
        raise WorkerError(f"a conversion worker died while writing shard {shard} (killed or out of "
                          f"memory); rerun the conversion to resume from the complete shards") from exc


def _drain(reports, progress):
    """Move the workers' row counts into the progress bar (it only draws; failures end the drain)."""
    while True:
        try:
            rows = reports.get_nowait()
        except queue_module.Empty:
            return
        except Exception:  # a worker killed while its queue feeder was writing leaves a torn message
            return
        progress.update(rows)
