"""``map``: apply operations to one or several columns of every row.

Operations are recordio ops or any Python callables; they receive the input columns' values as
numpy (``op(*values)``) and return one value or a tuple. Op ``j`` of the map runs under the keys
``row_scope(seed, epoch, row)`` and ``op_scope(derive_uid(map uid, j))``: a random op calls
:func:`recordio.keys.current_keys` and gets the same draws whatever the workers or batch size.
"""

import collections
import copy
import functools
import time

import numpy as np

from recordio import config
from recordio.dataset.callback import DSCallback
from recordio.dataset.map_rows import Numbered, note_failure, run_chunk
from recordio.dataset.node import Dataset, Item, operation
from recordio.dataset.values import collate, to_op_input
from recordio.dataset.workers import SerialRunner, effective_workers
from recordio.errors import PipelineError

__all__ = ["MapDataset"]


def _columns_arg(name, value):
    if value is None:
        return None
    cols = [value] if isinstance(value, str) else list(value)
    if not cols or not all(isinstance(c, str) for c in cols):
        raise ValueError(f"map: {name} must be a column name or a non-empty list of them, got {value!r}")
    return cols


@operation
class MapDataset(Dataset):
    """One ``map``. With worker threads, its operations run where they pay: rows run in the pipeline's
    own thread, timed a chunk at a time (the first of :data:`PROBE_ROWS` rows), as long as the
    operations cost less than :data:`INLINE_BELOW_S` a row (``TypeCast``, ``Rescale``, small Python
    callables: handing rows to a worker thread costs more than they do); from the
    :data:`COSTLY_CHUNKS`-th chunk in a row that costs more (one is not enough: a first call may pay
    a warm-up; two are not either on a loaded machine, where one hiccup outlasts a cheap chunk), the
    rows go to the ``num_parallel_workers`` threads in small chunks, and the later epochs of the run
    start there (at most one worker per CPU:
    :func:`~recordio.dataset.workers.effective_workers`). Ops that declare ``costly = True`` (the image
    decodes: any image costs more than a hand-off) go to the workers from the first row. Values are the
    same either way (the keys of a row do not depend on where it runs). ``python_multiprocessing=True``
    always runs them in the worker processes (asked for isolation, not only speed)."""

    CHUNK_THREADS = 4
    CHUNK_PROCESSES = 16
    CHUNK_INLINE = 64
    PROBE_ROWS = 4
    INLINE_BELOW_S = 20e-6
    COSTLY_CHUNKS = 3

    def __init__(self, child, operations, input_columns, output_columns, num_parallel_workers,
                 python_multiprocessing, offload, callbacks=None):
        super().__init__([child])
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops or not all(callable(op) for op in ops):
            raise TypeError(f"map: operations must be a callable or a list of callables, got {operations!r}")
        self.operations = ops
        self.input_columns = _columns_arg("input_columns", input_columns)
        self.output_columns = _columns_arg("output_columns", output_columns)
        self.num_parallel_workers = num_parallel_workers
        self.python_multiprocessing = bool(python_multiprocessing)
        if offload not in (None, True, False):
            raise TypeError(f"map: offload must be None, True or False, got {offload!r}")
        self.offload = offload
        callbacks = [] if callbacks is None else callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]
        if not all(isinstance(cb, DSCallback) for cb in callbacks):
            raise TypeError(f"map: callbacks must be DSCallback objects, got {callbacks!r}")
        self.callbacks = list(callbacks)
        self._columns()                  # output names that clash fail here, not mid-iteration

    def _check_inputs(self):
        """Input columns the pipeline lacks fail when it is iterated (or sized), as in MindSpore, which
        builds such a map and fails only when it runs."""
        names = self.children[0]._columns()
        missing = [c for c in (self.input_columns or []) if c not in names]
        if missing:
            raise PipelineError(f"map: input column(s) {missing} not in the pipeline's columns {names}")

    def _block_rows(self):
        return self.children[0]._block_rows()

    def _map_spec(self, uid):
        from recordio.offload.plan import MapSpec
        return MapSpec(uid, list(self.operations), self.input_columns, self.output_columns, self.offload)

    def _io(self, spec=None):
        spec = spec or self
        ins = spec.input_columns or self.children[0]._columns()[:1]
        return ins, spec.output_columns or ins

    def _columns(self):
        ins, outs = self._io()
        return merge_names(self.children[0]._columns(), ins, outs)

    def _epoch_rows(self, ctx, epoch):
        """The child's rows in bulk with this map applied, where its host ops are elementwise (``TypeCast``:
        an op of a stack of rows is the stack of the op of each) and replace one column in place: a
        ``batch`` right after then applies them to its columns, once a batch (see :class:`ColumnMap`)."""
        if self.callbacks or self.python_multiprocessing:
            return None
        spec = ctx.host_map(self)
        ins, outs = self._io(spec)
        if (not spec.operations or len(ins) != 1 or outs != ins
                or not all(getattr(op, "elementwise", False) is True for op in spec.operations)):
            return None
        bulk = self.children[0]._epoch_rows(ctx, epoch)
        if bulk is None:
            return None
        column_map = ColumnMap(spec.operations, spec.uid, ins[0], epoch)
        mapped = copy.copy(bulk)
        mapped.rows = column_map.rows(bulk.rows, bulk.row_ids())
        if bulk.read_columns is not None:
            mapped.read_columns = column_map.columns(bulk.read_columns)
        return mapped

    def _items(self, ctx, epoch):
        spec = ctx.host_map(self)
        ins, outs = self._io(spec)
        if not spec.operations:
            yield from self._renamed(ctx, epoch, ins, outs)
            return
        workers = effective_workers(self.num_parallel_workers or config.get_num_parallel_workers(),
                                    self.num_parallel_workers is not None, f"map #{spec.uid}")
        pooled = workers > 1 or self.python_multiprocessing
        # processes are asked for isolation; an earlier epoch's decision to use the workers stands; ops that
        # declare ``costly = True`` (image decodes) always pay a hand-off: no rows run alone to time them
        probing = (workers > 1 and not self.python_multiprocessing and not ctx.has_runner(self)
                   and not any(getattr(op, "costly", False) is True for op in spec.operations))
        chunk = self.CHUNK_PROCESSES if self.python_multiprocessing else self.CHUNK_THREADS
        # a batch of a fixed size follows: ops may write into its blocks (threads only: a process's
        # arrays are sent back as copies)
        slots = None if self.python_multiprocessing else ctx.batch_slots(self)
        fn = functools.partial(run_chunk, spec.operations, spec.uid, ctx.seed, slots=slots)
        sent = collections.deque()
        hooks = ctx.map_hooks(self) if self.callbacks else None
        if hooks is not None:
            hooks.epoch_begin()
        size = [self.PROBE_ROWS if probing else chunk if pooled else self.CHUNK_INLINE]   # rows of the next chunk
        source = self._chunks(ctx, epoch, ins, size, sent, hooks)
        try:
            runner = SerialRunner(fn)
            if pooled and not probing:
                runner = ctx.runner(self, fn, workers, self.python_multiprocessing, 2 * workers)
            elif probing:
                costly = 0
                for inputs in source:               # inline while the ops stay cheap
                    start = time.perf_counter()
                    results = fn(inputs)
                    cheap = (time.perf_counter() - start) / len(inputs) < self.INLINE_BELOW_S
                    costly = 0 if cheap else costly + 1
                    yield from self._merged(results, sent, ins, outs, spec.uid, hooks)
                    if costly == self.COSTLY_CHUNKS:   # costly chunks in a row (not a warm-up, not a hiccup):
                        # worth a hand-off to the workers from here on
                        size[0] = chunk
                        runner = ctx.runner(self, fn, workers, self.python_multiprocessing, 2 * workers)
                        break
                    if cheap:
                        size[0] = min(2 * size[0], self.CHUNK_INLINE)
            for results in runner.imap(source):
                yield from self._merged(results, sent, ins, outs, spec.uid, hooks)
        except Exception as e:
            if f"recordio: in map #{spec.uid}," in "".join(getattr(e, "__notes__", ())):   # one of its ops failed
                e.add_note(f"recordio: map #{spec.uid} was given column(s) {ins} of that row")
            raise
        if hooks is not None:
            hooks.epoch_end()

    def _chunks(self, ctx, epoch, ins, size, sent, hooks):
        """Chunks of ``size[0]`` rows of the child (read at each chunk): the ops' inputs, in order; each
        chunk's items go to ``sent`` for :meth:`_merged`."""
        group, start = [], 0
        for item in self.children[0]._items(ctx, epoch):
            if hooks is not None:
                hooks.step_begin()
            group.append(item)
            if len(group) >= size[0]:
                sent.append(group)
                yield _inputs(group, ins, start)
                group, start = [], start + len(group)
        if group:
            sent.append(group)
            yield _inputs(group, ins, start)

    @staticmethod
    def _merged(results, sent, ins, outs, uid, hooks):
        in_place = list(ins) == list(outs)
        if in_place and len(outs) == 1 and hooks is None:
            # one column replaced in place (TypeCast per column: NLP scripts' maps): merge_values's
            # result, without its call and checks a row
            name = outs[0]
            for item, values in zip(sent.popleft(), results):
                if len(values) != 1:
                    merge_values(item.cols, ins, outs, values, uid, item.row, True)     # raises
                cols = item.cols.copy()
                cols[name] = values[0]
                yield Item(cols, item.row, item.epoch, item.pos)
            return
        for item, values in zip(sent.popleft(), results):
            out = Item(merge_values(item.cols, ins, outs, values, uid, item.row, in_place), item.row, item.epoch,
                       item.pos)
            if hooks is not None:
                hooks.step_end()
            yield out

    def _renamed(self, ctx, epoch, ins, outs):
        for item in self.children[0]._items(ctx, epoch):
            values = tuple(item.cols[c] for c in ins)
            yield Item(merge_values(item.cols, ins, outs, values, -1, item.row), item.row, item.epoch,
                       item.pos)


class ColumnMap:
    """Elementwise ops (``op.elementwise is True``: keyless, and ``op(stack of rows) == stack of op(row)``
    for numeric arrays) of one in-place column, applied to a source's rows in bulk.

    :meth:`columns` applies them to a batch's column: to a numeric array at once (rows of one shape,
    as ``batch`` stacks them), to each value of a list (rows that do not stack, bytes, strings) and
    then collated as ``batch`` collates the rows' values. Either way the batch equals the one built from
    the mapped rows; an op's error names the row as the row path does.
    """

    def __init__(self, ops, uid, name, epoch):
        self.ops, self.uid, self.name, self.epoch = list(ops), uid, name, epoch

    def _one(self, value, row):
        values = (to_op_input(value),)
        for j, op in enumerate(self.ops):
            try:
                out = op(*values)
            except Exception as e:
                note_failure(e, self.uid, j, op, row, self.epoch)
                e.add_note(f"recordio: map #{self.uid} was given column(s) {[self.name]} of that row")
                raise
            values = out if isinstance(out, tuple) else (out,)
        if len(values) != 1:
            merge_values({}, [self.name], [self.name], values, self.uid, row, True)     # raises
        return values[0]

    def rows(self, rows, row_ids):
        """The rows (column dicts) with the column mapped."""
        name = self.name
        for cols, row in zip(rows, row_ids):
            cols = dict(cols)
            cols[name] = self._one(cols[name], row)
            yield cols

    def columns(self, read_columns):
        """``read_columns`` (row ids -> a batch's columns) with the column mapped."""
        name = self.name

        def read(ids):
            cols = read_columns(ids)
            value = cols[name]
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.ndim >= 1:
                out = value
                for op in self.ops:
                    out = op(out)
                cols[name] = out
            else:
                cols[name] = collate([self._one(v, row) for v, row in zip(value, ids.tolist())])
            return cols
        return read


def _inputs(group, ins, start=0):
    """The ops' inputs of each item of ``group``: ``(input values, row, epoch)``; the map's ``start``-th
    row of the epoch first."""
    if len(ins) == 1:
        name = ins[0]
        chunk = Numbered([((to_op_input(it.cols[name]),), it.row, it.epoch) for it in group])
    else:
        chunk = Numbered([(tuple([to_op_input(it.cols[c]) for c in ins]), it.row, it.epoch) for it in group])
    chunk.start = start
    return chunk


def merge_names(names, ins, outs, op="map"):
    """Column order after a map (MindSpore's): as many outputs as inputs take the inputs' places,
    one for one; otherwise the outputs come first, then the columns the map did not consume.

    An output named like a column the map does not consume is refused (MindSpore keeps the old
    column and silently drops the output).
    """
    kept = [name for name in names if name not in ins]
    clash = [name for name in outs if name in kept]
    if clash or len(set(outs)) != len(outs):
        what = f"{clash} already exist" if clash else "repeat a name"
        raise PipelineError(f"{op}: output_columns {outs} {what}: the pipeline's columns are {names} and "
                            f"input_columns {ins} replaces only those; rename or project first")
    if len(ins) == len(outs):
        renamed = dict(zip(ins, outs))
        return [renamed.get(name, name) for name in names]
    return list(outs) + kept


def merge_values(cols, ins, outs, values, uid, row, in_place=None):
    """A row's columns after a map, in :func:`merge_names` order (``in_place``: whether ``outs`` are
    ``ins``, when the caller knows)."""
    if len(values) != len(outs):
        raise PipelineError(f"map #{uid}: the operations returned {len(values)} value(s) for row {row}, "
                            f"expected {len(outs)} (output_columns={outs})")
    if in_place is None:
        in_place = list(ins) == list(outs)
    if in_place:
        new = cols.copy()                # values replaced in place: the order stays
        for name, value in zip(outs, values):
            new[name] = value
        return new
    new = dict(zip(outs, values))
    if len(ins) == len(outs):
        renamed = dict(zip(ins, outs))
        return {renamed.get(name, name): new[renamed[name]] if name in renamed else value
                for name, value in cols.items()}
    for name, value in cols.items():
        if name not in ins:
            new[name] = value
    return new
