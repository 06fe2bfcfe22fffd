"""``len(dataset)`` and MindSpore's ``dataset.config`` settings: one script run on recordio and on
MindSpore 2.10 (``mindspore`` tier), whose outputs must be equal — sizes, defaults, values read back,
and the error type and message of every refused argument."""

import json
import subprocess
import sys

import pytest

from conftest import GOLDEN_COPIES, TESTS

ARRAYS = str(GOLDEN_COPIES / "arrays_200" / "arrays_200.mindrecord0")
MATRIX = str(GOLDEN_COPIES / "matrix_s4_index" / "matrix_s4_index.mindrecord0")

SCRIPT = r'''
import json, sys
MODULE, ARRAYS, MATRIX = sys.argv[1:4]
if MODULE == "mindspore":
    import mindspore.dataset as ds
else:
    import recordio.dataset as ds

out = {}

def record(name, make):
    try:
        dataset = make()
        out[name] = [len(dataset), dataset.get_dataset_size()]
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)]

mind = lambda path=ARRAYS: ds.MindDataset(path, shuffle=False)
padded = lambda n=3: ds.PaddedDataset([{"id": i} for i in range(n)])
record("mind", mind)
record("mind_4_shards", lambda: mind(MATRIX))
record("batch_7", lambda: mind().batch(7))
record("batch_7_drop", lambda: mind().batch(7, drop_remainder=True))
record("repeat_3", lambda: mind().repeat(3))
record("take_5", lambda: mind().take(5))
record("skip_190", lambda: mind().skip(190))
record("skip_300", lambda: mind().skip(300))
record("batch_then_repeat", lambda: mind().batch(32).repeat(2))
record("repeat_then_batch", lambda: mind().repeat(2).batch(32))
record("take_then_batch", lambda: mind().take(50).batch(8))
record("shard", lambda: ds.MindDataset(ARRAYS, shuffle=False, num_shards=3, shard_id=2))
record("shard_batch", lambda: ds.MindDataset(ARRAYS, shuffle=False, num_shards=3, shard_id=1).batch(10))
record("padded", padded)
record("padded_batch", lambda: padded(5).batch(2))
record("concat_mind", lambda: ds.MindDataset(ARRAYS, columns_list=["id", "label"], shuffle=False)
       + ds.MindDataset(MATRIX, columns_list=["id", "label"], shuffle=False))
record("concat_batch", lambda: (mind() + mind()).batch(64))
record("concat_padded", lambda: ds.MindDataset(ARRAYS, columns_list=["id"], shuffle=False) + padded(4))
parts = mind().split([150, 50], randomize=False)
out["split"] = [[len(p), p.get_dataset_size()] for p in parts]
parts = mind().split([0.25, 0.75], randomize=False)
out["split_fraction"] = [[len(p), p.get_dataset_size()] for p in parts]

c = ds.config
names = ["auto_num_workers", "auto_offload", "autotune_interval", "callback_timeout", "dynamic_shape",
         "enable_autotune", "enable_shared_mem", "enable_watchdog", "fast_recovery", "iterator_mode",
         "monitor_sampling_interval", "multiprocessing_start_method", "multiprocessing_timeout_interval",
         "num_parallel_workers", "numa_enable", "prefetch_size", "seed", "video_backend"]
out["defaults"] = {n: getattr(c, "get_" + n)() for n in names}
out["error_samples_mode"] = int(c.get_error_samples_mode())

CALLS = [
    ("set_enable_autotune", (True,)), ("set_enable_autotune", (False,)), ("set_enable_autotune", (1,)),
    ("set_enable_autotune", (True, 3)), ("set_enable_autotune", (True, "")),
    ("set_autotune_interval", (0,)), ("set_autotune_interval", (7,)), ("set_autotune_interval", (-1,)),
    ("set_autotune_interval", (2.0,)), ("set_autotune_interval", (True,)), ("set_autotune_interval", (2**31,)),
    ("set_fast_recovery", (False,)), ("set_fast_recovery", (True,)), ("set_fast_recovery", ("yes",)),
    ("set_numa_enable", (True,)), ("set_numa_enable", (0,)),
    ("set_monitor_sampling_interval", (5,)), ("set_monitor_sampling_interval", (0,)),
    ("set_monitor_sampling_interval", ("5",)),
    ("set_auto_num_workers", (True,)), ("set_auto_num_workers", (None,)),
    ("set_callback_timeout", (10,)), ("set_callback_timeout", (0,)), ("set_callback_timeout", (1.5,)),
    ("set_enable_shared_mem", (False,)), ("set_enable_shared_mem", ("no",)),
    ("set_sending_batches", (3,)), ("set_sending_batches", (3.0,)),
    ("set_enable_watchdog", (False,)), ("set_enable_watchdog", (1,)),
    ("set_multiprocessing_timeout_interval", (30,)), ("set_multiprocessing_timeout_interval", (0,)),
    ("set_multiprocessing_timeout_interval", (2**31 - 1,)), ("set_multiprocessing_timeout_interval", (2**31,)),
    ("set_dynamic_shape", (True,)), ("set_dynamic_shape", ("x",)),
    ("set_iterator_mode", (True, False)), ("set_iterator_mode", (1,)), ("set_iterator_mode", (False, "x")),
    ("set_multiprocessing_start_method", ("spawn",)), ("set_multiprocessing_start_method", ("forkserver",)),
    ("set_multiprocessing_start_method", (1,)),
    ("set_video_backend", ("Ascend",)), ("set_video_backend", ("GPU",)), ("set_video_backend", (0,)),
    ("set_error_samples_mode", (0,)),
]
results = []
for name, args in CALLS:
    try:
        getattr(c, name)(*args)
        results.append(["ok"])
    except Exception as exc:
        results.append([type(exc).__name__, str(exc)])
out["calls"] = results
out["after"] = {n: getattr(c, "get_" + n)() for n in names}
print("RESULT " + json.dumps(out, sort_keys=True))
'''


def run(python, module):
    done = subprocess.run([python, "-c", SCRIPT, module, ARRAYS, MATRIX], capture_output=True, text=True, cwd=TESTS,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def ours():
    return run(sys.executable, "recordio")


def test_len_is_the_dataset_size_everywhere(ours):
    sizes = {k: v for k, v in ours.items() if isinstance(v, list) and k not in ("calls",)}
    for name, value in sizes.items():
        pairs = value if name.startswith("split") else [value]
        for length, size in pairs:
            assert isinstance(length, int) and length == size, (name, value)
    assert ours["mind"] == [200, 200] and ours["batch_7"] == [29, 29] and ours["batch_7_drop"] == [28, 28]
    assert ours["repeat_3"] == [600, 600] and ours["take_5"] == [5, 5] and ours["skip_300"] == [0, 0]
    assert ours["concat_padded"] == [204, 204] and ours["split"] == [[150, 150], [50, 50]]


def test_an_empty_dataset_is_still_true():
    import recordio.dataset as ds

    empty = ds.MindDataset(ARRAYS, shuffle=False).skip(1000)
    assert len(empty) == 0 and bool(empty) is True


def test_config_settings_are_checked_and_read_back(ours):
    assert ours["defaults"]["fast_recovery"] is True and ours["defaults"]["autotune_interval"] == 0
    assert ours["after"]["enable_autotune"] is False and ours["after"]["autotune_interval"] == 7
    assert ours["after"]["iterator_mode"] == {"do_copy": True, "parallel_convert": False}
    refused = [r for r in ours["calls"] if r[0] != "ok"]
    assert refused and all(r[0] in ("TypeError", "ValueError", "RuntimeError") for r in refused)


@pytest.mark.mindspore
def test_sizes_and_settings_equal_mindspores(ours, mindspore_python):
    theirs = run(mindspore_python, "mindspore")
    assert {k: v for k, v in ours.items() if k != "error_samples_mode"} == \
        {k: v for k, v in theirs.items() if k != "error_samples_mode"}
    assert ours["error_samples_mode"] == theirs["error_samples_mode"] == 0
