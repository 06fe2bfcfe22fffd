"""The pipeline node: what every dataset (source or operation) is.

A node knows its children, its column names and its size, and produces :class:`Item` objects
for one epoch with ``_items(ctx, epoch)``. ``epoch`` is the epoch this node is asked for: the
iterator's epoch at the root, the data epoch below a ``repeat``. The builder methods (``map``,
``batch``, ...) each return a new node that consumes this one. A node consumed by two nodes makes
the pipeline "not a tree" and is refused when iterated, as in MindSpore.

Imports run one way: the operation modules (``map_op``, ``batch_op``, ``ops``, the sources, ...)
import this module for the base class, and this module imports none of them. The builders still
construct their nodes: each operation class is registered under its name by the ``@operation``
decorator when its module is imported, and a builder takes the class from that table
(``_OPS["MapDataset"]``: a dict lookup when the pipeline is built, nothing per row).
``recordio.dataset`` imports every operation module, so the table is complete before any
builder can be called. The builders are defined here, on the class, rather than in a module above
that would install them on it at import, so that readers and type checkers (the package ships
``py.typed``) see every method of :class:`Dataset` and its return type where it is declared. What running a pipeline gives (sizes,
iterators, resume state, ``save``) comes from the base :class:`~recordio.dataset.running.Running`,
which builds on the iterators and imports no node class either.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from recordio import hooks
from recordio.dataset.order.shuffle import Shuffle
from recordio.dataset.running import Running
from recordio.dataset.order.sampler_chain import Sampler, check_new_sampler
from recordio.errors import PipelineError

__all__ = ["Dataset", "Item", "NOT_A_TREE", "operation"]

NOT_A_TREE = "The data pipeline is not a tree (i.e., one node has 2 consumers)"

#: The operation node classes the builders make, by class name (filled by ``@operation``).
_OPS: dict[str, Any] = {}

_Op = TypeVar("_Op", bound=type)


def operation(cls: _Op) -> _Op:
    """Class decorator of an operation node a builder makes: registers ``cls`` in ``_OPS`` under its
    name (see the module docstring)."""
    _OPS[cls.__name__] = cls
    return cls


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
    if current is not None and current.get_shuffle_mode() == Shuffle.PARTIAL:
        raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the current sampler "
                           "must not be Shuffle.PARTIAL.")
    if new.get_shuffle_mode() not in (Shuffle.GLOBAL, Shuffle.FALSE):
        raise RuntimeError("When multiple samplers are used, ensure that the shuffle of the input sampler "
                           f"must be Shuffle.FALSE or Shuffle.GLOBAL, but got: {new.get_shuffle_mode()}.")
    new.add_child(current)
    return new


class Dataset(Running):
    """Base of every pipeline node; the builder methods mirror ``mindspore.dataset.Dataset`` (what
    running a pipeline gives is in :class:`~recordio.dataset.running.Running`)."""

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

    def _row_origin(self, row):
        """Where source row ``row`` (the row an op's error names) comes from, as a phrase ("row 3 of
        FILE"); None where this node cannot tell (a zip or concat of sources, a generator)."""
        return self.children[0]._row_origin(row) if len(self.children) == 1 else None

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


    # -- builders (their classes from _OPS, see the module docstring) -------------------------------
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
        _unsupported("map", cache=cache)
        return _OPS["MapDataset"](self, operations, input_columns, output_columns, num_parallel_workers,
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
        return _OPS["BatchDataset"](self, batch_size, drop_remainder, per_batch_map, input_columns,
                                    output_columns, pad_info)

    def shuffle(self, buffer_size: int) -> Dataset:
        """MindSpore's shuffle buffer of ``buffer_size`` rows, keyed by ``(seed, epoch, node position)``."""
        return _OPS["ShuffleDataset"](self, buffer_size)

    def repeat(self, count: int | None = None) -> Dataset:
        """``count`` passes over the data per epoch (``None`` or -1: endless)."""
        return _OPS["RepeatDataset"](self, count)

    def project(self, columns: str | Sequence[str]) -> Dataset:
        """Keep ``columns``, in that order."""
        return _OPS["ProjectDataset"](self, columns)

    def rename(self, input_columns: str | Sequence[str], output_columns: str | Sequence[str]) -> Dataset:
        """Rename columns in place (their positions do not change)."""
        return _OPS["RenameDataset"](self, input_columns, output_columns)

    def filter(self, predicate: Callable[..., bool], input_columns: str | Sequence[str] | None = None,
               num_parallel_workers: int | None = None) -> Dataset:
        """Keep the rows for which ``predicate(*values of input_columns)`` is true (all columns by default)."""
        return _OPS["FilterDataset"](self, predicate, input_columns)

    def take(self, count: int = -1) -> Dataset:
        """The first ``count`` outputs of each epoch (-1: all)."""
        return _OPS["TakeDataset"](self, count)

    def skip(self, count: int) -> Dataset:
        """Each epoch without its first ``count`` outputs."""
        return _OPS["SkipDataset"](self, count)

    def zip(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """Rows of this dataset and ``datasets`` side by side, until the shortest ends (names must not clash)."""
        others = list(datasets) if isinstance(datasets, (tuple, list)) else [datasets]
        return _OPS["ZipDataset"]([self, *others])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """This dataset, then ``datasets``, one after another (same column names); also ``a + b``."""
        others = list(datasets) if isinstance(datasets, (tuple, list)) else [datasets]
        return _OPS["ConcatDataset"]([self, *others])

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

    def padded_batch(self, batch_size: int | Callable, drop_remainder: bool = False,
                     num_parallel_workers: int | None = None, pad_info: dict | None = None) -> Dataset:
        """``batch`` that pads (MindSpore's ``padded_batch``): with ``pad_info`` a dict, every column is
        padded to the batch's largest shape with 0, except that ``pad_info={column: (shape, value)}``
        pads that column to ``shape`` (``None`` entries: the largest) with ``value`` (cast to the
        column's dtype). ``pad_info=None`` pads nothing (a plain ``batch``). A row larger than
        ``shape`` raises instead of being cut. ``batch_size`` may be a callable of a ``BatchInfo``."""
        return _OPS["BatchDataset"].padded(self, batch_size, drop_remainder, pad_info)

    def bucket_batch_by_length(self, column_names: list[str], bucket_boundaries: list[int],
                               bucket_batch_sizes: list[int], element_length_function: Callable | None = None,
                               pad_info: dict | None = None, pad_to_bucket_boundary: bool = False,
                               drop_remainder: bool = False) -> Dataset:
        """Batch rows of similar length together (MindSpore's ``bucket_batch_by_length``): a row's
        length (``element_length_function(*values of column_names)``, or the first dimension of the
        one column) picks bucket ``i`` of ``[0, b0), [b0, b1), ..., [b_last, inf)``; a bucket that
        holds ``bucket_batch_sizes[i]`` rows becomes a padded batch. The partial buckets follow at the
        epoch's end, in bucket order (dropped with ``drop_remainder=True``). See
        ``recordio.dataset.bucket_op``."""
        return _OPS["BucketBatchDataset"](self, column_names, bucket_boundaries, bucket_batch_sizes,
                                          element_length_function, pad_info, pad_to_bucket_boundary,
                                          drop_remainder)

    def apply(self, apply_func: Callable[[Dataset], Any]) -> Dataset:
        """``apply_func(self)``, which must return a dataset (MindSpore's ``apply``)."""
        if not callable(apply_func):
            raise TypeError("apply_func must be a function.")
        dataset = apply_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError(f"apply_func must return a dataset, got {type(dataset).__name__}.")
        return dataset

    def device_que(self, send_epoch_end: bool = True, create_data_info_queue: bool = False,
                   queue_name: str = "", device: Any = None) -> Any:
        """A :class:`recordio.sink.queue.DeviceQueue` (MindSpore's ``TransferDataset``): ``send()`` starts
        prefetching batches onto ``device`` through a ``DataSink``, and iterating it gives one epoch
        of them. Nothing starts until then."""
        # DeviceQueue belongs to the sink layer, above this one: the package root hands it down (recordio.hooks)
        queue = hooks.provided("DeviceQueue")
        return queue(self, send_epoch_end, create_data_info_queue, queue_name, device)

    # -- facts about the operations ----------------------------------------------------------------
    def get_batch_size(self) -> int:
        """The batch size of the last ``batch`` of the pipeline (1 without one; -1 for a callable size,
        as MindSpore's)."""
        node = next((n for n in reversed(self._nodes()) if isinstance(n, _OPS["BatchDataset"])), None)
        if node is None:
            return 1
        return -1 if callable(node.batch_size) else node.batch_size

    def get_repeat_count(self) -> int:
        """The count of the outermost ``repeat`` (-1: endless; 1 without one), as MindSpore's."""
        node = self
        while True:
            if isinstance(node, _OPS["RepeatDataset"]):
                return -1 if node.count is None else node.count
            if not node.children:
                return 1
            node = node.children[0]

    def num_classes(self) -> int | None:
        """The number of classes of the pipeline's source, where it knows one (MindSpore's image
        folder sources do); ``None`` for MindRecord and Python sources, as in MindSpore."""
        for node in reversed(self._nodes()):
            count = getattr(node, "_num_classes", None)
            if count is not None:
                return count
        return None

    # -- sampler chains (recordio.dataset.order.sampler_chain) ------------------------------------------------------
    def _current_sampler(self, call):
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
        self.sampler = _chained(self._current_sampler("add_sampler"), check_new_sampler(new_sampler))

    def use_sampler(self, new_sampler: Any) -> None:
        """Replace the last sampler of the chain with ``new_sampler`` (MindSpore's ``use_sampler``): the
        current sampler's child, if any, stays and ``new_sampler`` samples its rows; a split part's
        rows stay the part's."""
        check_new_sampler(new_sampler)
        self.sampler = _chained(self._current_sampler("use_sampler").child_sampler, new_sampler)
