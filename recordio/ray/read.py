"""``read_mindrecord``: a MindRecord dataset as a Ray dataset, read by tasks over runs of rows."""

from __future__ import annotations

import os
from collections.abc import Sequence

from recordio.extras import requires
from recordio.mindrecord.read.reader import FileReader
from recordio.mindrecord.read.row_runs import plan_reads
from recordio.ray.blocks import rows_block

with requires("recordio.ray", "ray"):
    import ray.data
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

__all__ = ["MindRecordDatasource", "plan_reads", "read_mindrecord"]

BLOCK_BYTES = 8 << 20         # a read task yields a block every 8 MiB of file bytes (streams well)
TASKS_PER_CPU = 2             # default read tasks: this many per CPU of the cluster, at least one per shard


class MindRecordDatasource(Datasource):
    """A MindRecord dataset as a Ray ``Datasource`` (see :func:`read_mindrecord`)."""

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike], columns: Sequence[str] | None = None,
                 *, verify: bool = False) -> None:
        super().__init__()
        given: str | list[str] = ([os.fspath(p) for p in paths] if isinstance(paths, (list, tuple))
                                  else os.fspath(paths))      # type: ignore[arg-type]
        with FileReader(given, columns=columns) as reader:     # checks the files, schema and columns
            self.files = reader.files
            self.counts = reader.file_row_counts
            self.schema = dict(reader.schema)
        self.columns = list(columns) if columns is not None else list(self.schema)
        self.verify = verify
        self.sizes = [os.path.getsize(f) for f in self.files]

    def estimate_inmemory_data_size(self) -> int:
        return sum(self.sizes)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context=None) -> list[ReadTask]:
        return [self._task(run, per_task_row_limit) for run in plan_reads(self.counts, parallelism)]

    def _task(self, run, per_task_row_limit):
        rows = sum(stop - start for _, start, stop in run)
        size = sum(self._bytes_per_row(f) * (stop - start) for f, start, stop in run)
        files = [self.files[f] for f, _, _ in run]
        meta = BlockMetadata(num_rows=rows, size_bytes=int(size), input_files=files, exec_stats=None)
        pieces = [(self.files[f], start, stop, self._block_rows(f)) for f, start, stop in run]
        read = _Read(pieces, self.columns, self.schema, self.verify)
        return ReadTask(read, meta, per_task_row_limit=per_task_row_limit)

    def _bytes_per_row(self, f):
        return self.sizes[f] / max(1, self.counts[f])

    def _block_rows(self, f):
        return max(1, int(BLOCK_BYTES // max(1.0, self._bytes_per_row(f))))

    def get_name(self) -> str:
        return "ReadMindRecord"


class _Read:
    """One read task: its runs of rows as Arrow blocks (a picklable callable)."""

    def __init__(self, pieces, columns, schema, verify):
        self.pieces, self.columns, self.schema, self.verify = pieces, columns, schema, verify

    def __call__(self):
        for path, start, stop, block_rows in self.pieces:
            with FileReader([path], columns=self.columns, verify=self.verify) as reader:
                for first in range(start, stop, block_rows):
                    rows = reader[first:min(stop, first + block_rows)]
                    yield rows_block(rows, self.schema, self.columns)


def read_mindrecord(paths: str | os.PathLike | Sequence[str | os.PathLike], *, columns: Sequence[str] | None = None,
                    verify: bool = False, override_num_blocks: int | None = None,
                    ray_remote_args: dict | None = None, concurrency: int | None = None) -> ray.data.Dataset:
    """A MindRecord dataset as a ``ray.data.Dataset``, rows in the dataset's order.

    The returned dataset's ``context.execution_options.preserve_order`` is on, and datasets made from
    it keep it: Ray's default hands blocks on as their read tasks finish, which reorders rows when
    the cluster is busy. Turn it off on a derived dataset where order does not matter.

    Args:
        paths: any data file of the dataset (its shards are found from its header), or a list of
            data files (exactly those, in that order). Every node must see them at the same path
            (a shared filesystem).
        columns: the fields to read (default: all).
        verify: check page checksums as rows are read (``FileReader(verify=True)``).
        override_num_blocks: the number of read tasks. Rows are cut into that many contiguous runs,
            inside shards or across them, so a 4-shard dataset is read by 16 tasks when asked for 16.
            Default: two per CPU of the cluster, at least one per shard (Ray's own default, 200 or
            more, would open every shard many times for small reads).
        ray_remote_args, concurrency: passed to ``ray.data.read_datasource``.
    """
    source = MindRecordDatasource(paths, columns, verify=verify)
    if override_num_blocks is None and ray.is_initialized():
        cpus = int(ray.cluster_resources().get("CPU", 1))
        override_num_blocks = max(len(source.files), TASKS_PER_CPU * cpus)
    dataset = ray.data.read_datasource(source, override_num_blocks=override_num_blocks,
                                       ray_remote_args=ray_remote_args, concurrency=concurrency)
    # Ray yields blocks as tasks finish unless told otherwise: a busy node would reorder the rows.
    dataset.context.execution_options.preserve_order = True
    return dataset
