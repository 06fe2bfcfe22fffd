"""The cost of the writer's fault checks (every write completes or raises, the dataset lock, the
append preflight) on the write benchmark, against the same writer with them switched off, in one run.

    python -m recordio.tools.bench_write_checks [--rows 20000] [--repeats 5]

Workloads: ``cifar`` (rows of 3 KB) and ``jpeg`` (rows of ~100 KB) from ``tools/workloads.py``.
Prints rows/s with the checks and the ratio to the writer without them (1.0 = free).
"""

import contextlib
import os
import tempfile
import time

import recordio
from recordio.mindrecord import fileio
from recordio.mindrecord.write import locks as datalock
from recordio.tools import workloads
from recordio.tools._common import bench_main, bench_row

SCHEMAS = {"cifar": {"image": {"type": "bytes"}, "label": {"type": "int32"}},
           "jpeg": {"image": {"type": "bytes"}, "label": {"type": "int32"}, "file_name": {"type": "string"}}}


@contextlib.contextmanager
def checks_off():
    """The writer as it was before the checks: bare pwrite, no dataset lock."""
    saved = fileio.pwrite_all, datalock.DatasetLock.__init__, datalock.DatasetLock.release

    def bare(fd, data, offset, path=None):
        os.pwrite(fd, data, offset)

    def no_lock(self, first_target):
        self._fd = None

    import recordio.mindrecord.write.append as append_module
    import recordio.mindrecord.write.shard_files as staging_module
    staging_module.pwrite_all = append_module.pwrite_all = bare
    datalock.DatasetLock.__init__, datalock.DatasetLock.release = no_lock, lambda self: None
    try:
        yield
    finally:
        staging_module.pwrite_all = append_module.pwrite_all = saved[0]
        datalock.DatasetLock.__init__, datalock.DatasetLock.release = saved[1], saved[2]


def write_once(folder, name, rows):
    path = os.path.join(folder, f"{name}.mindrecord")
    t0 = time.perf_counter()
    with recordio.FileWriter(path, shard_num=4, overwrite=True) as w:
        w.add_schema(SCHEMAS[name], name)
        for k in range(0, len(rows), 1000):
            w.write_raw_data(rows[k:k + 1000])
    return time.perf_counter() - t0


def measure(name, rows, repeats, folder):
    """(best seconds with the checks, best seconds without), alternating to share the machine's noise."""
    on, off = [], []
    for _ in range(repeats):
        on.append(write_once(folder, name, rows))
        with checks_off():
            off.append(write_once(folder, name, rows))
    return min(on), min(off)


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=20_000, help="cifar rows (jpeg: a tenth; default 20000)")
    parser.add_argument("--repeats", type=int, default=5)


def run(args):
    """One row per workload: rows/s with the checks against the same writer without them (1.0 = free)."""
    rows_out = []
    with tempfile.TemporaryDirectory(prefix="recordio-checks-") as folder:
        for name, n in (("cifar", args.rows), ("jpeg", max(1, args.rows // 10))):
            rows = list(workloads.samples(name, n))
            on, off = measure(name, rows, args.repeats, folder)
            rows_out.append(bench_row(f"{name}, {n} rows: write with the checks", n / on, "rows/s",
                                      "the writer without them", n / off))
    return rows_out


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=48)


if __name__ == "__main__":
    raise SystemExit(main())
