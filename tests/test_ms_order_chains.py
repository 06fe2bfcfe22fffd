"""Order mode "mindspore" for sampler chains over a MindDataset and for TextFileDataset.

Chains (``add_child``, ``add_sampler``, ``use_sampler``) run as MindSpore 2.10's MindRecord
operators (``recordio.dataset.order.ms_chains``); TextFileDataset's orders (``Shuffle.GLOBAL``, the
default, ``Shuffle.FILES`` and ``shuffle=False``) as its ``TextFileOp`` and ``ShuffleOp``
(``recordio.dataset.order.ms_text``). The first part pins
orders that MindSpore 2.10 itself produced (copied from its output, three epochs each), so that CI
without MindSpore still checks them; the ``mindspore`` tier compares with MindSpore 2.10 for
several seeds, shard counts, shard ids and three epochs."""

import json
import subprocess
import sys

import numpy as np
import pytest

from ms_client import run_oracle
from ms_oracle import build_pipeline, from_plain
from recordio import config
from recordio.dataset import (DistributedSampler, MindDataset, RandomSampler, SequentialSampler, Shuffle,
                              SubsetSampler, TextFileDataset)
from recordio.dataset.order import ms_text
from test_ms_order import COUNTS, files, mindspore_orders  # noqa: F401  (fixtures; ids 0..46 in file order)

TEXT_COUNTS = [5, 9, 3, 7]         # lines of the four text files; line k holds "k"


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ms-texts")
    paths, start = [], 0
    for k, count in enumerate(TEXT_COUNTS):
        path = folder / f"f{k}.txt"
        path.write_text("".join(f"{start + i}\n" for i in range(count)))
        paths.append(str(path))
        start += count
    return paths


def ids_of(data, epochs=3, column="id"):
    it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [int(str(row[column])) for _ in range(epochs) for row in it]


def chained(paths, sampler):
    return MindDataset(paths, sampler=sampler)


def with_child(parent, child):
    parent.add_child(child)
    return parent


def unshuffled_then(paths, sampler):
    data = MindDataset(paths, shuffle=False)
    data.add_sampler(sampler)
    return data


# --- orders MindSpore 2.10 gave (three epochs each, copied from its output) -----------------------

PINNED = {
    # DistributedSampler(2, 0) over RandomSampler(), seed 1234: the child's first shuffle, reshuffled
    # by the parent each epoch
    "DS(2,0) over Random": (1234, lambda p: chained(p, with_child(DistributedSampler(2, 0), RandomSampler())), [
        29, 13, 23, 19, 0, 4, 41, 18, 45, 46, 17, 15, 32, 40, 35, 26, 24, 38, 36, 16, 33, 42, 11, 1,
        32, 33, 39, 13, 11, 20, 16, 44, 25, 46, 4, 42, 15, 41, 7, 43, 30, 34, 36, 45, 2, 3, 22, 23,
        36, 42, 37, 16, 5, 34, 18, 29, 40, 32, 1, 23, 28, 24, 30, 9, 20, 6, 44, 38, 39, 21, 2, 8]),
    # RandomSampler() over DistributedSampler(2, 1), seed 1234: from the second epoch on MindSpore
    # runs the DistributedSampler only (the parent's shuffle acts in the first epoch)
    "Random over DS(2,1)": (1234, lambda p: chained(p, with_child(RandomSampler(), DistributedSampler(2, 1))), [
        40, 19, 10, 21, 38, 33, 34, 37, 45, 36, 7, 22, 43, 32, 46, 6, 3, 23, 30, 31, 5, 13, 15, 14,
        25, 16, 19, 12, 5, 30, 34, 8, 2, 36, 14, 32, 15, 40, 13, 0, 18, 33, 43, 26, 21, 28, 27, 41,
        16, 29, 17, 34, 6, 1, 26, 7, 4, 18, 32, 43, 45, 39, 44, 8, 31, 5, 24, 3, 35, 25, 15, 9]),
    # RandomSampler(num_samples=10) over SubsetSampler, seed 7: each epoch reshuffles the last one's
    "Random(10) over Subset": (7, lambda p: chained(p, with_child(
        RandomSampler(num_samples=10), SubsetSampler([1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45]))), [
        17, 21, 33, 45, 25, 29, 13, 1, 41, 9, 13, 9, 45, 21, 25, 33, 29, 41, 1, 17,
        41, 13, 1, 21, 29, 9, 33, 45, 25, 17]),
    # DistributedSampler(2, 0) over DistributedSampler(3, 1), seed 7
    "DS(2,0) over DS(3,1)": (7, lambda p: chained(p, with_child(DistributedSampler(2, 0), DistributedSampler(3, 1))), [
        7, 30, 35, 39, 27, 14, 18, 4, 34, 4, 7, 25, 46, 32, 31, 6, 26, 27, 34, 35, 7, 30, 25, 21]),
    # MindDataset(shuffle=False).add_sampler(DistributedSampler(2, 1)), seed 1234
    "shuffle=False + add_sampler DS(2,1)": (1234, lambda p: unshuffled_then(p, DistributedSampler(2, 1)), [
            13, 7, 31, 43, 36, 23, 21, 14, 45, 37, 5, 30, 19, 38, 33, 3, 6, 46, 34, 15, 32, 10, 22, 40,
            25, 16, 19, 12, 5, 30, 34, 8, 2, 36, 14, 32, 15, 40, 13, 0, 18, 33, 43, 26, 21, 28, 27, 41,
            16, 29, 17, 34, 6, 1, 26, 7, 4, 18, 32, 43, 45, 39, 44, 8, 31, 5, 24, 3, 35, 25, 15, 9]),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_chain_orders_are_mindspore_s(files, name, mindspore_orders):
    seed, factory, expected = PINNED[name]
    config.set_seed(seed)
    data = factory(files)
    assert ids_of(data) == expected
    assert data.get_dataset_size() * 3 == len(expected)


def test_a_late_epoch_needs_no_earlier_one(files, mindspore_orders):
    config.set_seed(1234)
    (_, factory, expected) = PINNED["DS(2,0) over Random"]
    data = factory(files)
    sampler = data.sampler
    assert np.array_equal(sampler.order(sum(COUNTS), 1234, 2, data)[0::2], expected[48:])


def test_after_the_first_epoch_only_the_distributed_sampler_runs(files, mindspore_orders):
    config.set_seed(3)
    first, second, third = np.reshape(ids_of(chained(files, with_child(RandomSampler(), DistributedSampler(2, 1)))),
                                      (3, -1)).tolist()
    config.set_seed(3)
    alone = np.reshape(ids_of(MindDataset(files, sampler=DistributedSampler(2, 1))), (3, -1)).tolist()
    assert sorted(first) == sorted(alone[0]) and first != alone[0]      # the parent shuffled the first epoch
    assert [second, third] == alone[1:]


def test_what_mindspore_leaves_undefined_is_refused(files, mindspore_orders):
    cases = [
        # MindSpore 2.10 crashes (SIGSEGV) on these: an operator reads past the end of a shorter list
        with_child(RandomSampler(num_samples=30), RandomSampler(num_samples=20)),
        with_child(RandomSampler(num_samples=10), RandomSampler(num_samples=20)),
        with_child(SequentialSampler(3, 5), RandomSampler(num_samples=20)),
        with_child(DistributedSampler(2, 0, offset=1), RandomSampler()),
    ]
    for sampler in cases:
        with pytest.raises(NotImplementedError, match="order mode 'mindspore'"):
            ids_of(MindDataset(files, sampler=sampler))


# --- TextFileDataset ---------------------------------------------------------------------------------

TEXT_PINNED = {
    # (seed, kwargs) -> three epochs of MindSpore 2.10 (two workers: its workers' rows interleave)
    (5, "FILES", None, 2): [
        17, 0, 18, 1, 19, 2, 20, 3, 21, 4, 22, 14, 23, 15, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13,
        14, 17, 15, 18, 16, 19, 0, 20, 1, 21, 2, 22, 3, 23, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
        5, 14, 6, 15, 7, 16, 8, 0, 9, 1, 10, 2, 11, 3, 12, 4, 13, 17, 18, 19, 20, 21, 22, 23],
    (5, "FILES", None, 1): [
        17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
        14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
        5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4],
    (5, "FILES", (3, 1), 2): [13, 0, 14, 1, 15, 2, 3, 4, 10, 17, 11, 18, 12, 19, 13, 20, 8, 14, 9, 15, 10, 11, 12, 13],
    (5, "FILES", (2, 1), 1): [3, 4, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4,
                              12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],
    (1, False, None, 2): [0, 5, 1, 6, 2, 7, 3, 8, 4, 9, 14, 10, 15, 11, 16, 12, 13, 17, 18, 19, 20, 21, 22, 23] * 3,
}


@pytest.mark.parametrize("key", sorted(TEXT_PINNED, key=str))
def test_text_orders_are_mindspore_s(texts, key, mindspore_orders):
    seed, shuffle, shards, workers = key
    config.set_seed(seed)
    kwargs = {"shuffle": getattr(Shuffle, shuffle) if isinstance(shuffle, str) else shuffle,
              "num_parallel_workers": workers}
    if shards:
        kwargs.update(num_shards=shards[0], shard_id=shards[1])
    data = TextFileDataset(texts, **kwargs)
    assert ids_of(data, column="text") == TEXT_PINNED[key]


def test_text_num_samples_cuts_each_shard_before_anything_else(texts, mindspore_orders):
    config.set_seed(5)
    data = TextFileDataset(texts, shuffle=Shuffle.FILES, num_samples=5, num_shards=2, shard_id=0,
                           num_parallel_workers=2)
    assert ids_of(data, column="text") == [5, 0, 6, 1, 7, 14, 5, 15, 6, 16, 0, 5, 1, 6, 2]   # MindSpore 2.10's
    assert data.get_dataset_size() == 5


def test_text_shards_cover_the_files_once(texts, mindspore_orders):
    config.set_seed(11)
    shards = [ids_of(TextFileDataset(texts, shuffle=Shuffle.FILES, num_shards=3, shard_id=k), 1, "text")
              for k in range(3)]
    assert all(len(s) == 8 for s in shards) and sorted(sum(shards, [])) == list(range(24))


def test_text_global_shuffle_is_mindspore_s(texts, mindspore_orders):
    config.set_seed(5)              # the default shuffle (GLOBAL), two workers: MindSpore 2.10's three epochs
    assert ids_of(TextFileDataset(texts, num_parallel_workers=2), column="text") == [
        12, 13, 5, 15, 19, 18, 1, 3, 21, 9, 22, 8, 0, 17, 7, 6, 2, 14, 16, 23, 11, 20, 10, 4,
        12, 1, 3, 21, 0, 13, 18, 15, 2, 20, 11, 4, 9, 7, 5, 8, 23, 22, 16, 10, 17, 19, 6, 14,
        21, 22, 12, 6, 4, 11, 1, 3, 0, 23, 5, 20, 7, 18, 19, 17, 8, 15, 13, 10, 9, 2, 16, 14]
    config.set_seed(5)
    data = TextFileDataset(texts, num_shards=3, shard_id=1, num_parallel_workers=2)
    assert ids_of(data, column="text") == [3, 2, 14, 1, 13, 4, 0, 15, 10, 17, 12, 18, 13, 20, 19, 11,
                                           11, 14, 13, 9, 10, 12, 8, 15]
    with pytest.raises(NotImplementedError, match="Shuffle.INFILE"):
        ids_of(TextFileDataset(texts, shuffle=Shuffle.INFILE), 1, "text")


# MindSpore 2.10: a 24-row source in order (NumpySlicesDataset, GeneratorDataset(shuffle=False)) then
# .shuffle(size), set_seed(5), two epochs: {size: [epoch 0, epoch 1]}
SHUFFLE_BUFFER_PINNED = {
    10000: [[22, 23, 14, 13, 4, 2, 3, 7, 8, 19, 10, 18, 1, 0, 17, 16, 5, 11, 15, 12, 21, 6, 20, 9],
            [22, 8, 12, 9, 6, 23, 3, 2, 10, 7, 21, 14, 19, 17, 15, 18, 13, 11, 4, 20, 1, 5, 16, 0]],
    5: [[2, 3, 0, 5, 8, 4, 1, 11, 6, 13, 10, 7, 16, 9, 15, 18, 14, 21, 19, 17, 23, 20, 12, 22],
        [4, 3, 2, 7, 1, 8, 9, 5, 10, 6, 13, 0, 12, 16, 11, 19, 18, 20, 15, 21, 17, 23, 14, 22]],
}


def test_the_shuffle_buffer_draws_on_across_epochs():
    # MindSpore 2.10: NumpySlicesDataset(range(24), shuffle=False).shuffle(size), seed 5, two epochs
    expected = SHUFFLE_BUFFER_PINNED
    for size, epochs in expected.items():
        g = ms_text.MT19937_64(5)
        assert [ms_text.shuffle_buffer(range(24), size, g) for _ in epochs] == epochs
    engines = ms_text.Engines()
    g = engines.at(5, 0, 24)
    assert ms_text.shuffle_buffer(range(24), 10000, g) == expected[10000][1]
    assert engines.at(5, 0, 24).mt == ms_text.Engines().at(5, 0, 24).mt


def test_text_orders_in_the_default_mode_are_untouched(texts):
    config.set_seed(3)
    assert sorted(ids_of(TextFileDataset(texts), 1, "text")) == list(range(24))
    assert ids_of(TextFileDataset(texts, shuffle=False), 1, "text") == list(range(24))


def test_the_shuffle_buffer_engine_gives_the_standards_value():
    g = ms_text.MT19937_64(5489)                   # [rand.predef]: the 10000th output; the first one
    outputs = [g() for _ in range(10000)]
    assert outputs[0] == 14514284786278117030 and outputs[-1] == 9981545732273789042


# --- MindSpore 2.10 as the oracle -------------------------------------------------------------------

def _s(name, kwargs, child=None):
    return [name, kwargs] if child is None else [name, kwargs, child]


RANDOM, SEQ = _s("RandomSampler", {}), _s("SequentialSampler", {})


def chain_cases(paths):
    """name -> (pipeline spec, seed, env) read for three epochs by both libraries."""
    out = {}
    for seed in (1234, 7, 99):
        def add(name, source, steps=(), env="slice"):
            out[f"{seed} {name} {env}"] = ({"source": dict({"dataset_files": paths}, **source), "steps": list(steps)},
                                           seed, env)
        for num, sid in ((2, 0), (3, 2), (4, 3)):
            add(f"DS({num},{sid}) over Random", {"sampler": _s("DistributedSampler", {"num_shards": num,
                                                                                      "shard_id": sid}, RANDOM)})
            add(f"Random over DS({num},{sid})", {"sampler": _s("RandomSampler", {}, _s(
                "DistributedSampler", {"num_shards": num, "shard_id": sid}))})
            add(f"add_sampler DS({num},{sid})", {}, [["add_sampler", {"sampler": _s(
                "DistributedSampler", {"num_shards": num, "shard_id": sid})}]])
        add("DS(2,1) over Random block", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 1},
                                                          RANDOM)}, env="block")
        add("Random over DS(3,1) block", {"sampler": _s("RandomSampler", {}, _s(
            "DistributedSampler", {"num_shards": 3, "shard_id": 1}))}, env="block")
        add("Random over Random", {"sampler": _s("RandomSampler", {}, RANDOM)})
        add("DS(2,1,ns=5) over Random", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 1,
                                                                               "num_samples": 5}, RANDOM)})
        add("DS(2,0,noshuffle) over Random", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 0,
                                                                                    "shuffle": False}, RANDOM)})
        add("DS(3,2) over Seq(2,20)", {"sampler": _s("DistributedSampler", {"num_shards": 3, "shard_id": 2},
                                                     _s("SequentialSampler", {"start_index": 2, "num_samples": 20}))})
        add("Seq over DS(3,1)", {"sampler": _s("SequentialSampler", {}, _s("DistributedSampler",
                                                                          {"num_shards": 3, "shard_id": 1}))})
        add("DS(2,0) over DS(3,1)", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 0},
                                                   _s("DistributedSampler", {"num_shards": 3, "shard_id": 1}))})
        add("DS(2,0) over SubsetRandom", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 0},
                                                        _s("SubsetRandomSampler", {"indices": [3, 40, 7, 22, 0, 31]}))})
        add("Random(10) over Subset", {"sampler": _s("RandomSampler", {"num_samples": 10}, _s(
            "SubsetSampler", {"indices": [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45]}))})
        add("shards(3,1) + add_sampler Random", {"num_shards": 3, "shard_id": 1},
            [["add_sampler", {"sampler": RANDOM}]])
        add("shuffle False + add_sampler DS(2,1)", {"shuffle": False},
            [["add_sampler", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 1})}]])
        add("shuffle FILES + add_sampler DS(2,1)", {"shuffle": "FILES"},
            [["add_sampler", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 1})}]])
        add("DS(2,0) over Random FILES", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 0},
                                                        _s("RandomSampler", {"shuffle": "FILES"}))})
        add("num_samples + add_sampler DS(2,1)", {"num_samples": 20},
            [["add_sampler", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 1})}]])
        add("use_sampler Random under DS", {"sampler": _s("DistributedSampler", {"num_shards": 2, "shard_id": 0},
                                                          SEQ)}, [["use_sampler", {"sampler": RANDOM}]])
    return out


def _env(env):
    return {"MS_DEV_MINDRECORD_SHARD_BY_BLOCK": "true" if env == "block" else "false"}


@pytest.fixture(scope="module")
def chain_oracle(mindspore_python, files, tmp_path_factory):
    named = chain_cases(files)
    jobs = [{"op": "pipeline", "pipeline": spec, "rows": 100_000, "seed": seed, "epochs": 3, "env": _env(env)}
            for spec, seed, env in named.values()]
    return dict(zip(named, run_oracle(mindspore_python, jobs, tmp_path_factory.mktemp("ms-chains-oracle"))))


@pytest.mark.mindspore
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(chain_cases(["p"])))
def test_chain_orders_match_mindspore(chain_oracle, files, name, monkeypatch, mindspore_orders):
    import recordio.dataset as rds
    spec, seed, env = chain_cases(files)[name]
    theirs = chain_oracle[name]
    assert "error" not in theirs, f"MindSpore: {theirs.get('error')}"
    position = theirs["names"].index("id")
    their_ids = [int(np.asarray(row[position])) for row in from_plain(theirs["rows"])]
    for key, value in _env(env).items():
        monkeypatch.setenv(key, value)
    config.set_seed(seed)
    data = build_pipeline(rds, spec)
    assert ids_of(data) == their_ids
    assert data.get_dataset_size() == theirs["size"]


TEXT_SCRIPT = r"""
import json, sys
import mindspore.dataset as ds
files, specs = json.loads(sys.argv[1])
out = []
for seed, kwargs in specs:
    ds.config.set_seed(seed)
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("shuffle"), str):
        kwargs["shuffle"] = getattr(ds.Shuffle, kwargs["shuffle"])
    data = ds.TextFileDataset(files, **kwargs)
    it = data.create_dict_iterator(num_epochs=3, output_numpy=True)
    out.append([[int(str(row["text"])) for row in it] for _ in range(3)] + [data.get_dataset_size()])
print(json.dumps([ds.config.get_num_parallel_workers(), out]))
"""


def text_cases():
    out = []
    for seed in (5, 1234, 77):
        out.append([seed, {}])                      # the default: Shuffle.GLOBAL, the default workers
        for shuffle in ("GLOBAL", "FILES", False):
            for workers in (1, 2):
                out.append([seed, {"shuffle": shuffle, "num_parallel_workers": workers}])
                for num, ids in ((2, (0, 1)), (3, (0, 1, 2))):
                    out += [[seed, {"shuffle": shuffle, "num_parallel_workers": workers, "num_shards": num,
                                    "shard_id": k}] for k in ids]
            out.append([seed, {"shuffle": shuffle, "num_samples": 10, "num_parallel_workers": 2}])
            out.append([seed, {"shuffle": shuffle, "num_samples": 5, "num_shards": 2, "shard_id": 1,
                               "num_parallel_workers": 2}])
    return out


@pytest.fixture(scope="module")
def text_oracle(mindspore_python, texts, tmp_path_factory):
    script = tmp_path_factory.mktemp("ms-text-oracle") / "text_orders.py"
    script.write_text(TEXT_SCRIPT)
    done = subprocess.run([mindspore_python, str(script), json.dumps([texts, text_cases()])],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.mindspore
@pytest.mark.slow
def test_text_orders_match_mindspore(text_oracle, texts, mindspore_orders):
    default_workers, results = text_oracle
    cases = text_cases()
    assert len(results) == len(cases)
    workers = config.get_num_parallel_workers()
    config.set_num_parallel_workers(default_workers)        # MindSpore's default follows the CPU count
    mismatches = []
    try:
        for (seed, kwargs), theirs in zip(cases, results):
            kwargs = dict(kwargs)
            if isinstance(kwargs.get("shuffle"), str):
                kwargs["shuffle"] = getattr(Shuffle, kwargs["shuffle"])
            config.set_seed(seed)
            data = TextFileDataset(texts, **kwargs)
            ours = np.reshape(ids_of(data, 3, "text"), (3, -1)).tolist() + [data.get_dataset_size()]
            if ours != theirs:
                mismatches.append((seed, kwargs, theirs, ours))
    finally:
        config.set_num_parallel_workers(workers)
    assert not mismatches, mismatches[:3]



# --- Dataset.shuffle (MindSpore's ShuffleOp) ----------------------------------------------------------

def _numbers(n=24):
    from recordio.dataset import GeneratorDataset
    return GeneratorDataset([(np.array(i),) for i in range(n)], column_names=["x"], shuffle=False)


SHUFFLE_PIPELINES = {
    "shuffle2": lambda ds: ds.shuffle(2),
    "shuffle5": lambda ds: ds.shuffle(5),
    "shuffle24": lambda ds: ds.shuffle(24),
    "shuffle100": lambda ds: ds.shuffle(100),
    "shuffle5-repeat2": lambda ds: ds.shuffle(5).repeat(2),
    "repeat2-shuffle5": lambda ds: ds.repeat(2).shuffle(5),
    "batch4-shuffle3": lambda ds: ds.batch(4).shuffle(3),
    "shuffle7-batch5": lambda ds: ds.shuffle(7).batch(5),
    "shuffle3-shuffle4": lambda ds: ds.shuffle(3).shuffle(4),
    "filter-shuffle5": lambda ds: ds.filter(lambda x: x % 3 != 0, input_columns=["x"]).shuffle(5),
}


def _shuffled(name, seed, epochs=3):
    config.set_seed(seed)
    it = SHUFFLE_PIPELINES[name](_numbers()).create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    return [[np.asarray(t[0]).ravel().tolist() for t in it] for _ in range(epochs)]


def test_dataset_shuffle_is_mindspore_s_shuffle_op(mindspore_orders):
    # MindSpore 2.10: GeneratorDataset(range(24), shuffle=False).shuffle(size), set_seed(5), two epochs
    # (the engine draws on across epochs: the second epoch is not the first again)
    expected = SHUFFLE_BUFFER_PINNED
    for size, epochs in expected.items():
        config.set_seed(5)
        it = _numbers().shuffle(size).create_tuple_iterator(num_epochs=2, output_numpy=True)
        assert [[int(t[0]) for t in it] for _ in epochs] == epochs


def test_dataset_shuffle_in_mindspore_mode_after_a_filter(mindspore_orders):
    """Epochs run in turn draw on from the last one's engine; an epoch started without the ones
    before it needs their number of rows, which a filter only tells by iterating."""
    epochs = _shuffled("filter-shuffle5", 5)
    assert len(epochs) == 3 and all(sorted(sum(e, [])) == [i for i in range(24) if i % 3] for e in epochs)
    assert epochs[0] != epochs[1]
    config.set_seed(5)
    data = SHUFFLE_PIPELINES["filter-shuffle5"](_numbers())
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    list(it)
    state = it.state_dict()                            # epoch 0 done
    again = SHUFFLE_PIPELINES["filter-shuffle5"](_numbers())
    again.load_state_dict(state)
    with pytest.raises(NotImplementedError, match="Dataset.shuffle: starting at epoch 1"):
        list(again.create_tuple_iterator(num_epochs=2, output_numpy=True))


def test_dataset_shuffle_in_the_default_mode_is_keyed():
    config.set_seed(5)
    first = _shuffled("shuffle5", 5)
    assert first == _shuffled("shuffle5", 5) and all(sorted(sum(e, [])) == list(range(24)) for e in first)
    assert sum(first[0], []) != [2, 3, 0, 5, 8, 4, 1, 11, 6, 13, 10, 7, 16, 9, 15, 18, 14, 21, 19, 17, 23, 20, 12, 22]


SHUFFLE_SCRIPT = r"""
import json, sys
import numpy as np
import mindspore.dataset as ds
pipelines = {
    "shuffle2": lambda d: d.shuffle(2), "shuffle5": lambda d: d.shuffle(5), "shuffle24": lambda d: d.shuffle(24),
    "shuffle100": lambda d: d.shuffle(100), "shuffle5-repeat2": lambda d: d.shuffle(5).repeat(2),
    "repeat2-shuffle5": lambda d: d.repeat(2).shuffle(5), "batch4-shuffle3": lambda d: d.batch(4).shuffle(3),
    "shuffle7-batch5": lambda d: d.shuffle(7).batch(5), "shuffle3-shuffle4": lambda d: d.shuffle(3).shuffle(4),
    "filter-shuffle5": lambda d: d.filter(lambda x: x % 3 != 0, input_columns=["x"]).shuffle(5),
}
out = {}
for seed in json.loads(sys.argv[1]):
    for name, build in pipelines.items():
        ds.config.set_seed(seed)
        data = build(ds.GeneratorDataset([(np.array(i),) for i in range(24)], column_names=["x"], shuffle=False))
        it = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
        out[f"{name}/{seed}"] = [[np.asarray(t[0]).ravel().tolist() for t in it] for _ in range(3)]
print(json.dumps(out))
"""


@pytest.mark.mindspore
def test_dataset_shuffle_matches_mindspore(mindspore_python, tmp_path, mindspore_orders):
    seeds = [5, 1234, 0]
    script = tmp_path / "shuffle_orders.py"
    script.write_text(SHUFFLE_SCRIPT)
    done = subprocess.run([mindspore_python, str(script), json.dumps(seeds)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(theirs) == len(seeds) * len(SHUFFLE_PIPELINES)
    mismatches = [key for key, orders in theirs.items() if _shuffled(key.split("/")[0], int(key.split("/")[1])) != orders]
    assert not mismatches

if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
