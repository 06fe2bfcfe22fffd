"""MNIST / Fashion-MNIST idx files (gzipped or not) -> ``{image: bytes, label: int32}`` records.

The idx format: a 4-byte magic ``00 00 <type> <ndim>`` (type 0x08 = uint8), ``ndim``
big-endian uint32 sizes, then the values row-major. Images are ``N x H x W`` uint8,
labels ``N`` uint8. ``image`` is a lossless grey PNG (default) or, with ``raw=True``, the
``H*W`` raw bytes. Files are found by their usual names, with or without ``.gz``
(``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-...``); gzip is told by
its magic bytes, not by the name.
"""

import functools
import gzip
import json
import os

import numpy as np

from recordio.converters import engine, images

__all__ = ["MnistSource", "convert_mnist", "read_idx"]

SPLITS = {"train": "train", "test": "t10k"}
_GZIP = b"\x1f\x8b"


def _open(path):
    with open(path, "rb") as f:
        gz = f.read(2) == _GZIP
    return gzip.open(path, "rb") if gz else open(path, "rb")


def _idx_header(f, path):
    magic = f.read(4)
    if len(magic) < 4 or magic[:2] != b"\x00\x00" or magic[2] != 0x08 or not 1 <= magic[3] <= 4:
        raise ValueError(f"{path}: not a uint8 idx file (magic {magic.hex()}, expected 000008 then 01..04)")
    dims = f.read(4 * magic[3])
    if len(dims) < 4 * magic[3]:
        raise ValueError(f"{path}: truncated idx header")
    return tuple(int.from_bytes(dims[i:i + 4], "big") for i in range(0, len(dims), 4))


def idx_shape(path):
    """The array shape recorded in the header of the idx file ``path``."""
    with _open(path) as f:
        return _idx_header(f, path)


def read_idx(path):
    """The whole uint8 array of the idx file ``path`` (cached while the file is unchanged)."""
    st = os.stat(path)
    return _read_idx(os.fspath(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=2)
def _read_idx(path, mtime_ns, size):
    with _open(path) as f:
        shape = _idx_header(f, path)
        data = f.read()
    expected = int(np.prod(shape))
    if len(data) != expected:
        raise ValueError(f"{path}: idx header says {shape} ({expected} bytes) but {len(data)} bytes follow")
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def find_idx(root, split, what):
    """The path of the ``images``/``labels`` idx file of ``split`` under ``root``."""
    stem = f"{SPLITS[split]}-{what}-idx{3 if what == 'images' else 1}-ubyte"
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        if os.path.isfile(os.path.join(root, name)):
            return os.path.join(root, name)
    raise FileNotFoundError(f"{root}: no {stem} or {stem}.gz")


class MnistSource:
    """One split of an MNIST-style dataset as units of up to ``CHUNK`` images."""

    kind = "mnist"
    schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}}
    index_fields = ["label"]
    CHUNK = 100               # images per unit: shards are capped at one unit each
    chunk_rows = 2000

    def __init__(self, root, split="train", raw=False):
        if split not in SPLITS:
            raise ValueError(f"split must be train or test, got {split!r}")
        root = os.path.abspath(os.fspath(root))
        self.split, self.raw = split, bool(raw)
        self.images, self.labels = find_idx(root, split, "images"), find_idx(root, split, "labels")
        shape, labels = idx_shape(self.images), idx_shape(self.labels)
        if len(shape) != 3 or len(labels) != 1 or shape[0] != labels[0]:
            raise ValueError(f"{self.images} holds {shape} images but {self.labels} holds {labels} labels "
                             f"(expected N x H x W images and N labels)")
        self.count, self.image_shape = shape[0], shape[1:]
        image = f"raw uint8 {shape[1]}x{shape[2]}" if self.raw else "png"
        self.desc = json.dumps({"source": "mnist", "split": split, "image": image, "shape": list(shape[1:])})

    def units(self):
        return [(start, min(start + self.CHUNK, self.count)) for start in range(0, self.count, self.CHUNK)]

    def unit_rows(self, unit):
        return unit[1] - unit[0]

    def where(self, unit):
        return f"{self.images} [images {unit[0]}:{unit[1]}]"

    def facts(self):
        return {"images": self.images, "labels": self.labels, "raw": self.raw}

    def read(self, unit):
        start, stop = unit
        pixels, labels = read_idx(self.images)[start:stop], read_idx(self.labels)[start:stop]
        return [{"image": image.tobytes() if self.raw else images.encode_png(image), "label": np.int32(label)}
                for image, label in zip(pixels, labels)]


def convert_mnist(root, destination, *, split="train", raw=False, **options):
    """Convert the MNIST-style idx files under ``root``; see :func:`engine.convert` for ``options``."""
    return engine.convert(MnistSource(root, split, raw), destination, **options)
