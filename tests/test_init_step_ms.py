"""``Dataset.set_init_step`` with ``config.set_fast_recovery`` compared with MindSpore 2.10: the same
batches from step k on, after ``batch`` and across ``repeat`` and epochs, sharded, alone and
concatenated; MindSpore's error for a step past the iterator's epochs."""

import json
import subprocess
from pathlib import Path

import pytest

import ms_init_step_cases
from recordio import config
from recordio.errors import PipelineError
import recordio.dataset as ds
from test_ms_orders_concat import folder  # noqa: F401  (the numbered files)


# MindSpore's replay (fast_recovery False) counts the batches its pipeline gives, and an epoch of a
# round-robin-dealt concat child can give more than get_dataset_size() says (here 3 batches, not 2,
# in epoch 0); recordio places step k by get_dataset_size() in both modes (docs/howto-resume.md).
KNOWN_DIVERGENCE = [False, "map+pad", 8, 2, 3]


def test_step_past_the_epochs_is_refused_when_the_iterator_starts(folder):  # noqa: F811
    data = ms_init_step_cases.build(ds, folder, "plain", 8, 2)       # 2 batches an epoch
    data.set_init_step(4)
    with pytest.raises(PipelineError, match="reset step must be less than dataset_size \\* num_epochs. "
                                            "step: 4, dataset_size: 2, num_epochs: 2"):
        data.create_tuple_iterator(num_epochs=2)
    data.set_init_step(3)
    assert [r[0].tolist() for r in data.create_tuple_iterator(num_epochs=2, output_numpy=True)] == [[2, 0]]


@pytest.mark.mindspore
@pytest.mark.slow
def test_same_batches_as_mindspore(folder, mindspore_python):  # noqa: F811
    script = Path(ms_init_step_cases.__file__)
    done = subprocess.run([mindspore_python, str(script), folder], capture_output=True, text=True, timeout=600,
                          cwd=script.parent)
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(answers) == len(ms_init_step_cases.cases()), done.stderr[-2000:]
    before = config.get_fast_recovery()
    try:
        for case, want in answers:
            if case == KNOWN_DIVERGENCE:
                continue
            got = json.loads(json.dumps(ms_init_step_cases.run(ds, config, folder, *case)))
            if want and want[0] == "RuntimeError":
                assert got[0] == "RuntimeError" and want[1].split("\n")[5].removeprefix("[ERROR] ") in got[1], case
            else:
                assert got == want, case
    finally:
        config.set_fast_recovery(before)
