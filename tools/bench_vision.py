"""Benchmark of the vision ops and their offloaded tail (``recordio bench --suite vision``).

1. **Host pipeline** on the ``jpeg`` workload (500x375 JPEGs written to a MindRecord file):
   Decode -> RandomResizedCrop(224) -> RandomHorizontalFlip -> RandomColorAdjust(0.4, 0.4, 0.4, 0.1)
   -> Normalize -> HWC2CHW, batch 64, 2 workers (threads, and separately processes); images/s and
   process CPU time per image. Compared side by side, on the same file, with MindSpore 2.10 when a
   MindSpore python is given (``--mindspore-python`` or ``$RECORDIO_MINDSPORE_PYTHON``), runs
   alternating; otherwise with the figure recorded on the reference machine (245 images/s).
2. **Augmentation tail** on 224x224 uint8 batches of 64 (RandomHorizontalFlip, RandomColorAdjust,
   Normalize, HWC2CHW): the host path (map with 2 workers, then batch) against the offloaded
   ``OffloadTail`` on cpu and, when CUDA is present, on cuda (target there: >= 10x the host path).

3. **The image-training chains** side by side with MindSpore, torchvision v2, DALI (CPU), FFCV and the
   decode limit, per core, all cores and as training scripts run them (:mod:`recordio.tools.bench_vision_chains`;
   ``--no-chains`` leaves them out).

Every measurement runs ``--repeat`` times and keeps the best run (the machine may be shared).

    python tools/bench_vision.py [--images 2048] [--repeat 3] [--device cuda] [--mindspore-python PY]
        [--chain-images 512] [--torchvision-python PY] [--dali-python PY] [--ffcv-python PY] [--no-chains]
        [--json FILE]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from recordio.tools._common import bench_main, bench_row

BATCH, WORKERS, SIZE = 64, 2, 224
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
RECORDED_MINDSPORE = 245.0          # images/s, MindSpore 2.10 on the reference machine (issue 5)

MINDSPORE_SCRIPT = r"""
import json, sys, time
import mindspore.dataset as ds
import mindspore.dataset.vision as vision
path, batch, workers, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = ds.MindDataset(path, columns_list=["image", "label"], shuffle=False, num_parallel_workers=workers)
ops = [vision.Decode(), vision.RandomResizedCrop(224), vision.RandomHorizontalFlip(),
       vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1),
       vision.Normalize([123.675, 116.28, 103.53], [58.395, 57.12, 57.375]), vision.HWC2CHW()]
data = data.map(ops, input_columns="image", num_parallel_workers=workers).batch(batch, drop_remainder=True)
images, start = 0, None
for k, row in enumerate(data.create_dict_iterator(num_epochs=1, output_numpy=True)):
    if k == warmup:
        start, cpu, images = time.perf_counter(), time.process_time(), 0
    images += row["image"].shape[0]
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"images_per_s": images / wall, "cpu_ms_per_image": 1e3 * cpu / images}))
"""


def add_arguments(parser):
    parser.add_argument("--images", type=int, default=1024, help="jpeg rows to write and read (default 1024)")
    parser.add_argument("--tail-batches", type=int, default=12, help="timed batches of the tail (default 12)")
    parser.add_argument("--device", default=None, help="torch device for the offloaded tail (default: cuda if "
                                                       "present, and always cpu)")
    parser.add_argument("--workdir", default=None, help="where to write the dataset (default: a temp folder)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="python with MindSpore 2.10 for the side-by-side baseline")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the best is kept "
                                                               "(default 3)")
    parser.add_argument("--quick", action="store_true", help="small run (a smoke test, not for quoting)")
    parser.add_argument("--chain-images", type=int, default=512, help="photos per chain measurement (default 512)")
    for name, what in (("torchvision", "torchvision"), ("dali", "nvidia-dali-cuda120"), ("ffcv", "ffcv")):
        parser.add_argument(f"--{name}-python", default=os.environ.get(f"RECORDIO_{name.upper()}_PYTHON"),
                            help=f"python with {what} (default $RECORDIO_{name.upper()}_PYTHON, else "
                                 f"~/.cache/recordio-bench-venvs/{name}/bin/python where it exists)")
    parser.add_argument("--no-chains", action="store_true", help="leave out the image-training chains")


def _jpeg_samples(n):
    from recordio.tools import workloads
    return list(workloads.samples("jpeg", n))


def _write(path, n):
    from recordio import FileWriter
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}, "file_name": {"type": "string"}},
                     "jpeg")
        w.write_raw_data(_jpeg_samples(n))


def _host_ops():
    from recordio import vision
    return [vision.Decode(), vision.RandomResizedCrop(SIZE), vision.RandomHorizontalFlip(),
            vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1), vision.Normalize(MEAN, STD), vision.HWC2CHW()]


def _rate(batches, warmup):
    """(images/s, process CPU ms per image) over ``batches`` (dicts with 'image'), after ``warmup``."""
    images, start = 0, None
    for k, row in enumerate(batches):
        if k == warmup:
            start, cpu, images = time.perf_counter(), time.process_time(), 0
        images += len(row["image"])
    if start is None:
        raise ValueError("too few batches to time: use more --images")
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"images_per_s": images / wall, "cpu_ms_per_image": 1e3 * cpu / images}


def host_pipeline(path, warmup, processes=False):
    from recordio import MindDataset
    data = MindDataset(path, columns_list=["image", "label"], shuffle=False, num_parallel_workers=WORKERS)
    data = data.map(_host_ops(), input_columns="image", num_parallel_workers=WORKERS,
                    python_multiprocessing=processes)
    data = data.batch(BATCH, drop_remainder=True)
    return _rate(data.create_dict_iterator(num_epochs=1, output_numpy=True), warmup)


def mindspore_pipeline(python, path, warmup):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GLOG_v="3")
    out = subprocess.run([python, "-c", MINDSPORE_SCRIPT, path, str(BATCH), str(WORKERS), str(warmup)],
                         capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"MindSpore baseline failed ({python}): {out.stderr[-2000:]}")
    return json.loads(lines[-1])


def _tail_ops():
    from recordio import vision
    return [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1),
            vision.Normalize(MEAN, STD), vision.HWC2CHW()]


class _Images:
    """Random-access source of 224x224x3 uint8 images (already decoded and cropped)."""

    def __init__(self, n):
        import numpy as np
        rng = np.random.default_rng(0)
        self.bank = rng.integers(0, 256, (16, SIZE, SIZE, 3), dtype=np.uint8)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (self.bank[i % len(self.bank)],)


def tail_host(batches):
    from recordio import GeneratorDataset
    data = GeneratorDataset(_Images((batches + 2) * BATCH), ["image"], shuffle=False)
    data = data.map(_tail_ops(), input_columns="image", num_parallel_workers=WORKERS).batch(BATCH)
    return _rate(data.create_dict_iterator(num_epochs=1, output_numpy=True), 2)["images_per_s"]


def tail_offloaded(batches, device, rounding="per_op"):
    import numpy as np
    import torch
    from recordio.offload.tail import OffloadTail
    from recordio.keys import derive_uid
    tail = OffloadTail({"image": [(derive_uid(0, j), op) for j, op in enumerate(_tail_ops())]}, rounding)
    images = torch.from_numpy(np.resize(_Images(BATCH).bank, (BATCH, SIZE, SIZE, 3))).to(device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for k in range(batches + 2):
        if k == 2:
            sync()
            start = time.perf_counter()
        tail({"image": images}, np.arange(k * BATCH, (k + 1) * BATCH), 0, 1)
    sync()
    return batches * BATCH / (time.perf_counter() - start)


def _row(name, value, unit="images/s", baseline=None, baseline_value=None, lower_is_better=False):
    return bench_row(name, value, unit, baseline, baseline_value, lower_is_better=lower_is_better)


def _devices(args):
    import torch
    wanted = getattr(args, "device", None)
    devices = ["cpu"]
    if wanted and wanted != "cpu":
        devices.append(wanted)
    elif wanted is None and torch.cuda.is_available():
        devices.append("cuda")
    return devices


def _best(measurements):
    """The best of repeated runs (the machine may be shared: the best run is the least disturbed)."""
    return {"images_per_s": max(m["images_per_s"] for m in measurements),
            "cpu_ms_per_image": min(m["cpu_ms_per_image"] for m in measurements)}


def pipeline_rows(args, n, repeats):
    """Ours (worker threads, worker processes) and MindSpore's host pipeline on the same file,
    alternating, best of ``repeats``."""
    with tempfile.TemporaryDirectory(prefix="recordio-bench-vision-") as tmp:
        path = os.path.join(getattr(args, "workdir", None) or tmp, "jpeg.mindrecord")
        _write(path, n)
        python = getattr(args, "mindspore_python", None)
        runs = {"threads": [], "processes": [], "mindspore": []}
        for _ in range(repeats):
            if python:
                runs["mindspore"].append(mindspore_pipeline(python, path, 2))
            runs["threads"].append(host_pipeline(path, 2))
            runs["processes"].append(host_pipeline(path, 2, processes=True))
    if python:
        label, theirs = "MindSpore 2.10, same file and ops", _best(runs["mindspore"])
    else:
        label, theirs = "MindSpore 2.10 (recorded)", {"images_per_s": RECORDED_MINDSPORE, "cpu_ms_per_image": None}
    rows = []
    for kind in ("threads", "processes"):
        ours = _best(runs[kind])
        name = f"vision host pipeline (jpeg, batch 64, 2 worker {kind})"
        rows.append(_row(name, ours["images_per_s"], baseline=label, baseline_value=theirs["images_per_s"]))
        if kind == "threads":       # process workers' CPU is not counted in this process
            rows.append(_row(name + ", CPU per image", ours["cpu_ms_per_image"], "ms", label,
                             theirs["cpu_ms_per_image"], lower_is_better=True))     # > 1: we use less CPU
    return rows


def run(args):
    """The suite's result rows (see the module docstring)."""
    quick = getattr(args, "quick", False)
    n = getattr(args, "images", None) or 1024
    n = min(n, 320) if quick else n
    repeats = 1 if quick else getattr(args, "repeat", 3)
    tail_batches = 3 if quick else getattr(args, "tail_batches", 12)
    rows = pipeline_rows(args, n, repeats)
    if not getattr(args, "no_chains", False):
        from recordio.tools import bench_vision_chains
        rows += bench_vision_chains.run(args, 64 if quick else None, repeats)
    host = max(tail_host(tail_batches) for _ in range(repeats))
    rows.append(_row("vision tail on host (map, 2 workers)", host))
    for device in _devices(args):
        for rounding in ("per_op", "none"):
            value = max(tail_offloaded(tail_batches, device, rounding) for _ in range(repeats))
            rows.append(_row(f"vision tail offloaded on {device} (rounding={rounding})", value,
                             baseline="host tail, 2 workers", baseline_value=host))
    return rows


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=66)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
