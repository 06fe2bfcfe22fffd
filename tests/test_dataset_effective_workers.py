"""How many workers a stage runs: at most one per CPU the process may use (``workers.cpu_count``), as
MindSpore allows no more; a stage's own ``num_parallel_workers`` above that warns once. Values and their
order do not depend on the number of workers that run, capped or not."""

import os
import threading
import time
import warnings

import numpy as np
import pytest

from recordio.dataset import GeneratorDataset, config, workers
from recordio.keys import current_keys


def costly(x):
    """Slow enough to leave the pipeline's thread for the map's workers; says where it ran."""
    time.sleep(0.002)
    return x, threading.current_thread().name, np.int64(os.getpid())


def ran_on(n_workers, processes=False, source_workers=None, rows=120):
    """``(rows, map worker threads' names, process ids)`` of a map of :func:`costly` with ``n_workers``."""
    kwargs = {} if source_workers is None else {"num_parallel_workers": source_workers}
    ds = GeneratorDataset([(i,) for i in range(rows)], "x", shuffle=False, **kwargs)
    ds = ds.map(costly, "x", ["x", "tid", "pid"], num_parallel_workers=n_workers, python_multiprocessing=processes)
    out = list(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    return [int(r["x"]) for r in out], {str(r["tid"]) for r in out if str(r["tid"]).startswith("recordio-map")}, {int(r["pid"]) for r in out}


@pytest.fixture
def cpus(monkeypatch):
    def set_cpus(n):
        monkeypatch.setattr(workers, "cpu_count", lambda: n)
    return set_cpus


def test_effective_workers_is_at_most_the_cpus(cpus):
    cpus(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert workers.effective_workers(1, True) == 1
        assert workers.effective_workers(2, True) == 2
        assert workers.effective_workers(8, False) == 2       # config's value: capped without a word
    with pytest.warns(UserWarning, match=r"map #3: num_parallel_workers=8 but this process may run on 2 CPU"):
        assert workers.effective_workers(8, True, "map #3") == 2


def test_a_thread_map_asked_for_more_workers_than_cpus_runs_one_per_cpu_and_says_so(cpus):
    cpus(2)
    with pytest.warns(UserWarning, match="num_parallel_workers=8 but this process may run on 2 CPU") as seen:
        rows, threads, _ = ran_on(8)
    assert rows == list(range(120))
    assert 1 <= len(threads) <= 2, threads
    assert len([w for w in seen if "num_parallel_workers" in str(w.message)]) == 1


def test_the_cap_follows_the_cpus_the_process_may_use(cpus):
    cpus(8)
    _, threads, _ = ran_on(8)          # 8 CPUs: all 8 threads may run (the window keeps them busy)
    assert len(threads) > 2, threads


def test_config_workers_above_the_cpus_are_capped_without_a_warning(cpus):
    cpus(2)
    old = config.get_num_parallel_workers()
    config.set_num_parallel_workers(8)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rows, threads, _ = ran_on(None)
    finally:
        config.set_num_parallel_workers(old)
    assert rows == list(range(120)) and 1 <= len(threads) <= 2


def test_process_workers_are_capped_too(cpus):
    cpus(2)
    with pytest.warns(UserWarning, match="num_parallel_workers=6"):
        rows, _, pids = ran_on(6, processes=True, rows=80)
    assert rows == list(range(80))
    assert 1 <= len(pids - {os.getpid()}) <= 2, pids


def test_a_generator_source_with_more_workers_than_cpus_is_capped(cpus):
    cpus(1)
    with pytest.warns(UserWarning, match="GeneratorDataset: num_parallel_workers=4 but this process may run on 1"):
        rows, _, _ = ran_on(1, source_workers=4, rows=20)
    assert rows == list(range(20))


class Jitter:
    """A random op: draws through the keys of the row and op being processed."""

    def __call__(self, vec):
        time.sleep(0.0005)                   # costly enough for the workers
        return vec * np.float32(current_keys().uniform(0, 0.5, 1.5)[0]) + np.float32(current_keys().uniform(1, -1.0, 1.0)[0])


def jittered(n_workers, batch):
    ds = GeneratorDataset([(np.full(6, i, np.float32),) for i in range(96)], "vec", shuffle=True)
    ds = ds.map([Jitter(), Jitter()], "vec", num_parallel_workers=n_workers).batch(batch)
    it = ds.create_dict_iterator(num_epochs=2, output_numpy=True)
    return [np.concatenate([b["vec"] for b in it]) for _ in range(2)]


@pytest.mark.parametrize("n_cpus", [1, 2, 8])
def test_values_are_the_same_for_one_and_eight_workers_whatever_the_cap(cpus, n_cpus):
    old = config.get_seed()
    config.set_seed(7)
    try:
        reference = jittered(1, 4)
        cpus(n_cpus)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = jittered(8, 4)
    finally:
        config.set_seed(old)
    for ref, out in zip(reference, got):
        np.testing.assert_array_equal(out, ref)
    assert not np.array_equal(reference[0], reference[1])     # each epoch draws anew


def test_later_epochs_start_on_the_workers_an_earlier_epoch_chose(cpus):
    """The first epoch times its first rows in the pipeline's thread, then hands the costly op to the
    workers; the next epoch of the same run starts there (no second probe)."""
    cpus(2)
    ds = GeneratorDataset([(i,) for i in range(40)], "x", shuffle=False)
    ds = ds.map(costly, "x", ["x", "tid", "pid"], num_parallel_workers=2)
    it = ds.create_dict_iterator(num_epochs=2, output_numpy=True)
    epochs = [[(int(r["x"]), str(r["tid"])) for r in it] for _ in range(2)]
    assert [x for x, _ in epochs[0]] == [x for x, _ in epochs[1]] == list(range(40))
    assert not epochs[0][0][1].startswith("recordio-map")          # probed in the pipeline's thread
    assert all(name.startswith("recordio-map") for _, name in epochs[1]), epochs[1][:8]
