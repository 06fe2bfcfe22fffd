"""recordio.config: validated process-wide settings the pipeline reads."""

import pytest

from recordio.dataset import GeneratorDataset, config


@pytest.mark.parametrize("setter,bad", [(config.set_seed, -1), (config.set_seed, 2 ** 32),
                                        (config.set_prefetch_size, 0), (config.set_num_parallel_workers, 0),
                                        (config.set_num_parallel_workers, True)])
def test_setters_reject_bad_values(setter, bad):
    with pytest.raises(ValueError):
        setter(bad)


def test_auto_offload_is_a_bool():
    with pytest.raises(TypeError):
        config.set_auto_offload(1)


def _threads_of_map(op, workers):
    """``{row: thread name}`` of a map of ``op`` over 200 rows under ``set_num_parallel_workers(workers)``."""
    import threading

    seen = {}

    def record(x):
        seen[int(x)] = threading.current_thread().name
        return op(x)

    old = config.get_num_parallel_workers()
    config.set_num_parallel_workers(workers)
    try:
        ds = GeneratorDataset([(i,) for i in range(200)], "x", shuffle=False).map(record, "x")
        got = [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
        assert got == list(range(200))
    finally:
        config.set_num_parallel_workers(old)
    return seen


def test_default_workers_apply_to_map(monkeypatch):
    """A costly op goes to the default number of worker threads once the probe rows have timed it (on a
    machine with as many CPUs: at most one worker per CPU runs)."""
    import time

    from recordio.dataset import workers as workers_module
    from recordio.dataset.map_op import MapDataset

    monkeypatch.setattr(workers_module, "cpu_count", lambda: 3)

    seen = _threads_of_map(lambda x: time.sleep(0.001) or x, 3)
    workers = {name for row, name in seen.items() if row >= MapDataset.COSTLY_CHUNKS * MapDataset.PROBE_ROWS}
    assert all(name.startswith("recordio-map") for name in workers) and len(workers) >= 2


def test_an_op_that_declares_itself_costly_goes_to_workers_from_the_first_row(monkeypatch):
    """``costly = True`` (the image decodes) skips the probe: no row runs in the pipeline's own thread,
    the first ones included (the probe's rows ran one at a time while the other workers idled)."""
    import threading

    from recordio.dataset import workers as workers_module
    from recordio.vision import Decode, RandomCropDecodeResize

    assert Decode.costly is True and RandomCropDecodeResize.costly is True
    monkeypatch.setattr(workers_module, "cpu_count", lambda: 3)

    seen = {}

    class Costly:
        costly = True

        def __call__(self, x):
            seen[int(x)] = threading.current_thread().name
            return x

    old = config.get_num_parallel_workers()
    config.set_num_parallel_workers(3)
    try:
        ds = GeneratorDataset([(i,) for i in range(200)], "x", shuffle=False).map(Costly(), "x")
        assert [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)] == list(range(200))
    finally:
        config.set_num_parallel_workers(old)
    assert sorted(seen) == list(range(200))
    assert all(name.startswith("recordio-map") for name in seen.values()), \
        {row: name for row, name in seen.items() if not name.startswith("recordio-map")}


def test_cheap_ops_run_in_the_consuming_thread():
    """An op cheaper than a hand-off to a worker thread stays in the thread running the pipeline (the
    producer thread, or the consumer's own once the pipeline runs there).

    The decision is timed: on a busy machine (the quick tier beside other jobs) a run may see three
    descheduled chunks in a row and hand the rest to ``recordio-map_*`` threads, as it should for an op
    that slow. An op that costs nothing stays inline in most runs: one of five runs must be inline
    throughout (an op that always left would fail all five)."""
    import threading

    inline = {"recordio-pipeline", threading.current_thread().name}
    runs = []
    for _ in range(5):
        runs.append(set(_threads_of_map(lambda x: x, 3).values()))
        if runs[-1] <= inline:
            return
    pytest.fail(f"a cheap op left the pipeline's thread in every run: {runs}")


def test_a_slow_first_call_alone_does_not_send_a_cheap_op_to_workers():
    """One costly probe chunk (a first call's warm-up) is not enough to leave the pipeline's thread."""
    import time

    calls = []

    def warm_then_cheap(x):
        calls.append(x)
        if len(calls) == 1:
            time.sleep(0.01)                              # e.g. a lazy import on the first call
        return x

    seen = _threads_of_map(warm_then_cheap, 3)
    assert not any(name.startswith("recordio-map") for name in seen.values())


def test_ops_that_draw_no_keys_run_without_key_scopes_and_keep_their_errors():
    """``TypeCast`` (``uses_keys = False``) runs without the row's key scopes: the same values, and a
    failure still names the map, the op and the row."""
    import numpy as np

    from recordio import keys
    from recordio.transforms import TypeCast

    scopes = []

    class Keyless:
        uses_keys = False

        def __call__(self, x):
            scopes.append(keys._ROW.get())                  # the row scope, None when not set
            if int(x) == 7:
                raise ValueError("row seven")
            return x

    ds = GeneratorDataset([(np.int32(i),) for i in range(10)], "x", shuffle=False)
    got = [r["x"] for r in ds.map(TypeCast(np.int64), "x").create_dict_iterator(num_epochs=1, output_numpy=True)]
    assert [int(v) for v in got] == list(range(10)) and all(v.dtype == np.int64 for v in got)
    with pytest.raises(ValueError, match="row seven") as info:
        list(ds.map(Keyless(), "x").create_dict_iterator(num_epochs=1, output_numpy=True))
    assert info.value.recordio_row == 7 and any("operation 0" in n and "row 7" in n for n in info.value.__notes__)
    assert scopes and all(s is None for s in scopes)
