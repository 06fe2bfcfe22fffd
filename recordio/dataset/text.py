"""TextFileDataset: the lines of text files, one row each (MindSpore's ``TextFileDataset``)."""

import glob
import os

import numpy as np

from recordio.dataset.generator import GeneratorDataset
from recordio.dataset.order.ms_text import TextOrder
from recordio.dataset.order.shards import check_shards
from recordio.dataset.order.shuffle import Shuffle, shuffle_mode

__all__ = ["TextFileDataset"]


def _files(dataset_files):
    patterns = [dataset_files] if isinstance(dataset_files, (str, os.PathLike)) else list(dataset_files)
    found = []
    for pattern in map(os.fspath, patterns):
        matches = sorted(glob.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"TextFileDataset: no file matches {pattern!r}")
        found.extend(matches)
    return sorted(found)


def _lines(files):
    """Every non-empty line of ``files`` in order, without its ``\\n`` (a ``\\r`` before it stays, as
    in MindSpore), and the number of them in each file."""
    out, counts = [], []
    for path in files:
        with open(path, encoding="utf-8", newline="") as f:
            lines = [line for line in (raw.removesuffix("\n") for raw in f) if line]
        out.extend(lines)
        counts.append(len(lines))
    return out, counts


class _Lines:
    def __init__(self, lines):
        self.lines = lines

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return (np.array(self.lines[i]),)


class TextFileDataset(GeneratorDataset):
    """One ``text`` column (a 0-d ``str`` array) per non-empty line of ``dataset_files`` (a path, a
    glob pattern or a list of them; files sorted by name). ``shuffle``: as MindSpore's (``GLOBAL``
    by default, ``False``/``Shuffle.FALSE`` for file order, which MindSpore gives with one worker:
    its workers interleave files); ``num_shards``/``shard_id``/``num_samples`` as for the other
    sources; ``cache`` is not supported. Under ``config.set_order_mode("mindspore")`` the order is
    MindSpore 2.10's for every shuffle, shard and ``num_parallel_workers`` (``ms_text``)."""

    _thread_bound = False         # lines of files: any thread may read on

    def __init__(self, dataset_files, num_samples=None, num_parallel_workers=None, shuffle=Shuffle.GLOBAL,
                 num_shards=None, shard_id=None, cache=None):
        if cache is not None:
            raise NotImplementedError("TextFileDataset: cache is not supported by recordio")
        self.dataset_files = _files(dataset_files)
        lines, counts = _lines(self.dataset_files)
        check_shards(num_shards, shard_id)
        order = TextOrder(shuffle_mode(shuffle), num_shards, shard_id, num_samples, counts, num_parallel_workers)
        super().__init__(_Lines(lines), ["text"], sampler=order, python_multiprocessing=False)
        self.num_samples = num_samples
