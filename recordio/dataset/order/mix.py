"""The order of a weighted mix: each source's share of an epoch, its rows, and how they interleave.

``mix([a, b, c], weights=[0.5, 0.3, 0.2])`` (``recordio.dataset.mixed``) is one source whose epochs
hold ``counts[k]`` rows of source ``k``: the epoch size apportioned by the weights with the
largest-remainder rule (:func:`apportion`), the same every epoch. The epoch's global order
(:class:`MixOrder`) is a pure function of ``(seed, epoch)``:

* source ``k`` gives its ``counts[k]`` rows from an endless stream of passes over it (each pass
  a new permutation with ``shuffle``, else in order; :func:`draw`); epoch ``e`` takes stream
  positions ``[e * counts[k], (e + 1) * counts[k])``, so a down-weighted source shows every row
  before repeating one, and an up-weighted one repeats whole passes. With ``replacement`` the rows
  are independent uniform draws instead;
* the rows of all sources are interleaved in a random order (``shuffle``), or evenly spread
  (:func:`interleave`).

Row ids (which key random ops) are ``copy << 48 | k << 40 | row`` (:func:`mixed_ids`,
:func:`source_rows`): ``copy`` counts the repeats of a row within the epoch, so two copies of a row
get their own augmentations.
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.order.sampler_chain import Sampler
from recordio.dataset.order.shuffle import epoch_rng
from recordio.errors import PipelineError

__all__ = ["MAX_SOURCES", "MixOrder", "apportion", "draw", "interleave", "mixed_ids", "occurrences", "source_rows"]

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
        return epoch_rng(seed, epoch, _MIX_TAG).permutation(labels)
    rank = np.concatenate([(np.arange(c) + 0.5) / c for c in counts if c] or [np.zeros(0)])
    return labels[np.argsort(rank, kind="stable")]


def draw(n, count, seed, epoch, tag, shuffle=True, replacement=False):
    """``count`` of ``n`` items for ``epoch``, and how many times each was drawn before in the epoch.

    Without replacement: positions ``[epoch * count, (epoch + 1) * count)`` of an endless stream
    of passes over the items (each pass a permutation keyed by ``(seed, pass, tag)``, or in order),
    so every item comes before any repeats. With replacement: independent uniform draws.
    """
    if replacement:
        items = epoch_rng(seed, epoch, tag).integers(0, n, count, dtype=np.int64)
        return items, occurrences(items)
    positions = epoch * count + np.arange(count, dtype=np.int64)
    passes = positions // n
    items = np.empty(count, np.int64)
    for p in np.unique(passes).tolist():
        mine = passes == p
        order = epoch_rng(seed, p, tag).permutation(n) if shuffle else np.arange(n)
        items[mine] = order[positions[mine] - p * n]
    return items, (passes - passes[0]) if count else passes


def mixed_ids(k, rows, copies):
    """The row ids of source ``k``'s ``rows`` drawn for the ``copies``-th time in the epoch."""
    if copies.size and copies.max() >= 1 << _COPY_BITS:
        raise PipelineError(f"mix: source {k} repeats a row more than {1 << _COPY_BITS} times in an epoch")
    return (copies << (_ROW_BITS + _SOURCE_BITS)) | (k << _ROW_BITS) | rows


def source_rows(ids):
    """``(source index, row id in that source)`` of mixed row ids, as two int64 arrays."""
    ids = np.asarray(ids, dtype=np.int64)
    return (ids >> _ROW_BITS) & (MAX_SOURCES - 1), ids & _ROW_MASK


class MixOrder(Sampler):
    """The mixed global order of an epoch (see the module): ``counts[k]`` rows of source ``k`` (of
    ``sizes[k]`` rows; ``replacement[k]``: drawn independently), interleaved; split like
    ``DefaultOrder``."""

    _takes_child = False

    def __init__(self, counts, sizes, shuffle, replacement, num_shards=None, shard_id=None):
        super().__init__(None)
        self.counts, self.sizes, self.shuffle, self.replacement = counts, sizes, shuffle, replacement
        self.shards = None if num_shards is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None

    def order(self, n, seed, epoch, source):
        labels = interleave(self.counts, seed, epoch, self.shuffle)
        out = np.empty(len(labels), np.int64)
        for k, count in enumerate(self.counts):
            if count:
                out[labels == k] = self.rows_of(k, seed, epoch)
        return out

    def rows_of(self, k, seed, epoch):
        """Source ``k``'s row ids of ``epoch`` (with their copy numbers), in the order drawn."""
        rows, copies = draw(self.sizes[k], self.counts[k], seed, epoch, _SOURCE_TAG + k, self.shuffle,
                            self.replacement[k])
        return mixed_ids(k, rows, copies)

    def total(self, n, source):
        return int(sum(self.counts))
