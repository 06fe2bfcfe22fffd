"""Checksums and verify: every flipped byte of a data file is caught; .db damage never goes silent."""

import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import recordio
from recordio import ChecksumError, FileReader, FileWriter
from recordio.tools.__main__ import main
from rowcheck import assert_rows_equal
from conftest import GOLDEN_COPIES


def write_dataset(path, shards=2, rows=60):
    w = FileWriter(str(path), shards)
    w.set_header_size(1 << 14)
    w.set_page_size(1 << 15)
    w.add_schema({"img": {"type": "bytes"}, "label": {"type": "int32"}, "name": {"type": "string"},
                  "vec": {"type": "int64", "shape": [-1]}})
    rng = np.random.default_rng(0)
    for start in range(0, rows, 20):
        w.write_raw_data([{"img": rng.bytes(int(rng.integers(100, 3000))), "label": i % 7, "name": f"row {i}",
                           "vec": rng.integers(-1000, 1000, i % 5)} for i in range(start, start + 20)])
    w.commit()
    return str(path) + ("0" if shards > 1 else "")


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x5A]))


def test_clean_dataset_verifies(tmp_path):
    first = write_dataset(tmp_path / "x.mr")
    report = recordio.verify(first)
    assert report.ok, str(report)
    assert report.rows == 60 and report.checked_slots > 4 and not report.without_checksums


def test_every_data_byte_flip_is_detected(tmp_path):
    first = write_dataset(tmp_path / "x.mr")
    pristine = tmp_path / "pristine"
    shutil.copytree(tmp_path, pristine, ignore=shutil.ignore_patterns("pristine"))
    rnd = random.Random(1)
    for trial in range(40):
        target = tmp_path / f"x.mr{trial % 2}"
        offset = rnd.randrange(os.path.getsize(target))
        flip(target, offset)
        report = recordio.verify(first)
        assert not report.ok, f"flip at byte {offset} of {target.name} went unnoticed"
        assert any(target.name in f for f, _ in report.problems)
        shutil.copy(pristine / target.name, target)


def test_db_byte_flips_never_silent(tmp_path):
    first = write_dataset(tmp_path / "x.mr", shards=1)
    expected = list(FileReader(first))
    db = first + ".db"
    original = Path(db).read_bytes()
    rnd = random.Random(2)
    detected = 0
    for _ in range(60):
        offset = rnd.randrange(len(original))
        flip(db, offset)
        report = recordio.verify(first)
        if report.ok:     # an unused byte of the SQLite file: the dataset must read back unchanged
            with FileReader(first) as r:
                assert_rows_equal(list(r), expected)
            assert recordio.count_rows(first) == 60
        else:
            detected += 1
        Path(db).write_bytes(original)
    assert detected > 0


def test_reader_verify_names_file_page_and_rows(tmp_path):
    first = write_dataset(tmp_path / "x.mr", shards=1)
    header = FileReader(first).header
    page = [p for p in header["page"] if p.kind == "BLOB_DATA"][1]
    flip(first, header["header_size"] + page.page_id * header["page_size"] + 20)   # inside an image
    rows = list(FileReader(first, verify=False))       # checks off: the damage is invisible to a reader
    assert len(rows) == 60
    for verify in (True, None):                        # verify=True, and the default's first-touch check
        with pytest.raises(ChecksumError, match=rf"x.mr: page {page.page_id} \(rows \d+\.\.\d+\)"):
            list(FileReader(first, verify=verify))


def _damaged(tmp_path):
    """A one-shard dataset with a flipped byte inside the image of a row of its second blob page, and
    ``(page, a row on it)``."""
    first = write_dataset(tmp_path / "x.mr", shards=1)
    header = FileReader(first).header
    page = [p for p in header["page"] if p.kind == "BLOB_DATA"][1]
    flip(first, header["header_size"] + page.page_id * header["page_size"] + 20)
    return first, page


@pytest.mark.parametrize("read", ["row", "batch", "items", "iter"])
def test_a_flipped_byte_is_found_by_default_on_the_pages_first_touch(tmp_path, read):
    first, page = _damaged(tmp_path)
    with FileReader(first) as reader:
        assert int(reader[page.start_row - 1]["label"]) == (page.start_row - 1) % 7    # other pages: read
        message = rf"x.mr: page {page.page_id} \(rows {page.start_row}\.\.{page.end_row - 1}\) does not match"
        with pytest.raises(ChecksumError, match=message):
            {"row": lambda: reader[page.start_row], "batch": lambda: reader.read_batch([0, page.start_row]),
             "items": lambda: reader.__getitems__([page.start_row]), "iter": lambda: list(reader)}[read]()
        with pytest.raises(ChecksumError):                 # a failed page stays unchecked: refused again
            reader[page.start_row]


def test_mind_dataset_checks_pages_by_default_and_config_turns_it_off(tmp_path):
    from recordio import config
    from recordio.dataset import MindDataset
    first, page = _damaged(tmp_path)
    with pytest.raises(ChecksumError, match=rf"page {page.page_id} \(rows"):
        list(MindDataset(first, shuffle=False).create_dict_iterator(num_epochs=1, output_numpy=True))
    config.set_page_checks(False)
    try:
        rows = list(MindDataset(first, shuffle=False).create_dict_iterator(num_epochs=1, output_numpy=True))
        assert len(rows) == 60
        with pytest.raises(ChecksumError):
            list(FileReader(first, verify=True))           # an explicit verify=True still checks
    finally:
        config.set_page_checks(True)
    with pytest.raises(TypeError):
        config.set_page_checks("no")


def test_files_without_checksums_read_as_before(tmp_path):
    """MindSpore's files have no checksums: nothing is checked and nothing is refused by default."""
    shutil.copytree(GOLDEN_COPIES / "matrix_s4_index", tmp_path / "ms")
    first = str(tmp_path / "ms" / "matrix_s4_index.mindrecord0")
    with FileReader(first) as reader:
        assert len(list(reader)) == 24 and len(reader.read_batch(range(24))) > 0


def test_a_page_is_hashed_once_a_process_until_its_file_changes(tmp_path, monkeypatch):
    from recordio.mindrecord.read import checks
    first = write_dataset(tmp_path / "x.mr", shards=1)
    hashed = []
    real = checks._digest
    monkeypatch.setattr(checks, "_digest", lambda files, k, a, b, *more: hashed.append(a) or real(files, k, a, b,
                                                                                                 *more))
    assert len(list(FileReader(first))) == 60
    pages = len(hashed)
    assert pages > 2
    assert len(list(FileReader(first))) == 60 and len(hashed) == pages       # a second reader: no hash
    header = FileReader(first).header
    page = [p for p in header["page"] if p.kind == "BLOB_DATA"][1]
    flip(first, header["header_size"] + page.page_id * header["page_size"] + 20)
    st = os.stat(first)
    os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))            # changed in place, later
    with pytest.raises(ChecksumError, match=f"page {page.page_id}"):
        list(FileReader(first))


def test_warm_passes_skip_checked_files(tmp_path):
    """Once every page of a file was checked, a row costs one flag test (no hash, no page lookup)."""
    first = write_dataset(tmp_path / "x.mr", shards=2)
    with FileReader(first) as reader:
        list(reader)
        checks = reader.shard_set.checks
        assert all(checks._done) and all(len(c) == len(s.checksums) for c, s in zip(checks._checked, checks.shards))


def test_mindspore_dataset_verified_structurally_then_checksums_added(tmp_path):
    shutil.copytree(GOLDEN_COPIES / "matrix_s4_index", tmp_path / "ms")
    first = str(tmp_path / "ms" / "matrix_s4_index.mindrecord0")
    report = recordio.verify(first)
    assert report.ok and len(report.without_checksums) == 4
    with pytest.raises(ChecksumError, match="no checksums"):
        FileReader(first, verify=True)
    assert main(["verify", "--add-checksums", first]) == 0
    report = recordio.verify(first)
    assert report.ok and not report.without_checksums and report.checked_slots == 12
    assert len(list(FileReader(first, verify=True))) == 24


def test_structural_problems_are_all_reported(tmp_path):
    shutil.copytree(GOLDEN_COPIES / "matrix_s4_index", tmp_path / "ms")
    d = tmp_path / "ms"
    import sqlite3
    conn = sqlite3.connect(str(d / "matrix_s4_index.mindrecord1.db"))
    conn.execute("UPDATE INDEXES SET label_0 = 99 WHERE ROW_ID = 2")
    conn.commit()
    conn.close()
    os.unlink(d / "matrix_s4_index.mindrecord3.db")
    report = recordio.verify(str(d / "matrix_s4_index.mindrecord0"))
    texts = " | ".join(f"{f}: {p}" for f, p in report.problems)
    assert "label is 99" in texts and "mindrecord3.db" in texts


def test_verify_cli_exit_codes(tmp_path, capsys):
    first = write_dataset(tmp_path / "x.mr")
    assert main(["verify", first]) == 0
    assert "OK" in capsys.readouterr().out
    flip(tmp_path / "x.mr1", 100)
    assert main(["verify", first, "--json"]) == 1
    assert '"ok": false' in capsys.readouterr().out
