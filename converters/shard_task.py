"""One shard task: what a worker of the process pool, Ray or Spark runs to write one shard.

:func:`write_shard` reads the shard's units from the source, hands the rows to a
:class:`recordio.ShardWriter` in chunks and records the inputs it left out (``skip_bad``); the
engine (:mod:`recordio.converters.engine`) plans the shards and publishes the dataset.
"""

import dataclasses

import recordio
from recordio.converters import state
from recordio.errors import FormatError

__all__ = ["CHUNK_BYTES", "Job", "write_shard"]

CHUNK_BYTES = 64 << 20    # rows are handed to the writer at least every 64 MiB of bytes/strings


@dataclasses.dataclass(frozen=True)
class Job:
    """What every shard task needs (picklable): the source, the target and the policy for bad input."""

    source: object
    destination: str
    shard_num: int
    skip_bad: bool = False
    chunk_rows: int = 256


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
