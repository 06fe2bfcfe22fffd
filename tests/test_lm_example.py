"""examples/lm_tokens.py: a causal LM on token rows learns, resumes exactly, and runs on 2 ranks."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import child_pythonpath

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = ["--rows", "256", "--seq-length", "32", "--batch", "8", "--epochs", "3", "--checkpoint-every", "10",
         "--device", "cpu"]


def run(out, *extra, ranks=1):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=child_pythonpath())
    if ranks == 1:
        argv = [sys.executable, str(ROOT / "examples" / "lm_tokens.py")]
    else:
        argv = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}",
                str(ROOT / "examples" / "lm_tokens.py")]
    done = subprocess.run([*argv, "--out", str(out), *SMALL, *extra], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((out / f"report-rank{r}.json").read_text()) for r in range(ranks)]


@pytest.mark.slow
def test_learns_and_resumes_exactly(tmp_path):
    (full,) = run(tmp_path / "full")
    assert full["steps"] == 3 * 256 // 8
    assert full["last"] < full["first"] - 1.0                      # ln 64 = 4.16 falls well below
    shutil.copytree(tmp_path / "full" / "data", tmp_path / "crash" / "data")
    (crashed,) = run(tmp_path / "crash", "--crash-after", "45")    # killed after step 45
    assert crashed["steps"] == 45
    (resumed,) = run(tmp_path / "crash")                           # the same command again
    assert resumed["losses"] == full["losses"]                     # every step's loss, exactly


@pytest.mark.skipif(not hasattr(os, "fork"), reason="torchrun needs processes")
def test_two_ranks_split_the_rows(tmp_path):
    reports = run(tmp_path / "ranks", ranks=2)
    assert [r["world"] for r in reports] == [2, 2]
    assert [r["steps"] for r in reports] == [3 * 128 // 8] * 2       # each rank reads half the rows
    assert reports[0]["losses"][0] != reports[1]["losses"][0]       # different rows on each rank
    assert all(r["last"] < r["first"] - 0.5 for r in reports)
