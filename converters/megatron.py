"""Megatron-LM's indexed dataset (``PREFIX.bin`` + ``PREFIX.idx``) <-> MindRecord token rows.

The layout NeMo and Megatron-LM train on (``MMapIndexedDataset`` / ``IndexedDataset``), read and
written here without Megatron installed::

    PREFIX.idx (little-endian)
        magic   b"MMIDIDX\\x00\\x00"     9 bytes
        version u64 = 1
        dtype   u8    1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16
        N       u64   sequences
        D       u64   entries of the document index (documents + 1)
        sizes     int32[N]   tokens of each sequence
        pointers  int64[N]   byte offset of each sequence in PREFIX.bin
        documents int64[D]   first sequence of each document, then N
    PREFIX.bin  the sequences' tokens, back to back

Importing (:func:`convert_megatron`, ``recordio convert megatron``) keeps every sequence and the
document boundaries: one row per sequence, ``{"input_ids": int32 [-1], "document": int64}`` (int64
ids when the file's dtype does not fit int32), or, with ``seq_length``, the sequences joined in order
and cut into rows of ``seq_length + 1`` ids (the layout MindSpore's LM scripts train on; each unit's
last, shorter row is dropped unless ``tail="keep"``). Exporting (:func:`export_megatron`, ``recordio
export megatron``) writes each row as one sequence; consecutive rows with the same ``document`` value
form one document (every row its own document when there is no such column). Both files are treated
as untrusted: every count, size and offset is checked against the files before it is used.
"""

from __future__ import annotations

import json
import os

import numpy as np

from recordio.converters import engine
from recordio.errors import FormatError

__all__ = ["MegatronIndex", "MegatronSource", "convert_megatron", "export_megatron"]

MAGIC = b"MMIDIDX\x00\x00"
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
          8: np.uint16}
CODES = {np.dtype(v): k for k, v in DTYPES.items()}
_HEAD = len(MAGIC) + 8 + 1 + 8 + 8
UNIT_TOKENS = 16 << 20                  # tokens per conversion unit (a range of whole sequences)
TAILS = ("drop", "keep")


class MegatronIndex:
    """A checked Megatron indexed dataset: ``sizes``, ``pointers``, ``documents`` and the memory-mapped tokens."""

    def __init__(self, prefix: str | os.PathLike) -> None:
        self.prefix = os.fspath(prefix)
        idx_path, bin_path = self.prefix + ".idx", self.prefix + ".bin"
        idx = np.fromfile(idx_path, dtype=np.uint8)
        if idx.size < _HEAD or idx[:len(MAGIC)].tobytes() != MAGIC:
            raise FormatError(f"{idx_path}: not a Megatron indexed dataset (no MMIDIDX header)")
        version, code, n, d = (int(idx[9:17].view("<u8")[0]), int(idx[17]), int(idx[18:26].view("<u8")[0]),
                               int(idx[26:34].view("<u8")[0]))
        if version != 1 or code not in DTYPES:
            raise FormatError(f"{idx_path}: version {version} / dtype code {code} (expected version 1 and a "
                              f"dtype code in {sorted(DTYPES)})")
        if idx.size != _HEAD + 12 * n + 8 * d or d < 1:
            raise FormatError(f"{idx_path}: {idx.size} bytes, expected {_HEAD + 12 * n + 8 * d} for {n} sequences "
                              f"and {d} document-index entries")
        self.dtype = np.dtype(DTYPES[code]).newbyteorder("<")
        self.sizes = idx[_HEAD:_HEAD + 4 * n].view("<i4").astype(np.int64)
        self.pointers = idx[_HEAD + 4 * n:_HEAD + 12 * n].view("<i8").astype(np.int64)
        self.documents = idx[_HEAD + 12 * n:].view("<i8").astype(np.int64)
        size = os.path.getsize(bin_path)
        self._check(n, size, idx_path)
        self.tokens = (np.memmap(bin_path, dtype=self.dtype, mode="r") if size else np.zeros(0, self.dtype))

    def _check(self, n, bin_size, where):
        item = self.dtype.itemsize
        if n and (self.sizes.min() < 0 or self.pointers[0] != 0
                  or not np.array_equal(self.pointers[1:], self.pointers[:-1] + self.sizes[:-1] * item)):
            raise FormatError(f"{where}: sequence sizes and pointers do not lay the sequences back to back")
        end = int(self.pointers[-1] + self.sizes[-1] * item) if n else 0
        if end != bin_size:
            raise FormatError(f"{where}: the sequences end at byte {end} but {self.prefix}.bin has {bin_size}")
        docs = self.documents
        if docs[0] != 0 or docs[-1] != n or np.any(np.diff(docs) < 0):
            raise FormatError(f"{where}: the document index must rise from 0 to {n}, found "
                              f"{docs[:3].tolist()}...{docs[-3:].tolist()}")

    def __len__(self) -> int:
        return len(self.sizes)

    def sequence(self, i: int) -> np.ndarray:
        start = int(self.pointers[i]) // self.dtype.itemsize
        return np.asarray(self.tokens[start:start + int(self.sizes[i])])

    def document_of(self) -> np.ndarray:
        """The document number of every sequence."""
        return np.repeat(np.arange(len(self.documents) - 1, dtype=np.int64), np.diff(self.documents))


class MegatronSource:
    """A Megatron indexed dataset as conversion units: ranges of whole sequences."""

    kind = "megatron"
    chunk_rows = 1024

    def __init__(self, prefix, *, seq_length=None, tail="drop", unit_tokens=UNIT_TOKENS):
        if seq_length is not None and (isinstance(seq_length, bool) or not isinstance(seq_length, int)
                                       or seq_length < 1):
            raise ValueError(f"seq_length must be a positive int, got {seq_length!r}")
        if tail not in TAILS:
            raise ValueError(f"tail must be one of {', '.join(TAILS)}, got {tail!r}")
        self.prefix = os.path.abspath(os.fspath(prefix))
        index = MegatronIndex(self.prefix)
        self.seq_length, self.tail, self.unit_tokens = seq_length, tail, unit_tokens
        wide = index.dtype.kind == "f" or index.dtype in (np.dtype("<i8"),)
        self.id_type = "int64" if wide else "int32"
        if index.dtype.kind == "f":
            raise FormatError(f"{self.prefix}.idx: token ids of dtype {index.dtype.name} (expected integers)")
        self.schema = {"input_ids": {"type": self.id_type, "shape": [-1]}}
        if seq_length is None:
            self.schema["document"] = {"type": "int64"}
        self.index_fields = ["document"] if seq_length is None else []
        self.desc = json.dumps({"source": "megatron", "prefix": os.path.basename(self.prefix),
                                "dtype": index.dtype.name, "seq_length": seq_length, "tail": tail})
        self._index = None

    def _open(self):
        if self._index is None:
            self._index = MegatronIndex(self.prefix)
        return self._index

    def __getstate__(self):
        return dict(self.__dict__, _index=None)

    def units(self):
        index = self._open()
        ends = np.cumsum(index.sizes)
        units, start = [], 0
        while start < len(index):
            stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + self.unit_tokens, side="right"))
            stop = max(stop, start + 1)
            units.append((start, min(stop, len(index))))
            start = units[-1][1]
        return units

    def unit_rows(self, unit):
        if self.seq_length is None:
            return unit[1] - unit[0]
        return max(1, int(self._open().sizes[unit[0]:unit[1]].sum()) // (self.seq_length + 1))

    def where(self, unit):
        return f"{self.prefix} [sequences {unit[0]}-{unit[1] - 1}]"

    def facts(self):
        return {"prefix": self.prefix, "seq_length": self.seq_length, "tail": self.tail,
                "files": [[p, os.path.getsize(p), os.stat(p).st_mtime_ns]
                          for p in (self.prefix + ".idx", self.prefix + ".bin")]}

    def read(self, unit):
        index = self._open()
        dtype = np.int32 if self.id_type == "int32" else np.int64
        sequences = [index.sequence(i).astype(dtype) for i in range(*unit)]
        if self.seq_length is None:
            documents = index.document_of()[unit[0]:unit[1]]
            return [{"input_ids": s, "document": int(d)} for s, d in zip(sequences, documents.tolist())]
        flat = np.concatenate(sequences) if sequences else np.zeros(0, dtype)
        length = self.seq_length + 1
        full = flat.size // length
        rows = [{"input_ids": r} for r in flat[:full * length].reshape(full, length)]
        if self.tail == "keep" and flat.size > full * length:
            rows.append({"input_ids": flat[full * length:]})
        return rows


def convert_megatron(prefix, destination, *, seq_length=None, tail="drop", unit_tokens=UNIT_TOKENS, **options):
    """Import the Megatron indexed dataset ``prefix`` (``.bin`` + ``.idx``) into ``destination``; see the
    module for the row layouts and :func:`engine.convert` for ``options`` (``unit_tokens``: tokens per
    unit of work; shards hold whole units)."""
    source = MegatronSource(prefix, seq_length=seq_length, tail=tail, unit_tokens=unit_tokens)
    return engine.convert(source, destination, **options)


def export_megatron(path, prefix, *, column="input_ids", dtype=None) -> dict:
    """Write the ``column`` arrays of the dataset ``path`` as the Megatron indexed dataset ``prefix``.

    Each row is one sequence; consecutive rows with the same ``document`` value are one document
    (each row its own document without that column). ``dtype`` defaults to the column's type.
    Returns ``{"sequences", "documents", "tokens"}``.
    """
    from recordio.mindrecord.read.reader import FileReader

    with FileReader(path) as reader:
        spec = reader.schema.get(column)
        if spec is None or spec.get("type") not in ("int32", "int64") or spec.get("shape") != [-1]:
            raise ValueError(f"{column!r} is not an int32/int64 [-1] field of {path} (schema: {dict(reader.schema)})")
        out = np.dtype(dtype or spec["type"]).newbyteorder("<")
        if out not in CODES:
            raise ValueError(f"dtype {out.name} is not a Megatron token dtype")
        has_docs = "document" in reader.schema
        sizes, docs, last = [], [0], None
        tmp = prefix + ".bin.tmp"
        with open(tmp, "wb") as f:
            for i, row in enumerate(reader):
                ids = row[column]
                if ids.size and (ids.min() < np.iinfo(out).min or ids.max() > np.iinfo(out).max):
                    raise ValueError(f"{path}: row {i}: ids outside {out.name}")
                f.write(ids.astype(out).tobytes())
                if i and (not has_docs or row["document"] != last):
                    docs.append(i)
                last = row["document"] if has_docs else None
                sizes.append(ids.size)
    docs.append(len(sizes))
    _write_index(prefix + ".idx", out, np.asarray(sizes, np.int64), np.asarray(docs, np.int64))
    os.replace(tmp, prefix + ".bin")
    return {"sequences": len(sizes), "documents": len(docs) - 1, "tokens": int(sum(sizes))}


def _write_index(path, dtype, sizes, documents):
    pointers = np.concatenate([[0], np.cumsum(sizes[:-1] * dtype.itemsize)]).astype("<i8") if sizes.size \
        else np.zeros(0, "<i8")
    with open(path + ".tmp", "wb") as f:
        f.write(MAGIC + np.array([1], "<u8").tobytes() + bytes([CODES[dtype]]))
        f.write(np.array([sizes.size, documents.size], "<u8").tobytes())
        f.write(sizes.astype("<i4").tobytes() + pointers.tobytes() + documents.astype("<i8").tobytes())
    os.replace(path + ".tmp", path)
