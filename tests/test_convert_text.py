"""``convert_text`` / ``recordio convert text``: documents tokenized, joined with the end-of-document
id and cut into rows of ``seq_length + 1`` ids that reproduce the tokenizer's ids exactly. The tokenizer
is trained here on local text (no downloads)."""

import json

import numpy as np
import pytest

tokenizers = pytest.importorskip("tokenizers")

import recordio  # noqa: E402
from recordio.converters import convert_text  # noqa: E402
from recordio.converters.text import TextSource, pack  # noqa: E402
from recordio.tools.__main__ import main  # noqa: E402

WORDS = ("the a record page blob shard index token row batch file reader writer schema field value "
         "header compress width byte integer array python numpy torch model train step").split()
EOD = "<|endoftext|>"


def _documents(seed, n):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(1, 40)))) + ("." if i % 3 else " Ünïcode ok")
            for i in range(n)]


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(_documents(0, 300), trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", EOD]))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


@pytest.fixture
def corpus(tmp_path):
    """Two plain text files (a document a line, blank lines between some) and a JSON-lines file."""
    docs = {"a.txt": _documents(1, 40), "b.txt": _documents(2, 25)}
    (tmp_path / "text").mkdir()
    for name, lines in docs.items():
        (tmp_path / "text" / name).write_text("\n\n".join(lines[:5]) + "\n" + "\r\n".join(lines[5:]) + "\n")
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "text": d}) + "\n" for i, d in enumerate(_documents(3, 30))))
    return tmp_path, docs, _documents(3, 30)


def _expected(tokenizer_json, files_docs, row_length, keep_tail=False):
    """Each file packed on its own from ``Tokenizer.encode(doc).ids`` + [eod]: the rows to expect."""
    tok = tokenizers.Tokenizer.from_file(tokenizer_json)
    eod = tok.token_to_id(EOD)
    rows = []
    for docs in files_docs:
        flat = [i for d in docs for i in tok.encode(d).ids + [eod]]
        cut = len(flat) // row_length * row_length
        rows += [flat[i:i + row_length] for i in range(0, cut, row_length)]
        if keep_tail and cut < len(flat):
            rows.append(flat[cut:])
    return rows


def _rows(path, column="input_ids"):
    with recordio.FileReader(str(path)) as reader:
        return [r[column].tolist() for r in reader]


@pytest.mark.parametrize("keep_tail", [False, True])
def test_rows_reproduce_the_tokenizer_ids(tokenizer_json, corpus, keep_tail):
    folder, docs, _ = corpus
    out = folder / "t.mindrecord"
    summary = convert_text(folder / "text", out, tokenizer=tokenizer_json, seq_length=15, workers=1, quiet=True,
                           tail="keep" if keep_tail else "drop")
    expected = _expected(tokenizer_json, [docs["a.txt"], docs["b.txt"]], 16, keep_tail)
    assert _rows(out) == expected and summary.rows == len(expected) > 10
    short = [len(r) for r in expected if len(r) != 16]
    assert len(short) == (2 if keep_tail else 0) and all(0 < n < 16 for n in short)
    info = recordio.describe(str(out))
    assert info["schema"] == {"input_ids": {"type": "int32", "shape": [-1]}}
    assert json.loads(info["desc"])["row_length"] == 16


def test_json_lines_with_labels_and_attention_mask(tokenizer_json, corpus):
    folder, _, jdocs = corpus
    out = folder / "j.mindrecord"
    convert_text(folder / "c.jsonl", out, tokenizer=tokenizer_json, seq_length=7, key="text", labels=True,
                 attention_mask=True, workers=1, quiet=True)
    expected = _expected(tokenizer_json, [jdocs], 8)
    assert _rows(out) == expected == _rows(out, "labels")
    assert _rows(out, "attention_mask") == [[1] * 8] * len(expected)


def test_rows_do_not_depend_on_shards_or_workers(tokenizer_json, corpus, tmp_path):
    folder, _, _ = corpus
    big = folder / "text" / "big.txt"
    big.write_text("\n".join(_documents(4, 400)) + "\n")
    one = TextSource(big, tokenizer_json, 31, unit_bytes=2000)
    assert len(one.units()) > 4
    assert b"".join(open(big, "rb").read()[a:b] for _, a, b in one.units()) == big.read_bytes()
    rows = [r["input_ids"].tolist() for u in one.units() for r in one.read(u)]
    for shards, workers in ((1, 1), (3, 2)):
        out = tmp_path / f"s{shards}.mindrecord"
        recordio.converters.engine.convert(TextSource(big, tokenizer_json, 31, unit_bytes=2000), out,
                                           shard_num=shards, workers=workers, quiet=True)
        with recordio.FileReader([str(out) + str(i) for i in range(shards)] if shards > 1 else str(out)) as reader:
            assert [r["input_ids"].tolist() for r in reader] == rows


def test_pack_joins_documents_with_the_eod_id():
    grid, tail = pack([[1, 2], [], [3, 4, 5]], 9, 3, keep_tail=True)
    assert grid.tolist() == [[1, 2, 9], [9, 3, 4]] and grid.dtype == np.int32
    assert tail.tolist() == [5, 9]
    assert pack([[1]], 9, 3)[1] is None
    with pytest.raises(ValueError, match="int32"):
        pack([[2**31]], 9, 3)


def test_bad_json_line_names_the_file_or_is_skipped(tokenizer_json, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.jsonl").write_text('{"text": "the row"}\n' * 20)
    (tmp_path / "in" / "bad.jsonl").write_text('{"text": "the row"}\n{"text": 3}\n')
    with pytest.raises(recordio.FormatError, match=r"bad.jsonl.*byte 20: .*string 'text', found int"):
        convert_text(tmp_path / "in", tmp_path / "x.mindrecord", tokenizer=tokenizer_json, seq_length=3,
                     key="text", workers=1, quiet=True)
    summary = convert_text(tmp_path / "in", tmp_path / "y.mindrecord", tokenizer=tokenizer_json, seq_length=3,
                           key="text", workers=1, quiet=True, skip_bad=True)
    assert [w for w, _ in summary.skipped] == [f"{tmp_path / 'in' / 'bad.jsonl'} [bytes 0-32]"]
    assert summary.rows > 0


@pytest.mark.parametrize("kwargs, message", [({"seq_length": 0}, "seq_length"), ({"tail": "pad"}, "tail"),
                                             ({"eod_token": "<none>"}, "no token"),
                                             ({"eod_id": 1, "eod_token": EOD}, "not both")])
def test_bad_options(tokenizer_json, corpus, kwargs, message):
    folder, _, _ = corpus
    options = dict({"seq_length": 8}, **kwargs)
    with pytest.raises(ValueError, match=message):
        convert_text(folder / "text", folder / "z.mindrecord", tokenizer=tokenizer_json, quiet=True, **options)


def test_cli(tokenizer_json, corpus, capsys):
    folder, _, jdocs = corpus
    out = folder / "cli.mindrecord"
    assert main(["convert", "text", str(folder / "c.jsonl"), str(out), "--key", "text", "--tokenizer",
                 tokenizer_json, "--seq-length", "9", "--labels", "--workers", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == len(_expected(tokenizer_json, [jdocs], 10)) == len(_rows(out))
    assert _rows(out, "labels") == _rows(out)


def test_a_failed_conversion_resumes_from_complete_shards(tokenizer_json, corpus, tmp_path, monkeypatch):
    folder, _, _ = corpus
    source = folder / "text"
    fresh = tmp_path / "fresh.mindrecord"
    convert_text(source, fresh, tokenizer=tokenizer_json, seq_length=7, shard_num=1, workers=1, quiet=True)
    real_read = TextSource.read

    def failing_read(self, unit):
        if unit[0].endswith("b.txt"):
            raise OSError("disk went away")
        return real_read(self, unit)

    out = tmp_path / "x.mindrecord"
    monkeypatch.setattr(TextSource, "read", failing_read)       # forked pool workers inherit it
    with pytest.raises(recordio.FormatError, match="b.txt.*disk went away"):
        convert_text(source, out, tokenizer=tokenizer_json, seq_length=7, shard_num=2, workers=1, quiet=True)
    assert recordio.missing_shards(out, 2) == [1]
    monkeypatch.setattr(TextSource, "read", real_read)
    resumed = convert_text(source, out, tokenizer=tokenizer_json, seq_length=7, shard_num=2, workers=1, quiet=True)
    assert resumed.resumed_shards == 1
    with recordio.FileReader([str(out) + "0", str(out) + "1"]) as reader:
        assert [r["input_ids"].tolist() for r in reader] == _rows(fresh)
