"""Benchmark of conversion: an ImageFolder of ~2,000 real-photo JPEGs to MindRecord.

The JPEGs are derived from scikit-image's bundled photos (astronaut, coffee, chelsea,
rocket, ...) by random crops, flips, resizes and re-encodes at several qualities, one
class folder per photo. Measured on the same files, page cache warm, best of the repeats:

* ``recordio convert imagefolder`` (:func:`recordio.converters.convert_imagefolder`) with 1
  and 2 workers (as many shards as workers), rows/s and MB/s of source JPEG bytes;
* a plain Python loop calling MindSpore 2.10's ``FileWriter`` on the same files (read each
  file, ``write_raw_data`` every 256 rows, ``commit``), run in MindSpore's own virtualenv
  (``--mindspore-python`` / ``$RECORDIO_MINDSPORE_PYTHON``; skipped without it);
* copying the files one by one with ``shutil.copyfile`` (the I/O floor of any converter).

Target: >= 2x MindSpore's loop.

With ``--workload jpeg`` it measures instead the TFRecord and CSV converters on the ``jpeg``
workload (``tools/workloads.py``: 5,000 rows of ~100 KB JPEG, label, file name), written
once as a TFRecord file by the ``tfrecord`` package, as an ImageFolder (one folder per label,
the same JPEG bytes) and as a CSV (``label,file_name``: a CSV cannot hold the image bytes):

* ``recordio convert tfrecord`` with 1 and 2 workers, and ``TFRecordToMR`` (one process,
  MindSpore's FileWriter calls), against ``recordio convert imagefolder`` with 1 and 2
  workers on the same images, in the same run;
* MindSpore 2.10's ``TFRecordToMR`` (needs TensorFlow) and ``CsvToMR`` (needs pandas) on the
  same files, when MindSpore's Python imports them (``--mindspore-pythonpath`` /
  ``$RECORDIO_MINDSPORE_PYTHONPATH`` adds folders to its path);
* ``recordio convert csv`` and ``CsvToMR`` on the CSV.

    python tools/bench_convert.py [--files 2000] [--quick] [--mindspore-python PY] [--json FILE]
    python tools/bench_convert.py --workload jpeg [--rows 5000] [--mindspore-pythonpath DIRS]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from recordio.tools._common import bench_main, bench_row

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry",
          "retina", "colorwheel")
FILES, QUICK_FILES = 2000, 200


def add_arguments(parser):
    parser.add_argument("--files", type=int, default=None, help=f"JPEGs to convert (default {FILES})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_FILES} files, one repeat (a smoke run)")
    parser.add_argument("--workdir", default=None, help="where to write (default: a temporary folder)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="a Python with MindSpore 2.10 for the baseline (default: $RECORDIO_MINDSPORE_PYTHON)")
    parser.add_argument("--device", default="cpu", help="unused by this suite (accepted for the dispatcher)")
    parser.add_argument("--workload", choices=("photos", "jpeg"), default="photos",
                        help="photos: the ImageFolder suite (default); jpeg: TFRecord and CSV on the jpeg workload")
    parser.add_argument("--rows", type=int, default=None, help="rows of the jpeg workload (default 5000)")
    parser.add_argument("--mindspore-pythonpath", default=os.environ.get("RECORDIO_MINDSPORE_PYTHONPATH", ""),
                        help="PYTHONPATH for MindSpore's Python (TensorFlow, pandas; default "
                             "$RECORDIO_MINDSPORE_PYTHONPATH)")


def make_jpegs(root, n, seed=0):
    """Write ``n`` JPEGs derived from scikit-image's photos under ``root/<photo>/``; returns their bytes."""
    import cv2
    import numpy as np
    import skimage.data

    rng = np.random.default_rng(seed)
    photos = {name: cv2.cvtColor(getattr(skimage.data, name)(), cv2.COLOR_RGB2BGR) for name in PHOTOS}
    total = 0
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        image = photos[name]
        h, w = image.shape[:2]
        ch, cw = int(rng.integers(h // 3, h + 1)), int(rng.integers(w // 3, w + 1))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        crop = image[y:y + ch, x:x + cw][:, ::-1] if i % 2 else image[y:y + ch, x:x + cw]
        scale = float(rng.uniform(0.6, 1.0))
        crop = cv2.resize(crop, (max(32, int(cw * scale)), max(32, int(ch * scale))), interpolation=cv2.INTER_AREA)
        ok, buf = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(75, 96))])
        os.makedirs(os.path.join(root, name), exist_ok=True)
        with open(os.path.join(root, name, f"{i:05d}.jpg"), "wb") as f:
            f.write(buf.tobytes())
        total += len(buf)
    return total


def _best(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        best = min(best, fn())
    return best


def time_recordio(src, folder, workers):
    from recordio.converters import convert_imagefolder

    out = os.path.join(folder, f"rio-{workers}.mindrecord")

    def once():
        start = time.perf_counter()
        convert_imagefolder(src, out, workers=workers, shard_num=workers, overwrite=True, quiet=True)
        return time.perf_counter() - start
    return once


def time_copy(src, folder):
    def once():
        dst = os.path.join(folder, "copy")
        shutil.rmtree(dst, ignore_errors=True)
        start = time.perf_counter()
        for cls in sorted(os.listdir(src)):
            os.makedirs(os.path.join(dst, cls))
            for name in sorted(os.listdir(os.path.join(src, cls))):
                shutil.copyfile(os.path.join(src, cls, name), os.path.join(dst, cls, name))
        return time.perf_counter() - start
    return once


_MS_LOOP = r"""
import os, sys, time
src, out, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
from mindspore.mindrecord import FileWriter
best = float("inf")
for _ in range(repeats):
    for p in (out, out + ".db"):
        if os.path.exists(p):
            os.remove(p)
    start = time.perf_counter()
    writer = FileWriter(out, shard_num=1, overwrite=True)
    writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"},
                       "file_name": {"type": "string"}}, "imagefolder")
    writer.add_index(["label"])
    rows = []
    for label, cls in enumerate(sorted(os.listdir(src))):
        for name in sorted(os.listdir(os.path.join(src, cls))):
            with open(os.path.join(src, cls, name), "rb") as f:
                rows.append({"image": f.read(), "label": label, "file_name": cls + "/" + name})
            if len(rows) == 256:
                writer.write_raw_data(rows)
                rows = []
    if rows:
        writer.write_raw_data(rows)
    writer.commit()
    best = min(best, time.perf_counter() - start)
print(best)
"""


def time_mindspore(python, src, folder, repeats):
    out = os.path.join(folder, "ms.mindrecord")
    done = subprocess.run([python, "-c", _MS_LOOP, src, out, str(repeats)], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"MindSpore loop failed: {done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


_row = bench_row


def run(args):
    """Run the conversion benchmark; returns rows ``{name, value, unit, baseline, baseline_value, ratio}``."""
    if getattr(args, "workload", "photos") == "jpeg":
        from recordio.tools.bench_convert_jpeg import run_jpeg
        return run_jpeg(args)
    n = getattr(args, "files", None) or (QUICK_FILES if args.quick else FILES)
    repeats = 1 if args.quick else 3
    folder = tempfile.mkdtemp(prefix="convert-", dir=getattr(args, "workdir", None))
    try:
        src = os.path.join(folder, "imagefolder")
        mb = make_jpegs(src, n) / 1e6
        print(f"  imagefolder: {n} JPEGs, {mb:.1f} MB; load average {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
        variants = {1: time_recordio(src, folder, 1), 2: time_recordio(src, folder, 2),
                    "copy": time_copy(src, folder)}
        python = getattr(args, "mindspore_python", None)
        if python:
            variants["ms"] = lambda: time_mindspore(python, src, folder, 1)
        best = {name: float("inf") for name in variants}
        for _ in range(repeats):                      # interleaved, so that load changes hit all alike
            for name, once in variants.items():
                best[name] = min(best[name], once())
        return _rows(n, mb, {1: best[1], 2: best[2]}, best["copy"], best.get("ms"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rows(n, mb, seconds, copy, ms):
    rows = []
    for w, s in seconds.items():
        label = f"imagefolder convert, {w} worker{'s' if w > 1 else ''}"
        if ms is not None:
            rows.append(_row(f"{label}: rows/s", n / s, "rows/s", "MindSpore FileWriter loop", n / ms))
        else:
            rows.append(_row(f"{label}: rows/s", n / s, "rows/s"))
        rows.append(_row(f"{label}: MB/s", mb / s, "MB/s", "copying the files", mb / copy))
    if ms is not None:
        rows.append(_row("MindSpore FileWriter loop: rows/s", n / ms, "rows/s"))
    rows.append(_row("copying the files: rows/s", n / copy, "rows/s"))
    return rows


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
