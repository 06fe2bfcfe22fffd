"""A dataset with every MindRecord schema type, for the round trips through Ray, HF and WebDataset."""

import io

import numpy as np

import recordio

SCHEMA = {
    "i32": {"type": "int32"}, "i64": {"type": "int64"}, "f32": {"type": "float32"}, "f64": {"type": "float64"},
    "text": {"type": "string"}, "blob": {"type": "bytes"},
    "matrix": {"type": "float32", "shape": [2, 3]}, "ids": {"type": "int64", "shape": [-1]},
    "points": {"type": "int32", "shape": [-1, 2]}, "vector": {"type": "float64", "shape": [4]},
}


def make_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    return [{"i32": np.int32(rng.integers(-2**31, 2**31)), "i64": np.int64(rng.integers(-2**62, 2**62)),
             "f32": np.float32(rng.standard_normal()), "f64": float(rng.standard_normal()),
             "text": f"row {i} é", "blob": bytes(rng.integers(0, 256, int(rng.integers(0, 40)), np.uint8)) + b"\0",
             "matrix": rng.standard_normal((2, 3)).astype(np.float32),
             "ids": rng.integers(-9, 9, int(rng.integers(1, 6))).astype(np.int64),
             "points": rng.integers(0, 99, (int(rng.integers(1, 4)), 2)).astype(np.int32),
             "vector": rng.standard_normal(4)}
            for i in range(n)]


def write_dataset(path, n=40, shard_num=4, schema=SCHEMA, rows=None):
    writer = recordio.FileWriter(str(path), shard_num=shard_num)
    writer.add_schema(schema, "bridge test")
    writer.write_raw_data(make_rows(n) if rows is None else rows)
    writer.commit()
    return str(path) + ("0" if shard_num > 1 else "")


def png(seed, size=(6, 5)):
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (*size, 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def same(a, b):
    """Row lists equal field by field: dtype, shape and value for arrays and numpy scalars."""
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert sorted(x) == sorted(y), i
        for k in x:
            u, v = np.asarray(x[k]), np.asarray(y[k])
            if isinstance(x[k], (str, bytes)):
                assert type(x[k]) is type(y[k]) and x[k] == y[k], (i, k)
            else:
                assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), (i, k, u, v)


def read(path):
    return list(recordio.FileReader(path))
