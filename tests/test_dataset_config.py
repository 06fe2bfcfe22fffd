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


def test_default_workers_apply_to_map():
    seen = set()

    def record(x):
        import threading
        seen.add(threading.current_thread().name)
        return x

    old = config.get_num_parallel_workers()
    config.set_num_parallel_workers(3)
    try:
        ds = GeneratorDataset([(i,) for i in range(200)], "x", shuffle=False).map(record, "x")
        got = [int(r["x"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
        assert got == list(range(200))
    finally:
        config.set_num_parallel_workers(old)
    assert all(name.startswith("recordio-map") for name in seen) and len(seen) >= 2
