"""tools/bench_vision_chains.py: every chain runs in its own process and the rows carry the ratios
(recordio and the decode limit only: the other contenders live in their own virtualenvs)."""

import types

import pytest

from recordio.tools import bench_vision_chains, vision_photos


@pytest.mark.slow
def test_chains_run_and_give_ratio_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_vision_chains, "VENVS", {})
    args = types.SimpleNamespace(mindspore_python=None, workdir=str(tmp_path), repeat=1)
    rows = bench_vision_chains.run(args, images=64, repeats=1)
    names = {r["name"]: r for r in rows}
    assert not [r for r in rows if "not measured" in r["name"]], rows
    assert 0 < rows[0]["value"] <= 1.5 * (__import__("os").cpu_count() or 1) and "independent processes" in rows[0]["name"]
    for chain in ("train", "eval", "eval_pil"):
        assert names[f"{chain} per core: recordio (CPU images/s)"]["value"] > 0
        assert names[f"{chain} as scripts run it (8 workers, batch 4)"]["value"] > 0
        assert "CPUs each got" in names[f"{chain} as scripts run it (8 workers, batch 4)"]["note"]
    for chain in ("train", "eval", "train_host", "eval_host"):
        limit = names[f"{chain} per core: recordio vs decode limit"]
        assert limit["baseline_value"] > 0 and 0 < limit["ratio"] < 10 and limit["target"] == ">= 0.7"
    for chain in ("train_host", "eval_host"):         # the host parts of offloaded chains: per core, all cores
        assert names[f"{chain} per core: recordio (CPU images/s)"]["value"] > 0
        assert f"{chain} all {__import__('os').cpu_count()} cores: recordio" in names
        assert f"{chain} as scripts run it (8 workers, batch 4)" not in names


def test_scripts_rows_say_the_cpus_each_contender_got():
    core = {"images_per_s": 400.0, "cpu_images_per_s": 410.0, "cores": 0.98}
    best = {("recordio", "train", "core"): core,
            ("recordio", "train", "scripts"): {"images_per_s": 600.0, "cpu_images_per_s": 400.0, "cores": 1.5},
            ("mindspore", "train", "scripts"): {"images_per_s": 500.0, "cpu_images_per_s": 277.0, "cores": 1.8}}
    names = {r["name"]: r for r in bench_vision_chains.chain_rows(best, {})}
    row = names["train as scripts run it (8 workers, batch 4)"]
    assert row["ratio"] == 1.2 and row["baseline_value"] == 500.0
    assert row["note"] == "CPUs each got (CPU time / wall): recordio 1.50, MindSpore 1.80"


def test_photos_are_seeded_jpegs_of_imagenet_size():
    import cv2
    import numpy as np
    a, b = vision_photos.jpegs(3), vision_photos.jpegs(3)
    assert a == b and vision_photos.jpegs(3, seed=1) != a
    for data in a:
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert 400 <= img.shape[0] <= 500 and 400 <= img.shape[1] <= 500 and img.std() > 10


@pytest.mark.slow
def test_paired_runs_alternate_two_trees_and_give_ratios(tmp_path, capsys):
    """--paired A B: recordio's script from each tree (here two trees holding the installed package), in
    alternating fresh processes; per-pair ratios B / A and a median."""
    import json
    import os

    import recordio
    trees = []
    for side in "ab":
        tree = tmp_path / side
        tree.mkdir()
        os.symlink(os.path.dirname(recordio.__file__), tree / "recordio")
        trees.append(str(tree))
    out = tmp_path / "paired.json"
    bench_vision_chains.main(["--paired", *trees, "--chain", "eval", "--pairs", "2", "--images", "64",
                              "--json", str(out)])
    rows = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    what = "eval, 1 worker(s), 2 pairs"
    for per in ("CPU second", "wall second"):
        ratio = rows[f"{what}: B / A images per {per}, median of the pairs"]
        assert ratio["unit"] == "x" and 0.2 < ratio["value"] < 5 and ratio["note"].startswith("min ")
    a, b = rows[f"{what}: A (CPU images/s, median)"], rows[f"{what}: B (CPU images/s, median)"]
    assert a["value"] > 0 and b["baseline_value"] == a["value"] and (a["note"], b["note"]) == tuple(trees)
    assert "B / A images per CPU second" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench_vision_chains.main(["--paired", str(tmp_path), trees[0]])        # no recordio/ in it
    assert "not a source tree" in capsys.readouterr().err
