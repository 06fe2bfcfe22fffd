"""Scale benchmark: what opening, shuffling, reading and writing cost as a dataset grows.

Tiny rows (``{label: int32, id: int64}``), 4 shards, written in calls of 100,000 rows, at each size of
``--scale-rows`` (default 1M and 10M; ``--quick``: 20k and 200k). Every figure comes from a fresh
process (``python -c``), recordio beside MindSpore 2.10 (when ``--mindspore-python`` names it) in
the same run:

* write: seconds, rows/s and peak RSS of the writing process (and the peak RSS at 100k rows, the
  bound's reference); MindSpore's ``FileWriter`` on the same rows;
* open + first row: seconds from ``FileReader(path)`` to the first row, and the process's RSS growth
  over the imports; MindSpore's ``FileReader`` + first row of ``get_next``;
* first row of a globally shuffled ``MindDataset`` epoch;
* random single-row reads: ``reader[i]`` over a shuffled order of (up to 1M) rows, the first pass
  (locations loaded on demand) and a second pass;
* 8 forked workers reading random rows: the summed proportional set size (PSS) of the location
  cache over the 9 processes, against the cache's resident size in one process.

Targets (issue 21): open + first row <= 50 ms and RSS after open <= 60 MB at 10M rows; shuffled first
row <= 100 ms; workers' PSS <= 1.2x one process's; writer peak RSS at 10M <= 1.2x at 100k. Each
figure is printed with its growth factor from the first size to the last.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from recordio.tools._common import bench_row

SIZES, QUICK_SIZES = (1_000_000, 10_000_000), (20_000, 200_000)
WRITER_BASE, QUICK_WRITER_BASE = 100_000, 10_000
SHARDS, BATCH = 4, 100_000
RANDOM_READS = 1_000_000
WORKERS, WORKER_READS = 8, 50_000

_WRITE = r"""
import json, sys, time
from recordio import FileWriter
path, n, shards, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
start = time.perf_counter()
with FileWriter(path, shards, overwrite=True, fsync=False) as w:
    w.add_schema({"label": {"type": "int32"}, "id": {"type": "int64"}}, "scale")
    for s in range(0, n, batch):
        w.write_raw_data([{"label": i % 10, "id": i} for i in range(s, min(n, s + batch))])
print(json.dumps({"s": time.perf_counter() - start,      # VmHWM: this process's own peak (ru_maxrss counts the parent's)
                  "peak_mb": next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024}))
"""

_MS_WRITE = r"""
import json, sys, time
from mindspore.mindrecord import FileWriter
path, n, shards, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
start = time.perf_counter()
w = FileWriter(path, shards, overwrite=True)
w.add_schema({"label": {"type": "int32"}, "id": {"type": "int64"}}, "scale")
for s in range(0, n, batch):
    w.write_raw_data([{"label": i % 10, "id": i} for i in range(s, min(n, s + batch))])
w.commit()
print(json.dumps({"s": time.perf_counter() - start,      # VmHWM: this process's own peak (ru_maxrss counts the parent's)
                  "peak_mb": next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024}))
"""

_RSS = 'def rss():\n    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20\n'

_OPEN = _RSS + r"""
import json, sys, time
import numpy, msgpack, recordio.mindrecord.read.reader
before = rss()
start = time.perf_counter()
r = recordio.FileReader(sys.argv[1])
r[0]
print(json.dumps({"s": time.perf_counter() - start, "rss_mb": rss() - before, "rows": len(r)}))
"""

_MS_OPEN = _RSS + r"""
import json, sys, time
from mindspore.mindrecord import FileReader
before = rss()
start = time.perf_counter()
r = FileReader(sys.argv[1])
next(r.get_next())
print(json.dumps({"s": time.perf_counter() - start, "rss_mb": rss() - before}))
"""

_SHUFFLED = r"""
import json, sys, time
from recordio.dataset import MindDataset, Shuffle
start = time.perf_counter()
ds = MindDataset(sys.argv[1], shuffle=Shuffle.GLOBAL)          # every column: not the index-column path
next(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
print(json.dumps({"s": time.perf_counter() - start}))
"""

_RANDOM = r"""
import json, sys, time
from recordio import FileReader
from recordio.dataset.order.shuffle import global_order
r = FileReader(sys.argv[1])
count = min(len(r), int(sys.argv[2]))
order = global_order(len(r), 0, 0)[0:count].tolist()
out = {}
for label in ("first", "second"):
    start = time.perf_counter()
    for i in order:
        r[i]
    out[label] = count / (time.perf_counter() - start)
print(json.dumps(out))
"""

_WORKERS_SCRIPT = r"""
import ctypes, json, multiprocessing as mp, sys
import numpy as np
from recordio import FileReader

def pool_range(reader):
    mm = reader.shard_set.locations.pool._map
    start = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    return start, start + len(mm)

def pool_kb(pid, lo, hi, field):
    total, inside = 0, False
    for line in open(f"/proc/{pid}/smaps"):
        head = line.split()
        if "-" in head[0] and len(head) > 4 and ":" not in head[0]:
            a, b = (int(x, 16) for x in head[0].split("-"))
            inside = a < hi and b > lo
        elif inside and head[0] == field + ":":
            total += int(head[1])
    return total

def work(reader, rows, ready, done):
    for i in rows:
        reader[int(i)]
    ready.put(1)
    done.get()

path, workers, reads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reader = FileReader(path)
lo, hi = pool_range(reader)
ctx = mp.get_context("fork")
ready, done = ctx.Queue(), ctx.Queue()
rng = np.random.default_rng(0)
procs = [ctx.Process(target=work, args=(reader, rng.integers(0, len(reader), reads), ready, done))
         for _ in range(workers)]
for p in procs:
    p.start()
for _ in procs:
    ready.get()
pids = [p.pid for p in procs] + [mp.current_process().pid]
pss = sum(pool_kb(pid, lo, hi, "Pss") for pid in pids)
rss = max(pool_kb(pid, lo, hi, "Rss") for pid in pids)
for _ in procs:
    done.put(1)
for p in procs:
    p.join()
print(json.dumps({"pss_mb": pss / 1024, "one_mb": rss / 1024}))
"""


def _run(python, script, *args, timeout=7200):
    done = subprocess.run([python, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark step failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


_row = bench_row


def measure(folder, n, ms_python):
    """Every figure at ``n`` rows (recordio, and MindSpore when given)."""
    path = os.path.join(folder, f"scale{n}.mindrecord")
    py = sys.executable
    out = {"write": _run(py, _WRITE, path, n, SHARDS, BATCH)}
    first = path + "0"
    out["open"] = _run(py, _OPEN, first)
    out["shuffled"] = _run(py, _SHUFFLED, first)
    out["random"] = _run(py, _RANDOM, first, RANDOM_READS)
    out["workers"] = _run(py, _WORKERS_SCRIPT, first, WORKERS, WORKER_READS)
    if ms_python:
        out["ms_open"] = _run(ms_python, _MS_OPEN, first)
        ms_path = os.path.join(folder, f"ms{n}.mindrecord")
        out["ms_write"] = _run(ms_python, _MS_WRITE, ms_path, n, SHARDS, BATCH)
        _remove(folder, f"ms{n}.mindrecord")
    _remove(folder, f"scale{n}.mindrecord")
    return out


def _remove(folder, prefix):
    for name in os.listdir(folder):
        if name.startswith(prefix):
            os.unlink(os.path.join(folder, name))


def rows_at(n, m, base_peak):
    """Result rows of one size."""
    tag = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"
    w, o = m["write"], m["open"]
    out = [_row(f"scale {tag}: open + first row", o["s"], "s", "MindSpore FileReader + first row",
                m["ms_open"]["s"] if "ms_open" in m else None, target="<= 0.05 s at 10M"),
           _row(f"scale {tag}: RSS after open", o["rss_mb"], "MB", "MindSpore FileReader",
                m["ms_open"]["rss_mb"] if "ms_open" in m else None, target="<= 60 MB"),
           _row(f"scale {tag}: first row of a shuffled MindDataset", m["shuffled"]["s"], "s", None, None,
                target="<= 0.1 s at 10M"),
           _row(f"scale {tag}: random reader[i], first pass", m["random"]["first"], "rows/s"),
           _row(f"scale {tag}: random reader[i], second pass", m["random"]["second"], "rows/s"),
           _row(f"scale {tag}: {WORKERS} workers' location PSS vs one process", m["workers"]["pss_mb"], "MB",
                "one process's resident cache", m["workers"]["one_mb"], target="<= 1.2x"),
           _row(f"scale {tag}: write", n / w["s"], "rows/s", "MindSpore FileWriter",
                n / m["ms_write"]["s"] if "ms_write" in m else None),
           _row(f"scale {tag}: writer peak RSS", w["peak_mb"], "MB", "writer peak at the reference size",
                base_peak, target="<= 1.2x at 10M")]
    if "ms_write" in m:
        out.append(_row(f"scale {tag}: writer peak RSS vs MindSpore", w["peak_mb"], "MB", "MindSpore FileWriter",
                        m["ms_write"]["peak_mb"]))
    return out


GROWTH = ("open + first row", "RSS after open", "first row of a shuffled MindDataset", "random reader[i], second pass",
          "location PSS", "writer peak RSS")


def growth_rows(first, last, n0, n1):
    """Each figure at the largest size against the smallest (the goal: about 1, but the write time)."""
    out = []
    for a, b in zip(first, last):
        key = a["name"].split(": ", 1)[1]
        if any(key.startswith(g) or g in key for g in GROWTH) and a["value"]:
            out.append(_row(f"scale growth {n0:,} -> {n1:,}: {key}", b["value"] / a["value"], "x", None, None, target="~1"))
    return out


def run(args):
    sizes = _sizes(getattr(args, "scale_rows", None)) or (QUICK_SIZES if args.quick else SIZES)
    base = QUICK_WRITER_BASE if args.quick else WRITER_BASE
    folder = tempfile.mkdtemp(prefix="scale-", dir=args.workdir)
    print(f"  load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", file=sys.stderr)
    try:
        base_peak = _run(sys.executable, _WRITE, os.path.join(folder, "base.mindrecord"), base, SHARDS,
                         BATCH)["peak_mb"]
        _remove(folder, "base.mindrecord")
        per_size = []
        for n in sizes:
            print(f"  {n:,} rows ...", file=sys.stderr, flush=True)
            per_size.append(rows_at(n, measure(folder, n, args.mindspore_python), base_peak))
        results = [r for rows in per_size for r in rows]
        if len(sizes) > 1:
            results += growth_rows(per_size[0], per_size[-1], sizes[0], sizes[-1])
        print(f"  load average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sizes(text):
    if not text:
        return None
    return tuple(int(float(s)) for s in str(text).split(",") if s.strip())
