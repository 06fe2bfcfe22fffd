"""Weighted mixing: several sources drawn in fixed proportions, exactly, every epoch (:func:`mix`).

The source is :class:`MixedDataset`; its order (the counts per source, the rows drawn, their
interleaving and the row ids) is ``recordio.dataset.order.mix``. It is then split between ranks,
DataLoader workers and resumed like any source (``docs/pipeline.md``), so what a job sees does not
depend on workers, batch size, resume or world size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from recordio.dataset.order.mix import MAX_SOURCES, MixOrder, apportion, source_rows
from recordio.dataset.order.samplers import DefaultOrder
from recordio.dataset.order.shards import check_shards
from recordio.dataset.source import SampledSource
from recordio.errors import PipelineError

__all__ = ["MixedDataset", "mix"]


class MixedDataset(SampledSource):
    """Rows of several random-access sources in fixed proportions per epoch (see :func:`mix`)."""

    def __init__(self, datasets, weights, num_samples=None, replacement=False, shuffle=True,
                 num_shards=None, shard_id=None, source_column=None):
        self.sources = _checked_sources(datasets)
        check_shards(num_shards, shard_id)
        self.sizes = [s._num_rows() for s in self.sources]
        self.weights = _checked_weights(weights, len(self.sources))
        self.replacement = _per_source(replacement, len(self.sources))
        self.shuffle = bool(shuffle)
        if source_column is not None and source_column in self.sources[0]._columns():
            raise PipelineError(f"mix: source_column {source_column!r} is already a column of the datasets")
        self.source_column = source_column
        total = sum(self.sizes) if num_samples is None else num_samples
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise ValueError(f"mix: num_samples must be an int >= 0, got {num_samples!r}")
        self.counts = apportion(total, self.weights).tolist()
        _check_counts(self.counts, self.sizes)
        super().__init__(MixOrder(self.counts, self.sizes, self.shuffle, self.replacement, num_shards,
                                  shard_id), 1, False)

    def _columns(self):
        columns = self.sources[0]._columns()
        return columns + [self.source_column] if self.source_column else columns

    def _num_rows(self):
        return int(sum(self.counts))

    def file_counts(self):
        """Rows of each data file, in order (what the FILES and INFILE shuffles and MindSpore's orders read)."""
        return [self._num_rows()]

    def class_values(self, column):
        """The value of ``column`` in every row (what ``PKSampler`` groups rows by)."""
        raise PipelineError("PKSampler: a mixed dataset has its own order; sample the sources instead")

    def _fetch(self, ids):
        which, rows = source_rows(ids)
        out = [None] * len(ids)
        for k in np.unique(which).tolist():
            at = np.flatnonzero(which == k)
            for i, row in zip(at.tolist(), self.sources[k]._fetch(rows[at])):
                out[i] = {**row, self.source_column: np.int32(k)} if self.source_column else row
        return out


def _checked_sources(datasets):
    datasets = list(datasets)
    if not 1 <= len(datasets) <= MAX_SOURCES:
        raise ValueError(f"mix: expected 1 to {MAX_SOURCES} datasets, got {len(datasets)}")
    for k, d in enumerate(datasets):
        sampler = getattr(d, "sampler", None)
        if not isinstance(d, SampledSource) or not getattr(d, "random_access", True):
            raise PipelineError(f"mix: dataset {k} ({type(d).__name__}) is not a random-access source "
                                f"(MindDataset, or GeneratorDataset over a sequence); map after mixing")
        if not isinstance(sampler, DefaultOrder) or sampler.shards or sampler.num_padded \
                or sampler.num_samples:
            raise PipelineError(f"mix: dataset {k} has its own sampler, shards, padding or num_samples; the mix "
                                f"orders and splits the rows (give num_samples, num_shards, shard_id to mix)")
        if d._columns() != datasets[0]._columns():
            raise PipelineError(f"mix: column names differ: {datasets[0]._columns()} vs {d._columns()} "
                                f"(dataset {k}); use the same columns_list")
    return datasets


def _checked_weights(weights, n):
    values = list(weights) if isinstance(weights, Sequence) or hasattr(weights, "__len__") else None
    if values is None or len(values) != n or not all(
            isinstance(w, (int, float, np.number)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
            for w in values) or not sum(values) > 0:
        raise ValueError(f"mix: weights must be {n} finite numbers >= 0 with a positive sum, got {weights!r}")
    return [float(w) for w in values]


def _per_source(replacement, n):
    values = list(replacement) if isinstance(replacement, (list, tuple)) else [replacement] * n
    if len(values) != n or not all(isinstance(v, bool) for v in values):
        raise ValueError(f"mix: replacement must be a bool or {n} bools, got {replacement!r}")
    return values


def _check_counts(counts, sizes):
    for k, (count, size) in enumerate(zip(counts, sizes)):
        if count and not size:
            raise PipelineError(f"mix: dataset {k} is empty but its weight asks for {count} rows per epoch")


def mix(datasets: Sequence, weights: Sequence[float], num_samples: int | None = None,
        replacement: bool | Sequence[bool] = False, shuffle: bool = True, num_shards: int | None = None,
        shard_id: int | None = None, source_column: str | None = None) -> MixedDataset:
    """One source drawing from ``datasets`` in the proportions ``weights``, exactly, every epoch.

    Args:
        datasets: random-access sources (``MindDataset``, ``GeneratorDataset`` over a sequence) with
            the same columns and no sampler, shards or ``num_samples`` of their own.
        weights: one number >= 0 per dataset (any scale).
        num_samples: rows per epoch (default: the datasets' rows together); source ``k`` gives
            ``counts[k]`` of them, the largest-remainder apportionment of ``num_samples``.
        replacement: draw each source's rows independently (True), or in passes without repeats
            within a pass (False, the default); a bool or one per source.
        shuffle: interleave the sources and order each pass at random (keyed by seed, epoch,
            source); ``False``: sources evenly spread, rows in order.
        num_shards, shard_id: this process's share (default: torch.distributed's rank and world
            size); shards split the mixed order, so together they read each epoch's rows once
            (plus the usual wrap-around padding when the world size does not divide the epoch).
        source_column: add a column of this name holding the source index (int32).
    """
    return MixedDataset(datasets, weights, num_samples, replacement, shuffle, num_shards, shard_id, source_column)
