"""The split of an epoch between shards, DataLoader workers and a resume.

Every shard (rank, DataLoader worker) computes the same *global order* of the epoch from
``(seed, epoch)`` alone (``recordio.dataset.order.shuffle``), then takes its share of it: shard
``s`` of ``W`` takes the positions ``s, s + W, s + 2W, ...`` of the global order. Each shard gets
``ceil(T / W)`` rows; positions past the end wrap around to the start (the only repeats, at most
``W - 1`` rows). The split happens *after* the shuffle, so all ranks agree on the permutation and
together see every row.

Resume: after every shard delivered ``k`` rows, the first ``k * W`` positions of the global order
are consumed. A resumed epoch with ``c`` positions consumed splits the remaining ``T - c``
positions the same way, whatever the new ``W``.
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.order.permutation import Positions

__all__ = ["block_positions", "check_shards", "consumed_after", "consumed_chunks", "iter_chunks", "shard_positions",
           "shard_size", "worker_blocks"]


def check_shards(num_shards, shard_id):
    """A source's ``num_shards``/``shard_id`` arguments: both or neither, ``0 <= shard_id < num_shards``."""
    if (num_shards is None) != (shard_id is None):
        raise ValueError("num_shards and shard_id must be given together")
    if num_shards is None:
        return
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards <= 0:
        raise ValueError(f"num_shards must be an int > 0, got {num_shards!r}")
    if isinstance(shard_id, bool) or not isinstance(shard_id, int) or not 0 <= shard_id < num_shards:
        raise ValueError(f"Input shard_id is not within the required interval of [0, {num_shards - 1}]. "
                         f"shard_id must be an int in [0, {num_shards}), got {shard_id!r}")


def shard_size(total, num_shards, start=0):
    """Rows each shard reads of the ``total - start`` positions left: ``ceil((total - start) / num_shards)``."""
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
