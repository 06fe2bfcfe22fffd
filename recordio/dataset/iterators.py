"""Iterating a pipeline: a producer thread runs it into a bounded queue; iterators convert.

The producer starts on the first ``next`` (not when the iterator is made), runs the pipeline's
epochs into a queue of ``config.get_prefetch_size()`` outputs and stops when the consumer closes
the iterator, breaks out of a loop and drops it (garbage collection), or the interpreter exits.
Errors raised in the pipeline reach the consumer as the same exception. A consumer that does next
to nothing between outputs gets them from the pipeline run in its own thread instead, until its
own work between outputs grows (:class:`~recordio.dataset.producer.PipelineProducer`: a thread only
where it overlaps something).
"""

import atexit
import functools
import itertools
import typing
import weakref

import numpy as np

from recordio import config
from recordio.dataset.context import RunContext, build_plan
from recordio.dataset.order.shuffle import order_version
from recordio.dataset.producer import PipelineProducer
from recordio.dataset.resume import initial_state
from recordio.dataset.values import collate, to_numpy, to_torch
from recordio.errors import PipelineError
from recordio.extras import requires

__all__ = ["DictIterator", "HostBatch", "ItemStream", "TupleIterator", "HostBatches"]

_LIVE: "weakref.WeakSet[ItemStream]" = weakref.WeakSet()


class HostBatch(typing.NamedTuple):
    """A pipeline output before the offloaded tail: numpy columns (or lists), row ids, epoch, and
    the pipeline state after it (what ``load_state_dict`` resumes from to continue after it)."""

    columns: dict
    rows: np.ndarray
    epoch: int
    state: dict | None = None


def _check_init_step(root, track, num_epochs):
    """MindSpore's refusal of a ``set_init_step`` step at or past the end of the iterator's epochs;
    whether this iterator starts at such a step."""
    step = root.__dict__.pop("_init_check", None) if track else None
    if step is not None and num_epochs is not None and step[0] >= step[1] * num_epochs:
        raise PipelineError(f"Cannot reset the pipeline, reset step must be less than dataset_size * num_epochs. "
                            f"step: {step[0]}, dataset_size: {step[1]}, num_epochs: {num_epochs}")
    return step is not None


class ItemStream:
    """Items of ``num_epochs`` epochs (``None``/-1: endless); ``StopIteration`` ends each epoch."""

    def __init__(self, root, num_epochs=1, shards=None, world=None, first_epoch=None, track=True, block=1,
                 inline=False, adaptive=True):
        """``track=False``: an internal pass (sizes, shapes, save) that neither takes a loaded state
        nor becomes the pipeline's ``state_dict()``; ``inline=True``: run the pipeline in the
        consumer's thread, never in a producer thread; ``adaptive``: a producer thread only while
        the consumer works between outputs (:class:`~recordio.dataset.producer.PipelineProducer`)."""
        plan = build_plan(root)
        state = (track and root._pending_state) or initial_state(config.get_seed())
        if track:
            root._pending_state = None
        if first_epoch is not None:
            state = initial_state(state["seed"]) if state["epoch"] != first_epoch else state
            state["epoch"] = first_epoch
        self.plan, self.seed = plan, state["seed"]
        self.epoch, self.delivered, self.source = state["epoch"], state["delivered"], state["source"]
        ctx = RunContext(plan, self.seed, shards, None, world, block)
        self.shards = _splits(root, ctx)
        skip = self.delivered
        if self.source is not None and root._positional():
            ctx.resume, skip = (self.source["epoch"], self.source["consumed"]), 0
            ctx.same_split = state.get("shards") == self.shards
        elif skip and state.get("shards") not in (None, self.shards):
            raise PipelineError(f"this pipeline resumes by replaying its epoch, which needs the same shards "
                                f"(saved under {state.get('shards')}, now {self.shards})")
        last = None if num_epochs in (None, -1) else num_epochs
        ctx.fast_restart = _check_init_step(root, track, last) and config.get_fast_recovery()
        epochs = itertools.count(self.epoch) if last is None else range(self.epoch, last)
        adaptive = adaptive and not any(node._thread_bound for node in root._nodes())
        self._producer = PipelineProducer(root, ctx, epochs, skip, config.get_prefetch_size(), inline=inline,
                                   adaptive=adaptive, start_inline=track and getattr(root, "_ran_inline", False))
        self._pending = None
        self._started = False
        self._finished = False
        if track:
            root._state = weakref.WeakMethod(self.state_dict)
        self._root = weakref.ref(root) if track else lambda: None
        _LIVE.add(self)

    def _get(self, block=True):
        if self._pending is not None:
            msg, self._pending = self._pending, None
            return msg
        self._started = True
        return self._producer.next(block)

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        kind, epoch, payload = self._get()
        if kind == "item":
            self.delivered += 1
            pos = payload.pos
            self.source = None if pos is None else {"epoch": pos[0], "consumed": pos[1]}
            return payload
        if kind == "end":
            self.epoch, self.delivered, self.source = epoch + 1, 0, None
            self._remember_mode()
            raise StopIteration
        self.close()
        if kind == "error":
            raise payload
        raise StopIteration

    def position(self):
        """The state after the last output delivered, as it stands (no look at what comes next)."""
        return {"version": 1, "order": order_version(), "seed": self.seed, "epoch": self.epoch,
                "delivered": self.delivered, "source": self.source, "shards": self.shards}

    def state_dict(self):
        """The state after the last output delivered (an epoch that is over counts as over)."""
        if self._pending is None and self._started and not self._finished:
            self._pending = self._get(block=False)
        epoch, delivered, source = self.epoch, self.delivered, self.source
        if self._pending is not None and self._pending[0] == "end":
            epoch, delivered, source = self._pending[1] + 1, 0, None
        return {"version": 1, "order": order_version(), "seed": self.seed, "epoch": epoch, "delivered": delivered,
                "source": source, "shards": self.shards}

    def close(self):
        if not self._finished:
            root = self._root()
            if root is not None:
                root._final_state = self.state_dict()
            self._remember_mode()
        self._finished = True
        self._producer.close()

    def _remember_mode(self):
        """Where the next iterator of this pipeline starts: in the thread this one ended in."""
        root = self._root()
        if root is not None and self._producer.adaptive:
            root._ran_inline = self._producer.inline

    def __del__(self):
        try:
            self._producer.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _splits(root, ctx):
    """``[num_shards, shard_id]`` of each source of the pipeline, as this run splits them."""
    splits = (node._shard_split(ctx) for node in root._nodes())
    return [list(split) for split in splits if split is not None]


class Tail:
    """The offloaded ops, applied by the iterator (on cpu or on ``device``; None: on the CPU, with a
    one-time slow-path warning, since the user gave no device to run them on)."""

    def __init__(self, plan, device, seed):
        from recordio.offload.tail import build_tail
        self.module = build_tail(plan.offload)
        self.columns = set(plan.offload.tail)
        self.device = device or "cpu"
        self.seed = seed
        if device is None:
            plan.offload.warn_on_cpu(stacklevel=4)              # the caller of create_dict_iterator

    def __call__(self, item):
        with requires("the offloaded ops (map(..., offload=True))"):
            import torch
        batched = isinstance(item.row, np.ndarray)
        cols = dict(item.cols)
        tensors = {}
        for name in self.columns & set(cols):
            value = cols[name] if batched else collate([to_numpy(cols[name])])
            tensors[name] = to_torch(value).to(self.device)
        rows = torch.as_tensor(item.rows)
        out = self.module(tensors, rows, int(item.epoch), self.seed)
        for name, value in out.items():
            cols[name] = value if batched else value[0]
        return cols


def convert_value(value, output_numpy, device=None):
    """A pipeline value as the iterator gives it (SPEC §2)."""
    if output_numpy:
        if hasattr(value, "detach"):
            return value.detach().cpu().numpy()
        return to_numpy(value)
    if hasattr(value, "detach"):
        return value
    out = to_torch(value)
    if device is not None and hasattr(out, "to"):
        out = out.to(device)
    return out


def convert_columns(cols, output_numpy, device=None):
    return {name: convert_value(value, output_numpy, device) for name, value in cols.items()}


class _OutputIterator:
    def __init__(self, root, num_epochs, output_numpy, device, columns=None, track=True):
        self._stream = ItemStream(root, num_epochs, track=track)
        self._numpy = output_numpy
        self._device = device
        self._columns = list(columns) if columns is not None else root.get_col_names()
        self._tail = Tail(self._stream.plan, device, self._stream.seed) if self._stream.plan.offload.tail \
            else None
        self._ready = self._tail is None and device is None
        if self._ready:            # convert in the producer thread: the consumer only dequeues
            self._stream._producer.finish = functools.partial(convert_columns, output_numpy=output_numpy)

    def _convert_all(self, cols):
        return convert_columns(cols, self._numpy, self._device)

    def __iter__(self):
        return self

    def _next_cols(self):
        item = next(self._stream)
        if self._ready:
            return item.cols
        return self._convert_all(self._tail(item) if self._tail is not None else item.cols)

    def state_dict(self):
        return self._stream.state_dict()

    def close(self):
        self._stream.close()

    def stop(self):
        self.close()


class DictIterator(_OutputIterator):
    """Dicts whose keys come in ``get_col_names()`` order."""

    def __next__(self):
        cols = self._next_cols()
        if list(cols) != self._columns:
            cols = {n: cols[n] for n in self._columns}
        return cols


class TupleIterator(_OutputIterator):
    """Lists of values at the positions of ``get_col_names()`` (or of ``columns``)."""

    def __next__(self):
        cols = self._next_cols()
        return [cols[n] for n in self._columns]


class HostBatches:
    """The pipeline output after ``batch``, offloaded tail not applied: an iterator of
    :class:`HostBatch` that carries what its consumer (the sink, ``train()``) needs with it: the
    pipeline's ``plan``, the ``seed`` of the state it started from, and :meth:`tail_module`."""

    def __init__(self, root, num_epochs=1):
        self._stream = ItemStream(root, num_epochs)
        self.plan, self.seed = self._stream.plan, self._stream.seed
        self._batches = self._generate()

    def tail_module(self, device):
        """The offloaded tail as a module on ``device``, or None when nothing is offloaded."""
        if not self.plan.offload.tail:
            return None
        from recordio.offload.tail import build_tail
        module = build_tail(self.plan.offload)
        return module.to(device) if hasattr(module, "to") else module

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def _generate(self):
        stream = self._stream
        while True:
            try:
                item = next(stream)
            except StopIteration:
                if stream._finished:
                    return
                continue
            batched = isinstance(item.row, np.ndarray)
            cols = {n: (v if batched and isinstance(v, np.ndarray) else
                        to_numpy(v) if batched else collate([to_numpy(v)]))
                    for n, v in item.cols.items()}
            yield HostBatch(cols, item.rows, int(item.epoch), stream.position())

    def close(self):
        self._batches.close()
        self._stream.close()


@atexit.register
def _close_all():
    for stream in list(_LIVE):
        stream.close()
