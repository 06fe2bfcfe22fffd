"""Deterministic reference workloads for the benchmarks (`recordio bench`): the same seed gives the same bytes.

Each workload yields dict samples; the same seed gives the same bytes, so a
format written by one system can be compared with another on identical data.

  cifar    50,000 x {image: 32x32x3 uint8 raw bytes (3,072 B), label: int32}
  jpeg      5,000 x {image: JPEG bytes (~100 KB, 500x375), label: int32, file_name: str}
  arrays   20,000 x {bbox: float32 [-1, 4], ids: int64 [-1], score: float64, label: int32, tag: str}
  tokens   20,000 x {input_ids: int32 [-1] of 2,049 ids below 151,000}  (schema [-1], as language-model
           scripts write it; ids uniform, so most take 4 bytes in MindRecord's compressed int arrays)

Use: python3 workloads.py NAME  -> prints count, payload bytes, first-sample digest.
"""
import hashlib
import sys

import numpy as np

SIZES = {"cifar": 50_000, "jpeg": 5_000, "arrays": 20_000, "tokens": 20_000}


def _jpeg_bank(rng, n_bank=64):
    """A bank of distinct natural-looking JPEGs (smooth noise + edges), encoded once."""
    import cv2  # opencv-python(-headless)

    bank = []
    for i in range(n_bank):
        small = rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
        img = cv2.resize(small, (500, 375), interpolation=cv2.INTER_CUBIC)
        noise = rng.integers(0, 40, size=img.shape, dtype=np.uint8)
        img = cv2.add(img, noise)
        cv2.putText(img, f"sample {i}", (20, 200), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (255, 255, 255), 3)
        ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
        assert ok
        bank.append(buf.tobytes())
    return bank


def samples(name, n=None, seed=0):
    n = SIZES[name] if n is None else n
    rng = np.random.default_rng(seed)
    if name == "cifar":
        for i in range(n):
            yield {"image": rng.integers(0, 256, 3072, dtype=np.uint8).tobytes(),
                   "label": np.int32(i % 10)}
    elif name == "jpeg":
        bank = _jpeg_bank(rng)
        for i in range(n):
            # vary the tail so no two samples are byte-identical
            yield {"image": bank[i % len(bank)] + i.to_bytes(4, "little"),
                   "label": np.int32(i % 1000),
                   "file_name": f"n{i % 1000:08d}/img_{i:07d}.JPEG"}
    elif name == "arrays":
        for i in range(n):
            k = int(rng.integers(1, 20))
            yield {"bbox": rng.random((k, 4), dtype=np.float32),
                   "ids": rng.integers(0, 2**40, k, dtype=np.int64),
                   "score": float(rng.random()),
                   "label": np.int32(i % 7),
                   "tag": f"tag-{i}"}
    elif name == "tokens":
        for _ in range(n):
            yield {"input_ids": rng.integers(0, 151_000, 2049, dtype=np.int32)}
    else:
        raise SystemExit(f"unknown workload {name!r}; one of {sorted(SIZES)}")


def payload_bytes(sample):
    total = 0
    for v in sample.values():
        if isinstance(v, bytes):
            total += len(v)
        elif isinstance(v, str):
            total += len(v.encode())
        elif isinstance(v, np.ndarray):
            total += v.nbytes
        else:
            total += np.asarray(v).nbytes
    return total


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "cifar"
    count = total = 0
    first = None
    for s in samples(name):
        count += 1
        total += payload_bytes(s)
        if first is None:
            first = hashlib.sha256(repr(sorted((k, (v.tobytes() if isinstance(v, np.ndarray) else v))
                                              for k, v in s.items())).encode()).hexdigest()[:16]
    print(f"{name}: {count} samples, {total / 1e6:.1f} MB payload, first sample digest {first}")
