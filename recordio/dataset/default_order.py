"""The sampler a source builds from its ``shuffle``/``num_shards``/``shard_id``/``num_padded``."""

import numpy as np

from recordio.dataset.order import Shuffle, epoch_rng, files_order, infile_order
from recordio.dataset.samplers import Sampler

__all__ = ["DefaultOrder", "shuffle_mode"]


def shuffle_mode(shuffle, default=Shuffle.GLOBAL):
    """``shuffle`` argument -> a :class:`Shuffle` member or ``None`` (no shuffle)."""
    if shuffle is None:
        return default
    if shuffle is True:
        return Shuffle.GLOBAL
    if shuffle is False:
        return None
    if isinstance(shuffle, Shuffle):
        return shuffle
    raise ValueError(f"shuffle must be None, a bool or a Shuffle member (GLOBAL, FILES, INFILE), "
                     f"got {shuffle!r}")


class DefaultOrder(Sampler):
    """Shuffle mode, then the distributed split; ``num_padded`` padded rows close the order.

    Without ``num_shards`` the split follows torch.distributed when it is initialised.
    """

    def __init__(self, mode, num_shards=None, shard_id=None, num_padded=0, num_samples=None):
        super().__init__(num_samples)
        self.mode = mode
        self.shards = None if num_shards is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None
        self.num_padded = num_padded or 0

    def order(self, n, seed, epoch, source):
        if self.mode is None:
            ids = np.arange(n, dtype=np.int64)
        elif self.mode == Shuffle.GLOBAL:
            ids = epoch_rng(seed, epoch).permutation(n).astype(np.int64)
        elif self.mode == Shuffle.FILES:
            ids = files_order(source._file_counts(), epoch_rng(seed, epoch))
        else:
            ids = infile_order(source._file_counts(), epoch_rng(seed, epoch))
        if self.num_padded:
            ids = np.concatenate([ids, np.arange(n, n + self.num_padded, dtype=np.int64)])
        return ids

    def total(self, n, source):
        return n + self.num_padded
