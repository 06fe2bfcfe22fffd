"""``verify(path)``: check every shard of a dataset and report every problem found.

Per shard: the header parses and agrees with the first shard's; the header padding is
zero; pages are consistent; the ``.db`` opens, names its data file, and lists exactly
the rows the page table implies, at the same offsets, with index values equal to the
data file's; every row decodes; and, when the ``.db`` holds recordio's checksum table,
every byte of the data file matches its checksum. A dataset written by MindSpore has
no checksums: it is verified structurally and the report says so.
:func:`add_checksums` adds the checksum table to such a dataset.
"""

from __future__ import annotations

import math
import mmap
import os
import sqlite3

from recordio.mindrecord import checksums as sums
from recordio.mindrecord import format as fmt
from recordio.mindrecord import index, index_write
from recordio.mindrecord.codec import unpack_raw
from recordio.errors import FormatError, RecordIOError
from recordio.mindrecord import encryption
from recordio.mindrecord.journals import check_journals
from recordio.mindrecord.read.fileset import (Shard, _check_locations, _check_pages, _check_same_metadata,
                                        _locate_from_pages)

from recordio.mindrecord.storage import is_url, local_files

__all__ = ["Report", "add_checksums", "verify"]


class Report:
    """The outcome of :func:`verify`: ``ok``, ``problems`` [(file, text)], and facts per shard."""

    def __init__(self, path):
        self.path = path
        self.files = []
        self.rows = 0
        self.problems = []
        self.without_checksums = []
        self.checked_slots = 0

    @property
    def ok(self):
        return not self.problems

    def problem(self, file, text):
        self.problems.append((file, text.removeprefix(f"{file}: ")))      # the file is named once

    def __str__(self):
        lines = [f"{self.path}: {len(self.files)} shard(s), {self.rows} rows, "
                 f"{self.checked_slots} checksummed regions checked"]
        lines += [f"  no checksums (verified structurally only): {f}" for f in self.without_checksums]
        lines += [f"  PROBLEM {f}: {text}" for f, text in self.problems]
        lines.append("OK" if self.ok else f"{len(self.problems)} problem(s)")
        return "\n".join(lines)


def verify(path: str | os.PathLike | list, *, storage_options: dict | None = None,
           cache_dir: str | None = None) -> Report:
    """Verify the dataset ``path`` (any shard, or a list of data files); returns a :class:`Report`.
    A dataset at a URL is fetched whole into the cache (every byte is checked) and the report names
    its URLs."""
    if not is_url(path):
        return _verify_local(path)
    with local_files(path, storage_options, cache_dir, whole=True) as (local, remote):
        report = _verify_local(local)
    report.path = path
    report.files = [remote.rename(f) for f in report.files]
    report.without_checksums = [remote.rename(f) for f in report.without_checksums]
    report.problems = [(remote.rename(f), remote.rename(t)) for f, t in report.problems]
    return report


def _verify_local(path):
    report = Report(os.fspath(path) if isinstance(path, (str, os.PathLike)) else list(path))
    shards = []
    try:
        check_journals(path)
        paths = fmt.dataset_paths(path)
    except (RecordIOError, OSError) as exc:
        report.files.append(report.path)
        report.problem(report.path, encryption.said(report.path, exc))
        return report
    for p in paths:
        report.files.append(p)
        try:
            shards.append(Shard(fmt.FileHeader.read(p)))
        except (RecordIOError, OSError) as exc:
            report.problem(p, encryption.said(p, exc))
    if not shards:
        return report
    try:
        schema = _check_same_metadata(shards)
    except FormatError as exc:
        report.problem(shards[0].path, str(exc))
        return report
    for shard in shards:
        _verify_shard(shard, schema, report)
    return report


def _verify_shard(shard, schema, report):
    try:
        _check_padding(shard)
        _check_pages(shard)
        _locate_from_pages(shard)
        _check_locations(shard)
    except (RecordIOError, OSError) as exc:
        report.problem(shard.path, str(exc))
        return
    report.rows += shard.count
    values = _decode_rows(shard, schema, report)
    _check_index(shard, schema, values, report)
    _check_checksums(shard, report)


def _check_padding(shard):
    start, end = len(shard.header_bytes), min(shard.header["header_size"], shard.size)
    fd = os.open(shard.path, os.O_RDONLY)
    try:
        pos = start
        while pos < end:
            chunk = os.pread(fd, min(1 << 20, end - pos), pos)
            if chunk.count(0) != len(chunk):
                bad = pos + next(i for i, b in enumerate(chunk) if b)
                raise FormatError(f"{shard.path}: byte {bad} of the header padding is not zero")
            pos += len(chunk)
    finally:
        os.close(fd)


def _decode_rows(shard, schema, report):
    """Decode every row; return the raw records (for the index check)."""
    decode, _, _ = schema.decoder()
    records = []
    if not shard.count:
        return records
    with open(shard.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for local in range(shard.count):
            records.append(_decode_row(shard, data, local, decode, report))
    return records


def _decode_row(shard, data, local, decode, report):
    where = f"row {local}"
    try:
        record = unpack_raw(data[slice(*shard.raw[local])])
        decode(record, data[slice(*shard.blob[local])], where)
        return record
    except FormatError as exc:
        report.problem(shard.path, str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
        return None


def _expected_index_rows(shard):
    """INDEXES rows (8 location columns) implied by the page table, keyed by ROW_ID."""
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    blob_page = {p.type_id: p.page_id for p in shard.pages if p.kind == fmt.BLOB}
    page_group = {p.page_id: p.type_id for p in shard.pages if p.kind == fmt.BLOB}
    rows = {}
    for r in range(shard.count):
        raw_page = shard.page_of(int(shard.raw[r, 0]))
        bpage = shard.page_of(int(shard.blob[r, 0]))
        raw_base, blob_base = hs + raw_page * ps, hs + bpage * ps
        rows[r] = (r, raw_page, int(shard.raw[r, 0]) - 8 - raw_base, int(shard.raw[r, 1]) - raw_base,
                   page_group[bpage], blob_page[page_group[bpage]], int(shard.blob[r, 0]) - 8 - blob_base,
                   int(shard.blob[r, 1]) - blob_base)
    return rows


def _check_index(shard, schema, records, report):
    db = index.db_path(shard.path)
    try:
        conn = index.connect_ro(db)
    except RecordIOError as exc:
        report.problem(db, str(exc))
        return
    try:
        _check_index_content(conn, db, shard, schema, records, report)
    except (RecordIOError, sqlite3.Error) as exc:
        report.problem(db, str(exc))
    finally:
        conn.close()


def _check_index_content(conn, db, shard, schema, records, report):
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    if integrity != "ok":
        report.problem(db, f"SQLite integrity check: {integrity}")
    name = index.read_shard_name(conn, db)
    if name != os.path.basename(os.path.realpath(shard.path)):
        report.problem(db, f"SHARD_NAME is {name!r}, not the data file's name")
    fields = [f["index_field"] for f in shard.header["index_fields"] or []]
    columns = ", ".join(list(index.INDEX_COLUMNS) + [index.column_name(f) for f in fields])
    found = conn.execute(f"SELECT {columns} FROM INDEXES ORDER BY ROW_ID").fetchall()
    expected = _expected_index_rows(shard)
    if len(found) != shard.count:
        report.problem(db, f"INDEXES lists {len(found)} rows, the data file has {shard.count}")
    for row in found:
        r = row[0]
        if expected.get(r) != tuple(row[:8]):
            report.problem(db, f"INDEXES row {r} gives locations {row[:8]}, the page table {expected.get(r)}")
        elif records[r] is not None:
            for field, value in zip(fields, row[8:]):
                if not _index_value_matches(schema.fields[field], records[r].get(field), value):
                    report.problem(db, f"INDEXES row {r}: {field} is {value!r}, the data file holds "
                                       f"{records[r].get(field)!r}")
    _check_meta(conn, db, shard, report)


def _index_value_matches(field, data_value, db_value):
    if field.type == "string":
        return db_value in (data_value, data_value.split("\x00")[0])      # MindSpore cuts at NUL
    if isinstance(data_value, float) and math.isnan(data_value):
        return db_value is None
    if field.type in ("float32", "float64"):
        return db_value is not None and float(db_value) == float(data_value)
    return db_value == data_value


def _check_meta(conn, db, shard, report):
    meta = index.read_meta(conn, db)
    if "header_xxh3" in meta and meta["header_xxh3"] != sums.digest_bytes(shard.header_bytes):
        report.problem(db, "the data file's header differs from the one this index was written for")


def _check_checksums(shard, report):
    db = index.db_path(shard.path)
    try:
        conn = index.connect_ro(db)
    except (RecordIOError, sqlite3.Error):
        return                                      # reported by the index check
    try:
        table = index.read_checksums(conn, db)
    except (RecordIOError, sqlite3.Error) as exc:
        report.problem(db, str(exc))
        return
    finally:
        conn.close()
    if table is None:
        report.without_checksums.append(shard.path)
        return
    fd = os.open(shard.path, os.O_RDONLY)
    try:
        _compare_checksums(fd, shard, table, report)
    finally:
        os.close(fd)


def _compare_checksums(fd, shard, table, report):
    hs, ps = shard.header["header_size"], shard.header["page_size"]
    slots = [sums.HEADER_SLOT] + [p.page_id for p in shard.pages]
    for slot in sorted(set(table) - set(slots)):
        report.problem(shard.path, f"checksum table lists slot {slot}, which the file does not have")
    for slot in slots:
        what = "header" if slot == sums.HEADER_SLOT else f"page {slot}"
        if slot not in table:
            report.problem(shard.path, f"{what} has no checksum")
            continue
        algorithm, nbytes, row_start, row_end, digest = table[slot]
        start, end = sums.slot_range(hs, ps, slot, shard.size)
        block = sums.block_size(algorithm)
        if block == 0:
            report.problem(shard.path, f"{what}: unknown checksum algorithm {algorithm!r}")
        elif start + nbytes > end or sums.digest_range(fd, start, start + nbytes, block) != digest:
            report.problem(shard.path, f"{what} (rows {row_start}..{row_end - 1}) does not match its checksum"
                                       f"{_first_bad_block(fd, start, nbytes, block, digest)}")
        elif sums.scan_extent(fd, start + nbytes, end):
            report.problem(shard.path, f"{what}: bytes after its checksummed {nbytes} bytes are not zero "
                                       f"(rows {row_start}..{row_end - 1})")
        report.checked_slots += 1


def _first_bad_block(fd, start, nbytes, block, digest):
    """Where a block-digest slot first differs (``" at bytes a..b"``), or ``""``."""
    if not block:
        return ""
    for b in range(sums.block_count(nbytes, block)):
        lo, hi = start + b * block, start + min((b + 1) * block, nbytes)
        if sums.digest_range(fd, lo, hi) != digest[b * sums.DIGEST_CHARS:(b + 1) * sums.DIGEST_CHARS]:
            return f" at bytes {lo}..{hi - 1}"
    return ""


def add_checksums(path: str | os.PathLike | list) -> list[str]:
    """Add (or refresh) the checksum table of every shard's ``.db``; returns the ``.db`` paths.

    Only for datasets that verify structurally: checksums of damaged data would bless it.
    """
    report = verify(path)
    if not report.ok:
        raise FormatError(f"{report.path}: not adding checksums to a dataset with problems:\n{report}")
    updated = []
    for p in report.files:
        fh = fmt.FileHeader.read(p)
        header = fh.header
        fd = os.open(p, os.O_RDONLY)
        try:
            rows = sums.compute(fd, header["header_size"], header["page_size"], fh.pages, len(fh.raw))
        finally:
            os.close(fd)
        db = index.db_path(p)
        index_write.write_checksums(db, sums.ALGORITHM, rows)
        updated.append(db)
    return updated
