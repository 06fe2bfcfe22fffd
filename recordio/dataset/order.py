"""The order of an epoch: shuffle modes, MindSpore's samplers, and the split between shards.

A sampler gives the global order of an epoch (``order(n, seed, epoch, source)``); a distributed
one also says which shard this process is. :class:`DefaultOrder` is the sampler a source builds
from its ``shuffle``/``num_shards``/``shard_id``/``num_padded`` arguments. Randomness comes from
``(config seed, epoch)`` only, so every rank draws the same order and each epoch reshuffles
deterministically.

Every shard (rank, DataLoader worker) computes the same *global order* of the epoch from
``(seed, epoch)`` alone, then takes its share of it: shard ``s`` of ``W`` takes the positions
``s, s + W, s + 2W, ...`` of the global order. Each shard gets ``ceil(T / W)`` rows; positions past
the end wrap around to the start (the only repeats, at most ``W - 1`` rows). The split happens
*after* the shuffle, so all ranks agree on the permutation and together see every row.

Resume: after every shard delivered ``k`` rows, the first ``k * W`` positions of the global order
are consumed. A resumed epoch with ``c`` positions consumed splits the remaining ``T - c``
positions the same way, whatever the new ``W``.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from recordio.dataset.permutation import KeyedPermutation, LazyIds, Padded, Positions
from recordio.keys import hash_words

__all__ = ["DefaultOrder", "DistributedSampler", "PKSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "Shuffle", "SubsetRandomSampler", "SubsetSampler", "consumed_after", "epoch_rng", "files_order",
           "global_order", "infile_order", "shard_positions", "shuffle_mode", "ORDER_VERSION", "iter_chunks",
           "consumed_chunks"]

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


def shard_size(total, num_shards, start=0):
    remaining = max(0, total - start)
    return -(-remaining // num_shards)


def shard_positions(total, num_shards, shard_id, start=0, same_split=False):
    """Positions of the global order shard ``shard_id`` reads, after ``start`` were consumed.

    Positions past the end (the last round's padding) wrap around to the first positions not
    consumed, so no row consumed before ``start`` comes again; with ``same_split`` (a resume under
    the split that saved ``start``) they wrap to the epoch's first positions instead, exactly as
    the uninterrupted epoch does. A lazy int64 sequence (:class:`Positions`): no array of them.
    """
    remaining = total - start
    count = shard_size(total, num_shards, start) if remaining > 0 else 0
    if same_split:
        return Positions(start + shard_id, num_shards, total, 0, count)
    return Positions(shard_id, num_shards, remaining, start, count)


def block_positions(total, num_shards, shard_id):
    """Shard ``shard_id``'s positions when shards take contiguous blocks of the global order
    (``shard_by_block``): ``ceil(T / W)`` consecutive positions, wrapping to the start at the end."""
    per = shard_size(total, num_shards)
    return (shard_id * per + np.arange(per, dtype=np.int64)) % max(total, 1)


def worker_blocks(n, workers, worker, block, first=0):
    """Indices into a shard's ``n`` positions that DataLoader worker ``worker`` of ``workers`` reads:
    blocks of ``block`` positions dealt round robin (block ``b`` to worker ``b % workers``), counted
    from the shard's ``first`` position of the epoch, so that the workers' outputs, taken in turn,
    are the shard's outputs in order."""
    k = np.arange(n, dtype=np.int64)
    return np.flatnonzero(((first + k) // block) % workers == worker)


def consumed_after(start, num_shards, delivered, total):
    """Global positions consumed once every shard delivered ``delivered`` rows."""
    return min(total, start + num_shards * delivered)


_CHUNK = 1 << 16


def iter_chunks(ids):
    """The ints of ``ids`` (an array or a lazy order), converted a chunk at a time."""
    for start in range(0, len(ids), _CHUNK):
        yield from ids[start:start + _CHUNK].tolist()


def consumed_chunks(start, num, total, count, index=None):
    """``consumed_after`` for each of ``count`` rows delivered (``index``: their position indices),
    computed a chunk at a time."""
    for first in range(0, count, _CHUNK):
        end = min(count, first + _CHUNK)
        delivered = np.arange(first + 1, end + 1, dtype=np.int64) if index is None else index[first:end] + 1
        yield from np.minimum(total, start + num * delivered).tolist()


# --- MindSpore's samplers ------------------------------------------------------------------------



def _check_num_samples(num_samples):
    if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                    or num_samples < 0):
        raise ValueError(f"num_samples exceeds the boundary between 0 and 9223372036854775807(INT64_MAX): "
                         f"num_samples must be None or an int >= 0, got {num_samples!r}")
    return num_samples or None


class Sampler:
    """Base class: ``order(n, seed, epoch, source)`` -> row ids of the epoch, in order."""

    shards: tuple[int, int] | None = None        # (num_shards, shard_id) for a distributed sampler

    def __init__(self, num_samples: int | None = None) -> None:
        self.num_samples = _check_num_samples(num_samples)

    def order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        """The row ids of epoch ``epoch`` of a source of ``n`` rows, in order (int64)."""
        raise NotImplementedError

    def total(self, n: int, source: Any) -> int:
        """Length of ``order`` without computing it."""
        return n


class SequentialSampler(Sampler):
    """Rows in dataset order from ``start_index``."""

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if start_index is not None and (not isinstance(start_index, int) or start_index < 0):
            raise ValueError(f"start_index must be None or an int >= 0, got {start_index!r}")
        self.start_index = start_index or 0

    def order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        return np.arange(min(self.start_index, n), n, dtype=np.int64)

    def total(self, n: int, source: Any) -> int:
        return max(0, n - self.start_index)


class RandomSampler(Sampler):
    """A new random order each epoch (``shuffle``: a :class:`Shuffle` mode, ``GLOBAL`` by default);
    with ``replacement``, ``num_samples`` independent draws."""

    def __init__(self, replacement: bool = False, num_samples: int | None = None,
                 shuffle: Shuffle = Shuffle.GLOBAL) -> None:
        super().__init__(num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement must be a bool, got {replacement!r}")
        if not isinstance(shuffle, Shuffle) or shuffle == Shuffle.FALSE:
            raise ValueError(f"RandomSampler: shuffle must be a Shuffle mode other than FALSE, got {shuffle!r}")
        self.replacement = replacement
        self.shuffle = shuffle

    def order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        if self.replacement:
            return epoch_rng(seed, epoch).integers(0, n, size=self.num_samples or n, dtype=np.int64)
        return shuffled_ids(self.shuffle, n, seed, epoch, source)

    def total(self, n: int, source: Any) -> int:
        return (self.num_samples or n) if self.replacement else n


class DistributedSampler(Sampler):
    """Shard ``shard_id`` of ``num_shards``: ``ceil(N / num_shards)`` rows, wrap-around padding."""

    def __init__(self, num_shards: int, shard_id: int, shuffle: bool = True, num_samples: int | None = None,
                 offset: int = -1) -> None:
        super().__init__(num_samples)
        if not isinstance(num_shards, int) or num_shards <= 0:
            raise ValueError(f"num_shards must be an int > 0, got {num_shards!r}")
        if not isinstance(shard_id, int) or not 0 <= shard_id < num_shards:
            raise ValueError(f"Input shard_id is not within the required interval of [0, {num_shards - 1}]. "
                             f"shard_id must be an int in [0, {num_shards}), got {shard_id!r}")
        self.shards = (num_shards, shard_id)
        self.shuffle = bool(shuffle)
        self.by_block = os.environ.get("MS_DEV_MINDRECORD_SHARD_BY_BLOCK", "").lower() in ("true", "1")

    def order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        if self.shuffle:
            return global_order(n, seed, epoch)
        return np.arange(n, dtype=np.int64)


class SubsetSampler(Sampler):
    """The given row ids, in the given order."""

    def __init__(self, indices: Iterable[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.indices = np.asarray(list(indices), dtype=np.int64)

    def _checked(self, n):
        bad = self.indices[(self.indices < 0) | (self.indices >= n)]
        if bad.size:
            raise IndexError(f"{type(self).__name__}: index {int(bad[0])} is out of range for a dataset "
                             f"of {n} rows")
        return self.indices

    def order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        return self._checked(n)

    def total(self, n: int, source: Any) -> int:
        return len(self.indices)


class SubsetRandomSampler(SubsetSampler):
    """The given row ids, in a random order each epoch."""

    def order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        return epoch_rng(seed, epoch).permutation(self._checked(n))


class PKSampler(Sampler):
    """``num_val`` rows of each class, classes read from the indexed ``class_column``.

    Classes come in ascending order of their value (shuffled with ``shuffle=True``); a class with
    fewer than ``num_val`` rows repeats its rows to fill its share.
    """

    def __init__(self, num_val: int, num_class: int | None = None, shuffle: bool = False,
                 class_column: str = "label", num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if not isinstance(num_val, int) or num_val <= 0:
            raise ValueError(f"num_val must be an int > 0, got {num_val!r}")
        if num_class is not None:
            raise NotImplementedError("PKSampler: num_class is not supported (MindSpore neither)")
        self.num_val = num_val
        self.shuffle = bool(shuffle)
        self.class_column = class_column
        self._groups = None

    def _classes(self, source):
        if self._groups is None:
            labels = np.asarray(source._class_values(self.class_column))
            values, inverse = np.unique(labels, return_inverse=True)
            self._groups = [np.flatnonzero(inverse == k).astype(np.int64) for k in range(len(values))]
        return self._groups

    def order(self, n: int, seed: int, epoch: int, source: Any) -> np.ndarray:
        groups = self._classes(source)
        rng = epoch_rng(seed, epoch)
        picks = []
        for k in (rng.permutation(len(groups)) if self.shuffle else range(len(groups))):
            rows = rng.permutation(groups[k]) if self.shuffle else groups[k]
            picks.append(np.resize(rows, self.num_val))
        return np.concatenate(picks) if picks else np.zeros(0, np.int64)

    def total(self, n: int, source: Any) -> int:
        return self.num_val * len(self._classes(source))


# --- the default order of a source -----------------------------------------------------------------



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
    return order(source._file_counts(), rng)


class DefaultOrder(Sampler):
    """Shuffle mode, then the distributed split; ``num_padded`` padded rows close the order (a global
    shuffle shuffles them with the rows, as MindSpore's does).

    Without ``num_shards`` the split follows torch.distributed when it is initialised.
    """

    def __init__(self, mode, num_shards=None, shard_id=None, num_padded=0, num_samples=None, by_block=False):
        super().__init__(num_samples)
        self.mode = mode
        self.by_block = by_block              # shards take contiguous blocks (MindSpore's strategy 2)
        self.shards = None if num_shards is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None
        self.num_padded = num_padded or 0

    def order(self, n: int, seed: int, epoch: int, source: Any) -> Ids:
        total = n + self.num_padded
        if self.num_padded and self.mode in (Shuffle.GLOBAL, Shuffle.ADAPTIVE) and total <= ADAPTIVE_LIMIT:
            # as MindSpore's global shuffle: the padded rows (ids n..) move with the rows, so a shard's
            # padded rows differ from epoch to epoch
            return global_order(total, seed, epoch)
        ids = shuffled_ids(self.mode, n, seed, epoch, source)
        if self.num_padded:
            if not isinstance(ids, np.ndarray):
                return Padded(ids, self.num_padded)
            ids = np.concatenate([ids, np.arange(n, n + self.num_padded, dtype=np.int64)])
        return ids

    def total(self, n: int, source: Any) -> int:
        return n + self.num_padded
