"""The conversion engine shared by every converter: plan shards, write them anywhere, publish once.

A *source* (ImageFolder, CIFAR, MNIST, Parquet) is a picklable object with

* ``kind`` (a name), ``schema``, ``desc`` and ``index_fields`` of the dataset it makes,
* ``units()`` – the list of independent pieces of input (a file, a range of a batch file,
  a Parquet row group), in dataset order,
* ``unit_rows(unit)`` – how many rows a unit gives (for the progress bar),
* ``where(unit)`` – how a unit is named in messages (its path, and rows when it is a part),
* ``read(unit)`` – the unit's rows as dicts; raises when the input is unreadable (a source
  that skips bad parts of a unit itself returns them listed in a :class:`PartialRows`),
* ``facts()`` – JSON-able options that, with the units, identify the conversion (for resuming).

Units are split into ``shard_num`` contiguous runs, so the dataset's row order is the
source's order whatever the shard count. Each shard is written by one task through
:class:`recordio.ShardWriter`, on a process pool, on Ray or on Spark; :func:`recordio.finalize_shards`
then publishes the dataset atomically. A rerun after a crash writes only the shards that
are not complete.
"""

import dataclasses
import os
import time

import recordio
from recordio.converters import state
from recordio.converters.progress import Progress
from recordio.converters.shard_task import Job, write_shard

__all__ = ["Job", "PartialRows", "Summary", "convert", "input_files", "plan_shards", "write_shard"]

ENGINES = ("process", "ray", "spark")


def input_files(paths, kind, keep=None):
    """The absolute paths of the files ``paths`` names (files, or folders whose non-hidden files are taken,
    sorted; ``keep(name)`` filters a folder's files); FileNotFoundError naming ``kind`` when none."""
    files = []
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        path = os.path.abspath(os.fspath(path))
        if os.path.isdir(path):
            files += sorted(os.path.join(path, n) for n in os.listdir(path)
                            if not n.startswith(".") and os.path.isfile(os.path.join(path, n))
                            and (keep is None or keep(n)))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such {kind} file or folder")
    if not files:
        raise FileNotFoundError(f"{paths}: no {kind} files")
    return files


class PartialRows(list):
    """A unit's rows, with ``skipped``: ``[(where, reason)]`` of the parts a source left out itself."""

    def __init__(self, rows=(), skipped=()):
        super().__init__(rows)
        self.skipped = list(skipped)


@dataclasses.dataclass
class Summary:
    """The outcome of a conversion."""

    destination: str
    files: list
    rows: int
    shards: int
    bytes: int             # on disk (allocated data + index)
    seconds: float
    skipped: list          # [(where, reason)] of the unreadable inputs left out (skip_bad=True)
    resumed_shards: int    # shards found complete from an earlier, interrupted run
    desc: str

    @property
    def rows_per_second(self):
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self):
        out = dataclasses.asdict(self)
        out["skipped"] = [list(s) for s in self.skipped]
        out["rows_per_second"] = round(self.rows_per_second, 1)
        return out


def plan_shards(units, shard_num):
    """``units`` split into ``shard_num`` contiguous runs; the first ``len % shard_num`` get one more."""
    base, extra = divmod(len(units), shard_num)
    runs, start = [], 0
    for i in range(shard_num):
        stop = start + base + (i < extra)
        runs.append(units[start:stop])
        start = stop
    return runs


def default_workers():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def convert(source, destination, *, shard_num=None, workers=None, engine="process", skip_bad=False,
            overwrite=False, quiet=False, storage_options=None):
    """Convert ``source`` into the dataset ``destination`` (a path, or a URL: written in a local
    staging folder, then uploaded as :class:`recordio.FileWriter` uploads); returns a :class:`Summary`."""
    workers = _positive("workers", default_workers() if workers is None else workers)
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    destination = os.fspath(destination)
    units = source.units()
    if not units:
        raise ValueError(f"{source.kind}: the source has no input to convert")
    shard_num = min(_positive("shard_num", workers if shard_num is None else shard_num), len(units))
    target = recordio.write_target(destination, shard_num, overwrite=overwrite, storage_options=storage_options)
    summary = _convert_local(source, units, target.path, shard_num, workers, engine, skip_bad,
                             overwrite or target.remote, quiet)
    target.publish()
    return dataclasses.replace(summary, destination=destination, files=target.files())


def _convert_local(source, units, destination, shard_num, workers, engine, skip_bad, overwrite, quiet):
    recordio.FileWriter(destination, shard_num=shard_num, overwrite=overwrite)   # checks name and target
    job = Job(source, destination, shard_num, skip_bad, getattr(source, "chunk_rows", 256))
    started = time.perf_counter()
    plan = plan_shards(units, shard_num)
    state.prepare(destination, state.fingerprint([source.kind, source.facts(), shard_num, units]))
    todo = recordio.missing_shards(destination, shard_num)
    total = sum(source.unit_rows(u) for u in units)
    done = total - sum(source.unit_rows(u) for i in todo for u in plan[i])
    with Progress(total, initial=done, quiet=quiet, desc=source.kind) as progress:
        _run(engine, job, {i: plan[i] for i in todo}, workers, progress)
    skipped = [s for i in range(shard_num) for s in state.load_skipped(destination, i)]
    recordio.finalize_shards(destination, shard_num, overwrite=overwrite)
    state.remove(destination)
    return _summary(destination, shard_num, time.perf_counter() - started, skipped,
                    shard_num - len(todo), source.desc)


def _run(engine, job, tasks, workers, progress):
    if not tasks:
        return
    if engine == "ray":
        from recordio.converters.ray_engine import run_ray
        run_ray(job, tasks, progress)
    elif engine == "spark":
        from recordio.converters.spark_engine import run_spark
        run_spark(job, tasks, progress)
    else:
        from recordio.converters.pool import run_pool
        run_pool(job, tasks, workers, progress)


def _summary(destination, shard_num, seconds, skipped, resumed, desc):
    info = recordio.describe(_first_file(destination, shard_num))
    files = [s["file"] for s in info["shards"]]
    size = sum(s["allocated_bytes"] + os.path.getsize(s["file"] + ".db") for s in info["shards"])
    return Summary(destination, files, info["rows"], shard_num, size, seconds, skipped, resumed, desc)


def _first_file(destination, shard_num):
    if shard_num == 1:
        return destination
    return destination + "0".rjust(len(str(shard_num - 1)), "0")


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value
