"""Open cost: a fresh process importing recordio, opening a local dataset and reading its first row.

What every new job, DataLoader worker and ``recordio`` command pays before its first row. Each figure is
the best of ``--repeats`` fresh interpreters (bytecode compiled, data in the page cache), timed inside
the child from after ``import numpy`` (timed apart: ``numpy`` in the note) to after the first row, with
the open's part of it (``import recordio`` and the constructor; the rest is the first row) in the note;
``RSS`` is the child's resident memory after the first row. Datasets: small rows (an int64 id and a 16-byte blob) at each of ``--rows``; contenders:

* ``FileReader(path)[0]``: open + first row;
* ``MindDataset(path, shuffle=True)``: its first row (``create_dict_iterator``, numpy output);
* ``count_rows(path)``: the library side of ``recordio count``.

Goals (issue 43): open + first row <= 30 ms beyond ``import numpy`` at any size, shuffled ``MindDataset`` first row <= 100 ms
at 2M rows, RSS after open <= 60 MB; ``count_rows`` well under the CLI's 100 ms.

    python -m recordio.tools.bench_open [--rows 100000,2000000] [--repeats 5] [--workdir DIR]
"""

import os
import subprocess
import sys
import tempfile

CHILD = r'''
import time, sys
t_np = time.perf_counter()
import numpy
t0 = time.perf_counter()
import recordio
kind, path = sys.argv[1], sys.argv[2]
if kind == "reader":
    r = recordio.FileReader(path)
    t1 = time.perf_counter()
    r[0]
elif kind == "shuffled":
    from recordio.dataset import MindDataset
    it = MindDataset(path, shuffle=True).create_dict_iterator(num_epochs=1, output_numpy=True)
    t1 = time.perf_counter()
    next(it)
else:
    recordio.count_rows(path)
    t1 = time.perf_counter()
t = time.perf_counter() - t0
rss = int(open("/proc/self/statm").read().split()[1]) * 4096
print("OPEN", t, rss, len(sys.modules), t1 - t0, t0 - t_np)
'''


def write(path, n):
    import numpy as np
    import recordio
    with recordio.FileWriter(path, overwrite=True) as w:
        w.add_schema({"id": {"type": "int64"}, "data": {"type": "bytes"}})
        blob = bytes(16)
        step = 100_000
        for lo in range(0, n, step):
            w.write_raw_data([{"id": i, "data": blob} for i in range(lo, min(n, lo + step))])
    del np


def measure(kind, path, repeats):
    best = None
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, kind, path], capture_output=True, text=True, check=True)
        line = next(x for x in out.stdout.splitlines() if x.startswith("OPEN"))
        t, rss, mods, opened, numpy = (float(x) for x in line.split()[1:6])
        if best is None or t < best[0]:
            best = (t, rss, int(mods), opened, numpy)
    return {"seconds": best[0], "rss": best[1], "modules": best[2], "open": best[3], "numpy": best[4]}


def add_arguments(parser):
    parser.add_argument("--rows", default="100000,2000000", help="dataset sizes (comma-separated)")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per figure (the best is kept)")
    parser.add_argument("--workdir", help="where the datasets are written (kept; default: a temporary folder)")


GOALS = {"reader": (0.030, "<= 30 ms"), "shuffled": (0.100, "<= 100 ms at 2M rows"), "count": (0.100, "")}


def run(args):
    from recordio.tools._common import bench_row as row
    import recordio
    root = os.path.dirname(os.path.dirname(recordio.__file__))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "recordio")], check=False,
                   capture_output=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="recordio-open-")
    os.makedirs(workdir, exist_ok=True)
    out = []
    for n in [int(x) for x in args.rows.split(",")]:
        path = os.path.join(workdir, f"open{n}.mindrecord")
        if not os.path.exists(path):
            write(path, n)
        for kind in ("reader", "shuffled", "count"):
            m = measure(kind, path, args.repeats)
            goal, target = GOALS[kind]
            out.append(row(f"open {kind}, {n} rows: seconds / goal", m["seconds"], "s", "goal", goal,
                           target if (kind != "shuffled" or n >= 2_000_000) else "", lower_is_better=True,
                           note=f"open {m['open'] * 1e3:.1f} ms + first row {(m['seconds'] - m['open']) * 1e3:.1f} ms "
                                f"(numpy {m['numpy'] * 1e3:.0f} ms apart), RSS {m['rss'] / 2**20:.1f} MB, "
                                f"{m['modules']} modules"))
    return out


def main(argv=None):
    from recordio.tools._common import bench_main
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
