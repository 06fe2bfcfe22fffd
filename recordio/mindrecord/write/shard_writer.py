"""Per-shard writing for parallel conversion: shard i of N written anywhere, then one finalize.

Each :class:`ShardWriter` writes one complete *part* (a one-file dataset and its
``.db``) into the parts folder ``.<name>.rio-parts/`` beside the target, then a small
JSON record that marks the part complete. Any process or machine that sees the folder
can write any shard; writing a shard again replaces its part atomically, so a retried
task never leaves duplicates. :func:`finalize_shards` checks that all N parts are
complete and agree, gives every header the dataset's shard addresses and total
``compression_size``, names every ``.db`` after its data file, and publishes the
dataset with the same crash-safe protocol as :class:`FileWriter` (``commit.py``).

::

    # in N workers (processes, machines, Ray tasks)
    with ShardWriter("out/train.mindrecord", shard_id=i, shard_num=N, schema=schema) as w:
        w.write_raw_data(rows_of_shard_i)
    # once, anywhere
    finalize_shards("out/train.mindrecord", shard_num=N)
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import xxhash

from recordio.mindrecord import checksums as sums
from recordio.mindrecord.write import columns as columnar
from recordio.mindrecord import format as fmt
from recordio.mindrecord import index, index_write
from recordio.mindrecord.write.locks import DatasetLock
from recordio.mindrecord.write.commit import CommitOnExit, Staging, clean_stale, fsync_dir
from recordio.errors import DatasetExistsError, FormatError
from recordio.mindrecord.write.writer import FileWriter

__all__ = ["ShardWriter", "finalize_shards", "missing_shards", "parts_dir"]


def parts_dir(file_name):
    file_name = os.path.abspath(os.fspath(file_name))
    return os.path.join(os.path.dirname(file_name), f".{os.path.basename(file_name)}.rio-parts")


def _part_name(shard_id):
    return f"shard-{shard_id:05d}.mindrecord"


def _record_path(folder, shard_id):
    return os.path.join(folder, f"shard-{shard_id:05d}.json")


class ShardWriter(CommitOnExit):
    """Write shard ``shard_id`` of an ``shard_num``-shard dataset (a :class:`FileWriter` for one part)."""

    def __init__(self, file_name: str | os.PathLike, shard_id: int, shard_num: int, schema: dict,
                 desc: str | None = None, index_fields: list[str] | None = None,
                 header_size: int = fmt.DEFAULT_HEADER_SIZE, page_size: int = fmt.DEFAULT_PAGE_SIZE) -> None:
        fmt.shard_file_names(os.fspath(file_name), shard_num)      # validates name and count
        if isinstance(shard_id, bool) or not isinstance(shard_id, int) or not 0 <= shard_id < shard_num:
            raise ValueError(f"shard_id must be an int in [0, {shard_num}), got {shard_id!r}")
        self.folder = parts_dir(file_name)
        os.makedirs(self.folder, exist_ok=True)
        self.shard_id, self.shard_num = shard_id, shard_num
        self._writer = FileWriter(os.path.join(self.folder, _part_name(shard_id)), overwrite=True)
        self._writer.set_header_size(header_size)
        self._writer.set_page_size(page_size)
        self._writer.add_schema(schema, desc)
        if index_fields:
            self._writer.add_index(list(index_fields))
        self.rows = 0

    def open(self) -> None:
        """Create the part's staging files now rather than at the first write (to open parts one at a time)."""
        self._writer._start()

    def write_raw_data(self, raw_data: list[dict]) -> None:
        """Validate and write rows (all-or-nothing per call, as :meth:`FileWriter.write_raw_data`); an
        empty list is a shard with no rows (it only opens the part)."""
        if isinstance(raw_data, list) and not raw_data:
            self.open()
            return
        self._writer.write_raw_data(raw_data)
        self.rows += len(raw_data)

    def write_columns(self, columns: dict) -> None:
        """Validate and write rows given as columns (as :meth:`FileWriter.write_columns`)."""
        n = columnar.column_length(columns)
        self._writer.write_columns(columns)
        self.rows += n

    def commit(self) -> None:
        """Publish the part, then mark it complete."""
        record = _record_path(self.folder, self.shard_id)
        if os.path.exists(record):
            os.unlink(record)
        self._writer.commit()
        facts = {"shard_id": self.shard_id, "shard_num": self.shard_num, "rows": self.rows,
                 "compression_size": self._writer._compression_size}
        tmp = record + ".tmp"
        with open(tmp, "w") as f:
            json.dump(facts, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, record)
        fsync_dir(self.folder)

    def abort(self) -> None:
        """Drop this part; the shard stays missing."""
        self._writer.abort()



def _load_record(folder, shard_id, shard_num):
    path = _record_path(folder, shard_id)
    try:
        with open(path) as f:
            facts = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    if facts.get("shard_num") != shard_num or facts.get("shard_id") != shard_id:
        raise FormatError(f"{path}: part was written for shard {facts.get('shard_id')} of "
                          f"{facts.get('shard_num')}, not {shard_id} of {shard_num}")
    part = os.path.join(folder, _part_name(shard_id))
    return facts if os.path.exists(part) and os.path.exists(part + ".db") else None


def missing_shards(file_name: str | os.PathLike, shard_num: int) -> list[int]:
    """Shard ids whose part is not complete yet (a rerun writes only these)."""
    folder = parts_dir(file_name)
    return [i for i in range(shard_num) if _load_record(folder, i, shard_num) is None]


def finalize_shards(file_name: str | os.PathLike, shard_num: int, overwrite: bool = False) -> None:
    """Turn N complete parts into the dataset ``file_name`` and publish it atomically."""
    file_name = os.path.abspath(os.fspath(file_name))
    folder = parts_dir(file_name)
    missing = missing_shards(file_name, shard_num)
    if missing:
        raise FormatError(f"{folder}: shard(s) {missing[:10]}{'...' if len(missing) > 10 else ''} of "
                          f"{shard_num} are not written yet")
    targets = [os.path.abspath(t) for t in fmt.shard_file_names(file_name, shard_num)]
    lock = DatasetLock(targets[0])            # no other writer publishes this dataset meanwhile
    try:
        _publish_parts(folder, targets, shard_num, overwrite)
    finally:
        lock.release()
    shutil.rmtree(folder, ignore_errors=True)


def _publish_parts(folder, targets, shard_num, overwrite):
    if not overwrite:
        existing = [p for t in targets for p in (t, t + ".db") if os.path.lexists(p)]
        if existing:
            raise DatasetExistsError(f"Invalid file, mindrecord files already exist. Please check file path: "
                                     f"{existing[0]}; pass overwrite=True to replace it")
    clean_stale(os.path.dirname(targets[0]))
    records = [_load_record(folder, i, shard_num) for i in range(shard_num)]
    compression = max(0, sum(r["compression_size"] for r in records))
    staging = Staging(targets)
    moved: list[tuple[str, str]] = []
    try:
        _stage_parts(folder, staging, targets, compression, moved)
        staging.publish()
    except BaseException:
        for src, dst in reversed(moved):      # give the parts back so that a rerun can finalize
            if os.path.exists(dst):
                os.replace(dst, src)
        staging.abort()
        raise


def _stage_parts(folder, staging, targets, compression, moved):
    """Move each part into its staging names, with the dataset's header and index name.

    Parts are moved, not copied (no second write of the data, holes stay holes); a
    crash here loses at most the moved parts, which a rerun writes again.
    """
    names = [os.path.basename(t) for t in targets]
    first = None
    for i, (data, db) in enumerate(zip(staging.data_paths(), staging.db_paths())):
        part = os.path.join(folder, _part_name(i))
        fh = fmt.FileHeader.read(part)
        header, old = fh.header, fh.raw
        meta = _metadata(header)
        if first is None:
            first = meta
        elif meta != first:
            raise FormatError(f"{part}: schema, sizes or index fields differ from those of shard 0")
        schema = header["schema"][0]
        for page in header["page"]:
            page.shard_id = i          # MindSpore files pages under this id when it opens one shard
        blob = fmt.encode_header(header["header_size"], header["page_size"],
                                 [f["index_field"] for f in header["index_fields"] or []], header["page"],
                                 compression, schema["schema"], schema["blob_fields"], schema["desc"],
                                 names, i)
        for src, dst in ((part, data), (part + ".db", db)):
            os.replace(src, dst)
            moved.append((src, dst))
        with open(data, "r+b") as f:
            f.write(blob + b"\x00" * max(0, len(old) - len(blob)))
            f.flush()
            header_sum = sums.compute(f.fileno(), header["header_size"], header["page_size"], header["page"],
                                      len(blob), extents={sums.HEADER_SLOT: len(blob)}, only={sums.HEADER_SLOT})
        _rename_index(db, names[i], xxhash.xxh3_64_hexdigest(blob), header_sum)


def _metadata(header):
    schema = header["schema"][0]
    return (header["header_size"], header["page_size"], header["index_fields"], schema["schema"],
            schema["blob_fields"], schema["desc"])


def _rename_index(db, name, header_digest, header_checksum):
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("UPDATE SHARD_NAME SET NAME = ?", (name,))
        has_checksums = conn.execute("SELECT name FROM sqlite_master WHERE name = ?",
                                     (index.CHECKSUM_TABLE,)).fetchone()
    finally:
        conn.close()
    index_write.write_meta(db, {"header_xxh3": header_digest})
    if has_checksums:
        index_write.update_checksums(db, sums.ALGORITHM, header_checksum)
