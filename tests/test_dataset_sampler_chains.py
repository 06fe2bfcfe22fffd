"""Sampler chains: ``Sampler.add_child``, ``Dataset.add_sampler`` / ``use_sampler`` (MindSpore's
semantics: the new sampler samples the rows the current one gives), and ``DistributedSampler``
with ``shard_id == num_shards``. The ``mindspore`` tier compares the unshuffled chains with
MindSpore 2.10 row for row, and the sizes of the shuffled ones."""

import numpy as np
import pytest

from ms_client import run_oracle
from ms_oracle import build_pipeline
from numbered import epoch_ids as rows, write_numbered
from recordio import config
from recordio.dataset import (DistributedSampler, MindDataset, PKSampler, RandomSampler, SequentialSampler, Shuffle,
                              SubsetRandomSampler, SubsetSampler)
from recordio.errors import PipelineError

N = 20


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("chains") / "d.mindrecord", N, shard_num=2)




def chained(path, new, **source):
    data = MindDataset(path, **source)
    data.add_sampler(new)
    return data


@pytest.mark.parametrize("shard_id", [0, 1, 2])
def test_a_distributed_sampler_splits_the_current_order(path, shard_id):
    data = chained(path, DistributedSampler(2, shard_id, shuffle=False), shuffle=False)
    expected = [(shard_id + 2 * k) % N for k in range(N // 2)]       # shard 2 of 2: shard 0's rows a round later
    assert rows(data) == [expected] and data.get_dataset_size() == N // 2


def test_the_child_num_samples_limits_what_the_parent_sees(path):
    data = chained(path, DistributedSampler(3, 2, shuffle=False), shuffle=False, num_samples=8)
    assert rows(data) == [[2, 5, 0]] and data.get_dataset_size() == 3
    data = chained(path, SequentialSampler(1, 2), sampler=SequentialSampler(5, 6))
    assert rows(data) == [[6, 7]]


def test_shards_of_a_random_order_together_read_it_once(path):
    config.set_seed(7)
    shards = [rows(chained(path, DistributedSampler(2, s, shuffle=False), sampler=RandomSampler()), 2)
              for s in (0, 1)]
    for epoch in range(2):
        a, b = shards[0][epoch], shards[1][epoch]
        merged = [x for pair in zip(a, b) for x in pair]
        assert sorted(merged) == list(range(N))                       # one random order, split in two
    assert shards[0][0] != shards[0][1]                               # reshuffled every epoch
    assert merged != sorted(merged)


def test_a_shuffled_parent_reshuffles_the_child_rows(path):
    data = chained(path, DistributedSampler(1, 0), sampler=SubsetSampler([3, 1, 4, 15, 9]))
    (got,) = rows(data)
    assert sorted(got) == [1, 3, 4, 9, 15] and data.get_dataset_size() == 5


def test_getitem_follows_the_chain(path):
    config.set_seed(1234)
    data = chained(path, DistributedSampler(2, 2), sampler=RandomSampler())
    assert data.get_dataset_size() == N // 2
    (got,) = rows(data)
    assert [int(data[i][data.get_col_names().index("id")]) for i in range(len(got))] == got


def test_use_sampler_on_a_split_part_keeps_its_rows(path):
    config.set_seed(111)
    whole = MindDataset(path, shuffle=False)
    first, second = whole.split([0.8, 0.2])
    (part,) = rows(first)
    (rest,) = rows(second)
    assert sorted(part + rest) == list(range(N)) and len(part) == 16
    shards = []
    for shard_id in (0, 1):
        first.use_sampler(DistributedSampler(2, shard_id))
        assert first.get_dataset_size() == 8
        shards.append(rows(first)[0])
    assert sorted(shards[0] + shards[1]) == sorted(part)


def test_use_sampler_without_a_child_replaces_the_sampler(path):
    data = MindDataset(path, num_shards=2, shard_id=1, shuffle=False)
    data.use_sampler(SequentialSampler(num_samples=3))
    assert rows(data) == [[0, 1, 2]] and data.sampler.get_child() is None


@pytest.mark.parametrize("current,new,message", [
    (dict(shuffle=Shuffle.PARTIAL), DistributedSampler(8, 1, shuffle=Shuffle.INFILE), "current sampler"),
    (dict(shuffle=Shuffle.GLOBAL), DistributedSampler(4, 3, shuffle=Shuffle.INFILE), "input sampler"),
])
def test_add_sampler_refuses_what_mindspore_refuses(path, current, new, message):
    with pytest.raises(RuntimeError, match=f"ensure that the shuffle of the {message}"):
        MindDataset(path, **current).add_sampler(new)


def test_add_child_refuses_what_mindspore_refuses():
    with pytest.raises(RuntimeError, match="shuffle of the input sampler must not be Shuffle.PARTIAL"):
        DistributedSampler(8, 1, shuffle=Shuffle.PARTIAL).add_child(RandomSampler(shuffle=Shuffle.PARTIAL))
    with pytest.raises(RuntimeError, match="shuffle of the current sampler"):
        DistributedSampler(8, 1, shuffle=Shuffle.INFILE).add_child(RandomSampler())
    parent = SequentialSampler()
    parent.add_child(RandomSampler())
    with pytest.raises(RuntimeError, match="already has a child"):
        parent.add_child(RandomSampler())
    with pytest.raises(NotImplementedError, match="PKSampler cannot sample another sampler"):
        PKSampler(2).add_child(SequentialSampler())


def test_chain_arguments_are_checked(path):
    with pytest.raises(TypeError, match="can not be None"):
        MindDataset(path).use_sampler(None)
    with pytest.raises(TypeError, match="not an instance of a sampler"):
        MindDataset(path).add_sampler([1, 2])
    with pytest.raises(PipelineError, match="has no sampler"):
        MindDataset(path).project(["id"]).add_sampler(SequentialSampler())
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        DistributedSampler(2, 3)
    with pytest.raises(ValueError, match="shard_id"):
        MindDataset(path, num_shards=2, shard_id=2)         # a source's own shard_id stays below num_shards


def test_shuffle_modes_and_num_samples_as_mindspore_reports_them():
    assert DistributedSampler(2, 0).get_shuffle_mode() == Shuffle.GLOBAL
    assert DistributedSampler(2, 0, shuffle=False).get_shuffle_mode() == Shuffle.FALSE
    assert SubsetRandomSampler([1]).get_shuffle_mode() == Shuffle.GLOBAL
    assert SequentialSampler().get_shuffle_mode() == Shuffle.FALSE
    parent = SequentialSampler(num_samples=5)
    parent.add_child(RandomSampler(num_samples=3))
    assert parent.get_num_samples() == 3 and parent.get_child().num_samples == 3


# --- MindSpore 2.10 as the oracle -----------------------------------------------------------------

def _desc(cls, **kwargs):
    return [cls, kwargs]


def specs(path):
    """name -> (pipeline spec, exact): exact pipelines have no randomness and must give MindSpore's rows."""
    out = {}
    for k in (0, 1, 2):
        out[f"seq+D(2,{k})"] = ({"source": {"dataset_files": path, "shuffle": False},
                                 "steps": [["add_sampler", {"sampler": _desc("DistributedSampler", num_shards=2,
                                                                               shard_id=k, shuffle=False)}]]}, True)
        out[f"seq8+D(3,{k})"] = ({"source": {"dataset_files": path, "shuffle": False, "num_samples": 8},
                                  "steps": [["add_sampler", {"sampler": _desc("DistributedSampler", num_shards=3,
                                                                                shard_id=k, shuffle=False)}]]}, True)
    out["D(2,2) alone"] = ({"source": {"dataset_files": path,
                                       "sampler": _desc("DistributedSampler", num_shards=2, shard_id=2, shuffle=False)},
                            "steps": []}, True)
    out["Seq(5,6)+Seq(1,2)"] = ({"source": {"dataset_files": path, "sampler": _desc("SequentialSampler", start_index=5,
                                                                                     num_samples=6)},
                                 "steps": [["add_sampler", {"sampler": _desc("SequentialSampler", start_index=1,
                                                                               num_samples=2)}]]}, True)
    out["shard(2,1)+use Seq"] = ({"source": {"dataset_files": path, "num_shards": 2, "shard_id": 1, "shuffle": False},
                                  "steps": [["use_sampler", {"sampler": _desc("SequentialSampler", num_samples=3)}]]},
                                 True)
    out["child D(3,1) of Seq"] = ({"source": {"dataset_files": path, "sampler": [
        "SequentialSampler", {"start_index": 2}, _desc("DistributedSampler", num_shards=3, shard_id=1, shuffle=False)]},
        "steps": []}, True)
    out["Random+D(2,2)"] = ({"source": {"dataset_files": path, "sampler": _desc("RandomSampler")},
                             "steps": [["add_sampler", {"sampler": _desc("DistributedSampler", num_shards=2,
                                                                           shard_id=2)}]]}, False)
    out["split+use D(2,1)"] = ({"source": {"dataset_files": path, "shuffle": False},
                                "steps": [["split", {"sizes": [0.8, 0.2], "randomize": False, "part": 0}],
                                          ["use_sampler", {"sampler": _desc("DistributedSampler", num_shards=2,
                                                                              shard_id=1, shuffle=False)}]]}, True)
    return out


@pytest.fixture(scope="module")
def oracle(mindspore_python, path, tmp_path_factory):
    named = specs(path)
    jobs = [{"op": "pipeline", "pipeline": spec, "rows": 100, "seed": 1234} for spec, _ in named.values()]
    return dict(zip(named, run_oracle(mindspore_python, jobs, tmp_path_factory.mktemp("chain-oracle"))))


@pytest.mark.mindspore
@pytest.mark.parametrize("name", sorted(specs("p")))
def test_chains_match_mindspore(oracle, path, name):
    from ms_oracle import from_plain
    spec, exact = specs(path)[name]
    theirs = oracle[name]
    assert "error" not in theirs, f"MindSpore: {theirs.get('error')}"
    data = build_pipeline(__import__("recordio.dataset", fromlist=["x"]), spec)
    (ours,) = rows(data)
    position = theirs["names"].index("id")
    their_ids = [int(np.asarray(row[position])) for row in from_plain(theirs["rows"])]
    assert data.get_dataset_size() == theirs["size"] == len(their_ids) == len(ours)
    if exact:
        assert ours == their_ids
    else:
        assert len(set(ours)) == len(set(their_ids))


@pytest.mark.parametrize("shuffle,shards", [(False, None), (Shuffle.PARTIAL, None), (True, (3, 1))])
def test_set_init_step_starts_the_next_iterator_there(path, shuffle, shards):
    kwargs = {} if shards is None else {"num_shards": shards[0], "shard_id": shards[1]}
    config.set_seed(5)
    (whole,) = rows(MindDataset(path, shuffle=shuffle, **kwargs))
    data = MindDataset(path, shuffle=shuffle, **kwargs)
    data.set_init_step(3)
    assert data.get_init_step() == 3
    assert rows(data) == [whole[3:]]
    data.set_init_step(len(whole) + 2)                  # the second epoch (of 2), after 2 outputs
    second = rows(data, 2)[0]
    assert len(second) == len(whole) - 2
    with pytest.raises(ValueError, match="init_step"):
        data.set_init_step(-1)
