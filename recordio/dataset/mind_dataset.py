"""MindDataset: a MindRecord dataset (one shard names the whole dataset, or a list of files).

Rows are read with :class:`recordio.mindrecord.read.reader.FileReader` in chunks (``__getitems__``). When
``columns_list`` names only indexed scalar fields, the values come from the ``.db`` index
(``FileReader.index_column``, which checks them against the data file and falls back to it when
the ``.db`` is foreign or cut strings at NUL), so no data page is read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recordio import config
from recordio.config import get_bytes_form
from recordio.dataset.context import RunContext
from recordio.dataset.order.shuffle import Shuffle, shuffle_mode
from recordio.dataset.order.sampler_chain import Sampler
from recordio.dataset.order.samplers import DefaultOrder
from recordio.dataset.order.shards import check_shards
from recordio.dataset.source import SampledSource, check_sampler_args
from recordio.dataset.values import to_numpy
from recordio.errors import PipelineError, RowRangeError, SchemaError

if TYPE_CHECKING:
    from recordio.mindrecord.read.reader import FileReader

__all__ = ["MindDataset"]

_SCALARS = {"int32", "int64", "float32", "float64", "string"}


def _padding_args(padded_sample, num_padded, num_shards, columns_list):
    """The checks and messages of MindSpore 2.10, in its order."""
    if padded_sample is None:
        if num_padded:
            raise PipelineError("num_padded is specified but padded_sample is not.")
        return 0
    if num_padded is None:
        raise PipelineError("padded_sample is specified and requires num_padded as well.")
    if isinstance(num_padded, bool) or not isinstance(num_padded, int) or num_padded < 0:
        raise PipelineError(f"num_padded is invalid, num_padded={num_padded!r}: an int >= 0 is expected.")
    if num_shards is None:
        raise PipelineError("padded_sample needs num_shards and shard_id (padding evens out shards)")
    if columns_list is None:
        raise PipelineError("padded_sample is specified and requires columns_list as well.")
    if not isinstance(padded_sample, dict) or not set(columns_list) <= set(padded_sample):
        found = sorted(padded_sample) if isinstance(padded_sample, dict) else padded_sample
        raise PipelineError(f"padded_sample cannot match columns_list. padded_sample must be a dict with (at "
                            f"least) the columns {sorted(columns_list)}, got {found}")   # more keys are fine
    return num_padded


def _cast_padded(field, value, name):
    if field.dtype is None or isinstance(value, (bytes, str)):
        return value
    try:
        cast = np.asarray(value, dtype=field.dtype.newbyteorder("="))
    except (TypeError, ValueError, OverflowError) as exc:
        raise PipelineError(f"padded_sample[{name!r}]: expected {field.type} values, found {value!r} ({exc})") from None
    return cast if field.shape is not None else cast[()]


class MindDataset(SampledSource):
    """A MindRecord dataset as a pipeline source (MindSpore's ``MindDataset``).

    Args:
        dataset_files: one data file (its sibling shards are read too) or a list of files.
        columns_list: the fields to read (default: all).
        num_parallel_workers: accepted for compatibility (rows are read in the pipeline thread).
        shuffle: ``None``/``True``/``Shuffle.ADAPTIVE`` (default), ``Shuffle.GLOBAL``, ``Shuffle.PARTIAL``,
            ``Shuffle.FILES``, ``Shuffle.INFILE`` or ``False``; every epoch reshuffles from
            ``config.get_seed()``.
        num_shards, shard_id: this process's share: ``ceil(N / num_shards)`` rows taken after the
            shuffle (torch.distributed's rank and world size when not given), every ``num_shards``-th
            position, or, with ``shard_by_block=True`` (or ``MS_DEV_MINDRECORD_SHARD_BY_BLOCK=true``,
            MindSpore's switch), a contiguous block of positions (better locality).
        sampler: a sampler instead of ``shuffle``/``num_shards``.
        padded_sample, num_padded: rows appended so that the shards divide evenly.
        num_samples: at most this many rows per shard and epoch.
    """

    #: ``recordio.dataset.order.ms_order`` reproduces MindSpore's orders for this source (order mode "mindspore")
    has_mindspore_orders = True

    def __init__(self, dataset_files: str | os.PathLike | Sequence[str | os.PathLike],
                 columns_list: Sequence[str] | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle | None = None, num_shards: int | None = None, shard_id: int | None = None,
                 sampler: Sampler | None = None, padded_sample: dict | None = None, num_padded: int | None = None,
                 num_samples: int | None = None, cache: Any = None, *, shard_by_block: bool | None = None,
                 storage_options: dict | None = None, cache_dir: str | None = None,
                 cache_limit: int | None = None) -> None:
        if cache is not None:
            raise NotImplementedError("MindDataset: cache (MindSpore's cache server) is not supported by recordio")
        check_shards(num_shards, shard_id)
        if num_samples is not None and shuffle in (Shuffle.FILES, Shuffle.INFILE):
            raise ValueError("'Shuffle.FILES' or 'Shuffle.INFILE' and 'num_samples' cannot be specified at the "
                             "same time (MindSpore 2.10 refuses it too).")
        if shard_by_block is None:
            shard_by_block = os.environ.get("MS_DEV_MINDRECORD_SHARD_BY_BLOCK", "").lower() in ("true", "1")
        self.columns_list = None if columns_list is None else list(columns_list)
        self.num_padded = _padding_args(padded_sample, num_padded, num_shards, self.columns_list)
        self.padded_sample = padded_sample
        self.dataset_files = dataset_files
        self._remote_options: dict[str, Any] = {"storage_options": storage_options, "cache_dir": cache_dir,
                                "cache_limit": cache_limit}
        sampler = check_sampler_args(sampler, shuffle, num_shards) or DefaultOrder(
            shuffle_mode(shuffle), num_shards, shard_id, self.num_padded, num_samples, bool(shard_by_block))
        super().__init__(sampler, 1, False)
        self.num_parallel_workers = num_parallel_workers
        self._reader: FileReader | None = None
        self._index_cols = None
        self._unknown_columns: SchemaError | None = None
        try:
            self.reader                  # a missing or malformed file fails here, not mid-iteration
        except SchemaError as exc:       # a columns_list field the files lack: MindSpore reports it when
            if not getattr(exc, "unknown_columns", None):       # the pipeline first runs, and so do we
                raise
            self._unknown_columns = exc
        self._check_padding()
        if padded_sample is not None:
            self._padded()               # a value that does not fit its field fails here

    def __getstate__(self):
        state = super().__getstate__()
        state["_index_cols"] = None
        return state

    @property
    def reader(self) -> FileReader:
        """The dataset's :class:`~recordio.mindrecord.read.reader.FileReader` (opened on first use)."""
        if self._unknown_columns is not None:
            raise SchemaError(str(self._unknown_columns)) from None
        if self._reader is None:
            from recordio.mindrecord.read.reader import FileReader
            reader = FileReader(self.dataset_files, columns=self.columns_list, **self._remote_options)
            if self.columns_list is None:
                reader.order_columns(sorted(reader.schema))      # MindSpore's order: names sorted
            self._reader = reader
        return self._reader

    def __getitem__(self, index: int) -> list:
        """The ``index``-th row the first epoch of this dataset gives (its shuffle and shard
        included; ``shuffle=False``: row ``index`` of the dataset) as a list of numpy arrays in
        ``get_col_names()`` order (MindSpore's random access; its shuffled orders differ by design)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Argument index with value {index} is not of type [<class 'int'>], but got "
                            f"{type(index)}. MindDataset: index must be an int.")
        if index < 0:
            raise ValueError(f"index cannot be negative, but got {index}.")
        ids = self.sampler.order(self._num_rows(), config.get_seed(), 0, self)
        num, sid = self._rank_split(RunContext.for_sizes(self))
        ids = np.asarray(ids, np.int64)[self._shard_positions(len(ids), num, sid, 0, False)]
        if index >= len(ids):
            raise RowRangeError(f"Input index is not within the required interval of [0, {len(ids) - 1}], but got "
                                f"{index}. MindDataset: index {index} is out of range for {len(ids)} rows")
        row = self._fetch(ids[index:index + 1])[0]
        return [to_numpy(row[name]) for name in self._columns()]

    def _epoch_rows(self, ctx, epoch):
        """The epoch's rows; for a dataset at a URL the reader fetches them ahead in this order."""
        ep = super()._epoch_rows(ctx, epoch)
        reader = self.reader
        if reader.is_remote and self._index_columns() is None:
            n = self._num_rows()
            ids = np.arange(n, dtype=np.int64) if ep.ids is None else np.asarray(ep.ids, dtype=np.int64)
            reader.prefetch(ids[ids < n])
        return ep

    def _check_padding(self):
        if self.num_padded or self.padded_sample is not None:
            num_shards = self.sampler.shards[0]
            total = len(self.reader) + self.num_padded
            if total % num_shards:
                raise PipelineError(f"MindDataset: {len(self.reader)} rows + num_padded {self.num_padded} = "
                                    f"{total} is not divisible by num_shards {num_shards}")

    def _columns(self):
        """``columns_list`` as given, else every field sorted by name (MindSpore's order)."""
        if self.columns_list is not None:
            self.reader                  # an unknown column is reported here, as MindSpore does
            return list(self.columns_list)
        return sorted(self.reader.schema)

    def _num_rows(self):
        return len(self._counting_reader())

    def _row_origin(self, row):
        """``row`` of the dataset as row k of its data file (or a padded row)."""
        start = 0
        for path, count in zip(self.reader.files, self.file_counts()):
            if row < start + count:
                return f"row {row - start} of {path}"
            start += count
        return f"a padded row (num_padded={self.num_padded})" if self.num_padded else None

    def file_counts(self):
        """Rows of each data file, in order (what the FILES and INFILE shuffles and MindSpore's orders read)."""
        return list(self._counting_reader().file_row_counts)

    def _counting_reader(self):
        """The reader; with an unknown field in ``columns_list`` (reported when iterating, as MindSpore
        does) one over every field, so that get_dataset_size() counts as MindSpore's does."""
        if self._unknown_columns is None:
            return self.reader
        if self._reader is None:
            from recordio.mindrecord.read.reader import FileReader
            self._reader = FileReader(self.dataset_files, **self._remote_options)
        return self._reader

    def class_values(self, column):
        """The value of ``column`` in every row (what ``PKSampler`` groups rows by)."""
        reader = self.reader
        if column in reader.index_fields:
            return reader.index_column(column)
        if column not in reader.schema:
            raise PipelineError(f"Invalid data, 'class_column': {column} can not found in fields of mindrecord "
                                f"files. Please check 'class_column' in PKSampler. The fields of "
                                f"{reader.files[0]}: {sorted(reader.schema)}")
        from recordio.mindrecord.read.reader import FileReader
        with FileReader(self.dataset_files, columns=[column], **self._remote_options) as r:
            return np.asarray([row[column] for row in r])

    def _index_columns(self):
        """Column arrays from the index when every asked column is an indexed scalar, else None."""
        if self._index_cols is None:
            reader = self.reader
            names = self.columns_list or []
            usable = names and all(n in reader.index_fields and "shape" not in reader.schema[n]
                                   and reader.schema[n]["type"] in _SCALARS for n in names)
            self._index_cols = {n: reader.index_column(n) for n in names} if usable else {}
        return self._index_cols or None

    def _scan_rows(self):
        """Every row in dataset order (the reader's sequential path, faster than by id)."""
        index = self._index_columns()
        if index is None:
            return iter(self.reader)
        names = list(index)
        return (dict(zip(names, values)) for values in zip(*index.values()))

    def _column_reader(self):
        """Batches read as columns (``recordio.mindrecord.read.columns``), or from the index's column
        arrays; None with padded rows (those are read row by row)."""
        if self.num_padded:
            return None
        index = self._index_columns()
        if index is not None:
            return lambda ids: {c: arr[ids].tolist() if arr.dtype == object else arr[ids]
                                for c, arr in index.items()}
        reader, names = self.reader, self._columns()
        form = "list" if get_bytes_form() == "mindspore" else "arrays"
        return lambda ids: reader.batch_columns(ids, names, form)

    def _padded(self):
        """The padded row in ``columns_list`` order, numbers cast to the schema's types as MindSpore does."""
        fields = self.reader.fields
        return {c: _cast_padded(fields[c], self.padded_sample[c], c) for c in self.columns_list}

    def _fetch(self, ids):
        n = self._num_rows()
        real = ids.tolist() if not self.num_padded else [int(i) for i in ids if i < n]
        index = self._index_columns()
        if index is not None:
            rows = [{c: arr[i] for c, arr in index.items()} for i in real]
        else:
            rows = self.reader.__getitems__(real)
        if len(real) == len(ids):
            return rows
        it = iter(rows)
        return [next(it) if i < n else self._padded() for i in ids]
