"""Damaged datasets give a clear Python exception naming the file — never a crash, hang or wrong data.

Each case runs in its own subprocess, so a segfault or abort would show as a signal exit.
"""

import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys

import pytest

from conftest import GOLDEN_COPIES, TESTS

PROBE = r"""
import json, sys
import recordio
try:
    r = recordio.FileReader(sys.argv[1])
    rows = list(r)
    print(json.dumps({"ok": len(rows)}))
except Exception as exc:
    print(json.dumps({"type": type(exc).__name__, "recordio": isinstance(exc, recordio.RecordIOError),
                      "mro": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}))
"""


def probe(path):
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                          timeout=60, cwd=TESTS)
    assert proc.returncode == 0, f"reader died with {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def copy_case(tmp_path, case):
    dst = tmp_path / case
    shutil.copytree(GOLDEN_COPIES / case, dst)
    return dst


def header_of(path):
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data, n


def rewrite_header(path, edit):
    header, data, n = header_of(path)
    edit(header)
    text = json.dumps(header).encode()
    assert 8 + len(text) <= header["header_size"] if "header_size" in header else True
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + len(text):])


def truncate(size):
    def damage(d, f):
        with open(f, "r+b") as fh:
            fh.truncate(size if size >= 0 else os.path.getsize(f) + size)
    return damage


def set_bytes(offset, value):
    def damage(d, f):
        with open(f, "r+b") as fh:
            fh.seek(offset)
            fh.write(value)
    return damage


def drop_key(key):
    return lambda d, f: rewrite_header(f, lambda h: h.pop(key))


def sql(statement, shard=""):
    def damage(d, f):
        conn = sqlite3.connect(str(f) + shard + ".db")
        conn.execute(statement)
        conn.commit()
        conn.close()
    return damage


def first_raw_record(d, f):
    header, data, _ = header_of(f)
    raw = next(p for p in header["page"] if p["page_type"] == "RAW_DATA")
    start = header["header_size"] + raw["page_id"] * header["page_size"] + 8
    with open(f, "r+b") as fh:
        fh.seek(start)
        fh.write(b"\xc1")


def compressed_count(d, f):
    header, data, _ = header_of(f)
    blob = next(p for p in header["page"] if p["page_type"] == "BLOB_DATA")
    start = header["header_size"] + blob["page_id"] * header["page_size"] + 8
    # arrays_fixed: blob = [u64 BE len][af32] [u64 BE len][af64] [u64 BE len][ai32: u32 BE count ...]
    pos = start
    for _ in range(2):
        pos += 8 + struct.unpack(">Q", data[pos:pos + 8])[0]
    with open(f, "r+b") as fh:
        fh.seek(pos + 8)
        fh.write(b"\x7f\xff\xff\xff")


def other_db(d, f):
    other = GOLDEN_COPIES / "one_row" / "one_row.mindrecord.db"
    shutil.copy(other, str(f) + ".db")


def swap_shard_schema(d, f):
    rewrite_header(d / "matrix_s4_index.mindrecord1", lambda h: h["schema"][0]["schema"]["label"].update(type="int64"))


CASES = [
    # (id, case, damage, expected error class name, words in the message)
    ("zero-byte file", "one_row", truncate(0), "FormatError", "smaller than the lower limit: 8"),
    ("7-byte file", "one_row", truncate(7), "FormatError", "smaller than the lower limit: 8"),
    ("cut inside header", "one_row", truncate(200), "FormatError", "cut off"),
    ("cut at header size", "one_row", truncate(65536), "FormatError", "past the end of the file"),
    ("cut inside last page", "one_row", truncate(-10), "FormatError", "truncated"),
    ("header not JSON", "one_row", set_bytes(8, b"x"), "FormatError", "not valid JSON"),
    ("header length > 128 MiB", "one_row", set_bytes(0, struct.pack("<Q", 1 << 28)), "FormatError", "128 MiB"),
    ("missing statistics", "one_row", drop_key("statistics"), "FormatError", "statistics"),
    ("missing page", "one_row", drop_key("page"), "FormatError", "page"),
    ("missing schema", "one_row", drop_key("schema"), "FormatError", "schema"),
    ("missing header_size", "one_row", drop_key("header_size"), "FormatError", "header_size"),
    ("missing shard_addresses", "one_row", drop_key("shard_addresses"), "FormatError", "shard_addresses"),
    ("version 4.0", "one_row", lambda d, f: rewrite_header(f, lambda h: h.update(version="4.0")),
     "FormatError", "not supported"),
    ("unknown schema type", "one_row",
     lambda d, f: rewrite_header(f, lambda h: h["schema"][0]["schema"]["label"].update(type="unt32")),
     "FormatError", "unt32"),
    ("page_size changed", "one_row", lambda d, f: rewrite_header(f, lambda h: h.update(page_size=262148)),
     "FormatError", "past the end of the file"),
    ("corrupt msgpack", "one_row", first_raw_record, "FormatError", "msgpack"),
    ("corrupt compressed count", "arrays_fixed", compressed_count, "FormatError", "compressed int array"),
    ("missing .db", "one_row", lambda d, f: os.unlink(str(f) + ".db"), "IndexFileError", "use_index=False"),
    ("zero-byte .db", "one_row", truncate(0) and (lambda d, f: open(str(f) + ".db", "w").close()),
     "IndexFileError", "not an SQLite database"),
    ("truncated .db", "one_row", lambda d, f: os.truncate(str(f) + ".db", 100), "IndexFileError", "index"),
    ("foreign .db", "matrix_s1_index", other_db, "IndexFileError", "belongs to data file"),
    ("db lists fewer rows", "matrix_s1_index", sql("DELETE FROM INDEXES WHERE ROW_ID > 4"),
     "IndexFileError", "lists 5 rows"),
    ("db lists more rows", "one_row",
     sql("INSERT INTO INDEXES SELECT ROW_ID + 1, PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END, ROW_GROUP_ID, "
         "PAGE_ID_BLOB, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END, INC_0, label_0, INC_1, name_0 FROM INDEXES"),
     "IndexFileError", "lists 2 rows"),
    ("sibling data missing", "matrix_s4_index", lambda d, f: os.unlink(d / "matrix_s4_index.mindrecord2"),
     "FileNotFoundError", "matrix_s4_index.mindrecord2"),
    ("sibling .db missing", "matrix_s4_index", lambda d, f: os.unlink(d / "matrix_s4_index.mindrecord3.db"),
     "IndexFileError", "mindrecord3.db"),
    ("shard metadata differs", "matrix_s4_index", swap_shard_schema, "FormatError", "differ"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,case,damage,error,words", CASES, ids=[c[0] for c in CASES])
def test_damaged_dataset(tmp_path, name, case, damage, error, words):
    d = copy_case(tmp_path, case)
    first = sorted(p for p in d.iterdir() if ".mindrecord" in p.name and not p.name.endswith((".db", ".pkl")))[0]
    damage(d, first)
    result = probe(first)
    assert result.get("type") == error or error in result.get("mro", ()), result
    assert result["recordio"], result
    assert words in result["message"], result
    assert first.name in result["message"] or "mindrecord" in result["message"], result


def _append(path, data):
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.parametrize("name,damage", [
    ("trailing zero bytes", lambda f: _append(f, b"\x00" * 1000)),
    ("trailing ENCRYPT", lambda f: _append(f, b"ENCRYPT")),
    ("length field larger than JSON", None),
])
def test_tolerated_variations(tmp_path, name, damage):
    d = copy_case(tmp_path, "one_row")
    f = d / "one_row.mindrecord"
    if damage is None:
        header, data, n = header_of(f)
        f.write_bytes(struct.pack("<Q", n + 40) + data[8:])
    else:
        damage(f)
    assert probe(f) == {"ok": 1}


def test_symlink_to_data_file_opens(tmp_path):
    d = copy_case(tmp_path, "one_row")
    os.symlink(d / "one_row.mindrecord", d / "link.mr")
    assert probe(d / "link.mr") == {"ok": 1}


def test_read_without_db_through_page_table(tmp_path):
    import recordio
    d = copy_case(tmp_path, "matrix_s4_index")
    for p in d.glob("*.db"):
        p.unlink()
    with recordio.FileReader(str(d / "matrix_s4_index.mindrecord0"), use_index=False) as r:
        assert len(r) == 24


def test_renamed_files(tmp_path):
    d = copy_case(tmp_path, "one_row")
    os.rename(d / "one_row.mindrecord", d / "y.mr")
    os.rename(d / "one_row.mindrecord.db", d / "y.mr.db")
    result = probe(d / "y.mr")                      # its header still names one_row.mindrecord
    assert result["type"] == "FormatError" and "renamed copy" in result["message"], result
    assert "one_row.mindrecord" in result["message"]
    import recordio
    with pytest.raises(recordio.FormatError, match="renamed copy"):
        recordio.FileReader([str(d / "y.mr")])


def test_pages_with_wrong_shard_id_are_still_read(tmp_path):
    d = copy_case(tmp_path, "matrix_s1_index")
    f = d / "matrix_s1_index.mindrecord"
    rewrite_header(f, lambda h: [p.update(shard_id=1) for p in h["page"]])
    assert probe(f) == {"ok": 24}


def test_version_2_file_without_compression(tmp_path):
    d = copy_case(tmp_path, "multi_blob")     # no int arrays: the 2.0 and 3.0 layouts are the same
    f = d / "multi_blob.mindrecord"
    rewrite_header(f, lambda h: h.update(version="2.0"))
    import pickle
    import recordio
    from rowcheck import assert_rows_equal
    with recordio.FileReader(str(f)) as r:
        assert_rows_equal(list(r), pickle.loads((d / "expected.pkl").read_bytes()))


def test_compressed_file_relabelled_2_0_is_refused(tmp_path):
    d = copy_case(tmp_path, "single_int_array_blob")
    f = d / "single_int_array_blob.mindrecord"
    rewrite_header(f, lambda h: h.update(version="2.0"))
    result = probe(f)
    assert result.get("recordio") and result["type"] == "FormatError", result


def test_foreign_db_with_identical_layout_never_changes_values(tmp_path):
    """A .db copied from another dataset with the same layout: values still come from the data file."""
    import sqlite3
    import recordio
    d = copy_case(tmp_path, "matrix_s1_index")
    f = str(d / "matrix_s1_index.mindrecord")
    truth = [int(r["label"]) for r in recordio.FileReader(f)]
    conn = sqlite3.connect(f + ".db")
    conn.execute("UPDATE INDEXES SET label_0 = label_0 + 1000")
    conn.commit()
    conn.close()
    reader = recordio.FileReader(f)
    assert [int(r["label"]) for r in reader] == truth
    assert recordio.FileReader(f, columns=["label"]).index_column("label").tolist() == truth
    assert not recordio.verify(f).ok
