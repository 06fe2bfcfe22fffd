"""Block checksums: a digest per 1 MiB block of each page slot, so that a row's first touch hashes only the
blocks its bytes lie in; every changed byte is still caught by a row read and by verify, and files whose
table has one digest per slot (written before) are still checked."""

import os
import sqlite3

import numpy as np
import pytest

import recordio
from recordio import ChecksumError, FileReader, FileWriter
from recordio.mindrecord import checksums as sums
from recordio.mindrecord import index_write
from recordio.mindrecord.read import checks, location_sources

MiB = 1 << 20
ROWS = 240                 # ~20 KB blobs in 4 MiB pages: each blob page spans 4 blocks


def _write(path, rows=ROWS, seed=0):
    rng = np.random.default_rng(seed)
    with FileWriter(str(path)) as w:
        w.set_header_size(1 << 15)
        w.set_page_size(4 * MiB)
        w.add_schema({"id": {"type": "int64"}, "img": {"type": "bytes"}})
        w.write_raw_data([{"id": i, "img": rng.bytes(int(rng.integers(15_000, 25_000)))} for i in range(rows)])
    return str(path)


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x5A]))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))       # changed in place, later


def _table(path):
    conn = sqlite3.connect(path + ".db")
    try:
        return conn.execute("SELECT PAGE_ID, ALGORITHM, NBYTES, DIGEST FROM RECORDIO_CHECKSUMS").fetchall()
    finally:
        conn.close()


def _blob_ranges(path):
    """Every row's absolute blob range [start, end) (its length prefix excluded)."""
    with FileReader(path, verify=False) as reader:
        _, _, locs = reader.shard_set.bulk(np.arange(len(reader)))
    return locs[:, 2:4]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("blocks") / "b.mindrecord")


def test_the_table_holds_a_digest_per_block(written):
    table = _table(written)
    assert {alg for _, alg, _, _ in table} == {sums.ALGORITHM}
    fd = os.open(written, os.O_RDONLY)
    try:
        header = FileReader(written).header
        for page, _, nbytes, digest in table:
            assert len(digest) == sums.DIGEST_CHARS * sums.block_count(nbytes, MiB)
            start, _ = sums.slot_range(header["header_size"], header["page_size"], page, os.path.getsize(written))
            assert sums.digest_range(fd, start, start + nbytes, MiB) == digest       # what the writer hashed
    finally:
        os.close(fd)
    assert max(n for _, _, n, _ in table) > 3 * MiB                  # pages of several blocks


def test_a_first_row_hashes_only_its_blocks(written, monkeypatch):
    hashed = []
    real = checks._digest
    monkeypatch.setattr(checks, "_digest", lambda files, k, a, b, *more: hashed.append(b - a) or real(files, k, a, b,
                                                                                                    *more))
    monkeypatch.setattr(checks, "_CHECKED", {})                      # no reader of this process checked it
    with FileReader(written) as reader:
        reader[0]
        first = sum(hashed)
        assert len(hashed) == 3 and first <= 2 * MiB + reader.header["header_size"], hashed   # header, raw, blob
        list(reader)
    assert sum(hashed) >= os.path.getsize(written) - reader.header["header_size"] - 4 * MiB  # a pass: each byte


@pytest.mark.parametrize("block", [0, 1, 2, 3])
def test_a_changed_byte_in_any_block_is_caught_by_a_row_read_and_by_verify(tmp_path, block):
    path = _write(tmp_path / "b.mindrecord")
    header = FileReader(path).header
    hs, ps = header["header_size"], header["page_size"]
    blob_page = next(p for p in header["page"] if p.kind == "BLOB_DATA" and p.size > 3 * MiB)
    start = hs + blob_page.page_id * ps
    ranges = _blob_ranges(path)
    offset = start + block * MiB + 777
    row = int(np.flatnonzero((ranges[:, 0] <= offset) & (offset < ranges[:, 1]))[0])
    far = int(np.flatnonzero((ranges[:, 0] >= start) & (ranges[:, 1] <= start + ps)
                             & ((ranges[:, 1] < offset - MiB - 8) | (ranges[:, 0] > offset + MiB + 8)))[0])
    _flip(path, offset)
    with FileReader(path) as reader:
        reader[far]                                                   # another block of the same page: clean
        with pytest.raises(ChecksumError, match=rf"page {blob_page.page_id} \(rows \d+\.\.\d+\) does not match its "
                                                rf"checksum at bytes {start + block * MiB}\.\."):
            reader[row]
    with FileReader(path) as reader, pytest.raises(ChecksumError):
        reader.read_batch([far, row])
    report = recordio.verify(path)
    assert not report.ok
    assert any(f"page {blob_page.page_id}" in text and f"at bytes {start + block * MiB}.." in text
               for _, text in report.problems), report


def _rewrite_as_slot_digests(path):
    """The checksum table in the form files written before block digests have: one digest per slot."""
    rows = []
    fd = os.open(path, os.O_RDONLY)
    try:
        header = FileReader(path, verify=False).header
        conn = sqlite3.connect(path + ".db")
        old = conn.execute("SELECT PAGE_ID, NBYTES, ROW_START, ROW_END FROM RECORDIO_CHECKSUMS").fetchall()
        conn.close()
        for page, nbytes, row_start, row_end in old:
            start, _ = sums.slot_range(header["header_size"], header["page_size"], page, os.path.getsize(path))
            rows.append((page, nbytes, row_start, row_end, sums.digest_range(fd, start, start + nbytes)))
    finally:
        os.close(fd)
    index_write.write_checksums(path + ".db", sums.SLOT_ALGORITHM, rows)


def test_a_table_of_slot_digests_is_still_checked_whole(tmp_path, monkeypatch):
    path = _write(tmp_path / "old.mindrecord")
    _rewrite_as_slot_digests(path)
    assert {alg for _, alg, _, _ in _table(path)} == {sums.SLOT_ALGORITHM}
    assert recordio.verify(path).ok
    expected = [r["id"] for r in FileReader(path, verify=False)]
    assert [r["id"] for r in FileReader(path)] == expected
    assert FileReader(path, verify=True).read_batch(range(ROWS))["id"].tolist() == expected
    header = FileReader(path).header
    blob_page = next(p for p in header["page"] if p.kind == "BLOB_DATA" and p.size > 3 * MiB)
    start = header["header_size"] + blob_page.page_id * header["page_size"]
    ranges = _blob_ranges(path)
    far = int(np.flatnonzero(ranges[:, 0] >= start)[0])              # the page's first row, 3 MiB away
    _flip(path, start + 3 * MiB + 5)
    monkeypatch.setattr(checks, "_CHECKED", {})
    with FileReader(path) as reader, pytest.raises(ChecksumError, match=rf"page {blob_page.page_id} \(rows "
                                                                        rf"\d+\.\.\d+\) does not match its checksum:"):
        reader[far]                                                   # the slot is hashed whole
    report = recordio.verify(path)
    assert not report.ok and any(f"page {blob_page.page_id}" in text for _, text in report.problems), report


def test_an_append_to_a_file_of_slot_digests_keeps_that_form(tmp_path):
    path = _write(tmp_path / "old.mindrecord", rows=40)
    _rewrite_as_slot_digests(path)
    writer = FileWriter.open_for_append(path)
    writer.write_raw_data([{"id": 1000 + i, "img": bytes([i]) * 30_000} for i in range(150)])
    writer.commit()
    assert {alg for _, alg, _, _ in _table(path)} == {sums.SLOT_ALGORITHM}
    assert recordio.verify(path).ok
    assert [r["id"] for r in FileReader(path)][-3:] == [1147, 1148, 1149]


def test_an_append_to_a_file_of_block_digests_keeps_block_digests(tmp_path):
    path = _write(tmp_path / "new.mindrecord", rows=40)
    writer = FileWriter.open_for_append(path)
    writer.write_raw_data([{"id": 1000 + i, "img": bytes([i]) * 30_000} for i in range(150)])
    writer.commit()
    assert {alg for _, alg, _, _ in _table(path)} == {sums.ALGORITHM}
    assert recordio.verify(path).ok
    assert len(list(FileReader(path))) == 190


def test_an_unknown_algorithm_is_a_checksum_error_not_a_pass(tmp_path, monkeypatch):
    path = _write(tmp_path / "x.mindrecord", rows=20)
    conn = sqlite3.connect(path + ".db")
    conn.execute("UPDATE RECORDIO_CHECKSUMS SET ALGORITHM = 'sha1'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(checks, "_CHECKED", {})
    with FileReader(path) as reader, pytest.raises(ChecksumError, match="unknown checksum algorithm 'sha1'"):
        reader[0]
    assert any("unknown checksum algorithm" in text for _, text in recordio.verify(path).problems)


def test_a_new_reader_of_an_unchanged_index_does_not_read_its_table_again(written, monkeypatch):
    reads = []
    real = location_sources.DbBlocks._read_checksums
    monkeypatch.setattr(location_sources.DbBlocks, "_read_checksums", lambda self: reads.append(1) or real(self))
    monkeypatch.setattr(location_sources, "_TABLES", location_sources.collections.OrderedDict())
    for _ in range(3):
        with FileReader(written) as reader:
            reader[5]
    assert len(reads) == 1
    db = written + ".db"
    st = os.stat(db)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))        # the .db touched: read again
    with FileReader(written) as reader:
        reader[5]
    assert len(reads) == 2


def test_block_hasher_equals_blocks_of_the_whole(tmp_path):
    data = np.random.default_rng(3).bytes(3 * MiB + 12345)
    hasher = sums.BlockHasher()
    for cut in range(0, len(data), 700_001):                        # fed in pieces across block edges
        hasher.update(data[cut:cut + 700_001])
    assert hasher.hexdigest() == sums.digest_blocks(data)
    assert len(hasher.hexdigest()) == 4 * sums.DIGEST_CHARS
    assert sums.digest_blocks(b"") == sums.digest_bytes(b"") and sums.digest_blocks(data[:MiB]) == \
        sums.digest_bytes(data[:MiB])
