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
from recordio.errors import FormatError

__all__ = ["Job", "PartialRows", "Summary", "convert", "input_files", "plan_shards", "write_shard"]

ENGINES = ("process", "ray", "spark")
CHUNK_BYTES = 64 << 20    # rows are handed to the writer at least every 64 MiB of bytes/strings


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


@dataclasses.dataclass(frozen=True)
class Job:
    """What every shard task needs (picklable): the source, the target and the policy for bad input."""

    source: object
    destination: str
    shard_num: int
    skip_bad: bool = False
    chunk_rows: int = 256


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


def write_shard(job, shard_id, units, report=None):
    """Write shard ``shard_id`` from ``units``; returns ``(shard_id, rows, skipped)``."""
    source, skipped, chunk = job.source, [], []
    with _open_part(job, shard_id) as writer:
        size = 0
        for unit, rows in _read_all(source, units):
            rows = _rows_or_skip(job, unit, rows, skipped)
            chunk.extend(rows)
            size += sum(len(v) for row in rows for v in row.values() if isinstance(v, (bytes, str)))
            if len(chunk) >= job.chunk_rows or size >= CHUNK_BYTES:
                _flush(writer, chunk, report)
                size = 0
        _flush(writer, chunk, report)
        state.save_skipped(job.destination, shard_id, skipped)
    return shard_id, writer.rows, skipped


def _open_part(job, shard_id):
    """The shard's writer, its staging files already open (opened one task at a time: state.opening)."""
    source = job.source
    with state.opening(job.destination):
        writer = recordio.ShardWriter(job.destination, shard_id, job.shard_num, source.schema, source.desc,
                                      source.index_fields or None)
        writer.open()
    return writer


def _flush(writer, chunk, report):
    if chunk:
        writer.write_raw_data(chunk)
        if report is not None:
            report(len(chunk))
        chunk.clear()


def _read_all(source, units):
    """``(unit, rows or the exception reading it raised)`` for each unit, in order."""
    for unit in units:
        try:
            yield unit, source.read(unit)
        except Exception as exc:  # any failure to read or decode an input is reported with its path
            yield unit, exc


def _rows_or_skip(job, unit, rows, skipped):
    """The unit's rows; for a failed read, raise with the input's path, or skip it (``skip_bad``)."""
    if not isinstance(rows, BaseException):
        skipped.extend(getattr(rows, "skipped", ()))
        return rows
    where, reason = job.source.where(unit), f"{type(rows).__name__}: {rows}"
    if not job.skip_bad:
        raise FormatError(f"{where}: unreadable source: {reason} (skip_bad=True / --skip-bad leaves "
                          f"such inputs out)") from rows
    skipped.append((where, reason))
    return []


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
