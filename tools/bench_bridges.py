"""Benchmark of the bridges (Ray Data and Hugging Face datasets reading a MindRecord dataset) and of mixing.

On the ``cifar`` workload (``tools/workloads.py``: 3,072-byte raw images and an int32 label),
written once as a 4-shard MindRecord dataset and as 4 Parquet files of the same rows
(pyarrow, 8,192-row groups), page cache warm, best of the repeats:

* ``recordio.ray.read_mindrecord`` against ``ray.data.read_parquet`` on a local Ray
  (``ray.init(num_cpus=...)``), each consumed whole as numpy batches of 1,024 rows; the
  MindRecord read also with ``override_num_blocks=8`` (read tasks split inside shards);
* ``recordio.converters.to_hf`` (MindRecord -> Arrow cache) and one pass over its rows (numpy
  batches of 1,024), against ``datasets.Dataset.from_generator`` over the same rows held in
  memory and the same pass;
* ``recordio.mix`` of three MindDatasets (the workload cut in 3 datasets, weights 0.5/0.3/0.2,
  batches of 256) against iterating the same three sources alone, globally shuffled, one after the
  other (rows/s over the same number of rows).

    python tools/bench_bridges.py [--rows 50000] [--cpus 2] [--repeats 3] [--quick] [--json]
"""

import os
import sys
import tempfile
import time

from recordio.tools._common import bench_main

ROWS, QUICK_ROWS = 50_000, 5_000


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=None, help=f"rows of the workload (default {ROWS})")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each measure; the best counts")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows, one repeat (a smoke run)")
    parser.add_argument("--workdir", default=None, help="where to write (default: a temporary folder)")


def _row(name, value, unit, baseline=None, base=None):
    return {"name": name, "value": value, "unit": unit, "baseline": baseline,
            "ratio": value / base if base else None}


def _write(folder, n):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import recordio
    from workloads import samples

    rows = list(samples("cifar", n))
    writer = recordio.FileWriter(os.path.join(folder, "cifar.mindrecord"), shard_num=4)
    writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "cifar")
    writer.write_raw_data(rows)
    writer.commit()
    os.makedirs(os.path.join(folder, "parquet"))
    for k in range(4):
        part = rows[k * n // 4:(k + 1) * n // 4]
        table = pa.table({"image": pa.array([r["image"] for r in part], pa.binary()),
                          "label": pa.array([int(r["label"]) for r in part], pa.int32())})
        pq.write_table(table, os.path.join(folder, "parquet", f"part-{k}.parquet"), row_group_size=8192)
    return os.path.join(folder, "cifar.mindrecord0"), os.path.join(folder, "parquet"), rows


def _best(repeats, fn):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def _consume(ds):
    return sum(len(b["label"]) for b in ds.iter_batches(batch_size=1024, batch_format="numpy"))


def _ray(path, parquet, n, args):
    import ray

    from recordio.ray import read_mindrecord

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        _consume(read_mindrecord(path))                                            # warm the workers
        pq, count = _best(args.repeats, lambda: _consume(ray.data.read_parquet(parquet)))
        mr, count_mr = _best(args.repeats, lambda: _consume(read_mindrecord(path)))
        split, count_split = _best(args.repeats, lambda: _consume(read_mindrecord(path, override_num_blocks=8)))
    finally:
        ray.shutdown()
    assert count == count_mr == count_split == n, (count, count_mr, count_split)
    return [_row("ray read_mindrecord: rows/s", n / mr, "rows/s", "ray.data.read_parquet", n / pq),
            _row("ray read_mindrecord, 8 blocks: rows/s", n / split, "rows/s", "ray.data.read_parquet", n / pq),
            _row("ray.data.read_parquet: rows/s", n / pq, "rows/s")]


def _iterate(ds):
    return sum(len(b["label"]) for b in ds.with_format("numpy").iter(batch_size=1024))


def _hf(path, rows, folder, args):
    import datasets

    from recordio.converters import to_hf

    n, runs = len(rows), iter(range(10 ** 6))
    datasets.disable_progress_bars()

    def convert():
        return to_hf(path, images=[], cache_dir=os.path.join(folder, f"hf-{next(runs)}"))

    def direct():
        return datasets.Dataset.from_generator(_gen, gen_kwargs={"rows": rows},
                                               cache_dir=os.path.join(folder, f"hf-{next(runs)}"))

    made, _ = _best(args.repeats, lambda: len(convert()))
    made_direct, _ = _best(args.repeats, lambda: len(direct()))
    ours, theirs = convert(), direct()
    read, count = _best(args.repeats, lambda: _iterate(ours))
    read_direct, count_direct = _best(args.repeats, lambda: _iterate(theirs))
    assert count == count_direct == n
    return [_row("to_hf: rows/s", n / made, "rows/s", "Dataset.from_generator of the rows", n / made_direct),
            _row("to_hf dataset, one pass: rows/s", n / read, "rows/s", "the direct dataset", n / read_direct),
            _row("to_hf + one pass: rows/s", n / (made + read), "rows/s", "direct + one pass",
                 n / (made_direct + read_direct)),
            _row("Dataset.from_generator of the rows: rows/s", n / made_direct, "rows/s")]


def _mix(folder, rows, args):
    import recordio
    from recordio.dataset import MindDataset, mix

    paths = []
    for k, part in enumerate((rows[:len(rows) // 2], rows[len(rows) // 2:4 * len(rows) // 5],
                              rows[4 * len(rows) // 5:])):
        writer = recordio.FileWriter(os.path.join(folder, f"part{k}.mindrecord"))
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "cifar part")
        writer.write_raw_data(part)
        writer.commit()
        paths.append(os.path.join(folder, f"part{k}.mindrecord"))

    def batches(ds):
        it = ds.batch(256).create_dict_iterator(num_epochs=1, output_numpy=True)
        return sum(len(b["label"]) for b in it)

    def alone():
        return sum(batches(MindDataset(p)) for p in paths)

    def mixed():
        return batches(mix([MindDataset(p) for p in paths], weights=[0.5, 0.3, 0.2]))

    base, n = _best(args.repeats, alone)
    ours, n_mixed = _best(args.repeats, mixed)
    assert n == n_mixed == len(rows)
    return [_row("mix of 3 MindDatasets: rows/s", n / ours, "rows/s", "the 3 sources alone", n / base),
            _row("the 3 sources alone, shuffled: rows/s", n / base, "rows/s")]


def _gen(rows):
    yield from rows


def run(args):
    n = args.rows or (QUICK_ROWS if args.quick else ROWS)
    if args.quick:
        args.repeats = 1
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        path, parquet, rows = _write(folder, n)
        return _ray(path, parquet, n, args) + _hf(path, rows, folder, args) + _mix(folder, rows, args)


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, value_format="12,.0f")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
