"""MindSpore 2.10 as the oracle (SPEC §3.1): it reads what recordio writes, and writes the same bytes.

MindSpore runs in its own virtualenv (numpy < 2), found through ``RECORDIO_MINDSPORE_PYTHON``;
without it the tier skips. Everything MindSpore has to do runs in **one** subprocess
(``ms_oracle.py``; restarted after a job that crashes MindSpore) started by a module
fixture, which then hands each test its results:

* every kind of dataset recordio writes (every schema type, ``-1`` shapes, several / one /
  no blob field, no raw field, empty values, shards with uneven calls, per-shard written,
  ``parallel_writer=True``, appended, our checksum table in every ``.db``) is read by
  MindSpore's ``FileReader`` and ``MindDataset(shuffle=False)`` - through the first file,
  the last file and a file list, and with column selections, including index-only ones that
  MindSpore answers from our ``.db`` - and must give the rows our ``FileReader`` gives for
  the same source, except for MindSpore's own reader bugs (SPEC §4);
* for seeded random schemas and calls (each a multiple of ``shard_num``), MindSpore's
  ``FileWriter`` and ours produce byte-identical data files and equal ``INDEXES`` /
  ``SHARD_NAME`` rows - written in one go, continued with ``open_for_append``, and with
  ``parallel_writer=True``;
* a dataset MindSpore wrote still reads in MindSpore after ``add_checksums``.
"""

import json
import math
import os
import pathlib
import shutil
import sqlite3

import numpy as np
import pytest

import recordio as rio
from ms_client import run_oracle
from ms_oracle import from_plain, to_plain
from rowcheck import values_equal

pytestmark = pytest.mark.mindspore

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
READERS = ("FileReader", "MindDataset")
NUMPY = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}
HS, PS = 1 << 16, 1 << 15          # small sizes: many pages, raw-page shifts, small sparse files
SEEDS = tuple(range(10))


# --- the MindSpore interpreter ----------------------------------------------------------------------


# --- writing datasets with recordio -----------------------------------------------------------------


def write(path, schema, calls, shard_num=1, index=None, header_size=HS, page_size=PS, parallel=False,
          desc="oracle"):
    with rio.FileWriter(str(path), shard_num=shard_num) as w:
        w.set_header_size(header_size)
        w.set_page_size(page_size)
        w.add_schema(schema, desc)
        if index:
            w.add_index(list(index))
        for call in calls:
            w.write_raw_data(call, parallel_writer=parallel)
    return shard_files(path, shard_num)


def shard_files(path, shard_num):
    if shard_num == 1:
        return [str(path)]
    width = len(str(shard_num - 1))
    return [f"{path}{str(i).rjust(width, '0')}" for i in range(shard_num)]


def _floats(rng, n):
    return [float(x) for x in rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)]


STRINGS = ["", "a", "é" * 40, "€uro 漢字 😀", "x" * 300]


def case_scalar_types(d):
    """Every scalar type, msgpack widths, edge and special values; NaN/inf in indexed floats."""
    edge_i32 = [0, 1, -1, 127, 128, -32, -33, 255, 256, -129, 65535, 65536, -32769, 2**31 - 1, -2**31]
    edge_i64 = [0, -1, 2**32, -2**32 - 1, 2**63 - 1, -2**63, 2**40 + 7, 1 << 20]
    edge_f = [0.0, -0.0, 1.5, 0.1, 1e-45, 1e-300, 1e300, 3.4028234663852886e38, math.nan, math.inf,
              -math.inf, 65504.0, 2.0 ** 60, 1.0 + 1e-9, -2.5, 5e-324]
    rows = []
    for i in range(30):
        f32 = edge_f[i % len(edge_f)]
        f32 = f32 if abs(f32) <= 3.4028234663852886e38 or math.isinf(f32) or math.isnan(f32) else 1.0
        rows.append({"id": i, "i32": np.int32(edge_i32[i % 15]) if i % 2 else edge_i32[i % 15],
                     "i64": edge_i64[i % len(edge_i64)], "f32": np.float32(f32) if i % 3 == 0 else f32,
                     "f64": edge_f[(i + 3) % len(edge_f)], "s": STRINGS[i % len(STRINGS)],
                     "b": bytes([i % 256]) * (i * 37 % 600 + 1)})
    schema = {"id": {"type": "int64"}, "i32": {"type": "int32"}, "i64": {"type": "int64"},
              "f32": {"type": "float32"}, "f64": {"type": "float64"}, "s": {"type": "string"},
              "b": {"type": "bytes"}}
    return write(d / "scalar_types.mindrecord", schema, [rows[:7], rows[7:8], rows[8:]])


def case_arrays_fixed(d):
    rng = np.random.default_rng(1)
    schema = {"label": {"type": "int32"}, "ai32": {"type": "int32", "shape": [2, 3]},
              "ai64": {"type": "int64", "shape": [4]}, "af32": {"type": "float32", "shape": [2, 2]},
              "af64": {"type": "float64", "shape": [3]}}
    rows = [{"label": i, "ai32": rng.integers(-2**31, 2**31, (2, 3), dtype=np.int32),
             "ai64": rng.integers(-2**63, 2**63 - 1, 4, dtype=np.int64) >> int(rng.integers(0, 60)),
             "af32": rng.standard_normal((2, 2)).astype(np.float32), "af64": rng.standard_normal(3)}
            for i in range(25)]
    return write(d / "arrays_fixed.mindrecord", schema, [rows[:10], rows[10:]])


def case_arrays_variable(d):
    """-1 shapes, zero-length arrays included (MindDataset's garbage-scalar bug)."""
    rng = np.random.default_rng(2)
    schema = {"id": {"type": "int64"}, "vi32": {"type": "int32", "shape": [-1]},
              "vi64": {"type": "int64", "shape": [-1, 2]}, "vf32": {"type": "float32", "shape": [-1]},
              "vf64": {"type": "float64", "shape": [3, -1]}}
    rows = []
    for i in range(20):
        k = i % 5
        rows.append({"id": i, "vi32": rng.integers(-1000, 1000, k, dtype=np.int32),
                     "vi64": rng.integers(-2**62, 2**62, (k, 2), dtype=np.int64),
                     "vf32": np.array([math.nan, math.inf, -1.5, 0.25][:k % 4], np.float32),
                     "vf64": rng.standard_normal((3, k))})
    return write(d / "arrays_variable.mindrecord", schema, [rows[:3], rows[3:]])


def case_multi_blob(d):
    rng = np.random.default_rng(3)
    schema = {"id": {"type": "int64"}, "name": {"type": "string"}, "img1": {"type": "bytes"},
              "img2": {"type": "bytes"}, "mask": {"type": "bytes"}, "emb": {"type": "float32", "shape": [8]}}
    rows = [{"id": i, "name": f"n{i}", "img1": rng.bytes(int(rng.integers(1, 4000))),
             "img2": rng.bytes(int(rng.integers(1, 300))), "mask": bytes([i % 2]),
             "emb": rng.standard_normal(8).astype(np.float32)} for i in range(30)]
    return write(d / "multi_blob.mindrecord", schema, [rows[:16], rows[16:]], index=["id"])


def case_no_blob(d):
    rng = np.random.default_rng(4)
    schema = {"id": {"type": "int64"}, "label": {"type": "int32"}, "score": {"type": "float64"},
              "tag": {"type": "string"}}
    scores = _floats(rng, 40)
    rows = [{"id": i, "label": i % 7, "score": scores[i] if i % 4 else float(i), "tag": f"t{i}"}
            for i in range(40)]
    return write(d / "no_blob.mindrecord", schema, [rows[:5], rows[5:]])


def case_no_raw(d):
    rng = np.random.default_rng(5)
    schema = {"img": {"type": "bytes"}, "vec": {"type": "float32", "shape": [-1]}}
    rows = [{"img": rng.bytes(100 + i), "vec": rng.standard_normal(i % 4).astype(np.float32)}
            for i in range(12)]
    return write(d / "no_raw.mindrecord", schema, [rows])


def case_empty_values(d):
    """Empty strings, empty bytes and zero-length arrays with several blob fields."""
    schema = {"id": {"type": "int64"}, "s": {"type": "string"}, "b1": {"type": "bytes"},
              "b2": {"type": "bytes"}, "ia": {"type": "int32", "shape": [-1]},
              "fa": {"type": "float64", "shape": [-1]}}
    empty = {"s": "", "b1": b"", "b2": b"", "ia": np.zeros(0, np.int32), "fa": np.zeros(0)}
    rows = [dict(empty, id=0), dict(empty, id=1, s="x", b1=b"a", ia=np.array([1, -1, 300], np.int32)),
            dict(empty, id=2, b2=b"bb", fa=np.array([1.5, -2.5])), dict(empty, id=3)]
    return write(d / "empty_values.mindrecord", schema, [rows[:1], rows[1:]])


def case_single_blob_empty(d):
    """One blob field holding b'' (stored as a zero-length entry: SPEC §4)."""
    schema = {"label": {"type": "int32"}, "img": {"type": "bytes"}}
    rows = [{"label": i, "img": b"" if i % 2 == 0 else b"\x00" * i} for i in range(8)]
    return write(d / "single_blob_empty.mindrecord", schema, [rows[:2], rows[2:3], rows[3:]])


def case_single_int_array(d):
    rng = np.random.default_rng(6)
    schema = {"label": {"type": "int32"}, "seq": {"type": "int64", "shape": [-1]}}
    rows = [{"label": i, "seq": rng.integers(-2**40, 2**40, i + 1, dtype=np.int64) >> (i % 40)}
            for i in range(15)]
    return write(d / "single_int_array.mindrecord", schema, [rows])


def _matrix_rows(n, seed):
    rng = np.random.default_rng(seed)
    return [{"id": i, "label": i % 5, "name": f"name-{i}", "score": float(rng.random()),
             "img": rng.bytes(int(rng.integers(200, 6000))),
             "vec": rng.standard_normal(i % 3 + 1).astype(np.float32)} for i in range(n)]


MATRIX_SCHEMA = {"id": {"type": "int64"}, "label": {"type": "int32"}, "name": {"type": "string"},
                 "score": {"type": "float64"}, "img": {"type": "bytes"},
                 "vec": {"type": "float32", "shape": [-1]}}


def case_shards4(d):
    """Four shards, calls that are not multiples of 4 (our deterministic split); several pages."""
    rows = _matrix_rows(43, 7)
    files = write(d / "shards4.mindrecord", MATRIX_SCHEMA, [rows[:10], rows[10:13], rows[13:]],
                  shard_num=4, index=["label"])
    return [files[0], files[-1], files[::-1]]


def case_multi_page(d):
    """Page size 32 KiB with rows of up to 6 KB: many blob pages, shifted raw row groups."""
    rows = _matrix_rows(60, 8)
    return write(d / "multi_page.mindrecord", MATRIX_SCHEMA, [rows[:6], rows[6:8], rows[8:9], rows[9:]])


def case_long_values(d):
    schema = {"s": {"type": "string"}, "b": {"type": "bytes"}, "n": {"type": "int64"}}
    rows = [{"s": "ü" * 40000, "b": b"\x01" * 200000, "n": 1}, {"s": "z" * 70000, "b": b"\x02" * 5, "n": 2},
            {"s": "y" * 300, "b": b"q" * 70000, "n": 3}]
    return write(d / "long_values.mindrecord", schema, [rows], page_size=1 << 20)


def case_per_shard(d):
    """ShardWriter parts written separately, then finalize_shards."""
    rows = _matrix_rows(21, 9)
    path = d / "per_shard.mindrecord"
    for shard, part in enumerate((rows[:9], rows[9:10], rows[10:])):
        with rio.ShardWriter(str(path), shard_id=shard, shard_num=3, schema=MATRIX_SCHEMA, desc="parts",
                             index_fields=["label", "name"], header_size=HS, page_size=PS) as w:
            w.write_raw_data(part[:4])
            w.write_raw_data(part[4:])
    rio.finalize_shards(str(path), 3)
    files = shard_files(path, 3)
    return [files[0], files[2], files]


def case_parallel(d):
    """parallel_writer=True: whole calls round-robin into independent files."""
    rows = _matrix_rows(25, 10)
    files = write(d / "parallel.mindrecord", MATRIX_SCHEMA, [rows[:5], rows[5:7], rows[7:15], rows[15:]],
                  shard_num=3, parallel=True)
    return files + [files]


def case_digit_field(d):
    """A field name starting with a digit: stored and read, but (as in MindSpore) never indexed."""
    schema = {"1a": {"type": "int32"}, "img": {"type": "bytes"}, "b2": {"type": "string"}}
    rows = [{"1a": i, "img": bytes([i]) * 3, "b2": f"r{i}"} for i in range(6)]
    return write(d / "digit_field.mindrecord", schema, [rows])


def case_appended(d):
    """A dataset grown with FileWriter.open_for_append (when the writer has it)."""
    if not hasattr(rio.FileWriter, "open_for_append"):
        raise NotImplementedError("FileWriter.open_for_append does not exist yet")
    rows = _matrix_rows(30, 11)
    files = write(d / "appended.mindrecord", MATRIX_SCHEMA, [rows[:10]], shard_num=2)
    writer = rio.FileWriter.open_for_append(files[0])
    writer.write_raw_data(rows[10:17])
    writer.write_raw_data(rows[17:])
    writer.commit()
    return [files[0], files[1], files]


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


# --- random schemas and calls (byte-identity oracle) ---------------------------------------------------

SCALAR_TYPES = ("int32", "int64", "float32", "float64", "string", "bytes")
ARRAY_TYPES = ("int32", "int64", "float32", "float64")
SHAPES = ([-1], [3], [2, -1], [-1, 2], [2, 3])
CHARS = list("abcXYZ019 _-\t\n") + ["é", "ü", "€", "漢", "字", "😀"]


def random_schema(rng):
    schema = {}
    for j in range(int(rng.integers(1, 8))):
        name = f"{'abcxyz'[int(rng.integers(6))]}{j}"
        if rng.random() < 0.35:
            schema[name] = {"type": str(rng.choice(ARRAY_TYPES)), "shape": list(SHAPES[int(rng.integers(5))])}
        else:
            schema[name] = {"type": str(rng.choice(SCALAR_TYPES))}
    return schema


def _random_int(rng, bits):
    width = min(bits, int(rng.choice([4, 7, 8, 15, 16, 31, 32, 63])))
    value = int(rng.integers(0, 1 << width))
    return -value - 1 if rng.random() < 0.4 else value


def _random_float(rng, type_):
    kind = int(rng.integers(5))
    if kind == 0:
        return float(rng.choice([0.0, -0.0, 1.0, -2.5, 65504.0]))
    if kind == 1:
        return float(int(rng.integers(-10**6, 10**6)))
    value = float(rng.standard_normal() * 10.0 ** int(rng.integers(-30, 30)))
    if type_ == "float32" and kind == 2:
        return np.float32(value)                 # numpy scalars go through .item() in both writers
    return np.float64(value) if kind == 3 and type_ == "float64" else value


def _random_array(rng, spec, allow_empty):
    k = int(rng.integers(0 if allow_empty else 1, 6))
    shape = [k if s == -1 else s for s in spec["shape"]]
    n = math.prod(shape)
    if spec["type"] in ("int32", "int64"):
        bits = 31 if spec["type"] == "int32" else 63
        values = [_random_int(rng, bits) for _ in range(n)]
        return np.array(values, dtype=spec["type"]).reshape(shape)
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)
    values[rng.random(n) < 0.1] = rng.choice([math.nan, math.inf, -math.inf])
    return values.astype(spec["type"]).reshape(shape)


def random_value(rng, spec, several_blobs):
    type_ = spec["type"]
    if "shape" in spec:
        return _random_array(rng, spec, several_blobs)
    if type_ in ("int32", "int64"):
        value = _random_int(rng, 31 if type_ == "int32" else 63)
        return NUMPY[type_](value) if rng.random() < 0.2 else value
    if type_ in ("float32", "float64"):
        return _random_float(rng, type_)
    length = int(rng.choice([0, 1, 5, 31, 32, 200, 256, 1000]))
    if type_ == "string":
        return "".join(rng.choice(CHARS, length))
    return rng.bytes(max(length * 3, 0 if several_blobs else 1))


def random_dataset(seed):
    """Schema, index fields, shard_num, page size and calls (each a multiple of shard_num)."""
    rng = np.random.default_rng(1000 + seed)
    schema = random_schema(rng)
    raw = sorted(n for n, s in schema.items() if "shape" not in s and s["type"] != "bytes")
    index = None
    if raw and rng.random() < 0.5:
        index = [str(x) for x in rng.permutation(raw)[:int(rng.integers(1, len(raw) + 1))]]
    several = sum("shape" in s or s["type"] == "bytes" for s in schema.values()) > 1
    shard_num = int(rng.integers(1, 5))
    calls = [[{n: random_value(rng, s, several) for n, s in schema.items()}
              for _ in range(shard_num * int(rng.integers(1, 9)))] for _ in range(int(rng.integers(1, 5)))]
    return {"schema": schema, "index": index, "shard_num": shard_num, "calls": calls,
            "page_size": int(rng.choice([1 << 15, 1 << 16])), "desc": f"random {seed} ✓"}


def write_random(folder, seed, spec, append=False):
    """Our side of a random dataset; ``append``: the first call written, the others appended."""
    path = folder / f"random{seed}.mindrecord"
    calls, later = (spec["calls"][:1], append_calls(spec)) if append else (spec["calls"], [])
    files = write(path, spec["schema"], calls, spec["shard_num"], spec["index"], HS, spec["page_size"],
                  desc=spec["desc"])
    if later:
        writer = rio.FileWriter.open_for_append(files[0])
        for call in later:
            writer.write_raw_data(call)
        writer.commit()
    return files


def append_calls(spec):
    return spec["calls"][1:] or [spec["calls"][0][::-1]]


def ms_write_job(folder, seed, spec, append=False):
    calls, later = (spec["calls"][:1], append_calls(spec)) if append else (spec["calls"], [])
    return {"op": "write", "path": str(folder / f"random{seed}.mindrecord"), "shard_num": spec["shard_num"],
            "header_size": HS, "page_size": spec["page_size"], "schema": spec["schema"], "desc": spec["desc"],
            "index": spec["index"], "calls": [to_plain(c) for c in calls],
            "append_calls": [to_plain(c) for c in later], "parallel_writer": False}


def parallel_spec():
    """Three files, four calls, MindSpore's default sizes (its parallel writer ignores set sizes)."""
    rows = _matrix_rows(12, 12)
    return {"schema": MATRIX_SCHEMA, "index": None, "shard_num": 3, "desc": "parallel",
            "calls": [rows[:3], rows[3:4], rows[4:9], rows[9:]]}


# --- the one MindSpore run -------------------------------------------------------------------------


class Oracle:
    """What MindSpore made of everything: ``reads[key]`` = [(source, result)], ``writes[key]``."""

    def __init__(self, folder):
        self.folder = folder
        self.built, self.errors, self.reads, self.writes, self.random = {}, {}, {}, {}, {}
        self.jobs, self.owners = [], []

    def read(self, key, source, columns=None):
        self.jobs.append({"op": "read", "source": source, "columns": columns})
        self.owners.append(("read", key, (source, columns)))

    def write(self, key, job, files):
        self.jobs.append(job)
        self.owners.append(("write", key, files))

    def run(self, python):
        for (kind, key, source), answer in zip(self.owners, run_oracle(python, self.jobs, self.folder)):
            if kind == "read":
                self.reads.setdefault(key, []).append((source[0], answer, source[1]))
            else:
                self.writes[key] = (source, answer)


# Column selections: a mix of raw and blob fields (data pages), and only index fields, which
# MindSpore then reads from the .db alone (FORMAT.md §6.3) - so our .db values must be right.
COLUMN_READS = {"multi_blob": (["name", "img1", "emb"], ["id"]),
                "scalar_types": (["b", "f64", "i32"], ["id", "i32", "i64", "s"]),
                "shards4": (["label"], ["vec", "img"]),
                "digit_field": (["b2", "img"], ["1a"])}
APPEND_SEEDS = (0, 3, 6, 9)


def _build_cases(oracle):
    for name, build in CASES.items():
        (oracle.folder / name).mkdir()
        try:
            sources = build(oracle.folder / name)
        except Exception as exc:  # reported by that case's test; the others still run
            oracle.errors[name] = exc
            continue
        oracle.built[name] = sources
        for source in sources:
            oracle.read(name, source)
        for columns in COLUMN_READS.get(name, ()):
            oracle.read(("columns", name, tuple(columns)), sources[0], columns)


def _build_random(oracle):
    for side in ("ours", "ms", "ours_append", "ms_append", "ours_parallel", "ms_parallel", "ours_parallel_ints",
                 "ms_parallel_ints"):
        (oracle.folder / side).mkdir()
    for seed in SEEDS:
        spec = oracle.random[seed] = random_dataset(seed)
        files = write_random(oracle.folder / "ours", seed, spec)
        oracle.write(seed, ms_write_job(oracle.folder / "ms", seed, spec), files)
        oracle.read(f"random{seed}", files[0])
    for seed in APPEND_SEEDS:
        spec = oracle.random[seed]
        files = write_random(oracle.folder / "ours_append", seed, spec, append=True)
        job = ms_write_job(oracle.folder / "ms_append", seed, spec, append=True)
        oracle.write(("append", seed), job, files)


def parallel_int_spec():
    """parallel_writer=True with compressed int arrays: each file's header holds its own compression_size."""
    rng = np.random.default_rng(5)
    rows = [{"ids": rng.integers(0, 2 ** (8 * (1 + i % 4)), 5 + i, dtype=np.int64), "label": np.int32(i)}
            for i in range(12)]
    return {"schema": {"ids": {"type": "int64", "shape": [-1]}, "label": {"type": "int32"}}, "index": None,
            "shard_num": 3, "desc": "parallel ints", "calls": [rows[:2], rows[2:3], rows[3:8], rows[8:]]}


def _build_parallel(oracle):
    for key, spec in (("parallel", parallel_spec()), ("parallel_ints", parallel_int_spec())):
        path = oracle.folder / f"ours_{key}" / "par.mindrecord"
        with rio.FileWriter(str(path), shard_num=3) as w:
            w.add_schema(spec["schema"], spec["desc"])
            for call in spec["calls"]:
                w.write_raw_data(call, parallel_writer=True)
        job = {"op": "write", "path": str(oracle.folder / f"ms_{key}" / "par.mindrecord"), "shard_num": 3,
               "schema": spec["schema"], "desc": spec["desc"], "calls": [to_plain(c) for c in spec["calls"]],
               "parallel_writer": True}
        oracle.write(key, job, shard_files(path, 3))


def _build_checksummed_golden(oracle):
    """A dataset MindSpore wrote, given our checksum table by ``add_checksums``."""
    from recordio.mindrecord.read.verification import add_checksums

    folder = oracle.folder / "golden_checksums"
    shutil.copytree(GOLDEN / "matrix_s4_index", folder)
    first = str(folder / "matrix_s4_index.mindrecord0")
    add_checksums(first)
    oracle.built["golden_checksums"] = [first]
    oracle.read("golden_checksums", first)


@pytest.fixture(scope="module")
def oracle(mindspore_python, tmp_path_factory):
    result = Oracle(tmp_path_factory.mktemp("oracle"))
    _build_cases(result)
    _build_random(result)
    _build_parallel(result)
    _build_checksummed_golden(result)
    result.run(mindspore_python)
    return result


# --- comparing MindSpore's rows with ours ---------------------------------------------------------


def _intified(expected, got):
    """MindSpore FileReader bug: a float within 1e-7 of an integer comes back as a Python int
    (and one beyond the int64 range as -2**63)."""
    if type(got) is not int or not np.isfinite(expected):
        return False
    nearest = round(float(expected))
    if abs(float(expected) - nearest) > 1e-7:
        return False
    return got == (nearest if -2**63 <= nearest < 2**63 else -2**63)


def filereader_value(field, got, expected):
    """(normalised value, known MindSpore bug or None) for a MindSpore FileReader value."""
    if field["type"] in ("float32", "float64") and "shape" not in field and _intified(expected, got):
        return expected, "FileReader float->int"
    if "shape" in field or field["type"] in ("string", "bytes"):
        return got, None
    if type(got) not in (int, float):
        return got, None
    return NUMPY[field["type"]](got), None


def minddataset_value(field, got, expected):
    """(normalised value, known bug or None) for a MindDataset value (always a numpy array)."""
    if not isinstance(got, np.ndarray):
        return got, None
    if "shape" in field:
        if expected.size == 0 and got.ndim == 0:
            return expected, "MindDataset zero-length array"
        return got, None
    if field["type"] == "bytes":
        data = got.tobytes() if got.dtype.kind == "S" and got.shape == (1,) else got
        if expected == b"" and data == b"\x00" and got.dtype.itemsize == 1:
            return expected, "numpy cannot hold b'' (S1)"
        return data, None
    if field["type"] == "string":
        return (str(got[()]) if got.dtype.kind == "U" and got.ndim == 0 else got), None
    if got.ndim == 0 and got.dtype == np.dtype(field["type"]):
        return got[()], None
    return got, None


NORMALISE = {"FileReader": filereader_value, "MindDataset": minddataset_value}


def compare(reader, schema, got_rows, expected_rows):
    """Mismatches (text) and known MindSpore bugs hit (counts) between MindSpore's rows and ours."""
    problems, known = [], {}
    if len(got_rows) != len(expected_rows):
        return [f"{reader}: {len(got_rows)} rows, recordio reads {len(expected_rows)}"], known
    for i, (got, exp) in enumerate(zip(got_rows, expected_rows)):
        if sorted(got) != sorted(exp):
            problems.append(f"{reader} row {i}: fields {sorted(got)}, recordio {sorted(exp)}")
            continue
        for name, expected in exp.items():
            value, bug = NORMALISE[reader](schema[name], got[name], expected)
            if bug:
                known[bug] = known.get(bug, 0) + 1
            elif not values_equal(value, expected):
                problems.append(f"{reader} row {i} field {name!r}: MindSpore {value!r}, "
                                f"recordio {expected!r}")
    return problems, known


def ours(source, columns=None):
    with rio.FileReader(source, columns=columns) as reader:
        return list(reader), reader.schema()


def check_read(source, answer, columns=None):
    """Assert MindSpore's two readers agree with ours on ``source``; return the known bugs hit."""
    expected, schema = ours(source, columns)
    assert expected, f"{source}: the case holds no rows"
    known_all = {}
    assert "error" not in answer, f"MindSpore on {source}: {answer['error']}"
    for reader in READERS:
        got = answer[reader]
        assert not isinstance(got, dict), f"MindSpore {reader} failed on {source}: {got['error']}"
        problems, known = compare(reader, schema, from_plain(got), expected)
        assert not problems, f"{source}:\n" + "\n".join(problems[:20])
        known_all.update({f"{reader}: {k}": v for k, v in known.items()})
    assert answer["MindDataset_size"] == len(expected)
    return known_all


# --- tests: MindSpore reads what recordio writes -----------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_mindspore_reads_recordio_dataset(oracle, case):
    if case in oracle.errors:
        exc = oracle.errors[case]
        if isinstance(exc, NotImplementedError):
            pytest.skip(str(exc))
        raise exc
    for source, answer, _ in oracle.reads[case]:
        check_read(source, answer)


def test_known_mindspore_bugs_are_the_ones_hit(oracle):
    """The allowances above are used, and only by the cases that have those values."""
    hits = {case: {} for case in oracle.reads}
    for case, reads in oracle.reads.items():
        if case in KNOWN_READ_FAILURES:
            continue
        for source, answer, columns in reads:
            hits[case].update(check_read(source, answer, columns))
    assert "FileReader: FileReader float->int" in hits["scalar_types"]
    assert "MindDataset: MindDataset zero-length array" in hits["arrays_variable"]
    assert "MindDataset: MindDataset zero-length array" in hits["empty_values"]
    for case in ("arrays_fixed", "multi_blob", "long_values", "single_int_array"):
        assert hits[case] == {}, f"{case}: unexpected allowances used: {hits[case]}"


@pytest.mark.parametrize("seed", SEEDS)
def test_mindspore_reads_random_dataset(oracle, seed):
    ((source, answer, _),) = oracle.reads[f"random{seed}"]
    check_read(source, answer)


# (case, columns) reads MindSpore is known to fail on, with the reason; none at present. (Fields whose
# name starts with a digit are never indexed: MindSpore's index-only read builds unquoted SQL for them.)
KNOWN_READ_FAILURES = {}


def _columns_param(case, columns):
    reason = KNOWN_READ_FAILURES.get(("columns", case, tuple(columns)))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, columns, marks=marks, id=f"{case}-{','.join(columns)}")


@pytest.mark.parametrize("case,columns", [_columns_param(c, cols) for c, sel in COLUMN_READS.items()
                                          for cols in sel])
def test_mindspore_reads_selected_columns(oracle, case, columns):
    """Raw and blob subsets, and index-only selections that MindSpore answers from our .db."""
    ((source, answer, _),) = oracle.reads[("columns", case, tuple(columns))]
    check_read(source, answer, columns)


def test_mindspore_reads_its_dataset_after_add_checksums(oracle):
    ((source, answer, _),) = oracle.reads["golden_checksums"]
    assert "RECORDIO_CHECKSUMS" in _tables(source + ".db")
    check_read(source, answer)
    assert rio.verify(source).ok


def _tables(db):
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_every_dataset_carries_our_checksum_table(oracle):
    """MindSpore read all of them above, so it ignores the extra table."""
    for case, sources in oracle.built.items():
        flat = [s for src in sources for s in (src if isinstance(src, list) else [src])]
        for path in set(flat):
            assert "RECORDIO_CHECKSUMS" in _tables(path + ".db"), f"{case}: {path}.db has no checksums"


def _header(path):
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(length))


@pytest.mark.parametrize("case", sorted(CASES))
def test_page_shard_ids_match_shard_addresses(tmp_path, case):
    """MindSpore files a data file's pages under page["shard_id"], which must be the file's position
    in its own shard_addresses (FORMAT.md §4), or it segfaults. Needs no MindSpore: runs everywhere."""
    try:
        sources = CASES[case](tmp_path)
    except NotImplementedError as exc:
        pytest.skip(str(exc))
    for path in {s for src in sources for s in (src if isinstance(src, list) else [src])}:
        header = _header(path)
        position = header["shard_addresses"].index(os.path.basename(path))
        assert {p["shard_id"] for p in header["page"] or []} <= {position}, \
            f"{os.path.basename(path)}: pages name shard {sorted({p['shard_id'] for p in header['page']})}, " \
            f"the file is shard {position} of {header['shard_addresses']}"


def test_parallel_writer_files_are_independent(oracle):
    """MindSpore opens each parallel-written file alone and sees only that file's calls."""
    reads = oracle.reads["parallel"]
    singles = [(s, a) for s, a, _ in reads if not isinstance(s, list)]
    assert all("error" not in a for _, a in singles), [a["error"] for _, a in singles if "error" in a]
    assert [len(from_plain(a["FileReader"])) for _, a in singles] == [15, 2, 8]


# --- tests: MindSpore writes the same bytes -----------------------------------------------------------


def _db_rows(db, table):
    conn = sqlite3.connect(db)
    try:
        order = " ORDER BY ROW_ID" if table == "INDEXES" else ""
        return conn.execute(f"SELECT * FROM {table}{order}").fetchall()
    finally:
        conn.close()


def assert_same_files(files, ms_folder):
    """Our data files equal MindSpore's byte for byte; INDEXES and SHARD_NAME rows are equal."""
    for ours_path in files:
        name = os.path.basename(ours_path)
        ms_path = str(ms_folder / name)
        with open(ours_path, "rb") as a, open(ms_path, "rb") as b:
            mine, theirs = a.read(), b.read()
        if mine != theirs:
            at = next((i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y),
                      min(len(mine), len(theirs)))
            raise AssertionError(f"{name}: {len(mine)} bytes, MindSpore {len(theirs)}; first difference at "
                                 f"byte {at}: ours {mine[at:at + 40]!r}, MindSpore {theirs[at:at + 40]!r}")
        for table in ("INDEXES", "SHARD_NAME"):
            ours_rows, ms_rows = _db_rows(ours_path + ".db", table), _db_rows(ms_path + ".db", table)
            assert ours_rows == ms_rows, f"{name}.db {table}"


def _written(oracle, key):
    files, answer = oracle.writes[key]
    assert "error" not in answer, f"MindSpore FileWriter failed: {answer['error']}"
    return files


@pytest.mark.parametrize("seed", SEEDS)
def test_same_bytes_as_mindspore_writer(oracle, seed):
    assert_same_files(_written(oracle, seed), oracle.folder / "ms")


@pytest.mark.parametrize("seed", APPEND_SEEDS)
def test_same_bytes_as_mindspore_after_open_for_append(oracle, seed):
    assert_same_files(_written(oracle, ("append", seed)), oracle.folder / "ms_append")


@pytest.mark.parametrize("key", ["parallel", "parallel_ints"])
def test_same_bytes_as_mindspore_parallel_writer(oracle, key):
    assert_same_files(_written(oracle, key), oracle.folder / f"ms_{key}")


def test_random_datasets_cover_the_format(oracle):
    """The seeds exercise several shards, several calls, every type, indexes and no blob/raw fields."""
    specs = oracle.random.values()
    assert {s["shard_num"] for s in specs} >= {1, 2, 3}
    types = {f["type"] + ("[]" if "shape" in f else "") for s in specs for f in s["schema"].values()}
    assert types >= {"int32", "int64", "float32", "float64", "string", "bytes", "int32[]", "float32[]"}
    assert any(s["index"] for s in specs) and any(s["index"] is None for s in specs)
    assert any(len(s["calls"]) > 1 for s in specs)
