"""state_dict / load_state_dict (recordio.dataset.resume): resume exactly after the last output
delivered, with the same augmentations, also under another number of shards."""

import numpy as np
import pytest

from recordio.dataset import MindDataset
from numbered import write_numbered
from recordio.errors import PipelineError
from recordio.keys import current_keys

N = 30


class Jitter:
    def __call__(self, vec):
        return vec + np.float32(current_keys().uniform(0)[0])


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("resume") / "d.mindrecord", N, shard_num=3)


def build(path, batch=4, buffer=None, **kw):
    ds = MindDataset(path, columns_list=["id", "vec"], **kw)
    ds = ds.map(Jitter(), input_columns="vec", num_parallel_workers=2)
    if buffer:
        ds = ds.shuffle(buffer)
    return ds.batch(batch) if batch else ds


def outputs(it, limit=None):
    """(epoch-local output list) of (ids, vecs) pairs, at most ``limit`` outputs."""
    out = []
    for b in it:
        out.append((np.atleast_1d(b["id"]).tolist(), np.atleast_2d(b["vec"]).tolist()))
        if limit is not None and len(out) == limit:
            break
    return out


def run_epochs(ds, epochs, state=None):
    if state is not None:
        ds.load_state_dict(state)
    it = ds.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    first = state["epoch"] if state else 0
    return [outputs(it) for _ in range(first, epochs)]


@pytest.mark.parametrize("buffer", [None, 5], ids=["positional", "replay"])
@pytest.mark.parametrize("cut", [0, 1, 4, 7, 8])
def test_resume_at_points_of_an_epoch(dataset, buffer, cut):
    reference = run_epochs(build(dataset, buffer=buffer), 2)
    assert len(reference[0]) == 8
    ds = build(dataset, buffer=buffer)
    it = ds.create_dict_iterator(num_epochs=2, output_numpy=True)
    head = outputs(it, cut) if cut else []
    state = it.state_dict()
    assert state == ds.state_dict()
    it.close()
    rest = run_epochs(build(dataset, buffer=buffer), 2, state)
    if cut == 8:
        assert state["epoch"] == 1 and state["delivered"] == 0
        assert rest == [reference[1]]
    else:
        assert head + rest[0] == reference[0] and rest[1] == reference[1]


def test_resume_is_positional_without_reading_the_delivered_rows(dataset):
    ds = build(dataset)
    it = ds.create_dict_iterator(num_epochs=1, output_numpy=True)
    outputs(it, 3)
    state = it.state_dict()
    it.close()
    assert state["source"] == {"epoch": 0, "consumed": 12}


def rows_of_shards(path, num_shards, state=None, limit=None):
    """Each shard's (id, value) rows; ``limit``: stop each shard after so many rows."""
    per_shard, states = [], []
    for s in range(num_shards):
        ds = build(path, batch=None, num_shards=num_shards, shard_id=s)
        if state is not None:
            ds.load_state_dict(state)
        it = ds.create_dict_iterator(num_epochs=1, output_numpy=True)
        rows = [(int(r["id"]), r["vec"].tolist()) for r in _take(it, limit)]
        states.append(it.state_dict())
        it.close()
        per_shard.append(rows)
    return per_shard, states


def _take(it, limit):
    for k, row in enumerate(it):
        yield row
        if limit is not None and k + 1 == limit:
            return


@pytest.mark.parametrize("before,after", [(2, 3), (3, 2), (2, 5), (4, 1)])
def test_resume_under_another_world_size(dataset, before, after):
    reference = dict(r for shard in rows_of_shards(dataset, 1)[0] for r in shard)
    head, states = rows_of_shards(dataset, before, limit=4)
    assert len({s["source"]["consumed"] for s in states}) == 1
    tail, _ = rows_of_shards(dataset, after, state=states[0])
    seen = [r for shard in head + tail for r in shard]
    ids = [i for i, _ in seen]
    assert set(ids) == set(range(N))
    assert len(ids) - N < after
    head_ids = {i for shard in head for i, _ in shard}
    assert not head_ids & {i for shard in tail for i, _ in shard}
    assert all(reference[i] == v for i, v in seen)


def test_replay_resume_refuses_another_sharding(dataset):
    ds = build(dataset, batch=None, buffer=4, num_shards=2, shard_id=0)
    it = ds.create_dict_iterator(num_epochs=1, output_numpy=True)
    outputs(it, 2)
    state = it.state_dict()
    it.close()
    assert state["shards"] == [[2, 0]]
    other = build(dataset, batch=None, buffer=4, num_shards=3, shard_id=0)
    other.load_state_dict(state)
    with pytest.raises(PipelineError, match="same shards"):
        other.create_dict_iterator(num_epochs=1)


def test_malformed_state_is_refused(dataset):
    with pytest.raises(PipelineError, match="not a recordio pipeline state"):
        build(dataset).load_state_dict({"epoch": 1})


def _gen(n=23):
    from recordio.dataset import GeneratorDataset
    return GeneratorDataset([(np.int64(i), np.full(4, i, np.float32)) for i in range(n)], ["id", "vec"])


def _iterable(n=23):
    from recordio.dataset import GeneratorDataset

    def rows():
        for i in range(n):
            yield np.int64(i), np.full(4, i, np.float32)
    return GeneratorDataset(rows, ["id", "vec"])


def _mix():
    from recordio.dataset import mix
    return mix([_gen(9), _gen(5)], weights=[2, 1], num_samples=20, replacement=[False, True])


STAGES = {
    "map+batch": lambda: _gen().map(Jitter(), "vec").batch(3),
    "filter": lambda: _gen().filter(lambda i: i % 3 != 0, ["id"]).map(Jitter(), "vec"),
    "repeat+batch": lambda: _gen(7).map(Jitter(), "vec").repeat(3).batch(4),
    "shuffle buffer": lambda: _gen().shuffle(6).map(Jitter(), "vec"),
    "take/skip": lambda: _gen().skip(2).take(15).map(Jitter(), "vec"),
    "zip": lambda: _gen().zip(_gen(20).project(["vec"]).rename(["vec"], ["other"])),
    "concat": lambda: (_gen(9) + _gen(5)).map(Jitter(), "vec"),
    "mix": lambda: _mix().map(Jitter(), "vec").batch(3),
    "iterable source": lambda: _iterable().map(Jitter(), "vec").batch(2),
    "project/rename": lambda: _gen().project(["vec", "id"]).rename(["vec"], ["v"]).batch(5),
}


def check_resume(build, epochs=2):
    """The shared resume check: cut an epoch anywhere, resume in a fresh pipeline, compare."""
    def flat(pipeline, state=None):
        if state is not None:
            pipeline.load_state_dict(state)
        it = pipeline.create_dict_iterator(num_epochs=epochs, output_numpy=True)
        first = 0 if state is None else state["epoch"]
        plain = [[{k: np.asarray(v).tolist() for k, v in row.items()} for row in it]
                 for _ in range(first, epochs)]
        return plain

    reference = flat(build())
    per_epoch = len(reference[0])
    for cut in sorted({0, 1, per_epoch // 2, per_epoch - 1, per_epoch + 2}):
        it = build()
        stream = it.create_dict_iterator(num_epochs=epochs, output_numpy=True)
        head = []
        for _ in range(cut):
            head.append({k: np.asarray(v).tolist() for k, v in next(stream).items()})
            if len(head) == per_epoch:          # the epoch ended: move to the next
                with pytest.raises(StopIteration):
                    next(stream)
        state = stream.state_dict()
        stream.close()
        rest = flat(build(), state)
        done = cut // per_epoch
        assert head[done * per_epoch:] + rest[0] == reference[done], cut
        assert rest[1:] == reference[done + 1:], cut


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_resumes(stage):
    check_resume(STAGES[stage])


def test_internal_passes_leave_the_state_alone(dataset):
    ds = build(dataset)
    it = ds.create_dict_iterator(num_epochs=1, output_numpy=True)
    outputs(it, 2)
    state = ds.state_dict()
    ds.output_shapes()
    assert ds.state_dict() == state
    fresh = build(dataset)
    fresh.load_state_dict(state)
    fresh.output_types()
    fresh.get_dataset_size()
    rest = outputs(fresh.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert len(rest) == 6


@pytest.mark.parametrize("num_shards", [1, 2])
@pytest.mark.parametrize("num_samples", [7, 11, N])
@pytest.mark.parametrize("cut", [1, 5])
def test_a_resumed_epoch_with_num_samples_ends_where_the_epoch_ends(dataset, num_shards, num_samples, cut):
    """num_samples caps each shard's epoch; a resumed epoch reads the rest of it, not past it."""
    for shard_id in range(num_shards):
        def make():
            return MindDataset(dataset, columns_list=["id"], shuffle=True, num_samples=num_samples,
                               num_shards=num_shards, shard_id=shard_id)
        full = [int(r["id"]) for r in make().create_dict_iterator(num_epochs=1, output_numpy=True)]
        assert len(full) == min(num_samples, -(-N // num_shards))
        it = make().create_dict_iterator(num_epochs=1, output_numpy=True)
        head = [int(next(it)["id"]) for _ in range(cut)]
        again = make()
        again.load_state_dict(it.state_dict())
        rest = [int(r["id"]) for r in again.create_dict_iterator(num_epochs=1, output_numpy=True)]
        assert head + rest == full
