"""MindPage: browsing a dataset by an indexed field, recordio against MindSpore 2.10 in the same run.

A dataset of 100,000 rows (``--rows``) in 4 shards, ``label`` int32 (1,000 categories), ``file_name``
string, a 64-byte blob, written once by recordio (MindSpore reads the same files). Each side runs in
its own process: open a ``MindPage`` and set the category field, then ``read_at_page_by_name`` of 10
rows for 200 category names (pages in the first half of each category) in a fixed random order; the figures are per call.

    python tools/bench_mindpage.py [--rows 100000] [--quick] [--mindspore-python PY] [--json FILE]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from recordio.tools._common import bench_main, bench_row

ROWS, QUICK_ROWS, CATEGORIES, CALLS = 100_000, 10_000, 1000, 200

_LOOP = r"""
import json, sys, time
import numpy as np
side, path, categories, calls, max_page = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
if side == "mindspore":
    from mindspore.mindrecord import MindPage
else:
    from recordio.mindrecord import MindPage
start = time.perf_counter()
page = MindPage(path, 1)
page.category_field = "label"
opened = time.perf_counter() - start
rng = np.random.default_rng(0)
names = [str(int(v)) for v in rng.integers(0, categories, calls)]
pages = rng.integers(0, max_page, calls).tolist()
times, rows = [], 0
for name, number in zip(names, pages):
    start = time.perf_counter()
    rows += len(page.read_at_page_by_name(name, number, 10))
    times.append(time.perf_counter() - start)
print(json.dumps({"open": opened, "median": float(np.median(times)), "mean": float(np.mean(times)), "rows": rows}))
"""


def add_arguments(parser):
    parser.add_argument("--rows", type=int, help=f"rows of the dataset (default {ROWS}; {QUICK_ROWS} with --quick)")
    parser.add_argument("--quick", action="store_true", help="a small dataset (a smoke run, not for quoting)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="a Python with MindSpore 2.10 for the baseline (default: $RECORDIO_MINDSPORE_PYTHON)")


def write_dataset(path, n):
    import recordio

    rng = np.random.default_rng(1)
    labels = rng.integers(0, CATEGORIES, n)
    with recordio.FileWriter(path, 4, overwrite=True) as writer:
        writer.add_schema({"label": {"type": "int32"}, "file_name": {"type": "string"}, "data": {"type": "bytes"}},
                          "mindpage bench")
        writer.add_index(["label", "file_name"])
        for start in range(0, n, 10_000):
            writer.write_raw_data([{"label": int(labels[i]), "file_name": f"{i:08d}.jpg", "data": bytes(64)}
                                   for i in range(start, min(n, start + 10_000))])
    return path + "0"


def time_side(python, side, path, n, calls=CALLS):
    max_page = max(1, n // CATEGORIES // 20)               # every page asked for exists (about half the rows)
    done = subprocess.run([python, "-c", _LOOP, side, path, str(CATEGORIES), str(calls), str(max_page)],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{side} MindPage loop failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _row(name, value, unit, baseline=None, baseline_value=None):
    return bench_row(name, value, unit, baseline, baseline_value, lower_is_better=True)     # times: > 1, recordio is faster


def run(args):
    """Rows ``{name, value, unit, baseline, baseline_value, ratio}``; ratio = MindSpore time / recordio time."""
    n = getattr(args, "rows", None) or (QUICK_ROWS if args.quick else ROWS)
    folder = tempfile.mkdtemp(prefix="mindpage-", dir=getattr(args, "workdir", None))
    try:
        path = write_dataset(os.path.join(folder, "page.mindrecord"), n)
        ours = time_side(sys.executable, "recordio", path, n)
        python = getattr(args, "mindspore_python", None)
        theirs = time_side(python, "mindspore", path, n) if python else {}
        base = "MindSpore 2.10 MindPage" if theirs else None
        return [
            _row(f"MindPage open + category field, {n} rows", ours["open"], "s", base, theirs.get("open")),
            _row(f"read_at_page_by_name, 10 rows, median, {n} rows", ours["median"] * 1e3, "ms", base,
                 theirs.get("median", 0) * 1e3 or None),
            _row(f"read_at_page_by_name, 10 rows, mean, {n} rows", ours["mean"] * 1e3, "ms", base,
                 theirs.get("mean", 0) * 1e3 or None),
        ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
