"""Storage benchmark: write and read the ``cifar``, ``jpeg`` and ``arrays`` workloads.

Measured in one run, on the same rows (``tools/workloads.py``, seeded):

* recordio's ``FileWriter`` (MindSpore's default header/page sizes, calls of ``BATCH`` rows,
  commit included) - and the same with ``checksums=False``, ``fsync=False`` to price them;
* the same payload bytes written to / read from one flat file (the page-cache copy limit;
  the write is fsync-ed like the dataset's);
* ``FileReader`` sequential (rows as dicts), with ``verify=True``, and random ``reader[i]``;
* ``FileReader.read_batch`` in batches of 256 (columns into numpy), in order and shuffled, on a reader
  opened once (as a training loop holds it; the rows it is compared with are read from the same
  open reader, and Hugging Face's dataset is loaded once too), each also
  as a fraction of the flat read of the same bytes (the limit), against Hugging Face ``datasets``
  reading the same rows from Arrow (``with_format("numpy")``, batches of 256) and MindSpore's
  ``MindDataset(shuffle=False).batch(256)`` (best of 1, 2 and 4 workers, as many as there are CPUs);
* MindSpore 2.10's ``FileWriter``, ``FileReader`` and ``MindDataset(shuffle=False)`` in a
  subprocess when ``--mindspore-python`` names a Python that has it;
* ``recordio count`` on a 1M-row dataset (tiny schema), the whole process timed.

Targets: write >= 5x MindSpore on cifar and arrays, >= 0.7x the flat write on jpeg; sequential
read >= 10x MindSpore on cifar, >= 0.5x the flat read on jpeg; random access >= 80k rows/s on
cifar; ``recordio count`` < 0.1 s; checksums cost <= 10% of write throughput.

    python tools/bench_storage.py [--quick] [--workdir DIR] [--mindspore-python PY] [--json FILE]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from recordio.tools._common import bench_main, bench_row
from recordio.tools.storage_contenders import (MINDSPORE_REPEATS, hf_dataset, mindspore_storage, payload, read_flat,
                                               read_hf, write_flat)

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"cifar": 50_000, "jpeg": 5_000, "arrays": 20_000}
QUICK_SIZES = {"cifar": 5_000, "jpeg": 300, "arrays": 2_000}
BATCH = {"cifar": 1000, "jpeg": 100, "arrays": 1000}
COUNT_ROWS, QUICK_COUNT_ROWS = 1_000_000, 100_000
RANDOM_READS = 50_000
MINDSPORE_COUNT_QUOTED = 3.25          # s, `FileReader(...).len()` process, SPEC §3.4
SCHEMAS = {
    "cifar": {"image": {"type": "bytes"}, "label": {"type": "int32"}},
    "jpeg": {"image": {"type": "bytes"}, "label": {"type": "int32"}, "file_name": {"type": "string"}},
    "arrays": {"bbox": {"type": "float32", "shape": [-1, 4]}, "ids": {"type": "int64", "shape": [-1]},
               "score": {"type": "float64"}, "label": {"type": "int32"}, "tag": {"type": "string"}},
}


# --- workloads ------------------------------------------------------------------------------------


def workload_rows(name, n):
    """The rows of a workload (``recordio/tools/workloads.py``) and where they came from."""
    from recordio.tools import workloads
    return list(workloads.samples(name, n)), "tools/workloads.py"


# --- timing -----------------------------------------------------------------------------------------


def best_seconds(fn, repeats, setup=None):
    """The fastest of ``repeats`` runs of ``fn()`` (seconds); ``setup()`` runs untimed before each."""
    best = float("inf")
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def remove_dataset(path):
    """Delete ``path`` and its siblings (shards, ``.db``), so that a timed write starts clean."""
    for name in os.listdir(os.path.dirname(path)):
        if name.startswith(os.path.basename(path)):
            os.unlink(os.path.join(os.path.dirname(path), name))


def write_recordio(path, name, rows, **options):
    from recordio import FileWriter

    with FileWriter(path, overwrite=True, **options) as writer:
        writer.add_schema(SCHEMAS[name], name)
        for start in range(0, len(rows), BATCH[name]):
            writer.write_raw_data(rows[start:start + BATCH[name]])


def read_sequential(path, verify=None):
    from recordio import FileReader

    with FileReader(path, verify=verify) as reader:
        for _ in reader:
            pass


def read_batches(reader, order=None, batch=256):
    """Every row of an open reader through ``read_batch`` in batches of ``batch`` (in ``order`` when given)."""
    n = len(reader)
    for start in range(0, n, batch):
        reader.read_batch(slice(start, start + batch) if order is None else order[start:start + batch])


def read_rows(reader):
    """Every row of an open reader as dicts (the row-wise path the batched read is compared with)."""
    for _ in reader:
        pass


def random_reader(path, count):
    """An open reader and a function doing ``count`` random ``reader[i]`` (the open is not timed)."""
    from recordio import FileReader

    reader = FileReader(path)
    order = np.random.default_rng(0).permutation(len(reader))[:count].tolist()

    def run():
        for i in order:
            reader[i]
    return reader, run, len(order)


# --- one workload -------------------------------------------------------------------------------------


row = bench_row


WRITE_VARIANTS = (("plain", {}), ("no_checksums", {"checksums": False}), ("no_fsync", {"fsync": False}),
                  ("neither", {"checksums": False, "fsync": False}))


def interleaved_best(tasks, repeats):
    """Best seconds of each ``label: (fn, setup)`` task, the tasks taking turns in every repeat.

    Taking turns spreads load from other processes on the machine over all tasks instead
    of skewing the ratio between two of them.
    """
    best = {}
    for _ in range(repeats):
        for label, (fn, setup) in tasks.items():
            seconds = best_seconds(fn, 1, setup)
            best[label] = min(best.get(label, seconds), seconds)
    return best


def measure_writes(folder, name, rows, repeats):
    """Best seconds of each write variant and of the flat write; leaves the default dataset."""
    path = os.path.join(folder, f"{name}.mindrecord")
    flat = os.path.join(folder, f"{name}.flat")
    clean = lambda: remove_dataset(path)  # noqa: E731
    tasks = {label: (lambda options=options: write_recordio(path, name, rows, **options), clean)
             for label, options in WRITE_VARIANTS}
    tasks["flat"] = (lambda: write_flat(flat, rows), lambda: remove_dataset(flat))
    times = interleaved_best(tasks, repeats)
    remove_dataset(path)
    write_recordio(path, name, rows)
    return path, flat, times


def measure_reads(path, flat, repeats, hf=None):
    """Best seconds of sequential reads (with and without verify), the flat read, random reads, batched
    columnar reads (in order and shuffled) and Hugging Face's batched Arrow read (``hf``: its folder)."""
    read_sequential(path)                                # warm: page cache and imports
    read_flat(flat)
    reader, random_reads, count = random_reader(path, RANDOM_READS)
    order = np.random.default_rng(0).permutation(len(reader))
    with reader:
        random_reads()
        read_rows(reader)                                # warm: the locations, loaded once per open
        tasks = {"sequential": (lambda: read_sequential(path), None),
                 "verify": (lambda: read_sequential(path, verify=True), None),
                 "unchecked": (lambda: read_sequential(path, verify=False), None),
                 "flat": (lambda: read_flat(flat), None),
                 "random": (random_reads, None),
                 "rows_open": (lambda: read_rows(reader), None),
                 "batch": (lambda: read_batches(reader), None),
                 "batch_shuffled": (lambda: read_batches(reader, order), None)}
        if hf is not None:
            import datasets
            arrow = datasets.load_from_disk(hf).with_format("numpy")
            read_hf(arrow)
            tasks["hf"] = (lambda: read_hf(arrow), None)
        times = interleaved_best(tasks, repeats)
    times["random_rows"] = count
    return times


def workload_rows_out(name, n, mb, w, r, ms):
    """Result rows of one workload from its timings (``ms`` None without MindSpore)."""
    write_target = {"cifar": ">= 5x MindSpore", "arrays": ">= 5x MindSpore", "jpeg": ">= 0.7x flat"}[name]
    read_target = {"cifar": ">= 10x MindSpore", "jpeg": ">= 0.5x flat"}.get(name, "")
    out = [row(f"{name} write", n / w["plain"], "rows/s"),
           row(f"{name} write MB/s vs flat file", mb / w["plain"], "MB/s", "flat write", mb / w["flat"],
               write_target if name == "jpeg" else ""),
           row(f"{name} write, checksums on vs off", n / w["plain"], "rows/s", "checksums=False",
               n / w["no_checksums"], "ratio >= 0.9"),
           row(f"{name} write, fsync on vs off", n / w["plain"], "rows/s", "fsync=False", n / w["no_fsync"]),
           row(f"{name} write, checksums+fsync on vs off", n / w["plain"], "rows/s", "both off",
               n / w["neither"]),
           row(f"{name} read sequential", n / r["sequential"], "rows/s"),
           row(f"{name} read MB/s vs flat file", mb / r["sequential"], "MB/s", "flat read", mb / r["flat"],
               read_target if name == "jpeg" else ""),
           row(f"{name} read, verify=True vs default", n / r["verify"], "rows/s", "default", n / r["sequential"]),
           row(f"{name} read, page checks (default) vs off", n / r["sequential"], "rows/s", "verify=False",
               n / r["unchecked"], "ratio >= 0.95"),
           row(f"{name} random reader[i]", r["random_rows"] / r["random"], "rows/s", None, None,
               ">= 80k rows/s" if name == "cifar" else "")]
    out += batch_rows_out(name, n, mb, r, ms)
    if ms:
        out += [row(f"{name} write vs MindSpore FileWriter", n / w["plain"], "rows/s", "MindSpore FileWriter",
                    n / ms["write_s"], write_target if name != "jpeg" else ""),
                row(f"{name} read vs MindSpore FileReader", n / r["sequential"], "rows/s", "MindSpore FileReader",
                    ms["filereader_rows"] / ms["filereader_s"], read_target if name == "cifar" else ""),
                row(f"{name} read vs MindSpore MindDataset", n / r["sequential"], "rows/s",
                    "MindSpore MindDataset(shuffle=False)", ms["minddataset_rows"] / ms["minddataset_s"])]
    return out


BATCH_TARGETS = {"cifar": (">= 1M rows/s", ">= 2x HF", ">= 20x MindSpore", ">= 500k rows/s"),
                 "jpeg": ("", "", "", ""), "arrays": ("", "", "", "")}


def batch_rows_out(name, n, mb, r, ms):
    """Rows of the batched columnar read (``read_batch``, batches of 256): rates, each also as a fraction
    of the flat read of the same bytes (the limit), and against HF datasets and MindSpore's batch."""
    limit = n / r["flat"]
    rate, target = n / r["batch"], BATCH_TARGETS[name]
    out = [row(f"{name} read_batch(256) in order / flat limit", rate, "rows/s", "flat read", limit, target[0]),
           row(f"{name} read_batch(256) MB/s / flat limit", mb / r["batch"], "MB/s", "flat read", mb / r["flat"],
               ">= 0.8x flat" if name == "jpeg" else ""),
           row(f"{name} read_batch(256) shuffled / flat limit", n / r["batch_shuffled"], "rows/s", "flat read",
               limit, target[3]),
           row(f"{name} read_batch(256) vs dict rows", rate, "rows/s", "FileReader rows, same open reader",
               n / r["rows_open"], ">= 3x" if name == "arrays" else "")]
    if "hf" in r:
        out += [row(f"{name} read_batch(256) vs HF datasets numpy", rate, "rows/s", "HF with_format(numpy)",
                    n / r["hf"], target[1]),
                row(f"{name} HF datasets numpy / flat limit", n / r["hf"], "rows/s", "flat read", limit)]
    if ms and "minddataset_batched_s" in ms:
        theirs = ms["minddataset_batched_rows"] / ms["minddataset_batched_s"]
        out += [row(f"{name} read_batch(256) vs MindSpore batch(256)", rate, "rows/s",
                    "MindSpore MindDataset.batch(256), best of 1/2/4 workers (up to the CPUs)", theirs, target[2]),
                row(f"{name} MindSpore batch(256) / flat limit", theirs, "rows/s", "flat read", limit)]
    return out


def bench_workload(folder, name, n, repeats, mindspore_python):
    rows, origin = workload_rows(name, n)
    mb = sum(len(payload(r)) for r in rows) / 1e6
    print(f"  {name}: {len(rows)} rows, {mb:.1f} MB payload ({origin})", file=sys.stderr, flush=True)
    path, flat, w = measure_writes(folder, name, rows, repeats)
    hf = hf_dataset(folder, name, rows)
    r = measure_reads(path, flat, repeats, hf)
    remove_dataset(path)
    os.unlink(flat)
    if hf is not None:
        shutil.rmtree(hf, ignore_errors=True)
    ms = None
    if mindspore_python:
        ms = mindspore_storage(mindspore_python, folder, name, rows, min(repeats, MINDSPORE_REPEATS), SCHEMAS[name],
                               BATCH[name])
    return workload_rows_out(name, len(rows), mb, w, r, ms)


# --- recordio count -----------------------------------------------------------------------------------


def build_count_dataset(path, n):
    from recordio import FileWriter

    remove_dataset(path)
    with FileWriter(path, overwrite=True, fsync=False) as writer:
        writer.add_schema({"label": {"type": "int32"}}, "count")
        for start in range(0, n, 100_000):
            writer.write_raw_data([{"label": i % 10} for i in range(start, min(n, start + 100_000))])


def count_command(path):
    script = os.path.join(os.path.dirname(sys.executable), "recordio")
    if os.path.isfile(script):
        return [script, "count", path]
    return [sys.executable, "-c", "import sys, recordio; print(recordio.count_rows(sys.argv[1]))", path]


def time_process(command, repeats, expect):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0 or done.stdout.split()[-1] != str(expect):
            raise RuntimeError(f"{command[0]} failed or miscounted: {done.stdout[-200:]} {done.stderr[-2000:]}")
    return best


_MS_COUNT = "import sys; from mindspore.mindrecord import FileReader; print(FileReader(sys.argv[1]).len())"


def bench_count(folder, n, mindspore_python):
    path = os.path.join(folder, "count.mindrecord")
    build_count_dataset(path, n)
    ours = time_process(count_command(path), 10, n)
    if mindspore_python:
        theirs, label = time_process([mindspore_python, "-c", _MS_COUNT, path], 2, n), "MindSpore FileReader.len()"
    else:
        theirs, label = MINDSPORE_COUNT_QUOTED, "MindSpore (quoted, SPEC)"
    remove_dataset(path)
    return [row(f"recordio count, {n} rows, whole process", ours, "s", label, theirs, "< 0.1 s")]


# --- entry points -------------------------------------------------------------------------------------


def run(args):
    """Run the storage benchmark; returns rows ``{name, value, unit, baseline, baseline_value, ratio}``."""
    sizes = QUICK_SIZES if args.quick else SIZES
    repeats = getattr(args, "repeats", None) or (1 if args.quick else 5)
    from recordio.mindrecord import codec
    print(f"  load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; integer codec: "
          f"{codec.BACKEND}", file=sys.stderr)
    folder = tempfile.mkdtemp(prefix="storage-", dir=args.workdir)
    try:
        results = []
        parts = _parts(getattr(args, "parts", None))
        for name in [p for p in parts if p in SIZES]:
            results += bench_workload(folder, name, sizes[name], repeats, args.mindspore_python)
        if "count" in parts:
            results += bench_count(folder, QUICK_COUNT_ROWS if args.quick else COUNT_ROWS, args.mindspore_python)
        print(f"  load average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PARTS = ("cifar", "jpeg", "arrays", "count")


def _parts(text):
    names = PARTS if not text else [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in names if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    return names


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true", help="small workloads (a smoke run, not for quoting)")
    parser.add_argument("--workdir", default=None, help="where datasets are written (default: a temporary folder)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="a Python with MindSpore 2.10 for the baselines (default: $RECORDIO_MINDSPORE_PYTHON)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per measurement, the best kept (default 5; 1 with --quick)")
    parser.add_argument("--parts", default=None,
                        help=f"comma-separated parts to run (default: all of {', '.join(PARTS)})")
    parser.add_argument("--device", default="cpu", help="unused by this suite (accepted for the dispatcher)")


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=48, check=lambda args: _parts(args.parts))

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.exit(main())
