"""Weighted mixing: several sources drawn in fixed proportions, exactly, every epoch.

``mix([a, b, c], weights=[0.5, 0.3, 0.2])`` is one source whose epochs hold ``counts[k]`` rows of
source ``k``: the epoch size (``num_samples``, default the sources' rows together) apportioned by
the weights with the largest-remainder rule, so the counts are integers that sum to the epoch
size and are the same every epoch (``counts``, ``get_dataset_size()``).

The epoch's global order is a pure function of ``(seed, epoch)``:

* source ``k`` gives its ``counts[k]`` rows from an endless stream of passes over it (each pass
  a new permutation with ``shuffle``, else in order); epoch ``e`` takes stream positions
  ``[e * counts[k], (e + 1) * counts[k])``, so a down-weighted source shows every row before
  repeating one, and an up-weighted one repeats whole passes. With ``replacement`` the rows are
  independent uniform draws instead (per source: a bool or a list);
* the rows of all sources are interleaved in a random order (``shuffle``), or evenly spread.

It is then split between ranks, DataLoader workers and resumed like any source (``docs/pipeline.md``),
so what a job sees does not depend on workers, batch size, resume or world size. Row ids
(which key random ops) are ``copy << 48 | k << 40 | row``: ``copy`` counts the repeats of a row
within the epoch, so two copies of a row get their own augmentations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from recordio.dataset.order import shuffle as _order
from recordio.dataset.order import samplers as _samplers
from recordio.dataset.source import SampledSource
from recordio.errors import PipelineError

__all__ = ["MixedDataset", "apportion", "draw", "interleave", "mix"]

MAX_SOURCES = 256
_ROW_BITS, _SOURCE_BITS, _COPY_BITS = 40, 8, 15
_ROW_MASK = (1 << _ROW_BITS) - 1
_MIX_TAG = 0x313C
_SOURCE_TAG = 0x5C0


def apportion(total, weights):
    """``total`` split into integers proportional to ``weights`` (largest remainder, ties to the first)."""
    weights = np.asarray(weights, dtype=np.float64)
    quotas = total * weights / weights.sum()
    counts = np.floor(quotas).astype(np.int64)
    short = int(total - counts.sum())
    counts[np.argsort(-(quotas - counts), kind="stable")[:short]] += 1
    return counts


def occurrences(ids):
    """For each element, how many equal elements come before it."""
    ids = np.asarray(ids)
    sort = np.argsort(ids, kind="stable")
    sorted_ids = ids[sort]
    first = np.concatenate([[True], sorted_ids[1:] != sorted_ids[:-1]]) if len(ids) else np.zeros(0, bool)
    starts = np.maximum.accumulate(np.where(first, np.arange(len(ids)), 0))
    out = np.empty(len(ids), np.int64)
    out[sort] = np.arange(len(ids)) - starts
    return out


def interleave(counts, seed, epoch, shuffle=True):
    """Group labels ``k`` repeated ``counts[k]`` times, in a random order keyed by ``(seed, epoch)``;
    without ``shuffle``, evenly spread (each prefix holds every group's share, within one)."""
    labels = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if shuffle:
        return _order.epoch_rng(seed, epoch, _MIX_TAG).permutation(labels)
    rank = np.concatenate([(np.arange(c) + 0.5) / c for c in counts if c] or [np.zeros(0)])
    return labels[np.argsort(rank, kind="stable")]


def draw(n, count, seed, epoch, tag, shuffle=True, replacement=False):
    """``count`` of ``n`` items for ``epoch``, and how many times each was drawn before in the epoch.

    Without replacement: positions ``[epoch * count, (epoch + 1) * count)`` of an endless stream
    of passes over the items (each pass a permutation keyed by ``(seed, pass, tag)``, or in order),
    so every item comes before any repeats. With replacement: independent uniform draws.
    """
    if replacement:
        items = _order.epoch_rng(seed, epoch, tag).integers(0, n, count, dtype=np.int64)
        return items, occurrences(items)
    positions = epoch * count + np.arange(count, dtype=np.int64)
    passes = positions // n
    items = np.empty(count, np.int64)
    for p in np.unique(passes).tolist():
        mine = passes == p
        order = _order.epoch_rng(seed, p, tag).permutation(n) if shuffle else np.arange(n)
        items[mine] = order[positions[mine] - p * n]
    return items, (passes - passes[0]) if count else passes


class MixOrder(_samplers.Sampler):
    """The mixed global order of an epoch (see the module); split like :class:`DefaultOrder`."""

    _takes_child = False

    def __init__(self, num_shards=None, shard_id=None):
        super().__init__(None)
        self.shards = None if num_shards is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None

    def order(self, n, seed, epoch, source):
        labels = interleave(source.counts, seed, epoch, source.shuffle)
        out = np.empty(len(labels), np.int64)
        for k, count in enumerate(source.counts):
            if count:
                out[labels == k] = source._rows_of(k, seed, epoch)
        return out

    def total(self, n, source):
        return int(sum(source.counts))


class MixedDataset(SampledSource):
    """Rows of several random-access sources in fixed proportions per epoch (see :func:`mix`)."""

    def __init__(self, datasets, weights, num_samples=None, replacement=False, shuffle=True,
                 num_shards=None, shard_id=None, source_column=None):
        from recordio.dataset.order.shards import check_shards

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
        super().__init__(MixOrder(num_shards, shard_id), 1, False)

    def _columns(self):
        columns = self.sources[0]._columns()
        return columns + [self.source_column] if self.source_column else columns

    def _num_rows(self):
        return int(sum(self.counts))

    def _file_counts(self):
        return [self._num_rows()]

    def _class_values(self, column):
        raise PipelineError("PKSampler: a mixed dataset has its own order; sample the sources instead")

    def _rows_of(self, k, seed, epoch):
        """Source ``k``'s row ids of ``epoch`` (with their copy numbers), in the order drawn."""
        rows, copies = draw(self.sizes[k], self.counts[k], seed, epoch, _SOURCE_TAG + k, self.shuffle,
                            self.replacement[k])
        if copies.size and copies.max() >= 1 << _COPY_BITS:
            raise PipelineError(f"mix: source {k} repeats a row more than {1 << _COPY_BITS} times in an epoch")
        return (copies << (_ROW_BITS + _SOURCE_BITS)) | (k << _ROW_BITS) | rows

    def _fetch(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        which = (ids >> _ROW_BITS) & (MAX_SOURCES - 1)
        rows = ids & _ROW_MASK
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
        if not isinstance(sampler, _samplers.DefaultOrder) or sampler.shards or sampler.num_padded \
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
