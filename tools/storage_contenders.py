"""The contenders ``bench_storage`` measures recordio against, on the same rows: the flat file of the
rows' payload bytes (the page-cache copy limit), Hugging Face ``datasets`` on Arrow, and MindSpore 2.10 in
its own Python (a subprocess)."""

import glob
import json
import os
import pickle
import subprocess

import numpy as np

__all__ = ["MINDSPORE_REPEATS", "hf_dataset", "mindspore_storage", "payload", "read_flat", "read_hf", "write_flat"]


def payload(row):
    """The row's payload bytes, as they would sit in a flat file."""
    parts = []
    for value in row.values():
        if isinstance(value, bytes):
            parts.append(value)
        elif isinstance(value, str):
            parts.append(value.encode())
        else:
            parts.append(np.asarray(value).tobytes())
    return b"".join(parts)


# --- the flat file (the limit) -------------------------------------------------------------------------


def write_flat(path, rows):
    with open(path, "wb") as f:
        for row in rows:
            f.write(payload(row))
        f.flush()
        os.fsync(f.fileno())


def read_flat(path):
    buffer = bytearray(1 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass


# --- Hugging Face datasets ---------------------------------------------------------------------------------


def hf_dataset(folder, name, rows):
    """The rows as a Hugging Face ``datasets`` dataset saved as Arrow; its folder (None without ``datasets``)."""
    try:
        import datasets
    except ImportError:
        return None
    columns = {k: [r[k].tolist() if isinstance(r[k], np.ndarray) else r[k] for r in rows] for k in rows[0]}
    target = os.path.join(folder, f"{name}.hf")
    datasets.Dataset.from_dict(columns).save_to_disk(target)
    return target


def read_hf(data, batch=256):
    """Every row of an Arrow dataset opened ``with_format("numpy")``, in batches of ``batch``."""
    for start in range(0, len(data), batch):
        data[start:start + batch]


# --- MindSpore (subprocess) ----------------------------------------------------------------------------

_MS_SCRIPT = r"""
import glob, json, os, pickle, sys, time
import numpy as np
path, rows_file, name, batch, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[6])
schema = json.loads(sys.argv[5])
from mindspore.mindrecord import FileReader, FileWriter
import mindspore.dataset as ds
with open(rows_file, "rb") as f:
    rows = [{k: (np.frombuffer(v[2], v[0]).reshape(v[1]) if isinstance(v, tuple) else v)
             for k, v in r.items()} for r in pickle.load(f)]

def write():
    for old in glob.glob(glob.escape(path) + "*"):
        os.unlink(old)
    start = time.perf_counter()
    writer = FileWriter(path, shard_num=1, overwrite=True)
    writer.add_schema(schema, name)
    for i in range(0, len(rows), batch):
        writer.write_raw_data(rows[i:i + batch])
    writer.commit()
    return time.perf_counter() - start, len(rows)

def filereader():
    start = time.perf_counter()
    reader = FileReader(path)
    n = sum(1 for _ in reader.get_next())
    reader.close()
    return time.perf_counter() - start, n

def minddataset():
    start = time.perf_counter()
    n = sum(1 for _ in ds.MindDataset(path, shuffle=False).create_dict_iterator(num_epochs=1, output_numpy=True))
    return time.perf_counter() - start, n

def minddataset_batched(workers):
    d = ds.MindDataset(path, shuffle=False, num_parallel_workers=workers).batch(256)
    start = time.perf_counter()
    n = sum(len(b["label"]) for b in d.create_dict_iterator(num_epochs=1, output_numpy=True))
    return time.perf_counter() - start, n

out = {}
for label, fn in (("write", write), ("filereader", filereader), ("minddataset", minddataset)):
    runs = [fn() for _ in range(repeats)]
    out[label + "_s"], out[label + "_rows"] = min(runs)
try:      # MindSpore's batch refuses arrays of different shapes (the arrays workload)
    best = min(min(minddataset_batched(w) for _ in range(repeats)) for w in (1, 2, 4) if w <= os.cpu_count())
    out["minddataset_batched_s"], out["minddataset_batched_rows"] = best
except RuntimeError as exc:
    out["minddataset_batched_error"] = str(exc)[-300:]
print(json.dumps(out))
"""
MINDSPORE_REPEATS = 2


def _plain_rows(rows):
    """Rows with numpy values turned into plain Python data (the two virtualenvs' numpy differ)."""
    def plain(value):
        if isinstance(value, np.ndarray):
            return (value.dtype.str, list(value.shape), value.tobytes())
        return value.item() if isinstance(value, np.generic) else value
    return [{k: plain(v) for k, v in row.items()} for row in rows]


def mindspore_storage(python, folder, name, rows, repeats, schema, batch):
    """MindSpore's write / FileReader / MindDataset seconds on ``rows`` (``schema``, written in calls of
    ``batch`` rows), in its own Python."""
    rows_file = os.path.join(folder, f"{name}.rows.pkl")
    with open(rows_file, "wb") as f:
        pickle.dump(_plain_rows(rows), f, protocol=4)
    path = os.path.join(folder, f"{name}.ms.mindrecord")
    try:
        done = subprocess.run([python, "-c", _MS_SCRIPT, path, rows_file, name, str(batch),
                               json.dumps(schema), str(repeats)], capture_output=True, text=True,
                              timeout=3600)
    finally:
        os.unlink(rows_file)
        for old in glob.glob(glob.escape(path) + "*"):
            os.unlink(old)
    if done.returncode != 0:
        raise RuntimeError(f"MindSpore run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
