"""The order of an epoch and its split between shards.

Every shard (rank, DataLoader worker) computes the same *global order* of the epoch from
``(seed, epoch)`` alone, then takes its share of it: shard ``s`` of ``W`` takes the positions
``s, s + W, s + 2W, ...`` of the global order. Each shard gets ``ceil(T / W)`` rows; positions past
the end wrap around to the start (the only repeats, at most ``W - 1`` rows). The split happens
*after* the shuffle, so all ranks agree on the permutation and together see every row.

Resume: after every shard delivered ``k`` rows, the first ``k * W`` positions of the global order
are consumed. A resumed epoch with ``c`` positions consumed splits the remaining ``T - c``
positions the same way, whatever the new ``W``.
"""

import enum

import numpy as np

from recordio.keys import hash_words

__all__ = ["Shuffle", "consumed_after", "epoch_rng", "files_order", "infile_order", "shard_positions"]

_SOURCE_TAG = 0x5EED_0F_0DE5


class Shuffle(str, enum.Enum):
    """MindDataset's shuffle modes (``True`` means ``GLOBAL``)."""

    GLOBAL = "global"
    FILES = "files"
    INFILE = "infile"


def epoch_rng(seed, epoch, tag=_SOURCE_TAG):
    """A numpy generator that is a pure function of ``(seed, epoch, tag)``."""
    return np.random.Generator(np.random.PCG64(int(hash_words(seed, epoch, tag)[0])))


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


def shard_positions(total, num_shards, shard_id, start=0):
    """Positions of the global order shard ``shard_id`` reads, after ``start`` were consumed."""
    remaining = total - start
    if remaining <= 0:
        return np.zeros(0, np.int64)
    k = np.arange(shard_size(total, num_shards, start), dtype=np.int64)
    return start + (shard_id + num_shards * k) % remaining


def consumed_after(start, num_shards, delivered, total):
    """Global positions consumed once every shard delivered ``delivered`` rows."""
    return min(total, start + num_shards * delivered)
