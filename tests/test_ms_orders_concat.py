"""A concatenation sharded by ``use_sampler(DistributedSampler(n, s, shuffle=False))`` gives
MindSpore 2.10's rows in MindSpore's order by default: a MindDataset child takes a contiguous block
of its rows, a PaddedDataset every n-th, offset by the rows before it; other children are dealt
round robin with a count that runs on across epochs (``ms_concat_cases`` runs both sides)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ms_concat_cases
import recordio.dataset as ds
from numbered import write_numbered
from recordio.dataset.combine import concat_share


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("concat")
    for name, n in ms_concat_cases.SIZES.items():
        write_numbered(root / f"{name}.mindrecord", n)
    return str(root)


def test_shares_cover_every_row_once():
    for kind in ("mindrecord", "rows"):
        for n, num, offset in [(10, 8, 0), (4, 8, 2), (7, 3, 1), (5, 16, 15)]:
            shares = [concat_share(kind, n, num, s, offset) for s in range(num)]
            assert sorted(np.concatenate(shares).tolist()) == list(range(n))


def test_mindspore_padded_test_case(folder):
    """MindSpore's test_Mindrecord_Padded: 10 rows + 4 padded over 8 shards; shard 0 reads rows
    0 and 1 (a block), shard 2 row 4 and the first padded row."""
    got = [ms_concat_cases.run(ds, folder, "mind+pad", 8, s, epochs=1)[0][0] for s in range(8)]
    assert got == [[0, 1], [2, 3], [4, 100], [5, 101], [6, 102], [7, 103], [8], [9]]


def test_add_sampler_is_use_sampler(folder):
    data = ms_concat_cases.build(ds, folder, "mind+pad")
    data.add_sampler(ds.DistributedSampler(3, 1, shuffle=False))
    assert [int(r["id"]) for r in data.create_dict_iterator(output_numpy=True)] == [4, 5, 6, 100, 103]


@pytest.mark.mindspore
@pytest.mark.slow
def test_same_rows_as_mindspore(folder, mindspore_python):
    script = Path(ms_concat_cases.__file__)
    done = subprocess.run([mindspore_python, str(script), folder], capture_output=True, text=True, timeout=600,
                          cwd=script.parent)
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(answers) == len(ms_concat_cases.cases()), done.stderr[-2000:]
    for case, (ids, size) in answers:
        got_ids, got_size = ms_concat_cases.run(ds, folder, *case)
        assert (got_ids, got_size) == (ids, size), case
