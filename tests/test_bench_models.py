"""tools/bench_models.py: the model-script pipelines give the batches the scripts mean.

recordio's batches (read in a fresh process, as the benchmark reads them) are checked against numpy
computed from the written rows, and, in the ``mindspore`` tier, against MindSpore 2.10's batches of the
same pipeline on the same files: batch for batch without the transformer's final buffer shuffle, and as
the same set of batches with it (each library draws that shuffle's order its own way).
"""

import json

import numpy as np
import pytest

from recordio.tools import bench_models

TRANSFORMER_ROWS = 250          # per bucket: 2 batches of 96, 58 rows dropped
WIDEDEEP_ROWS, WIDEDEEP_LINES = 40, 10      # 2 batches of 16 rows, 8 rows dropped


@pytest.fixture(scope="module")
def transformer_files(tmp_path_factory):
    return bench_models.write_transformer(str(tmp_path_factory.mktemp("transformer")), TRANSFORMER_ROWS)


@pytest.fixture(scope="module")
def widedeep_files(tmp_path_factory):
    return bench_models.write_widedeep(str(tmp_path_factory.mktemp("widedeep")), WIDEDEEP_ROWS, WIDEDEEP_LINES)


def expected_transformer():
    """The batches of create_transformer_dataset without its final shuffle, from the rows with numpy."""
    out = []
    for i, length in enumerate(bench_models.BUCKETS):
        rows = bench_models.transformer_rows(length, TRANSFORMER_ROWS, i)
        batch = bench_models.TRANSFORMER_BATCH
        for lo in range(0, len(rows) - batch + 1, batch):
            out.append({c: np.stack([r[c] for r in rows[lo:lo + batch]]).astype(np.int32)
                        for c in bench_models.TRANSFORMER_COLUMNS})
    return out


def expected_widedeep():
    rows = bench_models.widedeep_rows(WIDEDEEP_ROWS, WIDEDEEP_LINES, 0)
    spec = bench_models.spec("widedeep", [], quick=True)
    per, lines = spec["batch_size"] // spec["line_per_sample"], spec["batch_size"]
    out = []
    for lo in range(0, len(rows) - per + 1, per):
        part = rows[lo:lo + per]
        out.append({"feat_ids": np.concatenate([r["feat_ids"] for r in part]).reshape(lines, 39),
                    "feat_vals": np.concatenate([r["feat_vals"] for r in part]).reshape(lines, 39),
                    "label": np.concatenate([r["label"] for r in part]).reshape(lines, 1)})
    return out


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        for column in w:
            assert g[column].dtype == w[column].dtype, column
            assert g[column].shape == w[column].shape, column
            np.testing.assert_array_equal(g[column], w[column])


def _key(batch):
    return tuple((c, v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes()) for c, v in batch.items())


def assert_same_set(got, want):
    """The same batches (columns in the same order, dtypes, shapes, values) in any order."""
    assert sorted(map(_key, got)) == sorted(map(_key, want))


def test_transformer_batches_are_the_rows_cast_and_batched(transformer_files, tmp_path):
    want = expected_transformer()
    assert len(want) == 4
    spec = bench_models.spec("transformer", transformer_files, shuffle=False)
    assert_same(bench_models.batches("recordio", "transformer", spec, folder=str(tmp_path)), want)
    shuffled = bench_models.batches("recordio", "transformer", bench_models.spec("transformer", transformer_files),
                                    folder=str(tmp_path))
    assert_same_set(shuffled, want)


def test_widedeep_batches_are_the_rows_batched_and_reshaped(widedeep_files, tmp_path):
    want = expected_widedeep()
    assert len(want) == 2 and want[0]["feat_ids"].shape == (160, 39) and want[0]["label"].shape == (160, 1)
    spec = bench_models.spec("widedeep", widedeep_files, quick=True)
    assert_same(bench_models.batches("recordio", "widedeep", spec, folder=str(tmp_path)), want)


def test_quick_run_without_mindspore(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RECORDIO_MINDSPORE_PYTHON", raising=False)
    out = tmp_path / "models.json"
    assert bench_models.main(["--quick", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    assert "MindSpore's rows are left out" in capsys.readouterr().err
    results = json.loads(out.read_text())["results"]
    assert [r["name"] for r in results] == ["transformer recordio: first pass / warm pass",
                                           "widedeep recordio: first pass / warm pass"]
    assert all(r["value"] > 0 and r["unit"] == "rows/s" for r in results)


@pytest.mark.mindspore
@pytest.mark.slow
def test_mindspore_gives_the_same_batches(mindspore_python, transformer_files, widedeep_files, tmp_path):
    for shuffle in (False, True):
        spec = bench_models.spec("transformer", transformer_files, shuffle=shuffle)
        ours = bench_models.batches("recordio", "transformer", spec, folder=str(tmp_path))
        theirs = bench_models.batches("mindspore", "transformer", spec, mindspore_python, str(tmp_path))
        (assert_same_set if shuffle else assert_same)(ours, theirs)
        assert_same_set(theirs, expected_transformer())
    spec = bench_models.spec("widedeep", widedeep_files, quick=True)
    ours = bench_models.batches("recordio", "widedeep", spec, folder=str(tmp_path))
    assert_same(ours, bench_models.batches("mindspore", "widedeep", spec, mindspore_python, str(tmp_path)))


@pytest.mark.mindspore
@pytest.mark.slow
@pytest.mark.parametrize("source_shuffle", [False, True])
def test_in_mindspore_order_mode_the_shuffled_batches_come_in_mindspore_s_order(
        mindspore_python, transformer_files, tmp_path, source_shuffle):
    """With ``config.set_order_mode("mindspore")`` the transformer script's shuffles (the source's and the
    buffer shuffle of the batches, under its ``set_seed(1)``) are MindSpore 2.10's: batch for batch.
    (The Wide&Deep script sets no seed: MindSpore draws one at random.)"""
    spec = bench_models.spec("transformer", transformer_files, source_shuffle=source_shuffle, order_mode="mindspore")
    ours = bench_models.batches("recordio", "transformer", spec, folder=str(tmp_path))
    assert_same(ours, bench_models.batches("mindspore", "transformer", spec, mindspore_python, str(tmp_path)))
    if not source_shuffle:                  # then the batches are the rows' batches, in MindSpore's order
        assert_same_set(ours, expected_transformer())
