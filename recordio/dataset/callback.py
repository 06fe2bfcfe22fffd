"""Dataset callbacks (MindSpore's ``mindspore.dataset.DSCallback``): hooks a ``map`` calls as rows
pass through it.

``ds_begin`` once when the pipeline starts; ``ds_epoch_begin``/``ds_epoch_end`` around each epoch;
``ds_step_begin`` when a row enters the map and ``ds_step_end`` when its output leaves, for steps
``1, 1 + step_size, 1 + 2 * step_size, ...`` of each epoch. The context has MindSpore's
``cur_epoch_num`` (1-based), ``cur_step_num_in_epoch`` and ``cur_step_num`` (over all epochs). The
hooks run in the pipeline's thread; begins and ends of different rows may interleave (as in MindSpore).
"""

from __future__ import annotations

import dataclasses

__all__ = ["DSCallback", "DSRunContext"]


@dataclasses.dataclass
class DSRunContext:
    """What a dataset callback sees."""

    cur_epoch_num: int = 0
    cur_step_num_in_epoch: int = 0
    cur_step_num: int = 0


class DSCallback:
    """Base class of dataset callbacks: override the hooks you need."""

    def __init__(self, step_size: int = 1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"DSCallback: step_size must be an int of at least 1, got {step_size!r}")
        self.step_size = step_size

    def ds_begin(self, ds_run_context: DSRunContext) -> None:
        """Before the pipeline starts."""

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Before an epoch starts."""

    def ds_epoch_end(self, ds_run_context: DSRunContext) -> None:
        """After an epoch ended."""

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Before a step (a row entering the map)."""

    def ds_step_end(self, ds_run_context: DSRunContext) -> None:
        """After a step (the row's output leaving the map)."""


class MapHooks:
    """The callbacks of one map in one run, with their counters."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
        self.epochs = self.total = self.in_epoch = self.ended = 0
        self._call("ds_begin", DSRunContext())

    def _call(self, name, context, step=None):
        for cb in self.callbacks:
            if step is None or (step - 1) % cb.step_size == 0:
                getattr(cb, name)(context)

    def epoch_begin(self):
        self.epochs += 1
        self.in_epoch = self.ended = 0
        self._call("ds_epoch_begin", DSRunContext(self.epochs, 0, self.total))

    def step_begin(self):
        self.in_epoch += 1
        self._call("ds_step_begin", DSRunContext(self.epochs, self.in_epoch, self.total + self.in_epoch),
                   self.in_epoch)

    def step_end(self):
        self.ended += 1
        self._call("ds_step_end", DSRunContext(self.epochs, self.ended, self.total + self.ended), self.ended)

    def epoch_end(self):
        self.total += self.in_epoch
        self._call("ds_epoch_end", DSRunContext(self.epochs, self.in_epoch, self.total))
