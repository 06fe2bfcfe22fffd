"""Model-script benchmark: the input pipelines of two MindSpore model-zoo scripts, built call for call
in recordio's ``recordio.dataset`` and in MindSpore 2.10's ``mindspore.dataset``, on the same MindRecord
files (written once by recordio's ``FileWriter``; MindSpore reads them).

Each contender runs in a fresh interpreter, as in ``tools/bench_cold.py``: it imports its library (not
timed), then builds the pipeline and reads one epoch (timed: the headline, the pipeline's construction
and ``get_dataset_size`` included), then three more epochs of the same pipeline (the best is the warm
figure). Each contender runs ``--repeats`` times, taking turns with the other, and the best first
pass and the best warm pass are kept. Rates are MindRecord rows a second (the rows the batches hold).
MindSpore runs under ``--mindspore-python`` (default ``$RECORDIO_MINDSPORE_PYTHON``); without one its
rows are left out, with a note.

The pipelines (MindSpore's model zoo, ``model_zoo/official``):

* ``transformer``: ``nlp/transformer/src/dataset.py`` ``create_transformer_dataset``: per bucket
  (``bucket_boundaries``; here two, 64 and 128, one file each) ``MindDataset(file, columns_list=[the six
  columns], shuffle=...)`` with the workers left at their default, six ``map(operations=TypeCast(int32),
  input_columns=c)`` (default workers), ``batch(batch_size, drop_remainder=True)``
  (``default_config.yaml``: ``batch_size: 96``); the buckets joined with ``+``; then
  ``shuffle(ds.get_dataset_size())``; ``de.config.set_seed(1)``. Rows as ``create_data.py`` writes them:
  six ``int64`` arrays (``shape [-1]``) of the bucket's length: ids from a seeded generator below the
  vocabulary (36,560) past a random length, masks 1 up to it and 0 after.
* ``widedeep``: ``recommend/wide_and_deep/src/datasets.py`` ``_get_mindrecord_dataset``:
  ``MindDataset(file, columns_list=["feat_ids", "feat_vals", "label"], shuffle=..., num_parallel_workers=8)``,
  ``batch(int(batch_size / line_per_sample), drop_remainder=True)`` (``batch_size`` 16,000, ``config.py``;
  ``line_per_sample`` 1,000: a batch of 16 rows), then ``map`` of the script's function
  ``(x, y, z) -> (np.array(x).flatten().reshape(batch_size, 39), ... (batch_size, 39), ... (batch_size, 1))``
  on the three columns with ``num_parallel_workers=8`` (both 8s capped at the machine's CPUs, which MindSpore
  requires; the script's ``columns_order`` is the input order, a parameter MindSpore 2.x no longer has). Rows as ``preprocess_data.py`` writes them: each holds
  ``line_per_sample`` lines: ``feat_ids`` int32 ``[39,000]``, ``feat_vals`` float32 ``[39,000]``,
  ``label`` float32 ``[1,000]`` (``shape [-1]`` each).

Sizes: 24,000 rows a bucket (48,000 rows, 500 batches) and 4,000 Wide&Deep rows (4M lines, 1.3 GB, 250
batches); ``--quick``: 500 a bucket and 64 rows of 10 lines.

The scripts read the files with ``shuffle=True`` when training; here ``MindDataset`` reads them in order
(``shuffle=False``, ``--source-shuffle`` for the scripts' ``True``), so the two libraries give the same
batches in the same order up to the transformer's final ``shuffle`` (a buffer shuffle whose order each
library draws its own way): tests/test_bench_models.py checks recordio's batches against numpy on the
written rows, and against MindSpore's (the ``mindspore`` tier), batch for batch without the final
shuffle and as the same set of batches with it.

Goal (issue 34): each pipeline's first pass >= 2x MindSpore 2.10's.

    python -m recordio.tools.bench_models [--quick] [--repeats 3] [--mindspore-python PY] [--json FILE]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TRANSFORMER_COLUMNS = ("source_eos_ids", "source_eos_mask", "target_sos_ids", "target_sos_mask",
                       "target_eos_ids", "target_eos_mask")
WIDEDEEP_COLUMNS = ("feat_ids", "feat_vals", "label")
BUCKETS = (64, 128)
VOCAB = 36_560
FIELDS = 39
TRANSFORMER_BATCH = 96                  # default_config.yaml
WIDEDEEP_BATCH, LINE_PER_SAMPLE = 16_000, 1_000      # config.py, preprocess_data.py

SIZES = {"transformer": 24_000, "widedeep": 4_000}           # rows per bucket file / rows
QUICK_SIZES = {"transformer": 500, "widedeep": 64}
QUICK_WIDEDEEP_LINES = 10           # --quick: rows of 10 lines, batch_size 160 (still batches of 16 rows)

CHILD = r'''
import json, os, sys, time
lib, name, spec, dump = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
import numpy as np
if lib == "mindspore":
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms
    import mindspore.common.dtype as mstype
else:
    import recordio.dataset as ds
    import recordio.dataset.transforms as transforms
    import recordio.config
    recordio.config.set_order_mode(spec.get("order_mode", "recordio"))
    import recordio.common.dtype as mstype


def transformer():
    """create_transformer_dataset (model_zoo/official/nlp/transformer/src/dataset.py)."""
    ds.config.set_seed(1)

    def batch_per_bucket(path):
        data = ds.MindDataset(path, columns_list=spec["columns"], shuffle=spec["source_shuffle"])
        type_cast_op = transforms.TypeCast(mstype.int32)
        for column in spec["columns"]:
            data = data.map(operations=type_cast_op, input_columns=column)
        return data.batch(spec["batch_size"], drop_remainder=True)

    data = None
    for path in spec["files"]:
        per = batch_per_bucket(path)
        data = per if data is None else data + per
    if spec["shuffle"]:
        data = data.shuffle(data.get_dataset_size())
    return data


def widedeep():
    """_get_mindrecord_dataset (model_zoo/official/recommend/wide_and_deep/src/datasets.py)."""
    batch_size, line_per_sample = spec["batch_size"], spec["line_per_sample"]
    workers = min(8, os.cpu_count())     # the script's 8; MindSpore refuses more than the machine's CPUs
    data = ds.MindDataset(spec["files"][0], columns_list=spec["columns"], shuffle=spec["source_shuffle"],
                          num_parallel_workers=workers)
    data = data.batch(int(batch_size / line_per_sample), drop_remainder=True)
    data = data.map(operations=(lambda x, y, z: (np.array(x).flatten().reshape(batch_size, 39),
                                                 np.array(y).flatten().reshape(batch_size, 39),
                                                 np.array(z).flatten().reshape(batch_size, 1))),
                    input_columns=spec["columns"], num_parallel_workers=workers)
    return data


def one_pass(data, keep=None):
    rows = 0
    for batch in data.create_dict_iterator(output_numpy=True, num_epochs=1):
        rows += len(batch[spec["count"]])
        if keep is not None:
            keep.append(batch)
    return rows // spec["lines"]


build = transformer if name == "transformer" else widedeep
if dump != "-":
    kept = []
    one_pass(build(), kept)
    np.savez(dump, **{f"{i}/{k}": np.asarray(v) for i, b in enumerate(kept) for k, v in b.items()})
    print("MODELS " + json.dumps({"batches": len(kept)}))
    sys.exit(0)
start = time.perf_counter()
data = build()
rows = one_pass(data)
first = time.perf_counter() - start
warm = []
for _ in range(3):
    t = time.perf_counter()
    one_pass(data)
    warm.append(time.perf_counter() - t)
print("MODELS " + json.dumps({"rows": rows, "first": first, "warm": min(warm)}))
'''


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true", help="small workloads (a smoke run, not for quoting)")
    parser.add_argument("--repeats", type=int, default=None, help="fresh processes per contender (default 3)")
    parser.add_argument("--workdir", default=None, help="where datasets are written (default: a temporary folder)")
    parser.add_argument("--only", default=None, help="one pipeline: transformer or widedeep (default: both)")
    parser.add_argument("--source-shuffle", action="store_true",
                        help="MindDataset(shuffle=True), as the scripts train (default: shuffle=False)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="a Python with MindSpore 2.10 (default $RECORDIO_MINDSPORE_PYTHON)")
    parser.add_argument("--device", default="cpu", help="unused by this suite (accepted for the dispatcher)")


# --- data ---------------------------------------------------------------------------------------------

def transformer_rows(length, n, seed):
    """``n`` rows of the transformer's six int64 columns of ``length`` (create_data.py's layout)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        row = {}
        for side in ("source_eos", "target_sos", "target_eos"):
            used = int(rng.integers(1, length + 1))
            mask = np.zeros(length, dtype=np.int64)
            mask[:used] = 1
            ids = rng.integers(1, VOCAB, length, dtype=np.int64) * mask
            row[f"{side}_ids"], row[f"{side}_mask"] = ids, mask
        rows.append({c: row[c] for c in TRANSFORMER_COLUMNS})
    return rows


def widedeep_rows(n, lines, seed):
    """``n`` rows of ``lines`` lines each (preprocess_data.py's layout)."""
    rng = np.random.default_rng(seed)
    return [{"feat_ids": rng.integers(0, 200_000, lines * FIELDS, dtype=np.int32),
             "feat_vals": rng.random(lines * FIELDS, dtype=np.float32),
             "label": rng.integers(0, 2, lines).astype(np.float32)} for _ in range(n)]


def _write(path, schema, name, rows):
    from recordio import FileWriter
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema(schema, name)
        for start in range(0, len(rows), 1000):
            w.write_raw_data(rows[start:start + 1000])


def write_transformer(folder, n, seed=0):
    """One file per bucket (64 and 128) of ``n`` rows; their paths."""
    schema = {c: {"type": "int64", "shape": [-1]} for c in TRANSFORMER_COLUMNS}
    paths = []
    for i, length in enumerate(BUCKETS):
        path = os.path.join(folder, f"transformer_{length}.mindrecord")
        _write(path, schema, "transformer", transformer_rows(length, n, seed + i))
        paths.append(path)
    return paths


def write_widedeep(folder, n, lines=LINE_PER_SAMPLE, seed=0):
    """One file of ``n`` rows of ``lines`` lines, written a part at a time; its path."""
    from recordio import FileWriter
    schema = {"label": {"type": "float32", "shape": [-1]}, "feat_vals": {"type": "float32", "shape": [-1]},
              "feat_ids": {"type": "int32", "shape": [-1]}}
    path = os.path.join(folder, "widedeep.mindrecord")
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema(schema, "CRITEO_TRAIN")
        for part in range(0, n, 200):
            w.write_raw_data(widedeep_rows(min(200, n - part), lines, seed + part))
    return [path]


def spec(name, files, quick=False, shuffle=True, source_shuffle=False, order_mode="recordio"):
    """What the child builds: the script's settings for ``name`` on ``files`` (``order_mode``: recordio's
    ``config.set_order_mode``; "mindspore" gives MindSpore's shuffled orders too)."""
    if name == "transformer":
        return {"files": files, "columns": list(TRANSFORMER_COLUMNS), "batch_size": TRANSFORMER_BATCH,
                "shuffle": shuffle, "source_shuffle": source_shuffle, "count": "source_eos_ids", "lines": 1,
                "order_mode": order_mode}
    lines = QUICK_WIDEDEEP_LINES if quick else LINE_PER_SAMPLE
    return {"files": files, "columns": list(WIDEDEEP_COLUMNS), "batch_size": WIDEDEEP_BATCH // LINE_PER_SAMPLE * lines,
            "line_per_sample": lines, "source_shuffle": source_shuffle, "count": "label", "lines": lines,
            "order_mode": order_mode}


# --- measuring -----------------------------------------------------------------------------------------

def _child(python, lib, name, the_spec, dump="-"):
    env = dict(os.environ)
    if lib == "recordio":
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if os.path.isdir(os.path.join(here, "recordio")):          # the checkout, as `python -m` sees it
            env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    else:
        env.pop("PYTHONPATH", None)
        env.setdefault("GLOG_v", "3")                               # MindSpore's warnings off stderr
    done = subprocess.run([python, "-c", CHILD, lib, name, json.dumps(the_spec), dump], capture_output=True,
                          text=True, timeout=1800, env=env, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise RuntimeError(f"models {name} {lib}: the child failed: {done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODELS "))
    return json.loads(line[7:])


def measure(lib, name, the_spec, python=None):
    """One fresh process: ``{"rows", "first", "warm"}`` (seconds)."""
    return _child(python or sys.executable, lib, name, the_spec)


def batches(lib, name, the_spec, python=None, folder=None):
    """Every batch of one epoch as ``[{column: array}]``, read in a fresh process."""
    fd, dump = tempfile.mkstemp(suffix=".npz", dir=folder)
    os.close(fd)
    try:
        count = _child(python or sys.executable, lib, name, the_spec, dump)["batches"]
        with np.load(dump) as got:
            out = [{} for _ in range(count)]
            for key in got.files:
                i, column = key.split("/", 1)
                out[int(i)][column] = got[key]
        return out
    finally:
        os.unlink(dump)


def bench(name, the_spec, repeats, mindspore_python):
    contenders = [("recordio", None)] + ([("MindSpore 2.10", mindspore_python)] if mindspore_python else [])
    best, rows = {}, {}
    for _ in range(repeats):                    # contenders take turns, so load on the machine spreads
        for label, python in contenders:
            got = measure("mindspore" if python else "recordio", name, the_spec, python)
            old = best.get(label)
            rows[label] = got["rows"]
            best[label] = {"first": min(got["first"], old["first"]) if old else got["first"],
                           "warm": min(got["warm"], old["warm"]) if old else got["warm"]}
    if len(set(rows.values())) > 1:
        raise RuntimeError(f"models {name}: the contenders read different row counts: {rows}")
    return rows_out(name, rows["recordio"], best)


def rows_out(name, n, best):
    from recordio.tools._common import bench_row as row
    out = []
    for label, t in best.items():
        out.append(row(f"{name} {label}: first pass / warm pass", n / t["first"], "rows/s",
                       "warm pass, same process", n / t["warm"], ""))
    if "MindSpore 2.10" in best:
        ours, theirs = best["recordio"], best["MindSpore 2.10"]
        out.append(row(f"{name} recordio first pass / MindSpore 2.10 first pass", n / ours["first"], "rows/s",
                       "MindSpore 2.10 first pass", n / theirs["first"], ">= 2x"))
        out.append(row(f"{name} recordio warm pass / MindSpore 2.10 warm pass", n / ours["warm"], "rows/s",
                       "MindSpore 2.10 warm pass", n / theirs["warm"], ""))
    return out


def run(args):
    quick = getattr(args, "quick", False)
    sizes = QUICK_SIZES if quick else SIZES
    repeats = getattr(args, "repeats", None) or (1 if quick else 3)
    python = getattr(args, "mindspore_python", None)
    source_shuffle = bool(getattr(args, "source_shuffle", False))
    only = getattr(args, "only", None)
    names = [only] if only else ["transformer", "widedeep"]
    if not python:
        print("  models: no --mindspore-python (nor $RECORDIO_MINDSPORE_PYTHON); MindSpore's rows are left out",
              file=sys.stderr)
    folder = tempfile.mkdtemp(prefix="models-", dir=getattr(args, "workdir", None))
    try:
        results = []
        for name in names:
            if name == "transformer":
                files = write_transformer(folder, sizes[name])
            else:
                files = write_widedeep(folder, sizes[name], QUICK_WIDEDEEP_LINES if quick else LINE_PER_SAMPLE)
            results += bench(name, spec(name, files, quick, source_shuffle=source_shuffle), repeats, python)
            for f in files:
                for extra in ("", ".db"):
                    if os.path.exists(f + extra):
                        os.unlink(f + extra)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv=None):
    from recordio.tools._common import bench_main
    return bench_main(__doc__, add_arguments, run, argv, width=70)


if __name__ == "__main__":
    sys.exit(main())
