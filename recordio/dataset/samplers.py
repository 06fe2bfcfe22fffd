"""MindSpore's samplers. A sampler gives the global order of an epoch; a distributed one also
says which shard this process is (see :mod:`recordio.dataset.order` for the split).

Randomness comes from ``(config seed, epoch)`` only, so every rank draws the same order and each
epoch reshuffles deterministically.
"""

import numpy as np

from recordio.dataset.order import epoch_rng

__all__ = ["DistributedSampler", "PKSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "SubsetSampler"]


def _check_num_samples(num_samples):
    if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                    or num_samples < 0):
        raise ValueError(f"num_samples must be None or an int >= 0, got {num_samples!r}")
    return num_samples or None


class Sampler:
    """Base class: ``order(n, seed, epoch, source)`` -> row ids of the epoch, in order."""

    shards = None        # (num_shards, shard_id) for a distributed sampler

    def __init__(self, num_samples=None):
        self.num_samples = _check_num_samples(num_samples)

    def order(self, n, seed, epoch, source):
        raise NotImplementedError

    def total(self, n, source):
        """Length of ``order`` without computing it."""
        return n


class SequentialSampler(Sampler):
    """Rows in dataset order from ``start_index``."""

    def __init__(self, start_index=None, num_samples=None):
        super().__init__(num_samples)
        if start_index is not None and (not isinstance(start_index, int) or start_index < 0):
            raise ValueError(f"start_index must be None or an int >= 0, got {start_index!r}")
        self.start_index = start_index or 0

    def order(self, n, seed, epoch, source):
        return np.arange(min(self.start_index, n), n, dtype=np.int64)

    def total(self, n, source):
        return max(0, n - self.start_index)


class RandomSampler(Sampler):
    """A new random order each epoch; with ``replacement``, ``num_samples`` independent draws."""

    def __init__(self, replacement=False, num_samples=None):
        super().__init__(num_samples)
        self.replacement = bool(replacement)

    def order(self, n, seed, epoch, source):
        rng = epoch_rng(seed, epoch)
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples or n, dtype=np.int64)
        return rng.permutation(n).astype(np.int64)

    def total(self, n, source):
        return (self.num_samples or n) if self.replacement else n


class DistributedSampler(Sampler):
    """Shard ``shard_id`` of ``num_shards``: ``ceil(N / num_shards)`` rows, wrap-around padding."""

    def __init__(self, num_shards, shard_id, shuffle=True, num_samples=None, offset=-1):
        super().__init__(num_samples)
        if not isinstance(num_shards, int) or num_shards <= 0:
            raise ValueError(f"num_shards must be an int > 0, got {num_shards!r}")
        if not isinstance(shard_id, int) or not 0 <= shard_id < num_shards:
            raise ValueError(f"shard_id must be an int in [0, {num_shards}), got {shard_id!r}")
        self.shards = (num_shards, shard_id)
        self.shuffle = bool(shuffle)

    def order(self, n, seed, epoch, source):
        if self.shuffle:
            return epoch_rng(seed, epoch).permutation(n).astype(np.int64)
        return np.arange(n, dtype=np.int64)


class SubsetSampler(Sampler):
    """The given row ids, in the given order."""

    def __init__(self, indices, num_samples=None):
        super().__init__(num_samples)
        self.indices = np.asarray(list(indices), dtype=np.int64)

    def _checked(self, n):
        bad = self.indices[(self.indices < 0) | (self.indices >= n)]
        if bad.size:
            raise IndexError(f"{type(self).__name__}: index {int(bad[0])} is out of range for a dataset "
                             f"of {n} rows")
        return self.indices

    def order(self, n, seed, epoch, source):
        return self._checked(n)

    def total(self, n, source):
        return len(self.indices)


class SubsetRandomSampler(SubsetSampler):
    """The given row ids, in a random order each epoch."""

    def order(self, n, seed, epoch, source):
        return epoch_rng(seed, epoch).permutation(self._checked(n))


class PKSampler(Sampler):
    """``num_val`` rows of each class, classes read from the indexed ``class_column``.

    Classes come in ascending order of their value (shuffled with ``shuffle=True``); a class with
    fewer than ``num_val`` rows repeats its rows to fill its share.
    """

    def __init__(self, num_val, num_class=None, shuffle=False, class_column="label", num_samples=None):
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

    def order(self, n, seed, epoch, source):
        groups = self._classes(source)
        rng = epoch_rng(seed, epoch)
        picks = []
        for k in (rng.permutation(len(groups)) if self.shuffle else range(len(groups))):
            rows = rng.permutation(groups[k]) if self.shuffle else groups[k]
            picks.append(np.resize(rows, self.num_val))
        return np.concatenate(picks) if picks else np.zeros(0, np.int64)

    def total(self, n, source):
        return self.num_val * len(self._classes(source))
