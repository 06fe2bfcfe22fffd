"""train(): a LeNet learns through the sink; callbacks see one result per sink epoch or per step."""

import threading

import numpy as np
import pytest
import torch
from torch import nn

import recordio as rio
from recordio import GeneratorDataset, vision
from recordio.training import Callback, LossMonitor, TimeMonitor

ROWS, BATCH, CLASSES = 128, 16, 4       # 8 batches per data epoch


def images():
    """Class k has a bright 8x8 square in quadrant k, over noise: learnable in a few steps."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(ROWS):
        label = i % CLASSES
        img = rng.integers(0, 60, (32, 32, 1), dtype=np.uint8)
        r, c = divmod(label, 2)
        img[4 + 16 * r:12 + 16 * r, 4 + 16 * c:12 + 16 * c] = 250
        rows.append((img, np.int32(label)))
    return rows


def pipeline():
    ds = GeneratorDataset(images(), ["image", "label"], shuffle=True)
    ds = ds.map([vision.Rescale(1 / 255, 0.0), vision.HWC2CHW()], input_columns=["image"], offload=True)
    return ds.batch(BATCH, drop_remainder=True)


class LeNet5(nn.Module):
    def __init__(self, num_class=CLASSES):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                                        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, num_class))

    def forward(self, x):
        return self.classifier(self.features(x))


class Recorder(Callback):
    def __init__(self):
        self.calls = []

    def _note(self, name, run_context):
        p = run_context.original_args()
        self.calls.append((name, p.cur_epoch_num, p.cur_step_num, p.batch_num))

    def on_train_begin(self, run_context):
        self._note("begin", run_context)

    def on_train_step_end(self, run_context):
        self._note("step_end", run_context)

    def on_train_epoch_end(self, run_context):
        self._note("epoch_end", run_context)

    def on_train_end(self, run_context):
        self._note("end", run_context)


def fit(epochs, callbacks, **kwargs):
    torch.manual_seed(0)
    model = LeNet5()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    rio.train(model, nn.CrossEntropyLoss(), optimizer, pipeline(), epochs, callbacks=callbacks, device="cpu",
              **kwargs)
    return model


def sink_threads():
    return [t for t in threading.enumerate() if t.name.startswith("recordio-sink")]


def test_lenet_loss_goes_down_with_the_sink():
    monitor = LossMonitor(per_print_times=0)
    fit(6, [monitor], dataset_sink_mode=True, sink_size=4)
    assert [(e, s) for e, s, _ in monitor.losses] == [(e, 4) for e in range(1, 7)]
    losses = [loss for _, _, loss in monitor.losses]
    assert losses[-1] < 0.1 * losses[0], losses
    assert sink_threads() == []


@pytest.mark.parametrize("sink_size, steps", [(3, 3), (-1, ROWS // BATCH)])
def test_sink_mode_reports_once_per_sink_epoch(sink_size, steps):
    recorder = Recorder()
    fit(3, [recorder], dataset_sink_mode=True, sink_size=sink_size)
    assert recorder.calls == [("begin", 0, 0, steps),
                              ("step_end", 1, steps, steps), ("epoch_end", 1, steps, steps),
                              ("step_end", 2, 2 * steps, steps), ("epoch_end", 2, 2 * steps, steps),
                              ("step_end", 3, 3 * steps, steps), ("epoch_end", 3, 3 * steps, steps),
                              ("end", 3, 3 * steps, steps)]


def test_without_the_sink_every_step_reports_and_sink_size_is_ignored():
    recorder = Recorder()
    fit(2, [recorder], dataset_sink_mode=False, sink_size=3)
    steps = [c for c in recorder.calls if c[0] == "step_end"]
    assert [(e, s) for _, e, s, _ in steps] == [(1 + k // 8, k + 1) for k in range(16)]
    assert {c[3] for c in recorder.calls} == {ROWS // BATCH}


def test_the_default_callback_prints_mindspore_lines(capsys):
    fit(2, None, dataset_sink_mode=True, sink_size=5)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(", loss is ")[0] for line in lines] == ["epoch: 1 step: 5", "epoch: 2 step: 5"]
    assert all(float(line.split("loss is ")[1]) > 0 for line in lines)


def test_time_monitor_reports_the_data_wait_share(capsys):
    monitor = TimeMonitor()
    fit(2, [monitor], dataset_sink_mode=True, sink_size=4)
    assert [r["epoch"] for r in monitor.epochs] == [1, 2]
    assert all(0.0 <= r["data_wait_fraction"] <= 1.0 and r["step_time_s"] > 0 for r in monitor.epochs)
    assert "data wait:" in capsys.readouterr().out


class StopAfterFirstEpoch(Callback):
    def on_train_epoch_end(self, run_context):
        run_context.request_stop()


def test_request_stop_ends_training():
    recorder = Recorder()
    fit(5, [StopAfterFirstEpoch(), recorder], sink_size=2)
    assert [c[0] for c in recorder.calls] == ["begin", "step_end", "epoch_end", "end"]


def test_a_failing_step_closes_the_sink():
    def bad_loss(out, target):
        raise ArithmeticError("no loss today")

    model = LeNet5()
    with pytest.raises(ArithmeticError):
        rio.train(model, bad_loss, torch.optim.SGD(model.parameters(), lr=0.1), pipeline(), 2, device="cpu")
    assert sink_threads() == []


def test_an_invalid_loss_stops_training():
    monitor = LossMonitor(per_print_times=0)

    def nan_loss(out, target):
        return (out * float("nan")).sum()

    model = LeNet5()
    with pytest.raises(ValueError, match="Invalid loss"):
        rio.train(model, nan_loss, torch.optim.SGD(model.parameters(), lr=0.1), pipeline(), 2,
                  callbacks=[monitor], device="cpu", sink_size=2)


def test_train_is_the_function_after_importing_its_module():
    import recordio.training  # noqa: F401
    assert rio.train is recordio.training.train


@pytest.mark.parametrize("epochs", [0, -1, 1.5, True])
def test_bad_epochs_are_refused(epochs):
    model = LeNet5()
    with pytest.raises(ValueError, match="epochs"):
        rio.train(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1), pipeline(), epochs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="train() picks CUDA when there is one")
def test_train_without_a_device_on_a_cpu_machine_warns_that_the_offloaded_tail_runs_there(fresh_slow_warnings):
    """train() on a machine without a GPU picks the CPU; an offloaded tail then runs there unasked (many times
    slower than in the map): the one-time slow-path warning points at the train() call. device='cpu' is asked."""
    import warnings

    def run(**kw):
        torch.manual_seed(0)
        model = LeNet5()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rio.train(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters()), pipeline(), 1,
                      callbacks=[], sink_size=2, **kw)
        return [w for w in seen if "slower path" in str(w.message)]

    assert run(device="cpu") == []
    (warned,) = run()
    assert warned.filename == __file__ and "Rescale, HWC2CHW" in str(warned.message)
    assert "train(..., device='cuda')" in str(warned.message)
