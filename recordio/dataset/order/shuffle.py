"""The order of an epoch: the shuffle modes and the shuffled orders they give.

A sampler (``recordio.dataset.order.samplers``) gives the global order of an epoch (``order(n, seed,
epoch, source)``); a distributed one also says which shard this process is (``shards``: the split of
that order between shards, workers and a resume). ``DefaultOrder`` is the sampler a source builds
from its ``shuffle``/``num_shards``/``shard_id``/``num_padded`` arguments. Randomness comes from
``(config seed, epoch)`` only, so every rank draws the same order and each epoch reshuffles
deterministically.
"""

from __future__ import annotations

import enum

import numpy as np

from recordio.dataset.order.permutation import KeyedPermutation, LazyIds
from recordio.keys import hash_words

__all__ = ["ORDER_VERSION", "Shuffle", "epoch_rng", "files_order", "global_order", "infile_order",
           "order_version", "shuffle_mode", "shuffled_ids"]

_SOURCE_TAG = 0x5EED_0F_0DE5
Ids = np.ndarray | LazyIds    # an epoch's row ids: an array, or computed as read (a shuffled global order)
ORDER_VERSION = 2       # 2: GLOBAL shuffles and shuffled DistributedSamplers are KeyedPermutations (1: numpy
                        # permutations); a saved state resumes only under the order version that saved it


class Shuffle(str, enum.Enum):
    """MindSpore's shuffle modes. ``ADAPTIVE`` (what ``None`` and ``True`` mean): ``GLOBAL`` up to
    100 million rows, ``PARTIAL`` beyond; ``PARTIAL``: rows shuffled within each window of 1 million
    consecutive rows; ``FILES``: files in a random order; ``INFILE``: rows shuffled within each
    file; ``FALSE``: dataset order."""

    FALSE = "false"
    ADAPTIVE = "adaptive"
    GLOBAL = "global"
    PARTIAL = "partial"
    FILES = "files"
    INFILE = "infile"


PARTIAL_WINDOW = 1_000_000          # rows per window of Shuffle.PARTIAL (MindSpore's)
ADAPTIVE_LIMIT = 100_000_000        # Shuffle.ADAPTIVE is GLOBAL up to this many rows (MindSpore's)


def order_version():
    """The order version a resume state records: :data:`ORDER_VERSION`, or ``"mindspore"`` under
    ``config.set_order_mode("mindspore")`` (MindSpore's orders name other rows at each position)."""
    from recordio import config
    return "mindspore" if config.get_order_mode() == "mindspore" else ORDER_VERSION


def partial_order(n, rng, window=None):
    """Rows shuffled within each window of ``window`` (:data:`PARTIAL_WINDOW`) consecutive rows,
    windows in order."""
    window = window or PARTIAL_WINDOW
    ids = np.arange(n, dtype=np.int64)
    for start in range(0, n, window):
        ids[start:start + window] = start + rng.permutation(min(window, n - start))
    return ids


def epoch_rng(seed, epoch, tag=_SOURCE_TAG):
    """A numpy generator that is a pure function of ``(seed, epoch, tag)``."""
    return np.random.Generator(np.random.PCG64(int(hash_words(seed, epoch, tag)[0])))


def global_order(n, seed, epoch, tag=_SOURCE_TAG):
    """The globally shuffled order of an epoch: a :class:`KeyedPermutation` of ``n`` rows keyed by
    ``(seed, epoch, tag)`` (O(1) memory; positions are computed as they are read)."""
    return KeyedPermutation(n, int(hash_words(seed, epoch, tag, ORDER_VERSION)[0]))


def _file_ranges(counts):
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return [np.arange(s, s + c, dtype=np.int64) for s, c in zip(starts, counts)]


def files_order(counts, rng):
    """Files in a random order, rows of each file in order."""
    ranges = _file_ranges(counts)
    if not ranges:
        return np.zeros(0, np.int64)
    return np.concatenate([ranges[k] for k in rng.permutation(len(ranges))])


def infile_order(counts, rng):
    """Files in order, rows shuffled within each file."""
    ranges = _file_ranges(counts)
    if not ranges:
        return np.zeros(0, np.int64)
    return np.concatenate([rng.permutation(r) for r in ranges])


# --- shuffle modes ----------------------------------------------------------------------------------


def shuffle_mode(shuffle, default=Shuffle.ADAPTIVE):
    """``shuffle`` argument -> a :class:`Shuffle` member or ``None`` (no shuffle)."""
    if shuffle is None:
        return default
    if shuffle is True:
        return Shuffle.ADAPTIVE
    if shuffle is False or shuffle == Shuffle.FALSE:
        return None
    if isinstance(shuffle, Shuffle):
        return shuffle
    raise ValueError(f"shuffle must be None, a bool or a Shuffle member ({', '.join(m.name for m in Shuffle)}), "
                     f"got {shuffle!r}")


def shuffled_ids(mode, n, seed, epoch, source):
    """The row ids of an epoch under shuffle ``mode`` (a :class:`Shuffle` member, or None)."""
    if mode is None:
        return np.arange(n, dtype=np.int64)
    if mode == Shuffle.ADAPTIVE:
        mode = Shuffle.GLOBAL if n <= ADAPTIVE_LIMIT else Shuffle.PARTIAL
    if mode == Shuffle.GLOBAL:
        return global_order(n, seed, epoch)
    rng = epoch_rng(seed, epoch)
    if mode == Shuffle.PARTIAL:
        return partial_order(n, rng)
    order = files_order if mode == Shuffle.FILES else infile_order
    return order(source.file_counts(), rng)

