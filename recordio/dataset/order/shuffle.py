"""The order of an epoch: shuffle modes and the split between shards.

A sampler (``recordio.dataset.order.samplers``) gives the global order of an epoch (``order(n, seed,
epoch, source)``); a distributed one also says which shard this process is. ``DefaultOrder`` is the
sampler a source builds from its ``shuffle``/``num_shards``/``shard_id``/``num_padded`` arguments.
Randomness comes from ``(config seed, epoch)`` only, so every rank draws the same order and each
epoch reshuffles deterministically.

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

import numpy as np

from recordio.dataset.order.permutation import KeyedPermutation, LazyIds, Positions
from recordio.keys import hash_words

__all__ = ["Shuffle", "consumed_after", "epoch_rng", "files_order",
           "global_order", "infile_order", "shard_positions", "shuffle_mode", "ORDER_VERSION", "order_version", "iter_chunks",
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
    return order(source._file_counts(), rng)

