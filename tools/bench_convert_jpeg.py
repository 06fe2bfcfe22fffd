"""``bench_convert.py --workload jpeg``: the TFRecord and CSV converters on the ``jpeg`` workload.

The rows of ``tools/workloads.py`` (``jpeg``) are written once as a TFRecord file (by the
``tfrecord`` package), as an ImageFolder of the same JPEG bytes and as a CSV of
``label,file_name``; each converter then runs on them, interleaved, best of the repeats.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

ROWS, QUICK_ROWS = 5000, 500

_MS_SCRIPT = r"""
import os, sys, time, glob
tfrecord, csv, folder, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
from mindspore.mindrecord import CsvToMR, TFRecordToMR
def clear(out):
    for p in glob.glob(out + "*"):
        os.remove(p)
def timed(make):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        make().transform()
        best = min(best, time.perf_counter() - start)
    return best
out = {}
try:
    import tensorflow as tf
    features = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64),
                "file_name": tf.io.FixedLenFeature([], tf.string)}
    def make_tf():
        clear(os.path.join(folder, "ms-tf.mindrecord"))
        return TFRecordToMR(tfrecord, os.path.join(folder, "ms-tf.mindrecord"), features, ["image"])
    out["tfrecord"] = timed(make_tf)
except ImportError as exc:
    print("no TensorFlow:", exc, file=sys.stderr)
try:
    def make_csv():
        clear(os.path.join(folder, "ms-csv.mindrecord"))
        return CsvToMR(csv, os.path.join(folder, "ms-csv.mindrecord"))
    out["csv"] = timed(make_csv)
except ImportError as exc:
    print("no pandas:", exc, file=sys.stderr)
print(out)
"""


def make_sources(folder, n):
    """The jpeg workload as ``jpeg.tfrecord``, ``imagefolder/`` and ``jpeg.csv``; returns MB of JPEG bytes."""
    import tfrecord

    from recordio.tools import workloads

    writer = tfrecord.TFRecordWriter(os.path.join(folder, "jpeg.tfrecord"))
    images, total = os.path.join(folder, "imagefolder"), 0
    with open(os.path.join(folder, "jpeg.csv"), "w") as csv:
        csv.write("label,file_name\n")
        for row in workloads.samples("jpeg", n):
            label, name, image = int(row["label"]), row["file_name"], row["image"]
            writer.write({"image": (image, "byte"), "label": (label, "int"), "file_name": (name.encode(), "byte")})
            os.makedirs(os.path.join(images, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(images, name), "wb") as f:
                f.write(image)
            csv.write(f"{label},{name}\n")
            total += len(image)
    writer.close()
    return total / 1e6


def _clear(out):
    folder, stem = os.path.split(out)
    for name in os.listdir(folder):
        if name.startswith(stem):
            os.remove(os.path.join(folder, name))


def _timer(fn, out):
    def once():
        _clear(out)
        start = time.perf_counter()
        fn(out)
        return time.perf_counter() - start
    return once


def recordio_variants(folder):
    from recordio.converters import convert_csv, convert_imagefolder, convert_tfrecord
    from recordio.mindrecord import CsvToMR, FixedLenFeature, TFRecordToMR

    tf, csv, images = (os.path.join(folder, n) for n in ("jpeg.tfrecord", "jpeg.csv", "imagefolder"))
    features = {"image": FixedLenFeature([], "string"), "label": FixedLenFeature([], "int64"),
                "file_name": FixedLenFeature([], "string")}
    options = {"overwrite": True, "quiet": True}
    variants = {}
    for w in (1, 2):
        variants[f"tfrecord-{w}"] = lambda o, w=w: convert_tfrecord(tf, o, workers=w, shard_num=w, **options)
        variants[f"imagefolder-{w}"] = lambda o, w=w: convert_imagefolder(images, o, workers=w, shard_num=w,
                                                                          **options)
    variants["TFRecordToMR"] = lambda o: TFRecordToMR(tf, o, features, ["image"]).transform()
    variants["csv-1"] = lambda o: convert_csv(csv, o, workers=1, shard_num=1, **options)
    variants["CsvToMR"] = lambda o: CsvToMR(csv, o).transform()
    return {name: _timer(fn, os.path.join(folder, f"out-{name}.mindrecord")) for name, fn in variants.items()}


def time_mindspore(python, pythonpath, folder, repeats):
    """``{"tfrecord": s, "csv": s}`` for MindSpore's classes (each only where its dependency imports)."""
    env = dict(os.environ, PYTHONPATH=pythonpath or "")
    done = subprocess.run([python, "-c", _MS_SCRIPT, os.path.join(folder, "jpeg.tfrecord"),
                           os.path.join(folder, "jpeg.csv"), folder, str(repeats)],
                          capture_output=True, text=True, timeout=3600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"MindSpore's converters failed: {done.stderr[-2000:]}")
    import ast
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def run_jpeg(args):
    from recordio.tools.bench_convert import _row

    n = getattr(args, "rows", None) or (QUICK_ROWS if args.quick else ROWS)
    repeats = 1 if args.quick else 3
    folder = tempfile.mkdtemp(prefix="convert-jpeg-", dir=getattr(args, "workdir", None))
    try:
        mb = make_sources(folder, n)
        print(f"  jpeg workload: {n} rows, {mb:.1f} MB of JPEG; load average {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
        variants = recordio_variants(folder)
        best = {name: float("inf") for name in variants}
        for _ in range(repeats):                     # interleaved, so that load changes hit all alike
            for name, once in variants.items():
                best[name] = min(best[name], once())
        ms = {}
        if getattr(args, "mindspore_python", None):
            ms = time_mindspore(args.mindspore_python, getattr(args, "mindspore_pythonpath", ""), folder, repeats)
        return _jpeg_rows(n, best, ms, _row)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _jpeg_rows(n, best, ms, row):
    rate = {name: n / s for name, s in best.items()}
    ms_rate = {name: n / s for name, s in ms.items()}
    rows = []
    for w in (1, 2):
        rows.append(row(f"convert tfrecord, {w} worker(s): rows/s", rate[f"tfrecord-{w}"], "rows/s",
                        f"convert imagefolder, {w} worker(s)", rate[f"imagefolder-{w}"]))
    rows.append(row("TFRecordToMR (recordio): rows/s", rate["TFRecordToMR"], "rows/s",
                    "MindSpore TFRecordToMR" if "tfrecord" in ms_rate else None, ms_rate.get("tfrecord")))
    rows.append(row("convert tfrecord, 2 workers vs MindSpore: rows/s", rate["tfrecord-2"], "rows/s",
                    "MindSpore TFRecordToMR" if "tfrecord" in ms_rate else None, ms_rate.get("tfrecord")))
    rows.append(row("convert csv (label,file_name), 1 worker: rows/s", rate["csv-1"], "rows/s",
                    "MindSpore CsvToMR" if "csv" in ms_rate else None, ms_rate.get("csv")))
    rows.append(row("CsvToMR (recordio): rows/s", rate["CsvToMR"], "rows/s",
                    "MindSpore CsvToMR" if "csv" in ms_rate else None, ms_rate.get("csv")))
    for w in (1, 2):
        rows.append(row(f"convert imagefolder, {w} worker(s): rows/s", rate[f"imagefolder-{w}"], "rows/s"))
    for name, value in ms_rate.items():
        rows.append(row(f"MindSpore {'TFRecordToMR' if name == 'tfrecord' else 'CsvToMR'}: rows/s", value, "rows/s"))
    return rows
