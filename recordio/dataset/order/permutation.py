"""A keyed permutation of ``[0, n)`` in O(1) memory: a Feistel network with cycle walking.

``KeyedPermutation(n, key)[i]`` is the row at position ``i`` of a shuffled epoch. Nothing of size
``n`` is stored: a position is enciphered by a balanced Feistel network of :data:`ROUNDS` rounds
over ``2 * half`` bits (the smallest even width holding ``n - 1``, so the domain is below ``4 n``),
each round function a SplitMix64 finaliser of the half-block and a round key; a value that lands
outside ``[0, n)`` is enciphered again (cycle walking) until it lands inside, which keeps the map
a bijection on ``[0, n)``. Everything is vectorised over numpy arrays of positions; the compiled
codec module runs the same network in C (``_codec.permute``, without the GIL) where it is built.

Positions are looked up in any order and any number at a time, so an epoch can resume at any
position, shards can take every ``W``-th one and workers blocks of them, with no table per process.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from recordio.keys import hash_words, splitmix64
from recordio.mindrecord import codec

__all__ = ["KeyedPermutation", "LazyIds", "Padded", "Picked", "Positions", "ROUNDS", "pick"]

ROUNDS = 6
_CHUNK = 1 << 16


class _Lazy:
    """A read-only int64 sequence computed from positions on demand (``at``)."""

    n = 0

    def __len__(self) -> int:
        return self.n

    def at(self, positions) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, item):
        if isinstance(item, slice):
            return self.at(np.arange(*item.indices(self.n), dtype=np.int64))
        if isinstance(item, (int, np.integer)):
            i = int(item) + (self.n if item < 0 else 0)
            if not 0 <= i < self.n:
                raise IndexError(f"position {item} is out of range for {self.n} rows")
            return int(self.at(np.array([i]))[0])
        idx = np.asarray(item, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise IndexError(f"positions out of range for {self.n} rows")
        return self.at(idx)

    def __iter__(self) -> Iterator[int]:
        for start in range(0, self.n, _CHUNK):
            yield from self[start:start + _CHUNK].tolist()

    def __array__(self, dtype=None, copy=None):
        return self.at(np.arange(self.n, dtype=np.int64)).astype(dtype or np.int64)

    def tolist(self) -> list:
        return self.__array__().tolist()


LazyIds = _Lazy            # what a sampler's ``order`` may return instead of an array


class KeyedPermutation(_Lazy):
    """The bijection of ``[0, n)`` keyed by ``key`` (an int); behaves as a read-only int64 sequence:
    ``len``, ``p[i]``, ``p[a:b]``, ``p[array]`` and chunked iteration."""

    def __init__(self, n: int, key: int) -> None:
        if n < 0:
            raise ValueError(f"a permutation needs n >= 0, got {n}")
        self.n, self.key = int(n), int(key)
        self.half = max(1, ((self.n - 1).bit_length() + 1) // 2) if self.n > 1 else 1
        self._mask = np.uint64((1 << self.half) - 1)
        words = (self.key & (2 ** 63 - 1), self.key >> 63)          # hash_words takes int64 words
        self._keys = [np.uint64(int(hash_words(*words, r)[0])) for r in range(ROUNDS)]

    def _encipher(self, x):
        half = np.uint64(self.half)
        left, right = x >> half, x & self._mask
        for k in self._keys:                     # uint64 arrays wrap silently
            left, right = right, left ^ (splitmix64(right ^ k) & self._mask)
        return (left << half) | right

    def at(self, positions) -> np.ndarray:
        """Rows at ``positions`` (an int array in ``[0, n)``), as int64."""
        x = np.asarray(positions, dtype=np.int64)
        if self.n <= 1:
            return x.copy()
        out = np.empty(x.shape, np.int64)
        if codec.permute(np.ascontiguousarray(x).reshape(-1), out.reshape(-1), self.n, self.half,
                         tuple(int(k) for k in self._keys)):
            return out
        y = self._encipher(x.astype(np.uint64))
        outside = np.flatnonzero(y >= np.uint64(self.n))
        while outside.size:                      # cycle walking: at most a few rounds, domain < 4 n
            y[outside] = self._encipher(y[outside])
            outside = outside[y[outside] >= np.uint64(self.n)]
        return y.astype(np.int64)

    def __repr__(self):
        return f"KeyedPermutation(n={self.n})"


class Padded(_Lazy):
    """``order`` followed by the padded rows ``n .. n + padded - 1`` (MindSpore's ``num_padded``)."""

    def __init__(self, order, padded):
        self.order, self.base, self.n = order, len(order), len(order) + padded

    def at(self, positions):
        x = np.asarray(positions, dtype=np.int64)
        inside = x < self.base
        out = x.copy()
        out[inside] = self.order.at(x[inside])
        return out


class Picked(_Lazy):
    """``order[positions]``, computed a slice at a time."""

    WINDOW = 4096         # rows computed at once when read by slices (one numpy pass, not one per chunk)

    def __init__(self, order, positions):
        self.order, self.positions, self.n = order, positions, len(positions)
        self._window = (0, np.zeros(0, np.int64))

    def at(self, positions):
        return self.order.at(self.positions[np.asarray(positions, dtype=np.int64)])

    def __getitem__(self, item):
        if isinstance(item, slice) and item.step in (None, 1):
            a, b, _ = item.indices(self.n)
            first, rows = self._window
            if not (first <= a and b <= first + len(rows)):
                end = max(b, min(self.n, a + self.WINDOW))
                first, rows = a, self.order.at(self.positions[a:end])
                self._window = (first, rows)
            return rows[a - first:b - first].copy()
        return super().__getitem__(item)


class Positions(_Lazy):
    """The positions ``(a + b * (k0 + j)) % m + c`` for ``j`` in ``[0, count)``: a shard's share of an
    epoch's global order (``shards.shard_positions``) without an array of them."""

    def __init__(self, a, b, m, c, count, k0=0):
        self.a, self.b, self.m, self.c, self.n, self.k0 = a, b, max(m, 1), c, max(count, 0), k0

    def at(self, positions):
        k = self.k0 + np.asarray(positions, dtype=np.int64)
        return (self.a + self.b * k) % self.m + self.c

    def __getitem__(self, item):
        if isinstance(item, slice) and item.step in (None, 1):
            a, b, _ = item.indices(self.n)
            return Positions(self.a, self.b, self.m, self.c, max(0, b - a), self.k0 + a)
        return super().__getitem__(item)


def pick(order, positions):
    """``order[positions]``: an array for an array order, a :class:`Picked` for a lazy one."""
    if isinstance(order, np.ndarray):
        return order[np.asarray(positions, dtype=np.int64)]
    return Picked(order, positions)
