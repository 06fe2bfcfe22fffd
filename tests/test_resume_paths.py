"""Every training path resumes exactly: DataSink, TorchDataset under (Stateful)DataLoader, train().

A rank's rows do not depend on the number of DataLoader workers, and the workers' outputs, taken in
turn, are the pipeline's outputs in order.
"""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import recordio as rio
from numbered import write_numbered
from recordio.dataset import MindDataset, TorchDataset
from recordio.dataset.torch_adapter import merged_state
from recordio.keys import current_keys

N = 53                       # not a multiple of the batch size or of the ranks: short batches, padding


class Jitter:
    def __call__(self, vec):
        return vec + np.float32(current_keys().uniform(0)[0])


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_numbered(tmp_path_factory.mktemp("resume-paths") / "d.mindrecord", N, shard_num=2)


def pipeline(path, batch=4, **kw):
    return (MindDataset(path, columns_list=["id", "vec"], **kw)
            .map(Jitter(), input_columns="vec").batch(batch))


def plain(batches):
    return [(b["id"].tolist(), np.asarray(b["vec"]).round(6).tolist()) for b in batches]


def reference(path, epochs=1, **kw):
    it = pipeline(path, **kw).create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [b for _ in range(epochs) for b in plain(it)]


# --- DataSink ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("taken", [1, 5, 13])
def test_sink_resumes_after_the_last_batch_handed_out(path, taken):
    expected = reference(path, epochs=2)
    with rio.DataSink(pipeline(path), device="cpu", prefetch_depth=3) as sink:
        it = iter(sink)
        head = [next(it) for _ in range(taken)]          # the queues hold more than this
        state = sink.state_dict()
    assert plain(head) == expected[:taken]
    with rio.DataSink(pipeline(path), device="cpu") as sink:
        sink.load_state_dict(state)
        tail = []
        while len(head) + len(tail) < len(expected):
            tail.extend(sink)
    assert plain(head) + plain(tail)[:len(expected) - taken] == expected


def test_sink_state_before_the_first_batch_is_the_loaded_one(path):
    sink = rio.DataSink(pipeline(path), device="cpu")
    state = pipeline(path).state_dict()
    sink.load_state_dict(state)
    assert sink.state_dict()["epoch"] == state["epoch"]
    next(iter(sink))
    with pytest.raises(rio.PipelineError, match="after iteration started"):
        sink.load_state_dict(state)
    sink.close()


def test_sink_state_resumes_the_iterator_under_another_world_size(path):
    with rio.DataSink(pipeline(path, num_shards=2, shard_id=0, shuffle=False), device="cpu") as s0, \
            rio.DataSink(pipeline(path, num_shards=2, shard_id=1, shuffle=False), device="cpu") as s1:
        seen = []
        for _ in range(3):                                       # ranks in lockstep
            seen += next(iter(s0))["id"].tolist() + next(iter(s1))["id"].tolist()
        state = s0.state_dict()
    assert state == {**s1.state_dict(), "shards": state["shards"]} or \
        state["source"] == s1.state_dict()["source"]
    rest = MindDataset(path, columns_list=["id"], shuffle=False)
    rest.load_state_dict(state)
    later = [int(i) for b in rest.create_dict_iterator(num_epochs=state["epoch"] + 1, output_numpy=True)
             for i in np.atleast_1d(b["id"])]
    assert sorted(seen + later) == list(range(N))


# --- TorchDataset ----------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_deliver_the_pipeline_order(path, workers):
    loader = DataLoader(TorchDataset(pipeline(path)), batch_size=None, num_workers=workers)
    got = [(b["id"].tolist(), b["vec"].numpy().round(6).tolist()) for b in loader]
    assert got == reference(path)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_ranks_rows_do_not_depend_on_the_workers(path, rank):
    expected = reference(path, num_shards=2, shard_id=rank)
    for workers in (0, 2, 3):
        loader = DataLoader(TorchDataset(pipeline(path, num_shards=2, shard_id=rank)), batch_size=None,
                            num_workers=workers)
        assert [(b["id"].tolist(), b["vec"].numpy().round(6).tolist()) for b in loader] == expected


def test_a_filter_deals_rows_one_by_one_and_keeps_the_rank_set(path):
    def ds():
        return MindDataset(path, columns_list=["id"], num_shards=2, shard_id=1).filter(lambda i: i % 3 != 0)
    direct = sorted(int(r["id"]) for r in ds().create_dict_iterator(num_epochs=1, output_numpy=True))
    loader = DataLoader(TorchDataset(ds()), batch_size=None, num_workers=2)
    assert sorted(int(r["id"]) for r in loader) == direct


def _stateful(path, workers, **kw):
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    return tdl.StatefulDataLoader(TorchDataset(pipeline(path, **kw)), batch_size=None, num_workers=workers)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("taken", [1, 4, 7])
def test_stateful_dataloader_resumes_exactly(path, workers, taken):
    expected = reference(path)
    loader = _stateful(path, workers)
    it = iter(loader)
    head = [next(it) for _ in range(taken)]
    saved = loader.state_dict()
    del it
    again = _stateful(path, workers)
    again.load_state_dict(saved)
    tail = list(again)
    got = [(b["id"].tolist(), b["vec"].numpy().round(6).tolist()) for b in head + tail]
    assert got == expected


@pytest.mark.parametrize("workers,then", [(2, 3), (2, 0), (0, 2)])
def test_a_merged_state_resumes_with_other_workers_or_the_iterator(path, workers, then):
    expected = reference(path)
    loader = _stateful(path, workers)
    it = iter(loader)
    head = [next(it) for _ in range(5)]
    state = merged_state(loader.state_dict())
    del it
    adapter = TorchDataset(pipeline(path))
    adapter.load_state_dict(state)
    tail = list(DataLoader(adapter, batch_size=None, num_workers=then))
    got = [(b["id"].tolist(), b["vec"].numpy().round(6).tolist()) for b in head + tail]
    assert got == expected
    ds = pipeline(path)
    ds.load_state_dict(state)
    assert plain(ds.create_dict_iterator(num_epochs=1, output_numpy=True)) == expected[5:]


# --- train(checkpoint=...) ------------------------------------------------------------------------


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.drop = torch.nn.Dropout(0.2)             # uses torch's RNG: it is checkpointed too

    def forward(self, vec):
        return self.fc(self.drop(vec / 50.0))


def _train(path, ckpt, sink, epochs=2, stop_after=None, every=3):
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []

    class Record(rio.Callback):
        def on_train_step_end(self, run_context):
            losses.append(run_context.original_args().net_outputs)
            if stop_after is not None and len(losses) == stop_after:
                raise KeyboardInterrupt            # a preemption in the middle of an epoch

    ds = MindDataset(path, columns_list=["vec", "id"]).map(Jitter(), input_columns="vec") \
        .map(lambda i: i % 3, input_columns="id").batch(4)
    try:
        rio.train(model, torch.nn.CrossEntropyLoss(), optimizer, ds, epochs, dataset_sink_mode=sink,
                  sink_size=5 if sink else -1, callbacks=[Record()], device="cpu", columns=("vec", "id"),
                  checkpoint=ckpt, checkpoint_every=every)
    except KeyboardInterrupt:
        pass
    return losses


@pytest.mark.parametrize("stop_after", [4, 9, 16])
def test_train_resumes_from_its_checkpoint_step_for_step(path, tmp_path, stop_after):
    full = _train(path, tmp_path / "full.pt", sink=False)
    ckpt = tmp_path / "run.pt"
    first = _train(path, ckpt, sink=False, stop_after=stop_after)
    saved = torch.load(ckpt, weights_only=False)["cur_step_num"]
    assert saved == (stop_after - 1) // 3 * 3            # the last checkpoint before the stopped step
    rest = _train(path, ckpt, sink=False)
    assert first[:saved] + rest == full                  # the steps after the checkpoint run again, identically
    assert not list(tmp_path.glob("*.tmp-*"))


def test_train_in_sink_mode_resumes_from_its_checkpoint(path, tmp_path):
    full = _train(path, tmp_path / "full.pt", sink=True, epochs=3, every=2)
    ckpt = tmp_path / "run.pt"
    _train(path, ckpt, sink=True, epochs=3, every=2, stop_after=1)   # stops after sink epoch 1 (5 steps)
    saved = torch.load(ckpt, weights_only=False)
    assert saved["cur_step_num"] == 4 and saved["epoch"] == 1 and saved["epoch_step"] == 4
    model_full = torch.load(tmp_path / "full.pt", weights_only=False)
    rest = _train(path, ckpt, sink=True, epochs=3, every=2)
    assert len(rest) == 3 - 1 + 1           # sink epochs 1 (its last step), 2 and 3 report once each
    assert rest[-1] == full[-1]
    resumed = torch.load(ckpt, weights_only=False)
    for name, value in model_full["model"].items():
        assert torch.equal(value, resumed["model"][name]), name


def test_a_finished_checkpoint_trains_nothing_more(path, tmp_path):
    ckpt = tmp_path / "run.pt"
    _train(path, ckpt, sink=False, epochs=1)
    assert _train(path, ckpt, sink=False, epochs=1) == []


def test_unbatched_scalars_are_0d_in_torch_as_in_numpy():
    ds = rio.GeneratorDataset([(np.int64(i), 1.5) for i in range(3)], ["a", "b"], shuffle=False)
    as_torch = next(iter(ds.create_dict_iterator(num_epochs=1)))
    as_numpy = next(iter(ds.create_dict_iterator(num_epochs=1, output_numpy=True)))
    assert [tuple(v.shape) for v in as_torch.values()] == [v.shape for v in as_numpy.values()] == [(), ()]
