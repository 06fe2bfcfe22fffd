"""Benchmark of datasets in object storage: the ``jpeg`` workload from a local S3 server (moto) behind a
proxy that adds ``--latency-ms`` (default 20 ms) to every request.

Measured in one run, on the same data:

* the host augmentation pipeline (``MindDataset(url).map(Decode, RandomResizedCrop, ...).batch(64)``,
  2 workers) against the same pipeline on the local copy (target: >= 0.8x);
* one globally shuffled epoch through ``FileReader(url)`` with prefetch: bytes fetched over the bytes of
  the rows read (target <= 1.05) and requests per row (target <= 1; the epoch is fetched in spans of
  up to 4 MiB, so far fewer);
* one rank's share (every 4th row of a shuffled order): bytes fetched over the bytes of its rows;
* the time to open the dataset with a cold cache (each object's HEAD and header, each ``.db``);
* a second epoch with ``cache_limit`` >= the dataset (target: nothing fetched);
* three shuffled epochs with ``cache_limit`` = 25% of the dataset: bytes fetched when eviction follows
  the epochs' order, against LRU eviction;
* Mosaic Streaming (``mosaicml-streaming``) reading the same rows, converted to MDS, from the same server
  through the same proxy, when ``--mds-python`` names a Python that has it (it pins numpy/torch
  versions, so it lives in its own virtualenv); otherwise the row says why it was skipped.

Needs the ``remote`` extra and ``moto[server]`` (both in ``dev``).

    python -m recordio.tools bench --suite remote [--quick] [--mds-python /path/to/venv/bin/python]
"""

import json
import os
import subprocess
import tempfile
import time

import numpy as np

from recordio.tools._common import bench_main, bench_options, bench_row

LATENCY_MS = 20
BUCKET = "bench"
OBJECT_BYTES = 4 << 20


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=2000, help="rows of the jpeg workload (default 2000)")
    parser.add_argument("--latency-ms", type=float, default=LATENCY_MS, help="added to every request (20)")
    parser.add_argument("--dir", default=None, help="where to write the dataset (default: a temporary folder)")
    parser.add_argument("--mds-python", default=os.environ.get("RECORDIO_MDS_PYTHON"),
                        help="a Python with mosaicml-streaming, for the Mosaic Streaming peer")


def _options(args):
    opts = bench_options(args, add_arguments)
    if getattr(args, "quick", False):
        opts["rows"] = min(opts["rows"], 300)
    return opts


def _write(path, n):
    """The jpeg workload in shards of about 4 MiB: moto copies a whole object to answer a range request
    (a cost no real object store has), so large objects would measure moto, not the reader."""
    from recordio import FileWriter
    from recordio.tools import workloads

    shards = max(2, min(1000, n * 85_000 // OBJECT_BYTES))
    with FileWriter(path, shard_num=shards, overwrite=True) as w:
        w.set_header_size(1 << 18)
        w.set_page_size(1 << 20)
        w.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}, "file_name": {"type": "string"}},
                     "jpeg")
        w.write_raw_data(list(workloads.samples("jpeg", n)))
    width = len(str(shards - 1))
    return [path + str(i).rjust(width, "0") for i in range(shards)]


_row = bench_row


def _pipeline_rate(source, **remote):
    from recordio import MindDataset
    from recordio.tools.bench_vision import BATCH, WORKERS, _host_ops

    data = MindDataset(source, columns_list=["image", "label"], shuffle=True, num_parallel_workers=WORKERS, **remote)
    data = data.map(_host_ops(), input_columns="image", num_parallel_workers=WORKERS)
    data = data.batch(BATCH, drop_remainder=True)
    t, images = time.perf_counter(), 0
    for batch in data.create_dict_iterator(num_epochs=1, output_numpy=True):
        images += len(batch["image"])
    return images / (time.perf_counter() - t)


def _epochs(url, storage, cache_dir, epochs, cache_limit=None, policy="future", seed=0, ranks=1):
    """Shuffled epochs through FileReader(url) with prefetch: (rows/s of the first, bytes and requests
    per epoch, bytes of the rows read per epoch). ``ranks`` > 1: the reader reads every ``ranks``-th
    row of each shuffled order (one rank's share)."""
    from recordio import FileReader

    rng = np.random.default_rng(seed)
    out = []
    t = time.perf_counter()
    with FileReader(url, storage_options=storage, cache_dir=cache_dir, cache_limit=cache_limit) as reader:
        opened = time.perf_counter() - t
        if reader.shard_set.storage._bound is not None:
            reader.shard_set.storage._bound.policy = policy
        for _ in range(epochs):
            order = rng.permutation(len(reader))[::ranks]
            _, _, locs = reader.shard_set.locations.bulk(order)
            row_bytes = int((locs[:, 1] - locs[:, 0] + locs[:, 3] - locs[:, 2]).sum())
            before = dict(reader.shard_set.storage.stats)
            t = time.perf_counter()
            reader.prefetch(order)
            for i in order.tolist():
                reader[i]
            rate = len(order) / (time.perf_counter() - t)
            after = reader.shard_set.storage.stats
            out.append({"open_s": opened, "rate": rate, "bytes": after["bytes"] - before["bytes"], "row_bytes": row_bytes,
                        "requests": after["requests"] - before["requests"], "rows": len(order)})
    return out


def run(args):
    from recordio.tools.remote_servers import moto_server, proxy_process

    opts = _options(args)
    folder = opts["dir"] or getattr(args, "workdir", None) or tempfile.mkdtemp(prefix="recordio-bench-")
    os.makedirs(folder, exist_ok=True)
    files = _write(os.path.join(folder, "jpeg.mindrecord"), opts["rows"])
    dataset_bytes = sum(os.path.getsize(f) for f in files)
    rows = []
    with moto_server() as s3, proxy_process(s3.address, latency_s=opts["latency_ms"] / 1000) as proxy:
        fs = s3.bucket(BUCKET)
        for f in files:
            for name in (f, f + ".db"):
                fs.put_file(name, f"{BUCKET}/jpeg/{os.path.basename(name)}")
        storage = s3.options_for(proxy.url)
        url = f"s3://{BUCKET}/jpeg/{os.path.basename(files[0])}"
        cache = tempfile.mkdtemp(prefix="recordio-bench-cache-", dir=folder)
        local = _pipeline_rate(files[0])
        remote = _pipeline_rate(url, storage_options=storage, cache_dir=os.path.join(cache, "pipeline"))
        rows.append(_row(f"host pipeline from S3 (+{opts['latency_ms']:g} ms) / local", remote, "images/s",
                         "local copy", local, target=">= 0.8"))
        full = _epochs(url, storage, os.path.join(cache, "full"), 2, cache_limit=2 * dataset_bytes)
        first, second = full
        rows.append(_row("shuffled epoch: bytes fetched / bytes of rows read", first["bytes"] / first["row_bytes"],
                         "x", note="target <= 1.05"))
        rows.append(_row("shuffled epoch: requests per row", first["requests"] / first["rows"], "req/row",
                         note="target <= 1"))
        rows.append(_row("shuffled epoch through FileReader(url), prefetch", first["rate"], "rows/s"))
        rows.append(_row(f"opening FileReader(url): {len(files)} objects, headers and .db files", first["open_s"],
                         "s", note="a cold cache"))
        rows.append(_row("second epoch, cache_limit >= dataset: bytes fetched", second["bytes"], "B",
                         note="target 0"))
        rank = _epochs(url, storage, os.path.join(cache, "rank"), 1, ranks=4)[0]
        rows.append(_row("one rank of 4, shuffled epoch: bytes fetched / bytes of its rows",
                         rank["bytes"] / rank["row_bytes"], "x", note=f"{rank['requests']} requests for "
                         f"{rank['rows']} rows; target <= 1.05"))
        limit = int(0.25 * first["row_bytes"])
        fetched = {p: sum(e["bytes"] for e in _epochs(url, storage, os.path.join(cache, p), 3, limit, p))
                   for p in ("future", "lru")}
        rows.append(_row("3 epochs, cache_limit 25%: bytes fetched, epoch order / LRU", fetched["future"], "B",
                         "LRU eviction", fetched["lru"], note="lower is better"))
        rows.append(_mosaic(opts, folder, s3, proxy, first))
    return rows


_MDS_SCRIPT = r"""
import json, os, pickle, sys, time, boto3
from streaming import MDSWriter, StreamingDataset
rows, folder, endpoint, proxy = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
out = os.path.join(folder, "mds")
with open(rows, "rb") as f, MDSWriter(out=out, columns={"image": "bytes", "label": "int"}) as w:
    for image, label in pickle.load(f):
        w.write({"image": image, "label": label})
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                  region_name="us-east-1")
for name in os.listdir(out):
    s3.upload_file(os.path.join(out, name), "bench", "mds/" + name)
os.environ["S3_ENDPOINT_URL"] = proxy
ds = StreamingDataset(remote="s3://bench/mds", local=os.path.join(folder, "mds-local"), shuffle=True,
                      shuffle_seed=0, batch_size=1)
t = time.perf_counter()
k = sum(1 for _ in ds)
print(json.dumps({"rows": k, "rate": k / (time.perf_counter() - t)}))
"""


def _mosaic(opts, folder, s3, proxy, ours):
    name = "Mosaic Streaming (MDS) shuffled epoch from the same server / ours"
    python = opts["mds_python"]
    if not python:
        print("  (Mosaic Streaming skipped: no --mds-python / $RECORDIO_MDS_PYTHON with mosaicml-streaming)")
        return _row(name, float("nan"), "rows/s", note="skipped: no Python with mosaicml-streaming given")
    import pickle

    from recordio.tools import workloads

    work = tempfile.mkdtemp(dir=folder)
    with open(os.path.join(work, "rows.pkl"), "wb") as f:
        pickle.dump([(s["image"], int(s["label"])) for s in workloads.samples("jpeg", opts["rows"])], f)
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1")
    done = subprocess.run([python, "-c", _MDS_SCRIPT, os.path.join(work, "rows.pkl"), work, s3.endpoint, proxy.url],
                          capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        print(f"  (Mosaic Streaming failed: {done.stderr[-1500:]})")
        return _row(name, float("nan"), "rows/s", note="failed: see the printed error")
    result = json.loads(lines[-1])
    return _row(name, ours["rate"], "rows/s", "Mosaic Streaming rows/s", result["rate"],
                note=f"ratio = ours / Mosaic ({result['rows']} rows; Mosaic fetches whole shards)")


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
