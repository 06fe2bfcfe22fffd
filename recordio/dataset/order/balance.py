"""Class balance: a sampler whose epochs hold each class of an indexed field in fixed proportions.

``MindDataset(path, sampler=WeightedClassSampler("label", "balanced"))`` gives every class the
same number of rows per epoch; ``class_weights={0: 1.0, 1: 4.0}`` weighs each row by its class
(as ``torch``'s ``WeightedRandomSampler`` and scikit-learn's ``class_weight`` do), so class ``c``
gets a share proportional to ``weight[c] * rows[c]``; ``"balanced"`` is ``rows / (classes *
rows[c])``. The per-epoch counts are exact (the largest-remainder apportionment of
``epoch_size``, default the dataset's rows) and the same every epoch (``counts``).

The classes, their sizes and rows come from the ``.db`` (one query per file, as MindPage's
categories: :class:`recordio.mindrecord.read.query.Categories`), never from a scan of the data; the
field must be indexed. Within a class, rows come in passes without repeats (each pass a new
permutation keyed by seed, pass and class), or as independent draws with ``replacement``; the
classes are interleaved at random. Like every sampler, it orders the epoch the same way on every
rank; ``num_shards``/``shard_id`` (or torch.distributed) split it, and resume works by position.
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.order.mix import apportion, draw, interleave
from recordio.dataset.order.sampler_chain import Sampler
from recordio.dataset.order.shards import check_shards
from recordio.errors import PipelineError

__all__ = ["WeightedClassSampler"]

_CLASS_TAG = 0xBA1A


class WeightedClassSampler(Sampler):
    """Rows of each class of the indexed ``class_column`` in fixed proportions per epoch (see the module)."""

    _takes_child = False

    def __init__(self, class_column: str = "label", class_weights: str | dict = "balanced",
                 epoch_size: int | None = None, replacement: bool = False, num_shards: int | None = None,
                 shard_id: int | None = None) -> None:

        super().__init__(None)
        check_shards(num_shards, shard_id)
        if class_weights != "balanced" and not isinstance(class_weights, dict):
            raise ValueError(f"class_weights must be 'balanced' or a dict {{class value: weight}}, got "
                             f"{class_weights!r}")
        if epoch_size is not None and (isinstance(epoch_size, bool) or not isinstance(epoch_size, int)
                                       or epoch_size < 0):
            raise ValueError(f"epoch_size must be None or an int >= 0, got {epoch_size!r}")
        self.class_column, self.class_weights = class_column, class_weights
        self.epoch_size, self.replacement = epoch_size, bool(replacement)
        self.shards = None if num_shards is None or shard_id is None else (num_shards, shard_id)
        self.auto_shard = num_shards is None
        self._plan = None

    def classes(self, source) -> tuple[list[str], list[int], list[int]]:
        """``(class names as the .db gives them, rows per class, rows per epoch)``."""
        names, categories = self._categories(source)
        return names, list(categories.counts), self._counts(source)

    def _categories(self, source):
        reader = getattr(source, "reader", None)
        if reader is None:
            raise PipelineError("WeightedClassSampler needs an indexed class column: it works with MindDataset")
        if self._plan is None or self._plan[0] != reader.files:       # computed once per dataset
            if self.class_column not in reader.index_fields:
                raise PipelineError(f"WeightedClassSampler: {self.class_column!r} is not an indexed field of "
                                    f"{reader.files[0]} (indexed: {', '.join(reader.index_fields) or 'none'}); "
                                    f"write it with add_index([{self.class_column!r}])")
            from recordio.mindrecord.read.query import Categories
            categories = Categories(reader, self.class_column)
            self._plan = (reader.files, categories.names, categories)
        return self._plan[1:]

    def _weights(self, names, sizes):
        if self.class_weights == "balanced":
            return [1.0 if n else 0.0 for n in sizes]          # share ∝ (N / (C n_c)) * n_c: equal
        given = {str(k): v for k, v in self.class_weights.items()}
        missing, unknown = sorted(set(names) - set(given)), sorted(set(given) - set(names))
        bad = [v for v in given.values() if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0]
        if missing or unknown or bad:
            raise ValueError(f"class_weights: every class of {self.class_column!r} needs a weight >= 0 "
                             f"(classes {names}; missing {missing}, unknown {unknown}, bad values {bad})")
        return [float(given[name]) * size for name, size in zip(names, sizes)]

    def _counts(self, source):
        names, categories = self._categories(source)
        shares = self._weights(names, categories.counts)
        if not sum(shares) > 0:
            raise ValueError(f"class_weights: the weights of {self.class_column!r}'s classes sum to 0")
        total = sum(categories.counts) if self.epoch_size is None else self.epoch_size
        return apportion(total, shares).tolist()

    def order(self, n: int, seed: int, epoch: int, source) -> np.ndarray:
        _, categories = self._categories(source)
        counts = self._counts(source)
        labels = interleave(counts, seed, epoch)
        out = np.empty(len(labels), np.int64)
        for c, count in enumerate(counts):
            if count:
                rows = categories.rows(c)
                picks, _ = draw(len(rows), count, seed, epoch, _CLASS_TAG + c, True, self.replacement)
                out[labels == c] = rows[picks]
        return out

    def total(self, n: int, source) -> int:
        return int(sum(self._counts(source)))
