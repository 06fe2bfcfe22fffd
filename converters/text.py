"""Text -> packed token rows ``{input_ids: int32 [-1]}`` (optionally ``labels``, ``attention_mask``).

Documents are the non-blank lines of plain text files, or the ``key`` string of each object of
JSON-lines files. Each is tokenized with a Hugging Face ``tokenizers`` tokenizer (a
``tokenizer.json``; its own special tokens included, as ``Tokenizer.encode`` gives them), followed
by the end-of-document id; the ids are joined and cut into rows of ``seq_length + 1`` ids, the
layout MindSpore's language-model scripts train on (the model shifts by one). ``labels`` is a copy
of ``input_ids``; ``attention_mask`` is all ones (rows hold no padding).

Conversion units are pieces of about :data:`UNIT_BYTES` of a file, cut at line ends, so that big
files convert in parallel; each piece is packed on its own. Its last row, shorter than
``seq_length + 1``, is dropped (``tail="drop"``, as those scripts drop it; at most ``seq_length``
ids per piece) or kept as a shorter row (``tail="keep"``). The rows do not depend on the number of
shards or workers. ``desc`` records the packing as JSON.
"""

import functools
import hashlib
import itertools
import json
import os

import numpy as np

from recordio.converters import engine
from recordio.errors import FormatError
from recordio.extras import requires

__all__ = ["EOD_TOKENS", "TextSource", "convert_text", "pack"]

UNIT_BYTES = 64 << 20
EOD_TOKENS = ("<|endoftext|>", "</s>", "<eos>", "[EOS]", "<|end_of_text|>")    # looked up when no eod is given
TAILS = ("drop", "keep")
_INT32_MAX = (1 << 31) - 1


@functools.lru_cache(maxsize=4)
def _tokenizer(path, digest):
    """The tokenizer of ``path`` (one per process; ``digest`` keys the cache on its contents)."""
    with requires("text conversion with a tokenizer"):
        from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _eod(tokenizer, path, eod_id, eod_token):
    if eod_id is not None and eod_token is not None:
        raise ValueError("give eod_id or eod_token, not both")
    if eod_id is not None:
        if isinstance(eod_id, bool) or not isinstance(eod_id, int) or not 0 <= eod_id <= _INT32_MAX:
            raise ValueError(f"eod_id must be an int in [0, 2**31), got {eod_id!r}")
        return eod_id
    names = [eod_token] if eod_token is not None else EOD_TOKENS
    for name in names:
        found = tokenizer.token_to_id(name)
        if found is not None:
            return found
    if eod_token is not None:
        raise ValueError(f"{path}: the tokenizer has no token {eod_token!r}")
    raise ValueError(f"{path}: the tokenizer has none of {', '.join(EOD_TOKENS)}; give eod_id or eod_token")


def _files(paths):
    return engine.input_files(paths, "text")


def _pieces(path, unit_bytes):
    """``(start, end)`` byte ranges of about ``unit_bytes`` each, cut after a newline."""
    size, starts = os.path.getsize(path), [0]
    with open(path, "rb") as f:
        while starts[-1] + unit_bytes < size:
            f.seek(starts[-1] + unit_bytes - 1)
            f.readline()                               # to the end of the line holding that byte
            if f.tell() >= size:
                break
            starts.append(f.tell())
    return list(zip(starts, starts[1:] + [size])) if size else []


def pack(id_lists, eod_id, row_length, keep_tail=False):
    """Documents' ids, each followed by ``eod_id``, joined and cut into int32 rows of ``row_length``:
    ``(full rows as one (n, row_length) array, the last shorter row or None)``."""
    total = sum(map(len, id_lists)) + len(id_lists)
    flat = np.fromiter(itertools.chain.from_iterable(itertools.chain(ids, (eod_id,)) for ids in id_lists),
                       dtype=np.int64, count=total)
    if flat.size and flat.max() > _INT32_MAX:
        raise ValueError(f"token id {int(flat.max())} does not fit int32")
    flat = flat.astype(np.int32)
    full = flat.size // row_length
    tail = flat[full * row_length:]
    return flat[:full * row_length].reshape(full, row_length), (tail if keep_tail and tail.size else None)


class TextSource:
    """Text or JSON-lines files as conversion units of about :data:`UNIT_BYTES` each."""

    kind = "text"
    chunk_rows = 1024

    def __init__(self, paths, tokenizer, seq_length, *, key=None, eod_id=None, eod_token=None, labels=False,
                 attention_mask=False, tail="drop", unit_bytes=UNIT_BYTES):
        if isinstance(seq_length, bool) or not isinstance(seq_length, int) or seq_length < 1:
            raise ValueError(f"seq_length must be a positive int, got {seq_length!r}")
        if tail not in TAILS:
            raise ValueError(f"tail must be one of {', '.join(TAILS)}, got {tail!r}")
        self.files = _files(paths)
        self.tokenizer_path = os.path.abspath(os.fspath(tokenizer))
        self.tokenizer_digest = _digest(self.tokenizer_path)
        self.eod_id = _eod(self._tokenizer(), self.tokenizer_path, eod_id, eod_token)
        self.seq_length, self.key, self.tail, self.unit_bytes = seq_length, key, tail, unit_bytes
        self.columns = ["input_ids"] + ["labels"] * bool(labels) + ["attention_mask"] * bool(attention_mask)
        self.schema = {name: {"type": "int32", "shape": [-1]} for name in self.columns}
        self.index_fields = []
        self.desc = json.dumps({"source": "text", "tokenizer": os.path.basename(self.tokenizer_path),
                                "tokenizer_sha256": self.tokenizer_digest, "seq_length": seq_length,
                                "row_length": seq_length + 1, "eod_id": self.eod_id, "key": key, "tail": tail})

    def _tokenizer(self):
        return _tokenizer(self.tokenizer_path, self.tokenizer_digest)

    def units(self):
        return [(path, start, end) for path in self.files for start, end in _pieces(path, self.unit_bytes)]

    def unit_rows(self, unit):
        """An estimate for the progress bar (about 4 bytes of text per token)."""
        return max(1, (unit[2] - unit[1]) // (4 * (self.seq_length + 1)))

    def where(self, unit):
        return f"{unit[0]} [bytes {unit[1]}-{unit[2]}]"

    def facts(self):
        return {"tokenizer_sha256": self.tokenizer_digest, "seq_length": self.seq_length, "key": self.key,
                "eod_id": self.eod_id, "columns": self.columns, "tail": self.tail,
                "files": [[f, os.path.getsize(f), os.stat(f).st_mtime_ns] for f in self.files]}

    def documents(self, unit):
        """The unit's documents (strings), in file order."""
        path, start, end = unit
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        docs, offset = [], start
        for line in data.split(b"\n"):
            if line.strip():
                docs.append(self._document(line, path, offset))
            offset += len(line) + 1
        return docs

    def _document(self, line, path, offset):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"{path}: byte {offset + exc.start}: not UTF-8 text") from None
        if self.key is None:
            return text.rstrip("\r")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise FormatError(f"{path}: byte {offset}: not a JSON line ({exc})") from None
        if not isinstance(value, dict) or not isinstance(value.get(self.key), str):
            found = type(value.get(self.key)).__name__ if isinstance(value, dict) else type(value).__name__
            raise FormatError(f"{path}: byte {offset}: expected a JSON object with a string {self.key!r}, "
                              f"found {found}")
        return value[self.key]

    def read(self, unit):
        docs = self.documents(unit)
        encodings = self._tokenizer().encode_batch(docs) if docs else []
        grid, tail = pack([e.ids for e in encodings], self.eod_id, self.seq_length + 1, self.tail == "keep")
        arrays = list(grid) + ([tail] if tail is not None else [])
        ones = {n: np.ones(n, np.int32) for n in {a.size for a in arrays}} if "attention_mask" in self.columns else {}
        return [self._row(ids, ones) for ids in arrays]

    def _row(self, ids, ones):
        row = {"input_ids": ids}
        if "labels" in self.columns:
            row["labels"] = ids
        if ones:
            row["attention_mask"] = ones[ids.size]
        return row


def convert_text(paths, destination, *, tokenizer, seq_length, key=None, eod_id=None, eod_token=None,
                 labels=False, attention_mask=False, tail="drop", **options):
    """Tokenize and pack text or JSON-lines files into ``destination``; see the module and
    :func:`engine.convert` for ``options``."""
    source = TextSource(paths, tokenizer, seq_length, key=key, eod_id=eod_id, eod_token=eod_token, labels=labels,
                        attention_mask=attention_mask, tail=tail)
    return engine.convert(source, destination, **options)
