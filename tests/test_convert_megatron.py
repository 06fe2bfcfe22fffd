"""Megatron-LM indexed datasets (.bin + .idx) to MindRecord and back, every token kept."""

import os
import struct

import numpy as np
import pytest

import recordio
from recordio.converters import convert_megatron, export_megatron
from recordio.converters.megatron import MAGIC, MegatronIndex
from recordio.errors import FormatError
from recordio.tools.__main__ import main


def write_megatron(prefix, documents, dtype=np.int32):
    """A Megatron indexed dataset written as Megatron's ``IndexedDatasetBuilder`` lays it out,
    independently of recordio's exporter: ``documents`` is a list of lists of sequences."""
    sequences = [np.asarray(s, dtype) for doc in documents for s in doc]
    with open(prefix + ".bin", "wb") as f:
        for s in sequences:
            f.write(s.tobytes())
    sizes = np.array([s.size for s in sequences], np.int32)
    pointers = np.zeros(len(sizes), np.int64)
    pointers[1:] = np.cumsum(sizes[:-1].astype(np.int64) * np.dtype(dtype).itemsize)
    doc_idx = np.concatenate([[0], np.cumsum([len(d) for d in documents])]).astype(np.int64)
    code = {np.int32: 4, np.int64: 5, np.uint16: 8, np.uint8: 1}[dtype]
    with open(prefix + ".idx", "wb") as f:
        f.write(MAGIC + struct.pack("<Q", 1) + struct.pack("<B", code))
        f.write(struct.pack("<Q", len(sizes)) + struct.pack("<Q", len(doc_idx)))
        f.write(sizes.tobytes() + pointers.tobytes() + doc_idx.tobytes())
    return sequences, doc_idx


def corpus(seed=0, docs=40, dtype=np.int32, high=50_000):
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, high, rng.integers(1, 90)).astype(dtype) for _ in range(rng.integers(1, 4))]
            for _ in range(docs)]


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.int64])
def test_one_row_per_sequence_keeps_every_token_and_document(tmp_path, dtype):
    prefix = str(tmp_path / "corpus_text_document")
    sequences, doc_idx = write_megatron(prefix, corpus(dtype=dtype, high=60_000), dtype)
    out = str(tmp_path / "tokens.mindrecord")
    convert_megatron(prefix, out, shard_num=3, workers=1, quiet=True, unit_tokens=500)
    rows = list(recordio.FileReader(out + "0"))
    assert len(rows) == len(sequences)
    for row, seq in zip(rows, sequences):
        np.testing.assert_array_equal(row["input_ids"], seq)
    documents = np.array([int(r["document"]) for r in rows])
    np.testing.assert_array_equal(np.flatnonzero(np.diff(documents, prepend=-1)), doc_idx[:-1])
    back = str(tmp_path / "back")
    assert export_megatron(out + "1", back, dtype=np.dtype(dtype).name)["documents"] == len(doc_idx) - 1
    for ext in (".bin", ".idx"):                               # byte for byte the original files
        assert open(back + ext, "rb").read() == open(prefix + ext, "rb").read()


def test_packed_rows_and_cli(tmp_path, capsys):
    prefix = str(tmp_path / "c")
    sequences, _ = write_megatron(prefix, corpus(seed=1))
    flat = np.concatenate(sequences)
    out = str(tmp_path / "packed.mindrecord")
    assert main(["convert", "megatron", prefix, out, "--seq-length", "15", "--shards", "1", "--quiet"]) == 0
    rows = [r["input_ids"] for r in recordio.FileReader(out)]
    assert all(r.shape == (16,) for r in rows) and len(rows) == flat.size // 16
    np.testing.assert_array_equal(np.concatenate(rows), flat[:len(rows) * 16])
    assert main(["export", "megatron", out, str(tmp_path / "again")]) == 0
    assert MegatronIndex(str(tmp_path / "again")).documents.tolist() == list(range(len(rows) + 1))
    assert "sequences" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["magic", "count", "pointer", "bin short", "documents"])
def test_damaged_index_files_are_refused(tmp_path, damage):
    prefix = str(tmp_path / "d")
    write_megatron(prefix, corpus(seed=2, docs=5))
    idx = bytearray(open(prefix + ".idx", "rb").read())
    if damage == "magic":
        idx[0:1] = b"X"
    elif damage == "count":
        idx[18:26] = struct.pack("<Q", 10**12)
    elif damage == "pointer":
        n = struct.unpack("<Q", idx[18:26])[0]
        idx[34 + 4 * n + 8:34 + 4 * n + 16] = struct.pack("<q", 3)
    elif damage == "documents":
        idx[-8:] = struct.pack("<q", 99)
    open(prefix + ".idx", "wb").write(bytes(idx))
    if damage == "bin short":
        os.truncate(prefix + ".bin", os.path.getsize(prefix + ".bin") - 4)
    with pytest.raises(FormatError):
        MegatronIndex(prefix)
