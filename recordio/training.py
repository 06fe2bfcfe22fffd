"""A small counterpart of MindSpore's ``Model.train``, and its callbacks.

::

    rio.train(model, torch.nn.CrossEntropyLoss(), optimizer, ds, epochs=10,
              dataset_sink_mode=True, sink_size=1000)
    # epoch: 1 step: 1000, loss is 0.11018506
    # ...

With ``dataset_sink_mode=True`` the batches come through a :class:`~recordio.DataSink`
and, as in MindSpore, callbacks see **one result per sink epoch**: ``on_train_step_begin``
/ ``on_train_step_end`` fire once per sink epoch, ``cur_step_num`` advances by the
epoch's step count and ``net_outputs`` is the loss of its last step. Without the sink
they fire once per step and ``sink_size`` is ignored.

Callback protocol (MindSpore's names; every method is optional, so any object works)::

    class MyCallback(recordio.Callback):     # or any object with some of these
        def on_train_begin(self, run_context): ...
        def on_train_epoch_begin(self, run_context): ...
        def on_train_step_begin(self, run_context): ...
        def on_train_step_end(self, run_context): ...
        def on_train_epoch_end(self, run_context): ...
        def on_train_end(self, run_context): ...

``run_context.original_args()`` returns the :class:`CallbackParams` (``cur_epoch_num``,
``cur_step_num``, ``batch_num``, ``net_outputs``, ``epoch_time_s``, ``data_wait_s``, ...);
``run_context.request_stop()`` ends training after the current epoch (sink mode) or step.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from recordio.extras import requires
from recordio.sink.datasink import DataSink
from recordio.sink.ring import torch_dtype

with requires("recordio.train"):
    import torch

__all__ = ["Callback", "CallbackParams", "LossMonitor", "RunContext", "TimeMonitor", "train"]

@dataclasses.dataclass
class CallbackParams:
    """What a callback can read (MindSpore's ``cb_params`` names where they exist)."""

    train_network: object
    loss_fn: object
    optimizer: object
    train_dataset: object
    epoch_num: int
    batch_num: int                 # steps per epoch (sink_size in sink mode)
    dataset_sink_mode: bool
    device: object
    cur_epoch_num: int = 0         # 1-based
    cur_step_num: int = 0          # steps run so far, over all epochs
    net_outputs: float | None = None      # the loss of the latest step
    step_time_s: float = 0.0       # seconds of the latest step (sink mode: mean over the sink epoch)
    epoch_time_s: float = 0.0      # seconds of the latest epoch
    data_wait_s: float = 0.0       # seconds of the latest epoch spent waiting for batches
    epoch_steps: int = 0           # steps run in the latest epoch


class RunContext:
    """Handed to every hook: ``original_args()`` and ``request_stop()``, as in MindSpore."""

    def __init__(self, params: CallbackParams) -> None:
        self._params = params
        self._stop = False

    def original_args(self) -> CallbackParams:
        """The :class:`CallbackParams` of the run (updated as it goes)."""
        return self._params

    def request_stop(self) -> None:
        """End training after the current epoch (sink mode) or step."""
        self._stop = True

    def get_stop_requested(self) -> bool:
        """Whether a callback asked to stop."""
        return self._stop


class Callback:
    """Base class with every hook a no-op; subclass and override what you need."""

    def on_train_begin(self, run_context: RunContext) -> None:
        """Once, before the first epoch."""

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        """Before each epoch."""

    def on_train_step_begin(self, run_context: RunContext) -> None:
        """Before each step (once per sink epoch in sink mode)."""

    def on_train_step_end(self, run_context: RunContext) -> None:
        """After each step (once per sink epoch in sink mode); ``net_outputs`` holds the loss."""

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        """After each epoch; ``epoch_time_s`` and ``data_wait_s`` hold its timings."""

    def on_train_end(self, run_context: RunContext) -> None:
        """Once, after the last epoch (or after a stop was requested)."""


class LossMonitor(Callback):
    """Print ``epoch: E step: S, loss is L`` every ``per_print_times`` steps; keep the losses.

    ``losses`` holds ``(epoch, step, loss)`` for every result seen. A NaN or infinite loss
    raises ``ValueError``, as MindSpore's LossMonitor does.
    """

    def __init__(self, per_print_times: int = 1, file: TextIO | None = None) -> None:
        if isinstance(per_print_times, bool) or not isinstance(per_print_times, int) or per_print_times < 0:
            raise ValueError(f"per_print_times must be an int >= 0, found {per_print_times!r}")
        self.per_print_times = per_print_times
        self.file = file
        self.losses: list[tuple[int, int, float | None]] = []
        self._last_print = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        p = run_context.original_args()
        step = (p.cur_step_num - 1) % max(p.batch_num, 1) + 1
        loss = p.net_outputs
        if loss is not None and not math.isfinite(loss):
            raise ValueError(f"epoch: {p.cur_epoch_num} step: {step}. Invalid loss {loss}, terminating training.")
        self.losses.append((p.cur_epoch_num, step, loss))
        if self.per_print_times and p.cur_step_num - self._last_print >= self.per_print_times:
            self._last_print = p.cur_step_num
            print(f"epoch: {p.cur_epoch_num} step: {step}, loss is {loss}", file=self.file or sys.stdout,
                  flush=True)


class TimeMonitor(Callback):
    """Print epoch time, per-step time and the share of time spent waiting for data.

    ``epochs`` holds one dict per epoch: ``epoch``, ``epoch_time_s``, ``step_time_s``,
    ``data_wait_fraction`` (time blocked waiting for a batch / epoch time).
    """

    def __init__(self, data_size: int | None = None, file: TextIO | None = None) -> None:
        self.data_size = data_size
        self.file = file
        self.epochs: list[dict] = []

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        p = run_context.original_args()
        steps = self.data_size or p.epoch_steps or 1
        record = {"epoch": p.cur_epoch_num, "epoch_time_s": p.epoch_time_s,
                  "step_time_s": p.epoch_time_s / steps,
                  "data_wait_fraction": p.data_wait_s / p.epoch_time_s if p.epoch_time_s else 0.0}
        self.epochs.append(record)
        print(f"epoch time: {1000 * p.epoch_time_s:5.3f} ms, per step time: {1000 * record['step_time_s']:5.3f} ms, "
              f"data wait: {record['data_wait_fraction']:.1%}", file=self.file or sys.stdout, flush=True)


def _hook(callbacks, name, run_context):
    for callback in callbacks:
        method = getattr(callback, name, None)
        if method is not None:
            method(run_context)


def _step(model, loss_fn, optimizer, batch, columns):
    """One optimisation step; returns the loss tensor (not synchronised)."""
    inputs = [batch[c] for c in columns[:-1]]
    target = batch[columns[-1]]
    if not target.is_floating_point() and target.dtype != torch.int64:
        target = target.long()      # torch's classification losses want int64 class indices
    optimizer.zero_grad()
    loss = loss_fn(model(*inputs), target)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _direct_batches(dataset, device, num_epochs, where):
    """The pipeline's batches moved to ``device`` in the loop, tail applied: no prefetch.
    ``where["position"]`` follows the pipeline state after the batch last yielded."""
    batches = dataset.iter_host_batches(num_epochs=num_epochs)
    tail, seed = batches.tail_module(device), batches.seed
    try:
        for host_batch in batches:
            columns = {name: value if torch_dtype(value) is None else torch.from_numpy(value).to(device)
                       for name, value in host_batch.columns.items()}
            where["position"] = host_batch.state
            yield columns if tail is None else tail(columns, host_batch.rows, host_batch.epoch, seed)
    finally:
        batches.close()


class _Checkpoint:
    """``train(checkpoint=...)``: model, optimizer, RNG, counters and pipeline position in one file,
    written atomically (a temporary file renamed over the old one) every ``every`` steps."""

    def __init__(self, path, every):
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise ValueError(f"checkpoint_every must be an int of at least 1 or None, found {every!r}")
        self.path, self.every = os.fspath(path), every

    def load(self, state):
        """Restore a saved run into ``state``; returns (epoch, steps done in it, pipeline position)."""
        if not os.path.exists(self.path):
            return 1, 0, None
        saved = torch.load(self.path, map_location="cpu", weights_only=False)
        state["model"].load_state_dict(saved["model"])
        state["optimizer"].load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["rng"])
        state["params"].cur_step_num = saved["cur_step_num"]
        return saved["epoch"], saved["epoch_step"], saved["pipeline"]

    def save(self, state, epoch, epoch_step, position, steps):
        obj = {"model": state["model"].state_dict(), "optimizer": state["optimizer"].state_dict(),
               "rng": torch.get_rng_state(), "cur_step_num": steps,
               "epoch": epoch, "epoch_step": epoch_step, "pipeline": position}
        tmp = f"{self.path}.tmp-{os.getpid()}"
        torch.save(obj, tmp)
        os.replace(tmp, self.path)


def _timed(batches):
    """Yield ``(batch, seconds waited for it)``."""
    batches = iter(batches)
    while True:
        t0 = time.perf_counter()
        batch = next(batches, None)
        if batch is None:
            return
        yield batch, time.perf_counter() - t0


def _run_epoch(state, batches, per_step, first_step=0):
    """Run one epoch's steps from ``first_step``; per-step hooks when ``per_step``. Returns (last
    loss, steps, wait)."""
    p, ctx, callbacks, checkpoint = state["params"], state["context"], state["callbacks"], state["checkpoint"]
    loss, steps, wait = None, 0, 0.0
    for batch, waited in _timed(batches):
        t0 = time.perf_counter()
        if per_step:
            _hook(callbacks, "on_train_step_begin", ctx)
        loss = _step(state["model"], state["loss_fn"], state["optimizer"], batch, state["columns"])
        steps, wait = steps + 1, wait + waited
        state["epoch_step"] = first_step + steps
        if per_step:
            p.cur_step_num += 1
            p.net_outputs = float(loss)
            p.step_time_s = time.perf_counter() - t0 + waited
            _hook(callbacks, "on_train_step_end", ctx)
        if checkpoint is not None:
            counted = p.cur_step_num if per_step else p.cur_step_num + steps
            if checkpoint.every and counted % checkpoint.every == 0:
                checkpoint.save(state, p.cur_epoch_num, first_step + steps, state["position"](), counted)
        if per_step and ctx.get_stop_requested():
            break
    return loss, steps, wait


def _epoch(state, epoch, batches, sink_mode, first_step=0):
    p, ctx, callbacks = state["params"], state["context"], state["callbacks"]
    p.cur_epoch_num = epoch
    _hook(callbacks, "on_train_epoch_begin", ctx)
    t0 = time.perf_counter()
    if sink_mode:
        _hook(callbacks, "on_train_step_begin", ctx)
    loss, steps, wait = _run_epoch(state, batches, not sink_mode, first_step)
    p.epoch_time_s, p.data_wait_s, p.epoch_steps = time.perf_counter() - t0, wait, steps
    if sink_mode:
        p.cur_step_num += steps
        p.net_outputs = None if loss is None else float(loss)
        p.step_time_s = p.epoch_time_s / max(steps, 1)
        _hook(callbacks, "on_train_step_end", ctx)
    _hook(callbacks, "on_train_epoch_end", ctx)


def _pick_device(device):
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def train(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor], optimizer: torch.optim.Optimizer,
          dataset: Any, epochs: int, dataset_sink_mode: bool = True, sink_size: int = -1,
          callbacks: Iterable[Any] | None = None, device: str | torch.device | None = None,
          columns: Sequence[str] = ("image", "label"), checkpoint: str | os.PathLike | None = None,
          checkpoint_every: int | None = None) -> None:
    """Train ``model`` on ``dataset`` for ``epochs`` epochs (MindSpore's ``Model.train``).

    ``columns``: the dataset columns fed to the model; the last is the target, the others
    are the model's positional inputs. ``device``: where to train (default: CUDA when
    available, else CPU). ``callbacks=None`` means ``[LossMonitor()]``. Integer targets
    are cast to int64 for torch's losses.

    ``checkpoint``: a file that holds the model, the optimizer, torch's RNG, the step counters and
    the pipeline's position, written atomically every ``checkpoint_every`` steps (and at the end).
    When the file exists, training resumes from it: the steps already run are not run again, and
    the next batches are the ones the interrupted run would have had (same augmentations), so the
    losses continue step for step.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an int of at least 1, found {epochs!r}")
    picked, device = device is None, _pick_device(device)
    if picked and str(device) == "cpu":             # an offloaded tail would run on the CPU unasked: say so
        dataset.offload_plan().warn_on_cpu(stacklevel=2)
    callbacks = [LossMonitor()] if callbacks is None else list(callbacks)
    model.to(device)
    model.train()
    sink = DataSink(dataset, device=device, sink_size=sink_size) if dataset_sink_mode else None
    batch_num = len(sink) if sink is not None else dataset.get_dataset_size()
    params = CallbackParams(model, loss_fn, optimizer, dataset, epochs, batch_num, dataset_sink_mode, device)
    context = RunContext(params)
    where: dict = {"position": None}
    saver = None if checkpoint is None else _Checkpoint(checkpoint, checkpoint_every)
    state: dict[str, Any] = {"model": model, "loss_fn": loss_fn, "optimizer": optimizer, "columns": tuple(columns),
             "params": params, "context": context, "callbacks": callbacks, "checkpoint": saver,
             "position": sink.state_dict if sink is not None else lambda: where["position"], "epoch_step": 0}
    first_epoch, done, position = (1, 0, None) if saver is None else saver.load(state)
    if position is not None:
        (sink if sink is not None else dataset).load_state_dict(position)
    stream = None if sink is not None else _direct_batches(dataset, device, None, where)
    try:
        _hook(callbacks, "on_train_begin", context)
        for epoch in range(first_epoch, epochs + 1):
            todo = batch_num - (done if epoch == first_epoch else 0)
            batches = itertools.islice(iter(sink) if sink is not None else (stream or ()), todo)
            _epoch(state, epoch, batches, sink is not None, batch_num - todo)
            if context.get_stop_requested():
                break
        if saver is not None and state["position"]() is not None:
            epoch, step = params.cur_epoch_num, state["epoch_step"]
            epoch, step = (epoch + 1, 0) if step >= batch_num else (epoch, step)
            saver.save(state, epoch, step, state["position"](), params.cur_step_num)
        _hook(callbacks, "on_train_end", context)
    finally:
        if sink is not None:
            sink.close()
        if stream is not None:
            stream.close()
