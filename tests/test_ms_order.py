"""Order mode "mindspore" (``config.set_order_mode``): MindSpore 2.10's own row orders for MindDataset.

The engines are checked against the C++ standard's own test values; the orders against their
defining properties; the ``mindspore`` tier compares whole epochs with MindSpore 2.10 for several
seeds, every shuffle mode, samplers, shards (slices and blocks), num_samples and two epochs."""

import numpy as np
import pytest

from ms_client import run_oracle
from ms_oracle import build_pipeline, from_plain
from recordio import config
from recordio.dataset import (DistributedSampler, GeneratorDataset, MindDataset, PKSampler, RandomSampler,
                              SequentialSampler, Shuffle)
from recordio.dataset.order import ms_order
from recordio.mindrecord import FileWriter

COUNTS = [23, 7, 12, 5]


@pytest.fixture
def mindspore_orders():
    config.set_order_mode("mindspore")
    yield
    config.set_order_mode("recordio")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ms-order")
    paths, start = [], 0
    for k, count in enumerate(COUNTS):
        path = str(folder / f"part{k}.mindrecord")
        with FileWriter(path, 1, overwrite=True) as w:
            w.add_schema({"id": {"type": "int32"}, "blob": {"type": "bytes"}}, "ids")
            w.write_raw_data([{"id": start + i, "blob": bytes([i])} for i in range(count)])
        paths.append(path)
        start += count
    return paths


def epochs(data, count=1):
    it = data.create_dict_iterator(num_epochs=count, output_numpy=True)
    return [[int(row["id"]) for row in it] for _ in range(count)]


def test_the_engines_give_the_standards_test_values():
    # [rand.predef]: the 10000th output of a default-constructed engine
    g = ms_order.MinStd0(1)
    assert [g() for _ in range(10000)][-1] == 1043618065
    g = ms_order.MT19937(5489)
    assert [g() for _ in range(10000)][-1] == 4123659995


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 50_000])    # 50_000: one position per draw (n^2 > 2^31)
def test_shuffle_list_is_a_permutation_fixed_by_its_seed(n):
    a = ms_order.shuffle_list(list(range(n)), 11)
    assert sorted(a) == list(range(n))
    assert a == ms_order.shuffle_list(list(range(n)), 11)
    if n > 5:
        assert a != ms_order.shuffle_list(list(range(n)), 12) and a != list(range(n))


def test_uniform_stays_in_bounds_and_reaches_them():
    g = ms_order.MinStd0(3)
    draws = {ms_order.uniform(g, 2, 5) for _ in range(400)}
    assert draws == {2, 3, 4, 5}
    g = ms_order.MT19937(3)
    assert {ms_order.uniform(g, 0, 2) for _ in range(200)} == {0, 1, 2}


def test_files_and_infile_keep_files_together(files, mindspore_orders):
    config.set_seed(9)
    starts = np.cumsum([0] + COUNTS)
    file_of = lambda i: int(np.searchsorted(starts, i, side="right") - 1)   # noqa: E731
    (by_files,) = epochs(MindDataset(files, shuffle=Shuffle.FILES))
    runs = [file_of(i) for i in by_files]
    assert sorted(by_files) == list(range(sum(COUNTS)))
    assert sum(a != b for a, b in zip(runs, runs[1:])) == len(COUNTS) - 1      # one run per file
    assert all(by_files[k + 1] == by_files[k] + 1 for k in range(len(by_files) - 1) if runs[k] == runs[k + 1])
    (in_file,) = epochs(MindDataset(files, shuffle=Shuffle.INFILE))
    assert [file_of(i) for i in in_file] == sorted(file_of(i) for i in in_file) and in_file != sorted(in_file)


def test_shards_of_every_mode_partition_the_epoch(files, mindspore_orders):
    config.set_seed(4)
    n = sum(COUNTS)
    for mode in (Shuffle.GLOBAL, Shuffle.PARTIAL, Shuffle.FILES, Shuffle.INFILE):
        shards = [epochs(MindDataset(files, shuffle=mode, num_shards=3, shard_id=k))[0] for k in range(3)]
        assert all(len(s) == -(-n // 3) for s in shards)
        assert set().union(*shards) == set(range(n)), mode


def test_epochs_reshuffle_and_a_late_epoch_needs_no_history(files, mindspore_orders):
    config.set_seed(2)
    first, second, third = epochs(MindDataset(files), 3)
    assert first != second != third and sorted(third) == list(range(sum(COUNTS)))
    data = MindDataset(files)
    assert np.array_equal(data.sampler.order(sum(COUNTS), 2, 2, data), third)       # straight to epoch 2


def test_the_default_mode_is_untouched(files):
    config.set_seed(2)
    recordio_order = epochs(MindDataset(files))
    config.set_order_mode("mindspore")
    try:
        mindspore_order = epochs(MindDataset(files))
    finally:
        config.set_order_mode("recordio")
    assert recordio_order != mindspore_order and epochs(MindDataset(files)) == recordio_order


def test_pk_sampler_shuffles_as_in_the_default_mode(files):
    """MindSpore 2.10's PKSampler over a MindDataset repeats row 0 (docs/conformance.md): the mode keeps
    recordio's keyed PK shuffle, num_val rows of each class, instead of refusing it."""
    config.set_seed(3)
    ours = epochs(MindDataset(files, sampler=PKSampler(2, shuffle=True, class_column="id")))
    config.set_order_mode("mindspore")
    try:
        theirs = epochs(MindDataset(files, sampler=PKSampler(2, shuffle=True, class_column="id")))
    finally:
        config.set_order_mode("recordio")
    assert theirs == ours and all(len(e) == 2 * sum(COUNTS) for e in ours)


def test_what_the_mode_does_not_reproduce_is_refused(files, mindspore_orders):
    with pytest.raises(NotImplementedError, match="MindDataset's orders only"):
        epochs(GeneratorDataset([(i,) for i in range(5)], ["id"], shuffle=True))
    chained = MindDataset(files, sampler=RandomSampler(num_samples=20))    # MindSpore reads past its list
    chained.add_sampler(RandomSampler(num_samples=30))
    with pytest.raises(NotImplementedError, match="chain"):
        epochs(chained)
    plain = MindDataset(files, shuffle=False)
    plain.add_sampler(DistributedSampler(2, 1, shuffle=False))       # no randomness: the same in both modes
    n = sum(COUNTS)
    assert epochs(plain) == [[(1 + 2 * k) % n for k in range(-(-n // 2))]]
    with pytest.raises(ValueError, match="order mode"):
        config.set_order_mode("torch")


# --- MindSpore 2.10 as the oracle -----------------------------------------------------------------

def cases(paths):
    """name -> (MindDataset kwargs, env); every case read for two epochs by both libraries."""
    out = {}
    for seed in (1234, 7):
        for mode in ("GLOBAL", "PARTIAL", "FILES", "INFILE", "ADAPTIVE"):
            out[f"{seed} shuffle {mode}"] = {"dataset_files": paths, "shuffle": mode}
            out[f"{seed} RandomSampler {mode}"] = {"dataset_files": paths,
                                                   "sampler": ["RandomSampler", {"shuffle": mode}]}
            for shard in (0, 2):
                out[f"{seed} shards 3/{shard} {mode}"] = {"dataset_files": paths, "shuffle": mode, "num_shards": 3,
                                                          "shard_id": shard}
                out[f"{seed} DistributedSampler 4/{shard} {mode}"] = {
                    "dataset_files": paths, "sampler": ["DistributedSampler", {"num_shards": 4, "shard_id": shard,
                                                                               "shuffle": mode}]}
        out[f"{seed} shuffle True num_samples"] = {"dataset_files": paths, "shuffle": True, "num_samples": 9}
        out[f"{seed} replacement"] = {"dataset_files": paths,
                                      "sampler": ["RandomSampler", {"replacement": True, "num_samples": 30}]}
        out[f"{seed} RandomSampler num_samples"] = {"dataset_files": paths,
                                                    "sampler": ["RandomSampler", {"num_samples": 11}]}
        out[f"{seed} single file"] = {"dataset_files": paths[0]}
        out[f"{seed} SubsetRandomSampler"] = {"dataset_files": paths,
                                              "sampler": ["SubsetRandomSampler", {"indices": [3, 40, 7, 7, 22, 0, 31]}]}
    return {f"{name} {env}": (kwargs, env) for name, kwargs in out.items() for env in ("slice", "block")}


def _env(env):
    return {"MS_DEV_MINDRECORD_SHARD_BY_BLOCK": "true" if env == "block" else "false"}


@pytest.fixture(scope="module")
def oracle(mindspore_python, files, tmp_path_factory):
    named = cases(files)
    jobs = [{"op": "pipeline", "pipeline": {"source": kwargs, "steps": []}, "rows": 10_000,
             "seed": int(name.split()[0]), "epochs": 2, "env": _env(env)} for name, (kwargs, env) in named.items()]
    return dict(zip(named, run_oracle(mindspore_python, jobs, tmp_path_factory.mktemp("ms-order-oracle"))))


@pytest.mark.mindspore
@pytest.mark.parametrize("name", sorted(cases(["p"])))
def test_orders_match_mindspore(oracle, files, name, monkeypatch, mindspore_orders):
    import recordio.dataset as rds
    kwargs, env = cases(files)[name]
    theirs = oracle[name]
    assert "error" not in theirs, f"MindSpore: {theirs.get('error')}"
    position = theirs["names"].index("id")
    their_ids = [int(np.asarray(row[position])) for row in from_plain(theirs["rows"])]
    for key, value in _env(env).items():
        monkeypatch.setenv(key, value)
    config.set_seed(int(name.split()[0]))
    data = build_pipeline(rds, {"source": kwargs, "steps": []})
    ours = [i for epoch in epochs(data, 2) for i in epoch]
    assert ours == their_ids
    assert data.get_dataset_size() == theirs["size"]


def test_sequential_orders_agree_in_both_modes(files, mindspore_orders):
    assert epochs(MindDataset(files, sampler=SequentialSampler(3, 5))) == [[3, 4, 5, 6, 7]]


def test_vectorised_draws_equal_one_engine_per_draw():
    items = list(range(1000, 1037))
    seed = 0xFFFFFFFF - 40                      # the draws' seeds wrap at 2^32, as MindSpore's uint32
    reference = [items[ms_order.uniform(ms_order.MT19937((seed + i) & 0xFFFFFFFF), 0, len(items) - 1)]
                 for i in range(100)]
    assert ms_order.draws(items, 100, seed, chunk=16) == reference


def test_seeds_wrap_at_2_to_the_32():
    assert ms_order.shuffle_list(list(range(9)), 2 ** 32) == ms_order.shuffle_list(list(range(9)), 0)


def test_a_state_resumes_only_under_the_order_mode_that_saved_it(files):
    from recordio.errors import PipelineError
    config.set_seed(8)
    config.set_order_mode("mindspore")
    try:
        (whole,) = epochs(MindDataset(files, num_shards=2, shard_id=1))
        data = MindDataset(files, num_shards=2, shard_id=1)
        it = data.create_dict_iterator(num_epochs=1, output_numpy=True)
        head = [int(next(it)["id"]) for _ in range(5)]
        state = it.state_dict()
        again = MindDataset(files, num_shards=2, shard_id=1)
        again.load_state_dict(state)
        (rest,) = epochs(again)
        assert head + rest == whole and state["order"] == "mindspore"
    finally:
        config.set_order_mode("recordio")
    with pytest.raises(PipelineError, match="order mode 'mindspore', but the order mode is now 'recordio'"):
        MindDataset(files, num_shards=2, shard_id=1).load_state_dict(state)
