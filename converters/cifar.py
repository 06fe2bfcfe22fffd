"""CIFAR-10 / CIFAR-100 batches (python pickle or binary ``.bin`` layout) -> records.

Records are ``{image: bytes, label: int32}``, plus ``coarse_label: int32`` for CIFAR-100
(``label`` is then the fine label). MindRecord has no uint8 type, so ``image`` is either
a lossless PNG (default; ``vision.Decode`` gives back the exact RGB pixels, as with
MindSpore's converter) or, with ``raw=True``, the 3,072 raw bytes of the 32x32x3 image in
HWC order (``np.frombuffer(image, np.uint8).reshape(32, 32, 3)``). The label names of the
batch metadata go into ``desc`` as JSON.

Layouts (both published by the CIFAR authors):

* python: pickled dicts with ``data`` (N x 3072 uint8, the R, G and B planes of each image,
  each 32x32 row-major), ``labels`` (CIFAR-10) or ``fine_labels``/``coarse_labels``;
  files ``data_batch_1..5``/``test_batch`` (CIFAR-10) or ``train``/``test`` (CIFAR-100).
* binary: fixed-size records ``<label><3072 pixels>`` (CIFAR-10) or
  ``<coarse><fine><3072 pixels>`` (CIFAR-100); files ``data_batch_1..5.bin``/``test_batch.bin``
  or ``train.bin``/``test.bin``.

Pickles are read with an unpickler that only builds numpy arrays, so a crafted batch
file cannot run code.
"""

import functools
import json
import os

import numpy as np

from recordio.converters import engine, images
from recordio.converters.safe_pickle import load_pickle

__all__ = ["CifarSource", "convert_cifar10", "convert_cifar100"]

PIXELS = 3072
SPLITS = ("train", "test")
_FILES = {  # (kind, layout, split) -> file names
    ("cifar10", "python", "train"): [f"data_batch_{i}" for i in range(1, 6)],
    ("cifar10", "python", "test"): ["test_batch"],
    ("cifar10", "binary", "train"): [f"data_batch_{i}.bin" for i in range(1, 6)],
    ("cifar10", "binary", "test"): ["test_batch.bin"],
    ("cifar100", "python", "train"): ["train"], ("cifar100", "python", "test"): ["test"],
    ("cifar100", "binary", "train"): ["train.bin"], ("cifar100", "binary", "test"): ["test.bin"],
}
_FOLDERS = {"cifar10": ("cifar-10-batches-py", "cifar-10-batches-bin"),
            "cifar100": ("cifar-100-python", "cifar-100-binary")}


def find_batches(root, kind, split):
    """``(layout, [batch files])`` under ``root`` (the batch folder or the folder that holds it)."""
    for folder in (root, *(os.path.join(root, sub) for sub in _FOLDERS[kind])):
        for layout in ("python", "binary"):
            names = _FILES[(kind, layout, split)]
            present = [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]
            if present:
                return layout, present
    wanted = " or ".join(", ".join(_FILES[(kind, lay, split)]) for lay in ("python", "binary"))
    raise FileNotFoundError(f"{root}: no {kind} {split} batches found (looked for {wanted}, also in "
                            f"{' and '.join(_FOLDERS[kind])})")


def load_batch(path, kind, layout):
    """``(pixels N x 3072 uint8 in CHW planes, fine labels, coarse labels or None)`` of one batch file.

    Cached (two files) while the file is unchanged: a shard task reads its batch once.
    """
    st = os.stat(path)
    return _load_batch(path, kind, layout, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=2)
def _load_batch(path, kind, layout, mtime_ns, size):
    if layout == "binary":
        return _load_binary(path, kind)
    batch = load_pickle(path)
    if not isinstance(batch, dict):
        raise ValueError(f"expected a pickled dict, found {type(batch).__name__}")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    fine_key = "labels" if kind == "cifar10" else "fine_labels"
    missing = [k for k in ("data", fine_key) + (("coarse_labels",) if kind == "cifar100" else ()) if k not in batch]
    if missing:
        raise ValueError(f"the batch has no {', '.join(missing)} (keys: {', '.join(map(str, batch))})")
    data = np.asarray(batch["data"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != PIXELS:
        raise ValueError(f"data must be N x {PIXELS} uint8, found {data.shape} {data.dtype}")
    fine = _labels(batch[fine_key], len(data), fine_key)
    coarse = _labels(batch["coarse_labels"], len(data), "coarse_labels") if kind == "cifar100" else None
    return data, fine, coarse


def _labels(values, n, name):
    labels = np.asarray(values, dtype=np.int64)
    if labels.shape != (n,):
        raise ValueError(f"{name} has {labels.size} entries for {n} images")
    return labels


def _load_binary(path, kind):
    head = 1 if kind == "cifar10" else 2
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size % (head + PIXELS):
        raise ValueError(f"size {raw.size} is not a multiple of the {head + PIXELS}-byte record")
    records = raw.reshape(-1, head + PIXELS)
    coarse = records[:, 0].astype(np.int64) if kind == "cifar100" else None
    return records[:, head:], records[:, head - 1].astype(np.int64), coarse


def _rows_in(path, kind, layout):
    if layout == "binary":
        size, record = os.path.getsize(path), (1 if kind == "cifar10" else 2) + PIXELS
        if size % record:
            raise ValueError(f"size {size} is not a multiple of the {record}-byte record")
        return size // record
    return len(load_batch(path, kind, layout)[0])


def label_names(folder, kind, layout):
    """The class names from the batch metadata, when present: {"label": [...], "coarse_label": [...]}."""
    if layout == "python":
        meta = os.path.join(folder, "batches.meta" if kind == "cifar10" else "meta")
        if not os.path.isfile(meta):
            return {}
        try:
            data = {k.decode() if isinstance(k, bytes) else k: v for k, v in load_pickle(meta).items()}
        except Exception as exc:  # a damaged metadata file is named, not half-used
            raise ValueError(f"{meta}: unreadable label names: {type(exc).__name__}: {exc}") from exc
        keys = {"label": "label_names"} if kind == "cifar10" else {
            "label": "fine_label_names", "coarse_label": "coarse_label_names"}
        return {field: [_text(n) for n in data[key]] for field, key in keys.items() if key in data}
    files = {"label": "batches.meta.txt"} if kind == "cifar10" else {
        "label": "fine_label_names.txt", "coarse_label": "coarse_label_names.txt"}
    return {field: _lines(os.path.join(folder, name)) for field, name in files.items()
            if os.path.isfile(os.path.join(folder, name))}


def _text(name):
    return name.decode() if isinstance(name, bytes) else str(name)


def _lines(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


class CifarSource:
    """CIFAR batch files as conversion units of up to ``CHUNK`` images."""

    CHUNK = 100               # images per unit: shards are capped at one unit each
    chunk_rows = 1000

    def __init__(self, root, kind="cifar10", split="train", raw=False):
        if kind not in _FOLDERS:
            raise ValueError(f"kind must be cifar10 or cifar100, got {kind!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be train or test, got {split!r}")
        self.kind, self.split, self.raw = kind, split, bool(raw)
        self.layout, self.files = find_batches(os.path.abspath(os.fspath(root)), kind, split)
        self.schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}}
        if kind == "cifar100":
            self.schema["coarse_label"] = {"type": "int32"}
        self.index_fields = [f for f in ("label", "coarse_label") if f in self.schema]
        names = label_names(os.path.dirname(self.files[0]), kind, self.layout)
        image = "raw HWC uint8 32x32x3" if self.raw else "png"
        self.desc = json.dumps({"source": kind, "split": split, "layout": self.layout, "image": image,
                                "label_names": names})

    def units(self):
        units = []
        for path in self.files:
            try:
                n = _rows_in(path, self.kind, self.layout)
            except Exception:            # unreadable: one unit whose read raises, reported with its path
                units.append((path, 0, -1))
                continue
            units.extend((path, start, min(start + self.CHUNK, n)) for start in range(0, n, self.CHUNK))
        return units

    def unit_rows(self, unit):
        return max(0, unit[2] - unit[1])

    def where(self, unit):
        return unit[0] if unit[2] < 0 else f"{unit[0]} [images {unit[1]}:{unit[2]}]"

    def facts(self):
        return {"raw": self.raw, "layout": self.layout, "split": self.split}

    def read(self, unit):
        path, start, stop = unit
        data, fine, coarse = load_batch(path, self.kind, self.layout)
        stop = len(data) if stop < 0 else stop
        pixels = data[start:stop].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        rows = []
        for i, image in enumerate(pixels):
            row = {"image": image.tobytes() if self.raw else images.encode_png(image),
                   "label": np.int32(fine[start + i])}
            if coarse is not None:
                row["coarse_label"] = np.int32(coarse[start + i])
            rows.append(row)
        return rows


def convert_cifar10(root, destination, *, split="train", raw=False, **options):
    """Convert CIFAR-10 batches under ``root`` (either layout); see :func:`engine.convert` for ``options``."""
    return engine.convert(CifarSource(root, "cifar10", split, raw), destination, **options)


def convert_cifar100(root, destination, *, split="train", raw=False, **options):
    """Convert CIFAR-100 batches under ``root`` (either layout); see :func:`engine.convert` for ``options``."""
    return engine.convert(CifarSource(root, "cifar100", split, raw), destination, **options)
