"""Benchmark of the sink: steps/s of a fixed training step fed by a ``cifar`` pipeline.

One run, same data, same step, six ways of feeding it:

* ``iterator, prefetch 1``: ``create_dict_iterator`` with ``config.set_prefetch_size(1)``; the copy
  and the offloaded tail run in the training loop (the closest the pipeline gets to no prefetch);
* ``iterator, host prefetch 16``: the same with the host queue at its default depth;
* ``DataSink`` at ``prefetch_depth`` 1, 2 and 4: copy and tail in the sink's feeder thread;
  depth 2 also with ``static_slots=True`` (batches in fixed device buffers).

Also measured alone: the pipeline (batches/s, no step) and the step (steps/s on a batch held in
memory), so the ideal overlapped rate, min(data, step), and the serial one, 1/(1/data + 1/step),
can be read next to the measured ones. For each way the share of the time the loop spent waiting
for a batch is reported. On a CPU the pipeline and the step share the same cores, so overlap is
bounded by the cores; on a GPU the target is step time ~ max(data, compute). With CUDA it also
reports host->device copy bandwidth from pinned and from pageable memory (256x3x224x224 uint8).

Pipeline: MindDataset (cifar records) -> map(raw bytes -> 32x32x3, RandomCrop(32, padding=4),
RandomHorizontalFlip) on the host -> map(Rescale, Normalize, HWC2CHW, offload=True) -> batch(128).

    python tools/bench_sink.py [--rows 10000] [--steps 150] [--device cpu|cuda] [--workers N] [--json FILE]
"""

import os
import sys
import tempfile
import time

from recordio.tools._common import bench_main, bench_row

BATCH = 128
WARMUP = 5


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=10_000, help="rows of the cifar workload (default 10000)")
    parser.add_argument("--steps", type=int, default=100, help="timed steps per way of feeding (default 100)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the best is kept (default 2)")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--workdir", default=None, help="where to write the dataset (default: a temp folder)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads for the step on a CPU (default 1: one core computes, "
                             "the others run the pipeline)")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers of the host map (default: config.get_num_parallel_workers(); on a "
                             "many-core GPU machine more workers keep the pipeline ahead of the step)")
    parser.add_argument("--quick", action="store_true", help="small run (a smoke test, not for quoting)")


def _workload(n):
    from recordio.tools import workloads
    return list(workloads.samples("cifar", n))


def _write(path, n):
    from recordio import FileWriter
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "cifar")
        w.write_raw_data(_workload(n))


def _to_image(raw):
    return raw.reshape(32, 32, 3)


def _pipeline(path, workers=None):
    from recordio import MindDataset, vision
    ds = MindDataset(path)
    ds = ds.map([_to_image, vision.RandomCrop(32, padding=4), vision.RandomHorizontalFlip()],
                input_columns=["image"], num_parallel_workers=workers)
    ds = ds.map([vision.Rescale(1 / 255, 0.0), vision.Normalize([0.49, 0.48, 0.45], [0.25, 0.24, 0.26]),
                 vision.HWC2CHW()], input_columns=["image"], offload=True)
    return ds.batch(BATCH, drop_remainder=True)


def _model(device):
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def _stepper(device):
    """The fixed training step: forward, backward, SGD on the batch."""
    import torch
    model, optimizer = _model(device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(batch):
        optimizer.zero_grad()
        loss = loss_fn(model(batch["image"]), batch["label"].long())
        loss.backward()
        optimizer.step()
        return loss
    return step


def _sync(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _timed_loop(batches, step, steps, device):
    """Run ``steps`` steps; returns (steps/s, share of the time spent waiting for a batch)."""
    batches = iter(batches)
    for _ in range(WARMUP):
        step(next(batches))
    _sync(device)
    wait = 0.0
    t0 = time.perf_counter()
    for _ in range(steps):
        w0 = time.perf_counter()
        batch = next(batches)
        wait += time.perf_counter() - w0
        step(batch)
    _sync(device)
    total = time.perf_counter() - t0
    return steps / total, wait / total


def _iterator(ds, device, prefetch):
    from recordio import config
    old = config.get_prefetch_size()
    config.set_prefetch_size(prefetch)
    try:
        it = ds.create_dict_iterator(num_epochs=-1, output_numpy=False, device=device)
    finally:
        config.set_prefetch_size(old)
    return it, _endless(it)


def _endless(iterator):
    while True:
        yield from iterator


def _sink_batches(ds, device, depth, steps, static_slots=False):
    from recordio import DataSink
    sink = DataSink(ds, device=device, sink_size=steps + WARMUP, prefetch_depth=depth, static_slots=static_slots)
    return sink, iter(sink)


def _data_only(ds, steps):
    it = _endless(ds.create_dict_iterator(num_epochs=-1, output_numpy=True))
    for _ in range(WARMUP):
        next(it)
    t0 = time.perf_counter()
    for _ in range(steps):
        next(it)
    return steps / (time.perf_counter() - t0)


def _step_only(ds, step, steps, device):
    import itertools
    iterator = ds.create_dict_iterator(num_epochs=1, output_numpy=False, device=device)
    batch = next(iterator)
    iterator.close()            # its producer would compete with the step for the cores
    rate, _ = _timed_loop(itertools.repeat(batch), step, steps, device)
    return rate


def _bandwidth(device):
    """GB/s of a 256x3x224x224 uint8 host->device copy, from pinned and from pageable memory."""
    import torch
    host = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8)
    pinned = host.pin_memory()
    out = {}
    for name, src in (("pinned", pinned), ("pageable", host)):
        src.to(device, non_blocking=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            src.to(device, non_blocking=True)
        torch.cuda.synchronize()
        out[name] = 10 * src.numel() / (time.perf_counter() - t0) / 1e9
    return out


_row = bench_row


def _ways(device, steps):
    ways = {"iterator, prefetch 1": lambda ds: _iterator(ds, device, 1),
            "iterator, host prefetch 16": lambda ds: _iterator(ds, device, 16)}
    for depth in (1, 2, 4):
        ways[f"DataSink, prefetch_depth {depth}"] = lambda ds, d=depth: _sink_batches(ds, device, d, steps)
    ways["DataSink, prefetch_depth 2, static slots"] = lambda ds: _sink_batches(ds, device, 2, steps, True)
    return ways


def _feeding_rows(path, device, steps, rounds, workers):
    """Each way ``rounds`` times, interleaved; the best round of each is kept (less noise)."""
    step = _stepper(device)
    ways = _ways(device, steps)
    best = {name: (0.0, 1.0) for name in ways}
    for _ in range(rounds):
        for name, make in ways.items():
            closer, batches = make(_pipeline(path, workers))
            rate, wait = _timed_loop(batches, step, steps, device)
            closer.close()
            best[name] = max(best[name], (rate, wait))
    base = best["iterator, prefetch 1"][0]
    rows = []
    for name, (rate, wait) in best.items():
        rows.append(_row(f"{name}: steps/s", rate, "steps/s", "iterator, prefetch 1", base))
        rows.append(_row(f"{name}: data wait", 100 * wait, "%", note="share of the loop blocked on next()"))
    return rows


def run(args):
    """Run the benchmark; returns rows ``{name, value, unit, baseline, ratio}``."""
    import torch
    threads = torch.get_num_threads()
    if not str(getattr(args, "device", None) or "cpu").startswith("cuda"):
        torch.set_num_threads(getattr(args, "torch_threads", 1))
    try:
        return _run(args)
    finally:
        torch.set_num_threads(threads)


def _run(args):
    quick = getattr(args, "quick", False)
    rows_n = 2_000 if quick else getattr(args, "rows", 10_000)
    steps = 20 if quick else getattr(args, "steps", 100)
    rounds = 1 if quick else getattr(args, "rounds", 2)
    device = getattr(args, "device", None) or "cpu"
    folder = getattr(args, "workdir", None) or tempfile.mkdtemp(prefix="recordio-bench-")
    path = os.path.join(folder, "sink-cifar.mindrecord")
    _write(path, rows_n)
    workers = getattr(args, "workers", None)
    data = _data_only(_pipeline(path, workers), steps)
    compute = _step_only(_pipeline(path, workers), _stepper(device), steps, device)
    rows = [_row("pipeline alone: batches/s", data, "batches/s"),
            _row("training step alone: steps/s", compute, "steps/s"),
            _row("ideal overlapped: min(data, step)", min(data, compute), "steps/s"),
            _row("serial: 1/(1/data + 1/step)", 1 / (1 / data + 1 / compute), "steps/s")]
    rows += _feeding_rows(path, device, steps, rounds, workers)
    if str(device).startswith("cuda"):
        bandwidth = _bandwidth(device)
        rows.append(_row("H2D copy from pinned memory", bandwidth["pinned"], "GB/s", "pageable",
                         bandwidth["pageable"]))
        rows.append(_row("H2D copy from pageable memory", bandwidth["pageable"], "GB/s"))
    return rows


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=48)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
