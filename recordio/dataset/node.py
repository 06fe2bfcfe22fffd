"""The pipeline node: what every dataset (source or operation) is.

A node knows its children, its column names and its size, and produces :class:`Item` objects
for one epoch with ``_items(ctx, epoch)``. ``epoch`` is the epoch this node is asked for: the
iterator's epoch at the root, the data epoch below a ``repeat``. The builder methods (``map``,
``batch``, ...) each return a new node that consumes this one. A node consumed by two nodes makes
the pipeline "not a tree" and is refused when iterated, as in MindSpore.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recordio.dataset.more_builders import MoreBuilders
from recordio.errors import PipelineError

if TYPE_CHECKING:
    from recordio.dataset.iterators import DictIterator, TupleIterator
    from recordio.offload.plan import OffloadPlan

__all__ = ["Dataset", "Item", "NOT_A_TREE"]

NOT_A_TREE = "The data pipeline is not a tree (i.e., one node has 2 consumers)"


class Item:
    """One row (``row`` an int) or one batch (``row`` an int64 array) flowing down the pipeline.

    ``pos`` is the resume point after this item: ``(data epoch, rows of the epoch consumed across
    all shards)``, or ``None`` where the pipeline cannot tell (zip, concat).
    """

    __slots__ = ("cols", "row", "epoch", "pos")

    def __init__(self, cols, row, epoch, pos):
        self.cols = cols
        self.row = row
        self.epoch = epoch
        self.pos = pos

    @property
    def rows(self):
        return np.atleast_1d(np.asarray(self.row, dtype=np.int64))


def _unsupported(call, **given):
    names = [name for name, value in given.items() if value is not None]
    if names:
        raise NotImplementedError(f"{call}: {', '.join(names)} is not supported by recordio")


def _chained(current, new):
    """``new`` with ``current`` as its child, after MindSpore's checks, in its order and wording."""
    from recordio.dataset.order import Shuffle
    if current is not None and current.get_shuffle_mode() == Shuffle.PARTIAL:
        raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the current sampler "
                           "must not be Shuffle.PARTIAL.")
    if new.get_shuffle_mode() not in (Shuffle.GLOBAL, Shuffle.FALSE):
        raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the input sampler "
                           f"must be Shuffle.FALSE or Shuffle.GLOBAL, but got: {new.get_shuffle_mode()}.")
    new.add_child(current)
    return new


class Dataset(MoreBuilders):
    """Base of every pipeline node; the builder methods mirror ``mindspore.dataset.Dataset`` (more of
    them in :class:`~recordio.dataset.more_builders.MoreBuilders`)."""

    #: the node runs user code that may hold thread-bound resources (a generator source): the
    #: iterator then keeps the whole pipeline in one thread (no switch to the consumer's thread)
    _thread_bound = False

    def __init__(self, children=()):
        self.children = list(children)
        self._consumers = weakref.WeakSet()
        self._state = None
        self._pending_state = None
        self._final_state = None
        self._ran_inline = False            # the last iterator ended running the pipeline inline
        for child in self.children:
            child._consumers.add(self)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_consumers"] = state["_state"] = None       # weak references: rebuilt, not copied
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._consumers = weakref.WeakSet()
        for child in self.children:
            child._consumers.add(self)

    # -- what subclasses provide -------------------------------------------------------------
    def _items(self, ctx, epoch):
        raise NotImplementedError

    def _epoch_rows(self, ctx, epoch):
        """The rows of an epoch in bulk (a ``source.EpochRows``) where a source can give them
        without an :class:`Item` per row, else None."""
        return None

    def _columns(self):
        return self.children[0]._columns()

    def _size(self, ctx):
        """Outputs per epoch, or ``None`` when only iterating can tell."""
        return self.children[0]._size(ctx)

    def _positional(self):
        """True when resume can restart the source at a position (no buffering, one source)."""
        return all(c._positional() for c in self.children)

    def _block_rows(self):
        """Source rows behind each output, when every output is made of a fixed number of them (a
        row-for-row chain, then ``batch``); None otherwise. DataLoader workers deal blocks of it."""
        return None

    def _map_spec(self, uid):
        """A map's ``recordio.offload.plan.MapSpec`` under ``uid``; None for other nodes."""
        return None

    def _mixes_sources(self):
        """True for nodes that interleave several sources (zip, concat): no offload below them."""
        return False

    def _shard_split(self, ctx):
        """``(num_shards, shard_id)`` of a sampled source in this run; None for other nodes."""
        return None

    # -- the tree --------------------------------------------------------------------------------
    def _nodes(self):
        """Every node below and including this one, sources first (post-order)."""
        out = []
        for child in self.children:
            out.extend(child._nodes())
        out.append(self)
        return out

    def _check_tree(self):
        seen = set()
        for node in self._nodes():
            if id(node) in seen or (node is not self and len(node._consumers) > 1):
                raise PipelineError(NOT_A_TREE)
            seen.add(id(node))
            node._check_inputs()

    def _check_inputs(self):
        """Checks left to when the pipeline runs (a map's input columns); nothing for most nodes."""

    # -- builders ----------------------------------------------------------------------------------
    # Each builder returns the node that consumes this one. They import their node classes lazily:
    # those modules import this one (a subclass needs its base), so a module-level import would
    # close a circle; this is the only place in the pipeline that does so.
    def map(self, operations: Callable | Sequence[Callable], input_columns: str | Sequence[str] | None = None,
            output_columns: str | Sequence[str] | None = None, num_parallel_workers: int | None = None,
            python_multiprocessing: bool = False, offload: bool | None = None, max_rowsize: Any = None,
            cache: Any = None, callbacks: Any = None) -> Dataset:
        """Apply ``operations`` in sequence to ``input_columns`` of each row (MindSpore's ``map``).

        ``op(*input values)`` returns a value or a tuple of ``len(output_columns)`` values. As many
        outputs as inputs take the inputs' places; otherwise the outputs come first, then the other
        columns (MindSpore's order). ``num_parallel_workers`` threads (processes with
        ``python_multiprocessing=True``) run the ops; ``offload=True`` moves the tail of offloadable
        ops to the device (``docs/vision.md``). ``callbacks``: :class:`~recordio.dataset.DSCallback`
        objects, called as rows pass. ``max_rowsize`` is accepted and not needed (shared memory grows
        as needed); ``cache`` (MindSpore's cache server) is not supported.
        """
        from recordio.dataset.map_op import MapDataset
        _unsupported("map", cache=cache)
        return MapDataset(self, operations, input_columns, output_columns, num_parallel_workers,
                          python_multiprocessing, offload, callbacks)

    def batch(self, batch_size: int | Callable, drop_remainder: bool = False, num_parallel_workers: int | None = None,
              per_batch_map: Callable | None = None, input_columns: str | Sequence[str] | None = None,
              output_columns: str | Sequence[str] | None = None, pad_info: dict | None = None,
              python_multiprocessing: bool = False, max_rowsize: Any = None) -> Dataset:
        """Group ``batch_size`` rows into one (numeric columns of one shape are stacked; the others stay
        lists unless ``pad_info={column: (shape or None, value)}`` pads them). ``batch_size`` may be a
        callable ``f(BatchInfo) -> int`` giving each batch's size (MindSpore's).

        ``per_batch_map(*column lists, BatchInfo)`` runs in the pipeline thread on each batch;
        ``python_multiprocessing`` and ``max_rowsize`` are accepted for compatibility.
        """
        from recordio.dataset.batch_op import BatchDataset
        return BatchDataset(self, batch_size, drop_remainder, per_batch_map, input_columns,
                            output_columns, pad_info)

    def shuffle(self, buffer_size: int) -> Dataset:
        """MindSpore's shuffle buffer of ``buffer_size`` rows, keyed by ``(seed, epoch, node position)``."""
        from recordio.dataset.ops import ShuffleDataset
        return ShuffleDataset(self, buffer_size)

    def repeat(self, count: int | None = None) -> Dataset:
        """``count`` passes over the data per epoch (``None`` or -1: endless)."""
        from recordio.dataset.ops import RepeatDataset
        return RepeatDataset(self, count)

    def project(self, columns: str | Sequence[str]) -> Dataset:
        """Keep ``columns``, in that order."""
        from recordio.dataset.ops import ProjectDataset
        return ProjectDataset(self, columns)

    def rename(self, input_columns: str | Sequence[str], output_columns: str | Sequence[str]) -> Dataset:
        """Rename columns in place (their positions do not change)."""
        from recordio.dataset.ops import RenameDataset
        return RenameDataset(self, input_columns, output_columns)

    def filter(self, predicate: Callable[..., bool], input_columns: str | Sequence[str] | None = None,
               num_parallel_workers: int | None = None) -> Dataset:
        """Keep the rows for which ``predicate(*values of input_columns)`` is true (all columns by default)."""
        from recordio.dataset.ops import FilterDataset
        return FilterDataset(self, predicate, input_columns)

    def take(self, count: int = -1) -> Dataset:
        """The first ``count`` outputs of each epoch (-1: all)."""
        from recordio.dataset.ops import TakeDataset
        return TakeDataset(self, count)

    def skip(self, count: int) -> Dataset:
        """Each epoch without its first ``count`` outputs."""
        from recordio.dataset.ops import SkipDataset
        return SkipDataset(self, count)

    def zip(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """Rows of this dataset and ``datasets`` side by side, until the shortest ends (names must not clash)."""
        from recordio.dataset.ops import ZipDataset
        others = list(datasets) if isinstance(datasets, (tuple, list)) else [datasets]
        return ZipDataset([self, *others])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """This dataset, then ``datasets``, one after another (same column names); also ``a + b``."""
        from recordio.dataset.ops import ConcatDataset
        others = list(datasets) if isinstance(datasets, (tuple, list)) else [datasets]
        return ConcatDataset([self, *others])

    def __add__(self, other: Dataset) -> Dataset:
        return self.concat(other)

    def flat_map(self, func: Callable[..., Dataset]) -> Dataset:
        """``func(*row)`` for every row of one epoch of this dataset (numpy values), each returning a
        dataset; the result is those datasets concatenated in row order (MindSpore's ``flat_map``:
        this dataset is read now, when ``flat_map`` is called)."""
        if not callable(func):
            raise TypeError("func must be a function.")
        parts = []
        iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            for k, row in enumerate(iterator):
                part = func(*row)
                if not isinstance(part, Dataset):
                    raise TypeError(f"flat_map must return a Dataset object. flat_map: func returned "
                                    f"{type(part).__name__} for row {k}")
                parts.append(part)
        finally:
            iterator.close()
        if not parts:
            raise TypeError("flat_map must return a Dataset object. flat_map: the dataset has no rows")
        return parts[0] if len(parts) == 1 else parts[0].concat(parts[1:])

    # -- sampler chains (recordio.dataset.samplers) ------------------------------------------------------
    def _current_sampler(self, call):
        from recordio.dataset.samplers import Sampler
        sampler = getattr(self, "sampler", None)
        if not isinstance(sampler, Sampler):
            raise PipelineError(f"{call}: {type(self).__name__} has no sampler; samplers apply to the sources "
                                f"read by row (MindDataset, GeneratorDataset over a random-access source)")
        return sampler

    def add_sampler(self, new_sampler: Any) -> None:
        """Chain ``new_sampler`` onto this source (MindSpore's ``add_sampler``): it samples the rows the
        current sampler gives (that sampler's order, shard and ``num_samples``), e.g. a
        ``DistributedSampler`` splitting a ``RandomSampler``'s order. ``new_sampler``'s shuffle must
        be ``GLOBAL`` or ``FALSE``, the current one's not ``PARTIAL``."""
        from recordio.dataset.samplers import check_new_sampler
        self.sampler = _chained(self._current_sampler("add_sampler"), check_new_sampler(new_sampler))

    def use_sampler(self, new_sampler: Any) -> None:
        """Replace the last sampler of the chain with ``new_sampler`` (MindSpore's ``use_sampler``): the
        current sampler's child, if any, stays and ``new_sampler`` samples its rows; a split part's
        rows stay the part's."""
        from recordio.dataset.samplers import check_new_sampler
        check_new_sampler(new_sampler)
        self.sampler = _chained(self._current_sampler("use_sampler").child_sampler, new_sampler)

    # -- facts ----------------------------------------------------------------------------------------
    def get_col_names(self) -> list[str]:
        """The output column names; every output (dict keys, tuples) follows this order."""
        return list(self._columns())

    def get_dataset_size(self) -> int:
        """Outputs (rows, or batches after ``batch``) per epoch; from the index where possible."""
        from recordio.dataset.context import RunContext
        size = self._size(RunContext.for_sizes(self))
        if size is None:
            size = sum(1 for _ in self._iter_items(num_epochs=1))
        return size

    def __len__(self) -> int:
        """``len(dataset)`` is :meth:`get_dataset_size`, as in MindSpore (it may have to run a pipeline
        whose size the index cannot tell, e.g. after a ``filter``)."""
        return self.get_dataset_size()

    def __bool__(self) -> bool:
        """A dataset is true even when empty (so ``if dataset`` never runs the pipeline to count it;
        MindSpore's empty datasets are false through ``__len__``)."""
        return True

    def reset(self) -> None:
        """MindSpore's ``reset()`` ("reset the dataset for next epoch"): nothing to do here, as in
        MindSpore 2.10, whose method has an empty body. Each ``create_*_iterator`` runs its own epochs;
        to resume or skip, use the iterator's ``state_dict`` / ``load_state_dict``."""

    def get_batch_size(self) -> int:
        """The batch size of the last ``batch`` of the pipeline (1 without one; -1 for a callable size,
        as MindSpore's)."""
        from recordio.dataset.batch_op import BatchDataset
        node = next((n for n in reversed(self._nodes()) if isinstance(n, BatchDataset)), None)
        if node is None:
            return 1
        return -1 if callable(node.batch_size) else node.batch_size

    def _first_numpy(self):
        from recordio.dataset.values import to_numpy
        from recordio.dataset.iterators import TupleIterator
        it = TupleIterator(self, 1, True, None, track=False)
        try:
            return [to_numpy(v) for v in next(iter(it))]
        except StopIteration:
            raise PipelineError("the pipeline produced no row, so its shapes and types are unknown") from None
        finally:
            it.close()

    def output_shapes(self) -> list[list[int]]:
        """The shape of each output column, from the first output."""
        return [list(np.shape(v[0] if isinstance(v, list) else v)) for v in self._first_numpy()]

    def output_types(self) -> list[np.dtype]:
        """The numpy dtype of each output column, from the first output."""
        return [(v[0] if isinstance(v, list) else v).dtype for v in self._first_numpy()]

    # -- iteration (recordio.dataset.iterators) ---------------------------------------------------
    def create_dict_iterator(self, num_epochs: int = -1, output_numpy: bool = False,
                             device: Any = None) -> DictIterator:
        """An iterator of dicts ``{column: value}`` (keys in ``get_col_names()`` order).

        Each epoch ends with ``StopIteration``; iterating again starts the next one, up to
        ``num_epochs`` (-1: no limit). Values are torch tensors (strings stay ``str``), or numpy
        arrays with ``output_numpy=True``; ``device`` moves tensors there (and runs the offloaded
        tail there).
        """
        from recordio.dataset.iterators import DictIterator
        return DictIterator(self, num_epochs, output_numpy, device)

    def create_tuple_iterator(self, columns: Sequence[str] | None = None, num_epochs: int = -1,
                              output_numpy: bool = False, do_copy: bool = True,
                              device: Any = None) -> TupleIterator:
        """Like :meth:`create_dict_iterator`, with lists of values in ``get_col_names()`` order (or in
        the order of ``columns``). ``do_copy`` is accepted for compatibility."""
        from recordio.dataset.iterators import TupleIterator
        return TupleIterator(self, num_epochs, output_numpy, device, columns)

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    def _iter_items(self, num_epochs=1):
        """Items of an internal pass (sizes, save): no resume state is taken or recorded."""
        from recordio.dataset.iterators import ItemStream
        return ItemStream(self, num_epochs, track=False)

    def _iter_host_batches(self, num_epochs=1):
        from recordio.dataset.iterators import HostBatches
        return HostBatches(self, num_epochs)

    def offload_plan(self) -> OffloadPlan:
        """Which ops run on the host and which are offloaded (``.explain()`` says why)."""
        from recordio.dataset.context import build_plan
        return build_plan(self).offload

    def offload_module(self) -> Any:
        """The offloaded tail as a ``torch.nn.Module`` (imports torch)."""
        from recordio.offload.tail import build_tail
        return build_tail(self.offload_plan())

    # -- resume ------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Where the latest iterator of this pipeline stands (see ``docs/pipeline.md``, Resume)."""
        live = self._state() if self._state is not None else None
        if live is not None:
            return live()
        from recordio import config
        from recordio.dataset.resume import initial_state
        return self._final_state or initial_state(config.get_seed())

    def load_state_dict(self, state: dict) -> None:
        """Make the next iterator of this pipeline start where ``state`` says."""
        from recordio.dataset.resume import check_state
        self._pending_state = check_state(state)

    def set_init_step(self, init_step: int) -> None:
        """Make the next iterator start at global step ``init_step`` (MindSpore's fast recovery):
        epoch ``init_step // get_dataset_size()``, after its first ``init_step % size`` outputs.
        A ``load_state_dict`` of the matching state, under ``config.get_seed()`` of now."""
        if isinstance(init_step, bool) or not isinstance(init_step, int) or init_step < 0:
            raise ValueError(f"set_init_step: init_step must be an int >= 0, got {init_step!r}")
        from recordio import config
        from recordio.dataset.resume import initial_state
        size = self.get_dataset_size()
        epoch, delivered = divmod(init_step, size) if size else (0, 0)
        self.load_state_dict(dict(initial_state(config.get_seed()), epoch=epoch, delivered=delivered))
        self._init_step = init_step
        self._init_check = (init_step, size)      # checked against num_epochs by the next iterator

    def get_init_step(self) -> int:
        """The step given to :meth:`set_init_step` (0 without one)."""
        return getattr(self, "_init_step", 0)

    def save(self, file_name: str, num_files: int = 1, file_type: str = "mindrecord") -> None:
        """Write the pipeline's output as a MindRecord dataset of ``num_files`` shards (schema from
        the first row), through ``FileWriter``."""
        from recordio.dataset.save import save_dataset
        save_dataset(self, file_name, num_files, file_type)
