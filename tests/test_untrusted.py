"""Untrusted datasets (docs/threat-model.md): whatever the bytes of a dataset's folder say, reading
never writes, names never leave the folder, sizes and time are bounded by the files, and every
failure is a RecordIOError.

Operations on hostile folders run in a subprocess under memory and CPU limits, with an audit hook
that records every path opened, renamed, truncated or removed outside the dataset's folder
(``recordio.tools.fuzz.run_operations``), next to sentinel files whose bytes are compared after.
"""

import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys

import numpy as np
import pytest

import recordio
from recordio.mindrecord import index
from recordio.mindrecord.write.recovery import repair
from recordio.mindrecord.read.verification import add_checksums
from recordio.tools import fuzz
from recordio.tools import fuzz_mutations as mutations
from conftest import GOLDEN_COPIES, TESTS

PROBE = r"""
import json, sys
from recordio.tools import fuzz
fuzz.limit_resources(memory=int(sys.argv[4]))
names = sys.argv[3].split(",") if sys.argv[3] else None
print(json.dumps(fuzz.run_operations(sys.argv[1], sys.argv[2], names)))
"""
READ_ONLY = ["read", "read-verify", "read-pages", "read-list", "count", "verify", "describe"]
ALL = READ_ONLY + ["append", "overwrite"]


def probe(folder, first, ops=None, memory=512 << 20, timeout=60):
    """Run ``ops`` on ``first`` in a limited subprocess; the report, after checking that nothing died,
    hung, failed outside RecordIOError or touched a path outside ``folder``."""
    proc = subprocess.run([sys.executable, "-c", PROBE, str(folder), str(first), ",".join(ops or []), str(memory)],
                          capture_output=True, text=True, timeout=timeout, cwd=TESTS)
    assert proc.returncode == 0, f"the probe died ({proc.returncode}): {proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    fails = {op: r for op, r in report.items() if isinstance(r, str) and ("FAIL" in r or "MemoryError" in r)}
    assert not fails, fails
    assert report["touched"] == [], report["touched"]
    return report


@pytest.fixture
def sandbox(tmp_path):
    """``tmp_path/ds`` for a dataset and ``tmp_path/outside`` with sentinels; checks them after the test."""
    outside = tmp_path / "outside"
    shutil.copytree(GOLDEN_COPIES / "one_row", outside)
    (outside / "victim.bin").write_bytes(b"sentinel" * 8)
    (outside / "other.bin").write_bytes(b"do not touch")
    before = fuzz.snapshot(outside)
    yield tmp_path
    assert fuzz.snapshot(outside) == before, "a file outside the dataset's folder changed"


def copy_case(root, case):
    shutil.copytree(GOLDEN_COPIES / case, root / "ds", ignore=shutil.ignore_patterns("*.pkl"))
    return root / "ds"


def first_of(folder):
    return mutations.data_files(folder)[0]


def edit_header(path, edit):
    header, data = mutations.read_header(path)
    edit(header)
    mutations.write_header(path, header, data)


def sql(db, *statements):
    conn = sqlite3.connect(str(db), isolation_level=None)
    for statement in statements:
        conn.executescript(statement) if isinstance(statement, str) else conn.execute(*statement)
    conn.close()


# --- planted journals --------------------------------------------------------------------------

def _planted(folder, first, phase, outside):
    """The journal of the issue: truncate a file elsewhere to 3 bytes, write chosen bytes at offset 0 of
    another and rename a third over it."""
    token = "0123456789abcdef"
    plan = {"phase": phase, "token": token, "targets": [str(outside / "one_row.mindrecord")], "sizes": [3]}
    if phase == 2:
        plan["shards"] = [{"data": str(outside / "victim.bin"), "header": "41" * 8, "deferred": [],
                           "spool": str(outside / "x.spool"), "db_staged": str(outside / "other.bin"),
                           "db": str(outside / "renamed.bin")}]
    for name in {first.name, "one_row.mindrecord"}:
        (folder / f".{name}.rio-{token}.journal").write_text(json.dumps(plan))


@pytest.mark.parametrize("phase", [1, 2])
def test_a_planted_journal_is_refused_never_obeyed(sandbox, phase):
    folder = copy_case(sandbox, "one_row")
    first = first_of(folder)
    _planted(folder, first, phase, sandbox / "outside")
    before = fuzz.snapshot(folder)
    report = probe(folder, first, ALL)
    assert fuzz.snapshot(folder) == before
    for op in ("read", "read-list", "count", "append", "overwrite"):
        assert report[op].startswith("error: FormatError") and "refused, not obeyed" in report[op], (op, report[op])
    assert not (sandbox / "outside" / "renamed.bin").exists()


def test_reading_never_writes_and_a_dead_writers_phase_1_journal_is_read_around(sandbox, capsys):
    """A writer killed before its commit leaves a phase-1 journal and bytes past the old pages: readers
    read the old rows without changing a byte; the next writer (or repair) cuts the bytes off."""
    path = sandbox / "ds" / "t.mr"
    path.parent.mkdir()
    subprocess.run([sys.executable, str(TESTS / "crash_child.py"), "fresh", str(path), "1", "0", "20"], check=True,
                   cwd=TESTS, capture_output=True)
    code = ("import os, sys, crash_child, recordio\n"
            "w = recordio.FileWriter.open_for_append(sys.argv[1])\n"
            "w.write_raw_data(crash_child.rows(100, 30))\n"
            "os._exit(9)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], cwd=TESTS, capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    assert [n for n in os.listdir(path.parent) if n.endswith(".journal")]
    before = fuzz.snapshot(path.parent)
    report = probe(path.parent, path, READ_ONLY)
    assert all(report[op] == "ok" for op in READ_ONLY if op != "read-verify"), report
    assert fuzz.snapshot(path.parent) == before, "a read-only operation changed the dataset's folder"
    assert recordio.count_rows(str(path)) == 20
    from recordio.tools.__main__ import main
    assert main(["repair", str(path)]) == 0 and "interrupted append finished" in capsys.readouterr().out
    assert not [n for n in os.listdir(path.parent) if ".rio-" in n]
    assert not repair(str(path))
    assert recordio.verify(str(path)).ok and recordio.count_rows(str(path)) == 20


# --- names from file contents ------------------------------------------------------------------

def _bad_names(outside):
    return {"relative": "../outside/one_row.mindrecord", "absolute": str(outside / "one_row.mindrecord"),
            "dotdot": "..", "nul": "one_row.mindrecord\x00x", "slash": "sub/one_row.mindrecord",
            "backslash": "sub\\one_row.mindrecord"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["relative", "absolute", "dotdot", "nul", "slash", "backslash"])
def test_a_header_naming_a_file_elsewhere_is_refused(sandbox, kind):
    folder = copy_case(sandbox, "matrix_s4_index")
    os.mkdir(folder / "sub")
    shutil.copy(sandbox / "outside" / "one_row.mindrecord", folder / "sub" / "one_row.mindrecord")
    bad = _bad_names(sandbox / "outside")[kind]
    for path in mutations.data_files(folder):
        edit_header(path, lambda h: h["shard_addresses"].__setitem__(1, bad))
    assert "not a plain file name" in str(recordio.verify(str(first_of(folder))))
    report = probe(folder, first_of(folder), ALL)
    for op in ("read", "read-pages", "count", "describe", "append"):
        assert report[op].startswith("error: FormatError") and "not a plain file name" in report[op], report[op]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["relative", "absolute", "dotdot", "nul", "slash", "backslash"])
def test_a_db_naming_a_file_elsewhere_is_refused(sandbox, kind):
    folder = copy_case(sandbox, "one_row")
    first = first_of(folder)
    sql(str(first) + ".db", ("UPDATE SHARD_NAME SET NAME = ?", (_bad_names(sandbox / "outside")[kind],)))
    assert "not a plain file name" in str(recordio.verify(str(first)))
    report = probe(folder, first, ALL)          # append and overwrite, last, write a new .db
    assert report["read"].startswith("error: IndexFileError") and "not a plain file name" in report["read"]


def test_a_huge_or_repeated_shard_name_is_refused_without_fetching_it(tmp_path):
    folder = copy_case(tmp_path, "one_row")
    first = first_of(folder)
    db = str(first) + ".db"
    sql(db, "UPDATE SHARD_NAME SET NAME = hex(zeroblob(100000))")
    with pytest.raises(recordio.IndexFileError, match="expected a file name"):
        recordio.FileReader(str(first))
    sql(db, "DELETE FROM SHARD_NAME", "INSERT INTO SHARD_NAME VALUES ('one_row.mindrecord')",
        "INSERT INTO SHARD_NAME VALUES ('one_row.mindrecord')")
    with pytest.raises(recordio.IndexFileError, match="several rows"):
        recordio.FileReader(str(first))


# --- renamed copies ----------------------------------------------------------------------------

@pytest.mark.parametrize("by_list", [False, True])
def test_a_renamed_copy_is_refused_the_same_way_by_every_operation(sandbox, by_list):
    """y.mindrecord is a copy of x's file: its header names x. Reading, counting, verifying and
    appending y all refuse it; none reads x (it would be another file than the one named) or writes."""
    folder = copy_case(sandbox, "matrix_s1_index")
    original = first_of(folder)
    copy = folder / "y.mindrecord"
    shutil.copy(original, copy)
    shutil.copy(str(original) + ".db", str(copy) + ".db")
    before = fuzz.snapshot(folder)
    report = probe(folder, copy, ["read-list" if by_list else "read", "count", "verify", "describe", "append"])
    for op, result in report.items():
        if op != "touched" and op != "verify":
            assert result.startswith("error: FormatError") and "renamed copy" in result, (op, result)
    assert fuzz.snapshot(folder) == before
    assert "renamed copy" in str(recordio.verify(str(copy)))


# --- symlinks, FIFOs, directories --------------------------------------------------------------

@pytest.mark.parametrize("which", ["sibling", "db"])
def test_a_symlink_leading_out_of_the_folder_is_refused(sandbox, which):
    folder = copy_case(sandbox, "matrix_s4_index")
    target = folder / ("matrix_s4_index.mindrecord1" if which == "sibling" else "matrix_s4_index.mindrecord0.db")
    target.unlink()
    target.symlink_to(sandbox / "outside" / ("one_row.mindrecord" + (".db" if which == "db" else "")))
    report = probe(folder, first_of(folder), ALL)
    for op in ("read", "append") + (("count",) if which == "sibling" else ()):
        assert report[op].startswith("error:") and "symlink leading out" in report[op], (op, report[op])


def test_a_symlink_the_user_names_is_followed_and_overwrite_replaces_links_not_targets(tmp_path):
    folder = copy_case(tmp_path, "one_row")
    os.symlink(folder / "one_row.mindrecord", tmp_path / "link.mr")
    assert len(recordio.FileReader(str(tmp_path / "link.mr"))) == 1       # named by the user: followed
    keep = (folder / "one_row.mindrecord").read_bytes()
    os.symlink(folder / "one_row.mindrecord", folder / "alias.mr")
    with recordio.FileWriter(str(folder / "alias.mr"), overwrite=True) as w:
        w.add_schema({"a": {"type": "int32"}})
        w.write_raw_data([{"a": 1}])
    assert not os.path.islink(folder / "alias.mr") and (folder / "one_row.mindrecord").read_bytes() == keep
    os.symlink(tmp_path / "elsewhere.mr", folder / "out.mr")
    with pytest.raises(recordio.FormatError, match="symlink leading out"):
        recordio.FileWriter(str(folder / "out.mr"), overwrite=True)
    assert not (tmp_path / "elsewhere.mr").exists()


@pytest.mark.parametrize("which,kind", [("sibling", "fifo"), ("db", "fifo"), ("sibling", "dir"), ("db", "dir")])
def test_special_files_are_refused_not_waited_on(sandbox, which, kind):
    folder = copy_case(sandbox, "matrix_s4_index")
    target = folder / ("matrix_s4_index.mindrecord2" if which == "sibling" else "matrix_s4_index.mindrecord0.db")
    target.unlink()
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    report = probe(folder, first_of(folder), ALL, timeout=60)
    for op in ("read", "append") + (("count",) if which == "sibling" else ("read-list", "overwrite")):
        assert report[op].startswith("error:"), (op, report[op])


def test_imagefolder_skips_a_fifo(tmp_path):
    from recordio.converters import convert_imagefolder
    from PIL import Image

    (tmp_path / "in" / "cat").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "in" / "cat" / "a.png")
    os.mkfifo(tmp_path / "in" / "cat" / "b.png")
    with pytest.raises(recordio.FormatError, match="not a regular file"):
        convert_imagefolder(tmp_path / "in", tmp_path / "out.mr", workers=1)
    report = convert_imagefolder(tmp_path / "in", tmp_path / "out2.mr", workers=1, skip_bad=True)
    assert report.rows == 1 and "b.png" in str(report.skipped)


# --- hostile .db -------------------------------------------------------------------------------

HOSTILE_DB = {
    "recursive view": ["ALTER TABLE INDEXES RENAME TO I2", "CREATE VIEW INDEXES AS WITH RECURSIVE c(x) AS "
                       "(SELECT 0 UNION ALL SELECT x + 1 FROM c) SELECT x AS ROW_ID, 0 AS PAGE_ID_RAW, "
                       "0 AS PAGE_OFFSET_RAW, 0 AS PAGE_OFFSET_RAW_END, 0 AS ROW_GROUP_ID, 0 AS PAGE_ID_BLOB, "
                       "0 AS PAGE_OFFSET_BLOB, 0 AS PAGE_OFFSET_BLOB_END FROM c"],
    "huge view": ["ALTER TABLE SHARD_NAME RENAME TO S2",
                  "CREATE VIEW SHARD_NAME AS SELECT zeroblob(900000000) AS NAME"],
    "trigger": ["CREATE TABLE log(x)", "CREATE TRIGGER t AFTER INSERT ON SHARD_NAME BEGIN INSERT INTO log VALUES (1); END"],
    "virtual table": ["CREATE VIRTUAL TABLE v USING fts5(a)"],
    "generated column": ["ALTER TABLE SHARD_NAME ADD COLUMN G TEXT GENERATED ALWAYS AS (hex(zeroblob(100)))"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_DB))
def test_a_hostile_db_is_refused_before_any_query(sandbox, name):
    folder = copy_case(sandbox, "one_row")
    first = first_of(folder)
    sql(str(first) + ".db", *HOSTILE_DB[name])
    report = probe(folder, first, READ_ONLY, memory=256 << 20, timeout=60)
    for op in ("read", "read-verify", "read-list", "describe"):
        assert report[op].startswith("error: IndexFileError"), (op, report[op])
    assert not recordio.verify(str(first)).ok


def test_sqlite_uri_characters_in_names_cannot_change_the_open_mode(tmp_path):
    with pytest.raises(recordio.IndexFileError, match="is not exists"):
        index.connect_ro(str(tmp_path / "x.db?mode=rwc"))
    assert os.listdir(tmp_path) == []
    folder = copy_case(tmp_path, "one_row")
    name = "a?mode=rwc&cache=shared#x.mindrecord"
    os.rename(folder / "one_row.mindrecord", folder / name)
    os.rename(folder / "one_row.mindrecord.db", folder / f"{name}.db")
    edit_header(folder / name, lambda h: h.update(shard_addresses=[name]))
    sql(folder / f"{name}.db", ("UPDATE SHARD_NAME SET NAME = ?", (name,)))
    listing = sorted(os.listdir(folder))
    conn = index.connect_ro(str(folder / f"{name}.db"))
    try:
        assert conn.execute("SELECT COUNT(*) FROM INDEXES").fetchone()[0] == 1
    finally:
        conn.close()
    with pytest.raises(recordio.errors.ParamValueError, match="should not contains"):
        recordio.FileReader(str(folder / name))      # MindSpore's name check, on reading too
    assert sorted(os.listdir(folder)) == listing


# --- sizes and counts --------------------------------------------------------------------------

def _set_entry_length(which):
    def damage(folder, first):
        header, data = mutations.read_header(first)
        offsets = mutations.entry_offsets(header, data)
        mutations.patch(first, offsets[0] if which == "blob" else offsets[-1], struct.pack("<Q", 1 << 40))
    return damage


def _set_in_blob(offset, value):
    def damage(folder, first):
        header, data = mutations.read_header(first)
        mutations.patch(first, mutations.entry_offsets(header, data)[0] + 8 + offset, value)
    return damage


def _header(edit):
    return lambda folder, first: edit_header(first, edit)


def _page(key, value, kind="BLOB_DATA"):
    def edit(h):
        next(p for p in h["page"] if p["page_type"] == kind)[key] = value
    return _header(edit)


def _db(statement):
    return lambda folder, first: sql(str(first) + ".db", statement)


BIG = 1 << 40
INFLATED = {
    "header length field": ("one_row", lambda f, first: mutations.patch(first, 0, struct.pack("<Q", BIG))),
    "header_size": ("one_row", _header(lambda h: h.update(header_size=BIG))),
    "header_size 2^70": ("one_row", _header(lambda h: h.update(header_size=1 << 70))),
    "page_size": ("one_row", _header(lambda h: h.update(page_size=BIG))),
    "page_size 2^70": ("one_row", _header(lambda h: h.update(page_size=1 << 70))),
    "page used size": ("one_row", _page("page_size", BIG)),
    "page end_row_id": ("one_row", _page("end_row_id", BIG)),
    "page start_row_id": ("one_row", _page("start_row_id", BIG)),
    "page_type_id": ("one_row", _page("page_type_id", BIG)),
    "row group offset": ("one_row", _header(lambda h: next(p for p in h["page"] if p["page_type"] == "RAW_DATA")
                                            ["row_group_ids"][0].update(offset=BIG))),
    "duplicated pages": ("one_row", _header(lambda h: h.update(page=h["page"] * 2000))),
    "blob entry length": ("one_row", _set_entry_length("blob")),
    "raw entry length": ("one_row", _set_entry_length("raw")),
    "blob part length": ("multi_blob", _set_in_blob(0, struct.pack(">Q", BIG))),
    "compressed int count": ("single_int_array_blob", _set_in_blob(0, struct.pack(">I", (1 << 32) - 1))),
    "array shape": ("arrays_fixed", _header(lambda h: h["schema"][0]["schema"]["af32"].update(shape=[BIG, BIG]))),
    "db location": ("one_row", _db(f"UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = {BIG}")),
    "db page id": ("one_row", _db(f"UPDATE INDEXES SET PAGE_ID_RAW = {BIG}")),
    "db row id": ("one_row", _db(f"UPDATE INDEXES SET ROW_ID = {BIG}")),
    "db checksum nbytes": ("one_row", _db(f"UPDATE RECORDIO_CHECKSUMS SET NBYTES = {BIG}")),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(INFLATED))
def test_a_size_inflated_to_2_40_allocates_nothing_big(sandbox, name):
    """Each size or count a file gives, set to 2^40 (or 2^70) in a tiny file, under a 384 MiB memory limit."""
    case, damage = INFLATED[name]
    folder = copy_case(sandbox, case)
    first = first_of(folder)
    add_checksums(str(first))
    damage(folder, first)
    report = probe(folder, first, READ_ONLY + ["append"], memory=384 << 20)
    assert any(report[op] != "ok" for op in ("read", "read-verify", "verify") if report[op]) or name in (
        "db checksum nbytes",), report


def test_info_refuses_absurd_sizes(tmp_path, capsys):
    from recordio.tools.__main__ import main

    folder = copy_case(tmp_path, "one_row")
    edit_header(first_of(folder), lambda h: h.update(header_size=1 << 70))
    assert main(["info", str(first_of(folder))]) == 1
    captured = capsys.readouterr()
    assert "TiB" not in captured.out and "header_size must be a positive int" in captured.err


# --- wrong types and values ----------------------------------------------------------------------

@pytest.mark.parametrize("damage", [
    _header(lambda h: h.update(index_fields=[{"index_fieldx": "label"}])),
    _header(lambda h: h.update(index_fields=[{"index_field": "nope"}])),
    _db("UPDATE RECORDIO_CHECKSUMS SET NBYTES = 'many'"),
    _db("UPDATE RECORDIO_CHECKSUMS SET DIGEST = 12"),
    _db("UPDATE INDEXES SET label_0 = x'00ff'"),
], ids=["index_fields key", "index_fields field", "checksum nbytes text", "checksum digest int", "index value blob"])
def test_verify_reports_damaged_metadata(tmp_path, damage):
    folder = copy_case(tmp_path, "matrix_s1_index")
    first = first_of(folder)
    add_checksums(str(first))
    damage(folder, first)
    report = recordio.verify(str(first))
    assert not report.ok and report.problems


def test_count_where_with_a_huge_int_is_an_error_not_a_traceback(capsys):
    from recordio.tools.__main__ import main

    first = first_of(GOLDEN_COPIES / "matrix_s1_index")
    assert main(["count", str(first), "--where", f"label={1 << 70}"]) == 1
    assert "expected a int32 value" in capsys.readouterr().err


def test_field_names_with_a_newline_and_strings_with_surrogates_are_refused(tmp_path):
    w = recordio.FileWriter(str(tmp_path / "x.mr"))
    with pytest.raises(recordio.SchemaError, match="should be composed"):
        w.add_schema({"label\n": {"type": "int32"}})
    w.add_schema({"s": {"type": "string"}})
    with pytest.raises(recordio.SchemaError, match=r"row 1: field 's'.*UTF-8"):
        w.write_raw_data([{"s": "fine"}, {"s": "lone \ud800"}])


# --- the index bound to the bytes it names -------------------------------------------------------

def test_an_index_pointing_rows_at_other_rows_bytes_is_refused(tmp_path):
    folder = copy_case(tmp_path, "matrix_s1_index")
    first = str(first_of(folder))
    add_checksums(first)
    cols = "PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END"
    conn = sqlite3.connect(first + ".db")
    rows = {r[0]: r[1:] for r in conn.execute(f"SELECT ROW_ID, {cols} FROM INDEXES WHERE ROW_ID IN (0, 1)")}
    for row, other in ((0, 1), (1, 0)):
        conn.execute(f"UPDATE INDEXES SET ({cols}) = (?, ?, ?, ?) WHERE ROW_ID = ?", (*rows[other], row))
    conn.commit()
    conn.close()
    for kw in ({}, {"verify": True}):
        with pytest.raises(recordio.IndexFileError, match="not where the page table places row 0"):
            recordio.FileReader(first, **kw)


def test_verify_true_checks_each_entrys_length_prefix(tmp_path):
    """Rows that still tile their page but with lengths moved between them: caught as rows are read."""
    folder = copy_case(tmp_path, "matrix_s1_index")
    first = str(first_of(folder))
    add_checksums(first)
    sql(first + ".db", "UPDATE INDEXES SET PAGE_OFFSET_BLOB_END = PAGE_OFFSET_BLOB_END - 1 WHERE ROW_ID = 0",
        "UPDATE INDEXES SET PAGE_OFFSET_BLOB = PAGE_OFFSET_BLOB - 1 WHERE ROW_ID = 1")
    with recordio.FileReader(first, verify=True) as reader:
        with pytest.raises(recordio.ChecksumError, match="row 0: its blob is .* by its length prefix"):
            reader[0]
    assert not recordio.verify(first).ok


def test_arrays_of_the_golden_files_still_read_with_verify(tmp_path):
    folder = copy_case(tmp_path, "arrays_variable")
    first = str(first_of(folder))
    add_checksums(first)
    with recordio.FileReader(first, verify=True) as reader:
        rows = list(reader)
    assert len(rows) == 15 and all(isinstance(r["ai32"], np.ndarray) for r in rows if "ai32" in r)
