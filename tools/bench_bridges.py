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
* ``recordio.spark.write_mindrecord`` of ``spark.read.parquet`` of the Parquet files on a local
  Spark (``local[cpus]``), against Mosaic Streaming's ``dataframe_to_mds`` of the same DataFrame
  (when ``streaming`` imports: ``--mds-path`` adds its folder to ``sys.path``) and against
  ``recordio convert parquet`` on the local process pool (``--cpus`` workers, one shard per
  worker); ``recordio.spark.read_mindrecord`` against ``spark.read.parquet``, each consumed by one
  aggregation over both columns (``sum(length(image))``, ``sum(label)``); and the Spark write against
  ``recordio.ray.write_mindrecord`` of ``ray.data.read_parquet`` of the same files;
* ``recordio.mix`` of three MindDatasets (the workload cut in 3 datasets, weights 0.5/0.3/0.2,
  batches of 256) against iterating the same three sources alone, globally shuffled, one after the
  other (rows/s over the same number of rows).

    python tools/bench_bridges.py [--rows 50000] [--cpus 2] [--repeats 3] [--quick] [--json FILE]
        [--only ray,hf,spark,mix] [--mds-path FOLDER]
"""

import os
import sys
import tempfile
import time

from recordio.tools._common import bench_main, bench_row

ROWS, QUICK_ROWS = 50_000, 5_000


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=None, help=f"rows of the workload (default {ROWS})")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each measure; the best counts")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows, one repeat (a smoke run)")
    parser.add_argument("--workdir", default=None, help="where to write (default: a temporary folder)")
    parser.add_argument("--only", default="ray,hf,spark,mix", help="the comma-separated parts to run (default: all)")
    parser.add_argument("--mds-path", default=None, metavar="FOLDER",
                        help="a folder holding mosaicml-streaming (pip install --target), for the Spark baseline")


_row = bench_row


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


def _spark_session(cpus):
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master(f"local[{cpus}]").appName("bench_bridges")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "2g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def _aggregate(df):
    from pyspark.sql import functions as F

    row = df.select(F.count("label").alias("n"), F.sum(F.length("image")), F.sum("label")).collect()[0]
    return row["n"]


def _mds_writer(args):
    """Mosaic's ``dataframe_to_mds`` (its folders also on the executors' PYTHONPATH), or None."""
    if args.mds_path:
        folders = args.mds_path.split(os.pathsep)
        sys.path[:0] = folders
        os.environ["PYTHONPATH"] = os.pathsep.join(folders + [os.environ.get("PYTHONPATH", "")])
    try:
        from streaming.base.converters import dataframe_to_mds
    except ImportError as exc:
        print(f"bench_bridges: no Mosaic Streaming baseline ({exc})", file=sys.stderr)
        return None
    return dataframe_to_mds


def _spark(path, parquet, n, folder, args):
    from recordio.converters import convert_parquet
    from recordio.spark import read_mindrecord, write_mindrecord

    runs = iter(range(10 ** 6))
    mds = _mds_writer(args)
    spark = _spark_session(args.cpus)
    try:
        df = spark.read.parquet(parquet)
        assert _aggregate(df) == n                                                   # warm the workers
        write_mindrecord(df.limit(100), os.path.join(folder, "warm.mindrecord"))
        ours, count = _best(args.repeats, lambda: write_mindrecord(
            df, os.path.join(folder, f"spark-{next(runs)}.mindrecord")))
        pool, _ = _best(args.repeats, lambda: convert_parquet(
            parquet, os.path.join(folder, f"pool-{next(runs)}.mindrecord"), shard_num=args.cpus,
            workers=args.cpus, quiet=True).rows)
        rows = [_row("spark write_mindrecord: rows/s", n / ours, "rows/s", "convert parquet, process pool", n / pool),
                _row("convert parquet, process pool: rows/s", n / pool, "rows/s")]
        if mds is not None:
            columns = {"image": "bytes", "label": "int32"}
            theirs, _ = _best(args.repeats, lambda: mds(df, merge_index=True, mds_kwargs={
                "out": os.path.join(folder, f"mds-{next(runs)}"), "columns": columns}) and n)
            rows[1:1] = [_row("spark write_mindrecord vs Mosaic: rows/s", n / ours, "rows/s",
                              "streaming dataframe_to_mds", n / theirs),
                         _row("streaming dataframe_to_mds: rows/s", n / theirs, "rows/s")]
        read_pq, count_pq = _best(args.repeats, lambda: _aggregate(spark.read.parquet(parquet)))
        read_mr, count_mr = _best(args.repeats, lambda: _aggregate(read_mindrecord(spark, path)))
    finally:
        spark.stop()
    assert count == count_pq == count_mr == n, (count, count_pq, count_mr)
    ray_write = _ray_write(parquet, folder, args)
    if ray_write is not None:
        rows[1:1] = [_row("spark write_mindrecord vs Ray: rows/s", n / ours, "rows/s",
                          "recordio.ray write_mindrecord", n / ray_write)]
    return rows + [_row("spark read_mindrecord: rows/s", n / read_mr, "rows/s", "spark.read.parquet", n / read_pq),
                   _row("spark.read.parquet: rows/s", n / read_pq, "rows/s")]


def _ray_write(parquet, folder, args):
    """Best seconds of ``recordio.ray.write_mindrecord`` of ``ray.data.read_parquet`` of the same files
    (``--cpus`` shards on a local Ray); None without Ray."""
    try:
        import ray
    except ImportError:
        print("  bridges: Ray is not installed; the Spark write is not compared with it", file=sys.stderr)
        return None
    from recordio.ray import write_mindrecord

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    runs = iter(range(10 ** 6))
    schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}}
    try:
        write_mindrecord(ray.data.read_parquet(parquet).limit(100), os.path.join(folder, "ray-warm.mindrecord"),
                         schema)
        seconds, _ = _best(args.repeats, lambda: write_mindrecord(
            ray.data.read_parquet(parquet), os.path.join(folder, f"ray-{next(runs)}.mindrecord"), schema,
            shard_num=args.cpus))
    finally:
        ray.shutdown()
    return seconds


def _gen(rows):
    yield from rows


def run(args):
    n = args.rows or (QUICK_ROWS if args.quick else ROWS)
    if args.quick:
        args.repeats = 1
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        path, parquet, rows = _write(folder, n)
        parts = {"ray": lambda: _ray(path, parquet, n, args), "hf": lambda: _hf(path, rows, folder, args),
                 "spark": lambda: _spark(path, parquet, n, folder, args), "mix": lambda: _mix(folder, rows, args)}
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - set(parts))
        if unknown:
            raise ValueError(f"--only: unknown part(s) {unknown}; the parts are {sorted(parts)}")
        return [row for name in wanted for row in parts[name]()]


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
