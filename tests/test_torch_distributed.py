"""A real ``torchrun --nproc_per_node=2`` job (gloo, CPU): ranks split the rows from
torch.distributed, directly and through DataLoader workers (tests/dist_pipeline.py)."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

from numbered import write_numbered
from conftest import child_pythonpath

N = 45
ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    path = write_numbered(tmp / "d.mindrecord", N, shard_num=2)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(ROOT / "tests" / "dist_pipeline.py"), path, str(tmp)]
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(2)]


def test_ranks_split_the_rows_from_torch_distributed(job):
    per = math.ceil(N / 2)
    assert [r["world"] for r in job] == [2, 2]
    assert [r["size"] for r in job] == [per, per]
    assert [len(r["direct"]) for r in job] == [per, per]
    seen = job[0]["direct"] + job[1]["direct"]
    assert set(seen) == set(range(N)) and len(seen) - N == 1


def test_dataloader_workers_inside_ranks_see_every_row_once(job):
    seen = job[0]["loader"] + job[1]["loader"]
    assert set(seen) == set(range(N))
    assert len(seen) - N < 4
