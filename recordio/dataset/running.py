"""What running a pipeline gives: its facts (columns, size, shapes), its iterators, the offload plan,
its resume state and ``save``.

A base of :class:`recordio.dataset.node.Dataset`, so every node has these methods. It builds on the
iterators and the run context, which know nodes only through their protocol (``_items``,
``_columns``, ``_size``, ...), and never on a node class: ``node`` and the operation modules sit
above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recordio import config
from recordio.dataset.context import RunContext, build_plan
from recordio.dataset.iterators import DictIterator, HostBatches, ItemStream, TupleIterator
from recordio.dataset.resume import check_state, initial_state
from recordio.dataset.save import save_dataset
from recordio.dataset.values import to_numpy
from recordio.errors import PipelineError

if TYPE_CHECKING:
    from recordio.offload.plan import OffloadPlan

__all__ = ["Running"]


class Running:
    """The methods above, on every pipeline node."""

    if TYPE_CHECKING:          # given by recordio.dataset.node.Dataset
        _state: Any
        _pending_state: dict | None
        _final_state: dict | None
        _init_step: int
        _init_check: tuple[int, int]

        def _columns(self) -> list[str]: ...

        def _size(self, ctx: Any) -> int | None: ...

    # -- facts ----------------------------------------------------------------------------------------
    def get_col_names(self) -> list[str]:
        """The output column names; every output (dict keys, tuples) follows this order."""
        return list(self._columns())

    def get_dataset_size(self) -> int:
        """Outputs (rows, or batches after ``batch``) per epoch; from the index where possible."""
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

    def _first_numpy(self):
        it = TupleIterator(self, 1, True, "cpu", track=False)      # one batch: an offloaded tail on the CPU is fine
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
        return DictIterator(self, num_epochs, output_numpy, device)

    def create_tuple_iterator(self, columns: Sequence[str] | None = None, num_epochs: int = -1,
                              output_numpy: bool = False, do_copy: bool = True,
                              device: Any = None) -> TupleIterator:
        """Like :meth:`create_dict_iterator`, with lists of values in ``get_col_names()`` order (or in
        the order of ``columns``). ``do_copy`` is accepted for compatibility."""
        return TupleIterator(self, num_epochs, output_numpy, device, columns)

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    def _iter_items(self, num_epochs=1):
        """Items of an internal pass (sizes, save): no resume state is taken or recorded."""
        return ItemStream(self, num_epochs, track=False)

    def iter_host_batches(self, num_epochs=1):
        """The host side's batches (before an offloaded tail), as the sink and ``train()`` consume them."""
        return HostBatches(self, num_epochs)

    def offload_plan(self) -> OffloadPlan:
        """Which ops run on the host and which are offloaded (``.explain()`` says why)."""
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
        return self._final_state or initial_state(config.get_seed())

    def load_state_dict(self, state: dict) -> None:
        """Make the next iterator of this pipeline start where ``state`` says."""
        self._pending_state = check_state(state)

    def set_init_step(self, init_step: int) -> None:
        """Make the next iterator start at global step ``init_step`` (MindSpore's fast recovery):
        epoch ``init_step // get_dataset_size()``, after its first ``init_step % size`` outputs.
        A ``load_state_dict`` of the matching state, under ``config.get_seed()`` of now."""
        if isinstance(init_step, bool) or not isinstance(init_step, int) or init_step < 0:
            raise ValueError(f"set_init_step: init_step must be an int >= 0, got {init_step!r}")
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
        save_dataset(self, file_name, num_files, file_type)
