"""PaddedDataset: filler rows given as dicts (MindSpore's ``PaddedDataset``).

Mainly concatenated after a dataset so that its rows split evenly over shards
(``(ds + PaddedDataset(...)).use_sampler(DistributedSampler(n, s, shuffle=False))``).
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.generator import GeneratorDataset
from recordio.errors import PipelineError, type_check

__all__ = ["PaddedDataset"]


class _PaddedSource:
    """Random access to the samples, one tuple of values per sample in the first sample's key order."""

    def __init__(self, samples):
        self.samples = samples
        self.column_names = list(samples[0])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        sample = self.samples[index]
        if not isinstance(sample, dict) or set(sample) != set(self.column_names):
            found = sorted(sample) if isinstance(sample, dict) else type(sample).__name__
            raise PipelineError(f"PaddedDataset: padded_samples[{index}] has keys {found}, expected the keys of "
                                f"padded_samples[0]: {self.column_names}")
        return tuple(_value(sample[name]) for name in self.column_names)


def _value(value):
    """A sample's value as MindSpore gives it (lists and numbers as numpy arrays; bytes and str kept)."""
    if isinstance(value, (list, tuple, int, float, bool)):
        return np.array(value)
    return value


class PaddedDataset(GeneratorDataset):
    """Rows from ``padded_samples``, a non-empty list of dicts with the same keys; the columns are the
    first dict's keys. Read in order; a sampler or ``use_sampler`` may reorder or shard it, and a
    concatenation's ``use_sampler`` shards the whole."""

    def __init__(self, padded_samples: list[dict]) -> None:
        if not padded_samples:
            raise ValueError("padded_samples cannot be empty.")
        type_check(padded_samples, (list,), "padded_samples")
        type_check(padded_samples[0], (dict,), "padded_element")
        source = _PaddedSource(padded_samples)
        super().__init__(source, column_names=source.column_names, shuffle=False)
        self.padded_samples = padded_samples
