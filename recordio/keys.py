"""Keyed randomness: every random draw is a pure function of where it happens.

A random op never owns a generator. Each draw is computed from the key

    (seed, epoch, row, op, draw)

* ``seed``  – ``config.get_seed()`` when the pipeline was iterated,
* ``epoch`` – the data epoch (pass over the source, counting ``repeat``),
* ``row``   – the row's id in its source (the sample index the sampler produced),
* ``op``    – a stable id of the op: derived from its position in the pipeline
              definition (map node, op index, nested Compose index),
* ``draw``  – which draw inside the op (0, 1, 2, ...).

The words are mixed with SplitMix64 into 64 random bits, evaluated vectorised
in numpy for a whole batch at once, and for one sample (a host op) by the
compiled part ``recordio._keys`` -- or, when it is not built, with Python ints:
the same bits either way. A row therefore gets the same augmentation
whatever the number or kind of workers, the batch size, the prefetch depth,
whether the op runs on the host or is offloaded to a device, and after a
resume from a ``state_dict``.

Writing your own random op: call :func:`current_keys` inside ``__call__`` and
draw from the :class:`Keys` it returns::

    class RandomInvert:
        def __call__(self, img):
            if current_keys().uniform(0)[0] < 0.5:
                return 255 - img
            return img

Outside a pipeline (calling an op eagerly), :func:`current_keys` returns keys
from a process-wide counter seeded with ``config.get_seed()``, so eager calls
are random but reproducible per process.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from recordio import compiled

__all__ = ["Keys", "current_keys", "current_row", "hash_words", "op_scope", "row_scope", "splitmix64", "sub_op"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK = (1 << 64) - 1


def splitmix64(x):
    """SplitMix64's finaliser, the one mixer of recordio's randomness (keys, keyed permutations): on a
    Python int in ``[0, 2**64)``, or on a uint64 array (wrapping arithmetic) -- the same bits."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def _u64(value):
    """Integer words as uint64 (two's complement for negatives)."""
    return np.asarray(value, dtype=np.int64).astype(np.uint64)


def _scalar_word(w):
    """``w`` as an int when it is one integer word (int, numpy integer, or a 0-d/1-element 1-d integer array)."""
    if isinstance(w, np.ndarray):
        if w.size != 1 or w.ndim > 1 or w.dtype.kind not in "iu":
            return None
        w = w.reshape(())[()]
    if isinstance(w, (int, np.integer)) and -2 ** 63 <= w < 2 ** 63:
        return int(w)
    return None


_START = 0x243F6A8885A308D3
_compiled = compiled.load("recordio._keys")        # the one-sample folds in C; None: the Python ints below


def _fold_int(h, w):
    return splitmix64((h + 0x9E3779B97F4A7C15 + (w & _MASK)) & _MASK)


def _fold_draws(h, words):
    """The int state ``h`` after folding draw words (each ``int(w)``; OverflowError outside int64)."""
    if _compiled is not None:
        return _compiled.fold(h, words)
    for w in words:
        w = int(w)
        if not -2 ** 63 <= w < 2 ** 63:
            raise OverflowError(f"draw word {w} is outside int64")
        h = _fold_int(h, w)
    return h


def _fold_keys(h, words):
    """The int state ``h`` after folding key words (each ``int(w)``, taken modulo 2**64)."""
    if _compiled is not None:
        return _compiled.fold_wrapping(h, words)
    for w in words:
        h = _fold_int(h, int(w))
    return h


def _fold_small(h, words):
    """Fold array words (broadcast together, at most ``_SMALL`` values) into the int state ``h``,
    value by value with Python ints; the bits of ``hash_words``, shaped like its result."""
    arrays = np.broadcast_arrays(np.zeros(1, np.int64), *(np.asarray(w) for w in words))
    columns = [a.ravel().tolist() for a in arrays[1:]]
    out = [_fold_keys(h, ws) for ws in zip(*columns)]
    return np.array(out, np.uint64).reshape(arrays[0].shape)


_SMALL = 64


def hash_words(*words: int | np.ndarray) -> np.ndarray:
    """Mix integer words (scalars or equal-length arrays) into uint64 random bits.

    The leading scalar words are folded one sample at a time (compiled, or Python ints: the host draws
    one sample at a time, and this is the hot path); the rest, if any, in numpy. All give the same bits.
    """
    lead: list[int] = []
    while len(lead) < len(words) and (w := _scalar_word(words[len(lead)])) is not None:
        lead.append(w)
    return _fold_rest(_fold_draws(_START, lead), words[len(lead):])


def _fold_rest(h, words):
    h = np.array([h], np.uint64)
    with np.errstate(over="ignore"):
        for w in words:
            h = splitmix64(h + _GOLDEN + _u64(w))
        return h


@functools.lru_cache(maxsize=4096)
def _derive_uid(parent, child):
    return _fold_draws(_START, (parent, child)) >> 1


def derive_uid(parent: int, child: int) -> int:
    """A stable op id for ``child`` nested inside op ``parent`` (e.g. a Compose member)."""
    if isinstance(parent, (int, np.integer)) and isinstance(child, (int, np.integer)):
        return _derive_uid(int(parent), int(child))       # a pure function, called per row and op
    return int(hash_words(parent, child)[0] >> np.uint64(1))


@functools.lru_cache(maxsize=256)
def _row_state(seed, epoch, row):
    """The hash state after (seed, epoch, row): shared by every op of a row (a row's ops run one after
    the other, so a small cache holds the rows in flight)."""
    return _fold_keys(_START, (seed, epoch, row))


def _key_word(name, value):
    """``int(value)``, a word of a sample's keys: an int64 (one wrapped modulo 2**64 would silently
    draw another key's values on the one-sample path; the batched path could not hold it)."""
    value = int(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise OverflowError(f"keys: {name} {value} is outside int64")
    return value


class Keys:
    """The keys of ``B`` samples for one random op.

    ``rows`` are the samples' row ids (an int64 array of length B); every
    method returns one value per sample, so host ops (B=1) and batched device
    ops draw identical parameters.
    """

    __slots__ = ("seed", "epoch", "_rows", "_row", "op", "_prefix")

    def __init__(self, seed: int, epoch: int, rows: Any, op: int) -> None:
        self.seed = _key_word("seed", seed)
        self.epoch = _key_word("epoch", epoch)
        self._rows: np.ndarray | None
        self._row: int | None
        if type(rows) is int:                                  # one row (a host op): its array when asked
            self._rows, self._row = None, _key_word("row", rows)
        else:
            self._rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
            self._row = int(self._rows[0]) if len(self._rows) == 1 else None
        self.op = _key_word("op", op)
        self._prefix = None

    @property
    def rows(self) -> np.ndarray:
        """The samples' row ids, an int64 array of length B."""
        if self._rows is None:
            self._rows = np.array([self._row], np.int64)
        return self._rows

    def __len__(self):
        return 1 if self._rows is None else len(self._rows)

    def __repr__(self):
        return f"Keys(seed={self.seed}, epoch={self.epoch}, rows={self.rows.tolist()}, op={self.op})"

    def bits(self, draw: int, *more: int) -> np.ndarray:
        """64 random bits per sample for draw number ``draw`` (and optional sub-draws)."""
        if len(self) != 1:
            return hash_words(self.seed, self.epoch, self.rows, self.op, draw, *more)
        words = (draw,) + more
        h = self._one_row()
        if all(type(w) is int for w in words):             # one sample, scalar draws: Python ints only
            return np.array([self._scalar_bits(words)], np.uint64)
        if all(np.size(w) <= _SMALL for w in words):
            return _fold_small(h, words)
        return _fold_rest(h, words)

    def _one_row(self):
        """The hash state after (seed, epoch, row, op) for one sample: shared by all its draws."""
        if self._prefix is None:
            self._prefix = _fold_keys(_row_state(self.seed, self.epoch, self._row), (self.op,))
        return self._prefix

    def _scalar_bits(self, words):
        return _fold_draws(self._one_row(), words)

    def unit_floats(self, draws: Sequence[tuple]) -> list[float]:
        """For one sample: Python floats in [0, 1), one per tuple of draw words in ``draws`` (the
        values of ``uniform(*words)``, without numpy's per-call cost; for ops that draw per row)."""
        if len(self) != 1:
            raise ValueError(f"unit_floats draws for one sample, these keys hold {len(self)}")
        if _compiled is not None:
            return _compiled.unit_floats(self._one_row(), draws)
        return [(self._scalar_bits(words) >> 11) * (1.0 / (1 << 53)) for words in draws]

    def uniform(self, draw: int, low: Any = 0.0, high: Any = 1.0, *more: int) -> np.ndarray:
        """Floats in ``[low, high)``, one per sample."""
        if (len(self) == 1 and type(draw) is int and all(type(w) is int for w in more)
                and isinstance(low, (int, float)) and isinstance(high, (int, float))):
            u = (self._scalar_bits((draw,) + more) >> 11) * (1.0 / (1 << 53))     # the same double operations
            return np.array([low + (high - low) * u])
        u = (self.bits(draw, *more) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
        return low + (high - low) * u

    def bernoulli(self, draw: int, p: float) -> np.ndarray:
        """Booleans that are True with probability ``p``."""
        return self.uniform(draw) < p

    def integers(self, draw: int, low: Any, high: Any) -> np.ndarray:
        """Integers in ``[low, high)`` (``high`` exclusive), one per sample."""
        span = np.asarray(high, dtype=np.int64) - np.asarray(low, dtype=np.int64)
        if np.any(span <= 0):
            raise ValueError(f"integers: empty range [{low}, {high})")
        return low + np.floor(self.uniform(draw) * span).astype(np.int64)

    def permutation(self, draw: int, n: int) -> np.ndarray:
        """A random permutation of ``range(n)`` per sample: shape (B, n)."""
        u = np.stack([self.uniform(draw, 0.0, 1.0, i) for i in range(n)], axis=1)
        return np.argsort(u, axis=1, kind="stable")


_ROW: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("recordio_row_key", default=None)  # (seed, epoch, row)
_OP: contextvars.ContextVar[int | None] = contextvars.ContextVar("recordio_op_key", default=None)      # op uid
_EAGER = itertools.count()


class _Scope:
    """Sets a context variable for a ``with`` block (a class, not a generator: the pipeline enters
    one per row and op)."""

    __slots__ = ("_var", "_value", "_token")

    def __init__(self, var, value):
        self._var, self._value = var, value

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, *exc) -> None:
        self._var.reset(self._token)


def row_scope(seed: int, epoch: int, row: int) -> _Scope:
    """Run the ops of one row under ``(seed, epoch, row)``; used by the pipeline."""
    return _Scope(_ROW, (int(seed), int(epoch), int(row)))


def op_scope(uid: int) -> _Scope:
    """Run one op under the op id ``uid``; used by the pipeline and by Compose."""
    return _Scope(_OP, int(uid))


def sub_op(index: int) -> Any:
    """An op-scope for member ``index`` of a composite op (nested uid)."""
    parent = _OP.get()
    return op_scope(derive_uid(0 if parent is None else parent, index))


def current_row() -> tuple | None:
    """``(seed, epoch, row)`` of the row the calling thread's ops run under (:func:`row_scope`), or None
    outside a pipeline (what an error message names as the row)."""
    return _ROW.get()


def current_keys() -> Keys:
    """Keys (B=1) of the row and op being processed by the calling thread."""
    row = _ROW.get()
    op = _OP.get()
    if row is None:
        from recordio.config import get_seed

        row = (get_seed(), -1, next(_EAGER))
    return Keys(row[0], row[1], row[2], 0 if op is None else op)
