"""Token benchmark: the ``tokens`` workload (rows of 2,049 int32 ids below 151k) in batches of 32.

Measured in one run, on the same ids (``tools/workloads.py``, seeded), best of the repeats, in
tokens/s, each against the flat memory-mapped int32 file (Megatron's ``.bin`` + ``.idx`` layout,
the limit) and, when they are there, MindSpore 2.10 and Hugging Face datasets:

* sequential batches: recordio's ``FileReader`` rows stacked 32 at a time, ``MindDataset(shuffle=False)
  .batch(32)``, the compiled codec alone (``codec.decompress_many`` over the rows' stored parts), the
  flat file (one span per batch), Hugging Face ``Dataset.with_format("numpy")[i:i + 32]`` (Arrow,
  memory-mapped from ``save_to_disk``) and MindSpore's ``MindDataset(shuffle=False).batch(32)``;
* random batches (one shuffled epoch): ``FileReader.__getitems__`` of 32 shuffled rows stacked,
  ``MindDataset(shuffle=True).batch(32)``, the flat file (one slice per row, as Megatron reads),
  Hugging Face ``ds[ids]`` and MindSpore's ``MindDataset(shuffle=True).batch(32)``;
* writes of ``input_ids`` + ``labels`` (labels a copy of the ids), 1,000 rows a call, commit
  included: recordio's and MindSpore's ``FileWriter``; the two files are compared byte for byte;
* ``recordio convert text`` (one worker; read, tokenize, pack into rows of 2,049 ids, write) against
  the ``tokenizers`` library's ``encode_batch`` alone on the same seeded text (``rows / 2``
  documents of 20-400 made-up words, a BPE tokenizer of 8,000 ids trained on them).

Every run prints which integer codec ran (``recordio.mindrecord.codec.BACKEND``). Targets (issue 24):
sequential >= 500M tokens/s, >= 1.5x Hugging Face, >= 10x MindSpore; random >= 2x Hugging Face;
write >= 3x MindSpore; convert text >= 0.8x the tokenizer alone.

    python tools/bench_tokens.py [--rows 20000] [--quick] [--mindspore-python PY] [--json FILE]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from recordio.tools._common import bench_main, bench_row

ROWS, QUICK_ROWS, LENGTH, BATCH, WRITE_CALL = 20_000, 2_000, 2049, 32, 1000
SCHEMA = {"input_ids": {"type": "int32", "shape": [-1]}}
WRITE_SCHEMA = {"input_ids": {"type": "int32", "shape": [-1]}, "labels": {"type": "int32", "shape": [-1]}}


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=None, help=f"rows of 2,049 ids (default {ROWS})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows, one repeat (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="timed passes, the best kept (default 5)")
    parser.add_argument("--workdir", default=None, help="where datasets are written (default: a temporary folder)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="a Python with MindSpore 2.10 for the baselines (default: $RECORDIO_MINDSPORE_PYTHON)")
    parser.add_argument("--device", default="cpu", help="unused by this suite (accepted for the dispatcher)")


# --- data ---------------------------------------------------------------------------------------------

def token_ids(n):
    """The ``tokens`` workload's ids as one ``(n, 2049)`` int32 array."""
    from recordio.tools import workloads
    return np.stack([row["input_ids"] for row in workloads.samples("tokens", n)])


def write_recordio(path, schema, ids):
    from recordio import FileWriter
    for old in (path, path + ".db"):
        if os.path.exists(old):
            os.unlink(old)
    rows = [{name: ids[i] for name in schema} for i in range(len(ids))]
    start = time.perf_counter()
    writer = FileWriter(path, shard_num=1)
    writer.add_schema(schema, "tokens")
    for i in range(0, len(rows), WRITE_CALL):
        writer.write_raw_data(rows[i:i + WRITE_CALL])
    writer.commit()
    return time.perf_counter() - start


def write_megatron(prefix, ids):
    """Megatron-LM's indexed dataset (``MMapIndexedDataset``): ``.bin`` tokens, ``.idx`` sizes/pointers."""
    ids.astype(np.int32).tofile(prefix + ".bin")
    n, length = ids.shape
    sizes = np.full(n, length, np.int32)
    pointers = np.arange(n, dtype=np.int64) * length * 4
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + np.array([1], "<u8").tobytes() + bytes([4]))   # version 1, int32
        f.write(np.array([n], "<u8").tobytes() + np.array([n + 1], "<u8").tobytes())
        f.write(sizes.tobytes() + pointers.tobytes() + np.arange(n + 1, dtype=np.int64).tobytes())


def open_megatron(prefix):
    """``(buffer, sizes, pointers)``: the ``.bin`` memory-mapped, the ``.idx`` arrays (as Megatron reads)."""
    idx = np.memmap(prefix + ".idx", np.uint8, mode="r")
    n = int(idx[18:26].view("<u8")[0])
    sizes = np.asarray(idx[34:34 + 4 * n].view(np.int32))
    pointers = np.asarray(idx[34 + 4 * n:34 + 12 * n].view(np.int64))
    return memoryview(np.memmap(prefix + ".bin", np.uint8, mode="r")), sizes, pointers


# --- the reads ----------------------------------------------------------------------------------------

def batches_of(order):
    return [order[i:i + BATCH] for i in range(0, len(order) - BATCH + 1, BATCH)]


def recordio_reads(path, order):
    from recordio import FileReader, MindDataset
    from recordio.mindrecord import codec

    reader = FileReader(path)
    parts = codec.compress_rows(np.stack([reader[i]["input_ids"] for i in range(len(reader))]))
    int32 = np.dtype("<i4")

    def rows_sequential():
        rows = iter(reader)
        for _ in range(len(reader) // BATCH):
            np.stack([next(rows)["input_ids"] for _ in range(BATCH)])

    def rows_random():
        for ids in batches_of(order):
            np.stack([r["input_ids"] for r in reader.__getitems__(ids)])

    def pipeline(shuffle):
        data = MindDataset(path, columns_list=["input_ids"], shuffle=shuffle).batch(BATCH, drop_remainder=True)
        return lambda: sum(1 for _ in data.create_tuple_iterator(output_numpy=True, num_epochs=1))

    def codec_only():
        for i in range(0, len(parts) - BATCH + 1, BATCH):
            codec.decompress_many(parts[i:i + BATCH], int32)

    return reader, {"recordio FileReader rows, stacked": rows_sequential, "recordio MindDataset.batch": pipeline(False),
                    "recordio codec.decompress_many": codec_only}, {
        "recordio FileReader.__getitems__, stacked": rows_random, "recordio MindDataset.batch": pipeline(True)}


def megatron_reads(prefix, order):
    """Batches from the flat file as Megatron's ``MMapIndexedDataset`` reads samples (``np.frombuffer``
    at a pointer): one span per sequential batch, one sample per row of a random batch."""
    buffer, sizes, pointers = open_megatron(prefix)

    def sequential():
        for first in range(0, len(sizes) - BATCH + 1, BATCH):
            span = np.frombuffer(buffer, np.int32, BATCH * LENGTH, int(pointers[first]))
            span.reshape(BATCH, LENGTH).copy()

    def random():
        for ids in batches_of(order):
            np.stack([np.frombuffer(buffer, np.int32, n, p) for p, n in zip(pointers[ids].tolist(), sizes[ids].tolist())])

    return sequential, random


def hf_reads(folder, ids, order):
    """Hugging Face datasets over the same ids (Arrow, memory-mapped); None when it is not installed."""
    try:
        import datasets
        import pyarrow as pa
    except ImportError:
        return None
    datasets.disable_progress_bars()
    offsets = pa.array(np.arange(0, ids.size + 1, LENGTH, dtype=np.int32))
    table = pa.table({"input_ids": pa.ListArray.from_arrays(offsets, pa.array(ids.reshape(-1)))})
    features = datasets.Features({"input_ids": datasets.Sequence(datasets.Value("int32"))})
    target = os.path.join(folder, "hf")
    datasets.Dataset(table).cast(features).save_to_disk(target)
    data = datasets.load_from_disk(target).with_format("numpy")
    n = len(data)

    def sequential():
        for first in range(0, n - BATCH + 1, BATCH):
            data[first:first + BATCH]["input_ids"]

    def random():
        for batch in batches_of(order):
            data[batch.tolist()]["input_ids"]

    return sequential, random


# --- MindSpore (subprocess) ---------------------------------------------------------------------------

_MS_SCRIPT = r"""
import glob, json, os, sys, time
import numpy as np
import mindspore.dataset as ds
from mindspore.mindrecord import FileWriter
read_path, write_path, bin_path, n, length, batch, call, repeats = sys.argv[1:9]
n, length, batch, call, repeats = int(n), int(length), int(batch), int(call), int(repeats)
ids = np.fromfile(bin_path, np.int32).reshape(n, length)
schema = {"input_ids": {"type": "int32", "shape": [-1]}, "labels": {"type": "int32", "shape": [-1]}}

def write():
    for old in glob.glob(glob.escape(write_path) + "*"):
        os.unlink(old)
    rows = [{"input_ids": ids[i], "labels": ids[i]} for i in range(n)]
    start = time.perf_counter()
    writer = FileWriter(write_path, shard_num=1)
    writer.add_schema(schema, "tokens")
    for i in range(0, n, call):
        writer.write_raw_data(rows[i:i + call])
    writer.commit()
    return time.perf_counter() - start

def read(shuffle):
    data = ds.MindDataset(read_path, columns_list=["input_ids"], shuffle=shuffle).batch(batch, drop_remainder=True)
    start = time.perf_counter()
    count = sum(int(b[0].size) for b in data.create_tuple_iterator(output_numpy=True, num_epochs=1))
    return time.perf_counter() - start, count

out = {"write_s": min(write() for _ in range(repeats))}
for label, shuffle in (("sequential", False), ("random", True)):
    runs = [read(shuffle) for _ in range(repeats)]
    out[label + "_s"], out[label + "_tokens"] = min(runs)
print(json.dumps(out))
"""


def mindspore_run(python, read_path, write_path, bin_path, n, repeats):
    done = subprocess.run([python, "-c", _MS_SCRIPT, read_path, write_path, bin_path, str(n), str(LENGTH),
                           str(BATCH), str(WRITE_CALL), str(repeats)], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"MindSpore run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- text -> token rows (recordio convert text) -------------------------------------------------------

def text_corpus(folder, docs):
    """A plain text file of ``docs`` seeded documents (Zipf-distributed made-up words) and a BPE
    ``tokenizer.json`` trained on it; ``None`` without the ``tokenizers`` library."""
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        return None
    rng = np.random.default_rng(7)
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in "aeiou"]
    words = np.array(["".join(rng.choice(syllables, int(rng.integers(1, 4)))) for _ in range(5000)])
    weights = 1 / np.arange(1, len(words) + 1)
    lines = [" ".join(rng.choice(words, int(rng.integers(20, 400)), p=weights / weights.sum())) + "."
             for _ in range(docs)]
    path, tokenizer = os.path.join(folder, "corpus.txt"), os.path.join(folder, "tokenizer.json")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(lines[:2000], trainers.BpeTrainer(vocab_size=8000, special_tokens=["[UNK]", "<|endoftext|>"],
                                                             show_progress=False))
    tok.save(tokenizer)
    return path, tokenizer


def convert_rates(folder, docs, repeats):
    """Tokens/s of ``convert_text`` (read, tokenize, pack, write, commit) and of the tokenizer's
    ``encode_batch`` alone on the same lines (measured last: the converter's forked workers keep
    the tokenizer's threads only if the parent has not used them yet)."""
    corpus = text_corpus(folder, docs)
    if corpus is None:
        return []
    from recordio.converters import convert_text
    from tokenizers import Tokenizer

    path, tokenizer = corpus
    out = os.path.join(folder, "text.mindrecord")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        summary = convert_text(path, out, tokenizer=tokenizer, seq_length=LENGTH - 1, workers=1, overwrite=True,
                               quiet=True, tail="keep")
        best = min(best, time.perf_counter() - start)
    with open(path) as f:
        lines = f.read().splitlines()
    tok = Tokenizer.from_file(tokenizer)
    alone = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        tokens = sum(len(e.ids) + 1 for e in tok.encode_batch(lines))     # + the end-of-document id
        alone = min(alone, time.perf_counter() - start)
    written = sum(len(r["input_ids"]) for r in recordio_rows(out))
    assert written == tokens, (written, tokens)
    print(f"  convert text: {len(lines)} documents, {tokens} tokens, {summary.rows} rows", flush=True)
    return [row("convert text: recordio convert text (1 worker)", tokens / best, "tokenizers encode_batch alone",
                tokens / alone)]


def recordio_rows(path):
    from recordio import FileReader
    with FileReader(path) as reader:
        yield from reader


# --- timing and rows ----------------------------------------------------------------------------------

def interleaved_best(tasks, repeats):
    """Best seconds of each task, the tasks taking turns in every repeat (load spreads over all)."""
    best = {}
    for _ in range(repeats):
        for label, fn in tasks.items():
            start = time.perf_counter()
            fn()
            best[label] = min(best.get(label, float("inf")), time.perf_counter() - start)
    return best


def row(name, value, baseline=None, baseline_value=None, target=""):
    """A row in millions of tokens a second (``value``: tokens a second)."""
    return bench_row(name, value, "M tokens/s", baseline, baseline_value, target=target, scale=1e6)


def compare_rows(kind, rates, flat, hf, ms):
    """One row per recordio figure against the flat file, then against Hugging Face and MindSpore."""
    out = []
    for name, rate in rates.items():
        out.append(row(f"{kind}: {name}", rate, "flat memory-mapped int32 file", flat))
    best = max(r for n, r in rates.items() if "codec" not in n)
    if hf:
        out.append(row(f"{kind}: recordio best / Hugging Face", best, "Hugging Face datasets (Arrow)", hf))
    if ms:
        out.append(row(f"{kind}: recordio best / MindSpore", best, "MindSpore 2.10 MindDataset.batch", ms))
    out.append(row(f"{kind}: flat memory-mapped int32 file", flat))
    if hf:
        out.append(row(f"{kind}: Hugging Face datasets (Arrow)", hf))
    return out


def measure(folder, n, repeats, mindspore_python):
    ids = token_ids(n)
    tokens = (n // BATCH) * BATCH * LENGTH
    order = np.random.default_rng(1).permutation(n)
    path, write_path, prefix = (os.path.join(folder, name) for name in ("tokens.mindrecord", "ours/w.mindrecord", "flat"))
    ms_path = os.path.join(folder, "mindspore", "w.mindrecord")       # the same name: the header holds it
    os.makedirs(os.path.dirname(write_path))
    os.makedirs(os.path.dirname(ms_path))
    write_recordio(path, SCHEMA, ids)
    write_megatron(prefix, ids)
    reader, sequential, random = recordio_reads(path, order)
    flat_seq, flat_random = megatron_reads(prefix, order)
    hf = hf_reads(folder, ids, order)
    seq_tasks = dict(sequential, flat=flat_seq, **({"hf": hf[0]} if hf else {}))
    random_tasks = dict(random, flat=flat_random, **({"hf": hf[1]} if hf else {}))
    seq = {k: tokens / s for k, s in interleaved_best(seq_tasks, repeats).items()}
    rnd = {k: tokens / s for k, s in interleaved_best(random_tasks, repeats).items()}
    write_s = min(write_recordio(write_path, WRITE_SCHEMA, ids) for _ in range(repeats))
    reader.close()
    ms = mindspore_run(mindspore_python, path, ms_path, prefix + ".bin", n, min(repeats, 2)) \
        if mindspore_python else None
    results = compare_rows("sequential batches", {k: v for k, v in seq.items() if k not in ("flat", "hf")},
                           seq["flat"], seq.get("hf"), ms and ms["sequential_tokens"] / ms["sequential_s"])
    results += compare_rows("random batches", {k: v for k, v in rnd.items() if k not in ("flat", "hf")},
                            rnd["flat"], rnd.get("hf"), ms and ms["random_tokens"] / ms["random_s"])
    written = 2 * n * LENGTH          # input_ids + labels
    results.append(row("write input_ids + labels: recordio FileWriter", written / write_s,
                       "MindSpore 2.10 FileWriter" if ms else None, ms and written / ms["write_s"]))
    if ms:
        same = _same_bytes(write_path, ms_path)
        print(f"  written files byte-identical to MindSpore's: {same}", flush=True)
        results[-1]["identical_to_mindspore"] = same
    return results + convert_rates(folder, max(200, n // 2), min(repeats, 3))


def _same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


# --- entry points -------------------------------------------------------------------------------------

def run(args):
    """Run the token benchmark; returns rows ``{name, value, unit, baseline, baseline_value, ratio}``."""
    from recordio.mindrecord import codec
    n = getattr(args, "rows", None) or (QUICK_ROWS if args.quick else ROWS)
    repeats = getattr(args, "repeats", None) or (1 if args.quick else 5)
    print(f"  tokens: {n} rows x {LENGTH} int32 ids, batches of {BATCH}; integer codec: {codec.BACKEND}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    folder = tempfile.mkdtemp(prefix="tokens-", dir=getattr(args, "workdir", None))
    try:
        results = measure(folder, n, repeats, getattr(args, "mindspore_python", None))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for r in results:
        r["codec"] = codec.BACKEND
    return results


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
