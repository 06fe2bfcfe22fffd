"""Mutations of a dataset folder for the fuzzing campaign (``tools/fuzz.py``).

Each mutation takes ``(rng, folder, first)`` — a ``random.Random``, the mutant's folder and its
first data file — changes the folder in place and returns a one-line description. The layout is
read here independently of recordio, so that recordio's own mistakes are not copied.
"""

import json
import os
import pathlib
import sqlite3
import struct

BIG = [0, 1, -1, 7, 8, 255, 1 << 31, (1 << 32) - 1, 1 << 40, (1 << 63) - 1, 1 << 63, 1 << 64, 1 << 70]
NAMES = ["../outside/one_row.mindrecord", "/etc/passwd", "..", ".", "", "a/b", "a\\b", "x\x00y",
         "\ud800", "x" * 300, "one_row.mindrecord?mode=rwc", "file:x.db?mode=rwc"]
_U64 = struct.Struct("<Q")


# --- reading a data file's layout (independently of recordio, so its bugs are not copied) -------

def read_header(path):
    data = pathlib.Path(path).read_bytes()
    n = _U64.unpack_from(data, 0)[0]
    return json.loads(data[8:8 + min(n, len(data))]), data


def write_header(path, header, data):
    """Write ``header`` over the old one (zeroing what is left of it; a longer one runs on)."""
    text = json.dumps(header).encode()
    old = min(_U64.unpack_from(data, 0)[0], len(data))         # an earlier mutation may have inflated it
    blob = _U64.pack(len(text)) + text + b"\x00" * max(0, old - len(text))
    out = bytearray(data)
    out[:len(blob)] = blob
    pathlib.Path(path).write_bytes(bytes(out))


def entry_offsets(header, data):
    """Absolute offsets of the 8-byte length prefixes of every entry the page table names."""
    hs, ps, out = header["header_size"], header["page_size"], []
    pages = header["page"] or []
    blobs = {p["page_type_id"]: p for p in pages if p["page_type"] == "BLOB_DATA"}
    for page in pages:
        base = hs + page["page_id"] * ps
        if page["page_type"] == "BLOB_DATA":
            out += _walk(data, base, 0, page["end_row_id"] - page["start_row_id"])
        else:
            for group in page["row_group_ids"]:
                bp = blobs.get(group["id"])
                if bp is not None:
                    out += _walk(data, base, group["offset"], bp["end_row_id"] - bp["start_row_id"])
    return out


def _walk(data, base, offset, count):
    out, pos = [], base + offset
    for _ in range(count):
        if pos + 8 > len(data):
            break
        out.append(pos)
        pos += 8 + _U64.unpack_from(data, pos)[0]
    return out


# --- mutations: each takes (rng, folder, first) and returns a description -----------------------

def data_files(folder):
    return sorted(p for p in folder.iterdir() if ".mindrecord" in p.name and not p.name.endswith((".db", ".pkl"))
                  and not p.name.startswith(".") and p.is_file() and not p.is_symlink())


def _pick_file(rng, folder):
    return rng.choice(data_files(folder))


def _value(rng):
    kind = rng.randrange(6)
    if kind < 3:
        return rng.choice(BIG)
    return [None, "x", [], {}, 1.5, True][rng.randrange(6)] if kind == 3 else rng.choice(NAMES)


def mutate_header_field(rng, folder, first):
    path = _pick_file(rng, folder)
    header, data = read_header(path)
    pages = header.get("page") or []
    choice = rng.randrange(6)
    value = _value(rng)
    if choice == 0:
        key = rng.choice(["header_size", "page_size", "version", "compression_size", "index_fields"])
        header[key] = value
        where = key
    elif choice == 1 and pages:
        page = rng.choice(pages)
        key = rng.choice(["page_id", "page_type_id", "start_row_id", "end_row_id", "page_size", "shard_id"])
        page[key] = value
        where = f"page[{page.get('page_id')}].{key}"
    elif choice == 2 and pages:
        raw = [p for p in pages if p["page_type"] == "RAW_DATA"]
        page = rng.choice(raw or pages)
        group = rng.choice(page["row_group_ids"])
        key = rng.choice(["id", "offset"])
        group[key] = value
        where = f"page[{page['page_id']}].row_group_ids.{key}"
    elif choice == 3:
        addresses = header["shard_addresses"]
        i = rng.randrange(len(addresses))
        addresses[i] = rng.choice(NAMES)
        where = f"shard_addresses[{i}]"
    elif choice == 4:
        schema = header["schema"][0]["schema"]
        name = rng.choice(sorted(schema))
        spec = schema[name]
        if "shape" in spec and rng.random() < 0.7:
            spec["shape"][rng.randrange(len(spec["shape"]))] = rng.choice([1 << 40, (1 << 62), -1, 0, 3])
        else:
            spec["type"] = rng.choice(["int32", "int64", "float32", "float64", "string", "bytes", "unt8"])
        where = f"schema.{name}"
    else:
        header["page"] = pages + pages[-1:] * rng.randrange(1, 4)
        where = "page (duplicated)"
    write_header(path, header, data)
    return f"{path.name}: header {where} = {str(value)[:40]!r}"


def mutate_entry_length(rng, folder, first):
    path = _pick_file(rng, folder)
    header, data = read_header(path)
    offsets = entry_offsets(header, data)
    if not offsets:
        return mutate_bytes(rng, folder, first)
    at = rng.choice(offsets)
    value = rng.choice([0, 1, 7, 9, 1 << 20, 1 << 40, (1 << 64) - 1, _U64.unpack_from(data, at)[0] + rng.choice([-1, 1])])
    value = max(0, min(value, (1 << 64) - 1))
    patch(path, at, _U64.pack(value))
    return f"{path.name}: entry length at {at} = {value}"


def mutate_entry_body(rng, folder, first):
    """Inside an entry: msgpack type bytes, multi-blob u64 BE part lengths, compressed int counts."""
    path = _pick_file(rng, folder)
    header, data = read_header(path)
    offsets = entry_offsets(header, data)
    if not offsets:
        return mutate_bytes(rng, folder, first)
    at = rng.choice(offsets) + 8 + rng.randrange(0, 24)
    patch = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x01\x00\x00\x00\x00\x00", b"\xdb\xff\xff\xff\xff",
                        b"\xc6\x7f\xff\xff\xff", b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc1",
                        struct.pack(">Q", 1 << 40), struct.pack(">I", (1 << 32) - 1), bytes([rng.randrange(256)])])
    patch(path, at, patch)
    return f"{path.name}: entry bytes at {at} = {patch.hex()}"


def mutate_bytes(rng, folder, first):
    path = _pick_file(rng, folder)
    size = path.stat().st_size
    edits = []
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(min(size, 600)) if rng.random() < 0.5 else rng.randrange(size)
        value = bytes([rng.randrange(256)])
        patch(path, at, value)
        edits.append(f"{at}={value.hex()}")
    return f"{path.name}: bytes {', '.join(edits)}"


def patch(path, at, value):
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(value)


DB_COLUMNS = ["ROW_ID", "PAGE_ID_RAW", "PAGE_OFFSET_RAW", "PAGE_OFFSET_RAW_END", "ROW_GROUP_ID", "PAGE_ID_BLOB",
              "PAGE_OFFSET_BLOB", "PAGE_OFFSET_BLOB_END"]
DB_STATEMENTS = [
    "DROP TABLE INDEXES", "DROP TABLE SHARD_NAME", "DELETE FROM SHARD_NAME", "INSERT INTO SHARD_NAME VALUES ('x')",
    "UPDATE SHARD_NAME SET NAME = zeroblob(1000000)", "UPDATE SHARD_NAME SET NAME = 42",
    "ALTER TABLE INDEXES RENAME TO I2; CREATE VIEW INDEXES AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
    "SELECT x+1 FROM c) SELECT x AS ROW_ID, x AS PAGE_ID_RAW, x AS PAGE_OFFSET_RAW, x AS PAGE_OFFSET_RAW_END, "
    "x AS ROW_GROUP_ID, x AS PAGE_ID_BLOB, x AS PAGE_OFFSET_BLOB, x AS PAGE_OFFSET_BLOB_END FROM c",
    "ALTER TABLE SHARD_NAME RENAME TO S2; CREATE VIEW SHARD_NAME AS SELECT zeroblob(900000000) AS NAME",
    "CREATE TRIGGER t AFTER INSERT ON SHARD_NAME BEGIN DELETE FROM INDEXES; END",
    "CREATE VIRTUAL TABLE v USING fts5(a)",
    "UPDATE RECORDIO_CHECKSUMS SET NBYTES = 'x'", "UPDATE RECORDIO_CHECKSUMS SET NBYTES = 1099511627776",
    "UPDATE RECORDIO_CHECKSUMS SET DIGEST = 5", "UPDATE RECORDIO_CHECKSUMS SET PAGE_ID = PAGE_ID + 7",
    "DELETE FROM INDEXES WHERE ROW_ID = 0", "UPDATE INDEXES SET ROW_ID = ROW_ID + 1",
]


def mutate_db(rng, folder, first):
    path = _pick_file(rng, folder)
    db = str(path) + ".db"
    if not os.path.isfile(db) or os.path.islink(db):
        return mutate_bytes(rng, folder, first)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        kinds = dict(conn.execute("SELECT name, type FROM sqlite_master"))
        if rng.random() < 0.6 and kinds.get("INDEXES") == "table":
            column = rng.choice(DB_COLUMNS)
            value = rng.choice(BIG[:10] + ["x", None, 2.5])
            statement = f"UPDATE INDEXES SET {column} = ? WHERE ROW_ID = (SELECT ROW_ID FROM INDEXES LIMIT 1 OFFSET ?)"
            rows = conn.execute("SELECT COUNT(*) FROM INDEXES").fetchone()[0]
            conn.execute(statement, (value, rng.randrange(max(rows, 1))))
            return f"{path.name}.db: INDEXES.{column} = {value!r}"
        statement = rng.choice(DB_STATEMENTS)
        name = rng.choice(NAMES)
        if "VALUES ('x')" in statement:
            conn.execute("UPDATE SHARD_NAME SET NAME = ?", (name,))
            return f"{path.name}.db: SHARD_NAME = {name!r}"
        conn.executescript(statement)
        return f"{path.name}.db: {statement[:60]}"
    except sqlite3.Error as exc:
        return f"{path.name}.db: {exc}"
    finally:
        conn.close()


def mutate_folder(rng, folder, first):
    """Symlinks, FIFOs, directories and planted journals in place of the dataset's files."""
    files = [p for p in data_files(folder) if p != first] + [pathlib.Path(str(first) + ".db")]
    target = rng.choice(files + [None])
    outside = folder.parent / "outside" / "one_row.mindrecord"
    kind = rng.randrange(4)
    if target is None or kind == 0:
        return plant_journal(rng, folder, first)
    target.unlink(missing_ok=True)
    if kind == 1:
        dest = outside if not target.name.endswith(".db") else pathlib.Path(str(outside) + ".db")
        target.symlink_to(os.path.relpath(dest, target.parent))
    elif kind == 2:
        os.mkfifo(target)
    else:
        target.mkdir()
    return f"{target.name}: replaced by a {['', 'symlink leading out', 'FIFO', 'directory'][kind]}"


def plant_journal(rng, folder, first):
    token = "%016x" % rng.getrandbits(64)
    outside = folder.parent / "outside"
    victims = [str(outside / "one_row.mindrecord"), str(outside / "victim.bin"), str(first)]
    phase = rng.choice([1, 2])
    plan = {"phase": phase, "token": token, "targets": [rng.choice(victims)], "sizes": [3]}
    if phase == 2:
        t = plan["targets"][0]
        plan["shards"] = [{"data": t, "header": "00" * 8, "spool": str(outside / "victim.bin"),
                           "deferred": [[0, 0, 4]], "db_staged": str(outside / "victim.bin"), "db": t + ".db"}]
    if rng.random() < 0.3:
        plan["targets"] = [str(first)]
    journal = folder / f".{first.name}.rio-{token}.journal"
    journal.write_text(json.dumps(plan))
    return f"journal {journal.name}: {json.dumps(plan)[:200]}"


MUTATIONS = [mutate_header_field, mutate_entry_length, mutate_entry_body, mutate_bytes, mutate_db,
             mutate_folder]
WEIGHTS = [4, 3, 3, 2, 4, 1]
