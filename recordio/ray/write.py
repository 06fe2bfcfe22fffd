"""``write_mindrecord``: a Ray dataset written as MindRecord, one shard per write task, published once."""

from __future__ import annotations

import os
import shutil

from recordio.extras import requires
from recordio.mindrecord.schema import Schema
from recordio.mindrecord.write.shard_writer import ShardWriter, finalize_shards, parts_dir
from recordio.mindrecord.write.writer import FileWriter
from recordio.ray.blocks import block_rows

with requires("recordio.ray", "ray"):
    import ray.data
    from ray.data.datasource import Datasink

__all__ = ["MindRecordDatasink", "write_mindrecord"]

CHUNK_ROWS = 1024


class MindRecordDatasink(Datasink):
    """Write task ``k`` writes shard ``k`` (a part beside the target, replaced whole if Ray retries the
    task); the driver publishes the dataset once every task has succeeded, and drops the parts if one
    failed, so a failed write leaves no dataset (and any earlier dataset at ``path`` untouched)."""

    def __init__(self, path: str | os.PathLike, schema: dict, shard_num: int = 1, *,
                 index_fields: list[str] | None = None, desc: str | None = None, overwrite: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        Schema(schema)                                     # a bad schema fails on the driver, before any task
        self.schema, self.shard_num = dict(schema), shard_num
        self.index_fields, self.desc, self.overwrite = index_fields, desc, overwrite

    def on_write_start(self, schema=None) -> None:
        FileWriter(self.path, shard_num=self.shard_num, overwrite=self.overwrite)   # name, count, target
        shutil.rmtree(parts_dir(self.path), ignore_errors=True)   # parts of an earlier, failed write

    def write(self, blocks, ctx) -> dict:
        shard = ctx.task_idx
        if shard >= self.shard_num:
            raise RuntimeError(f"{self.path}: Ray ran write task {shard} for a {self.shard_num}-shard dataset "
                               f"(write_mindrecord repartitions to shard_num blocks; write through it)")
        return _write_shard(self._writer(shard), blocks, self.schema)

    def _writer(self, shard):
        return ShardWriter(self.path, shard, self.shard_num, self.schema, self.desc, self.index_fields)

    def on_write_complete(self, write_result) -> None:
        written = {r["shard_id"] for r in write_result.write_returns}
        for shard in sorted(set(range(self.shard_num)) - written):    # Ray gave fewer blocks than shards
            with self._writer(shard) as writer:
                writer.write_raw_data([])
        finalize_shards(self.path, self.shard_num, overwrite=self.overwrite)

    def on_write_failed(self, error: Exception) -> None:
        shutil.rmtree(parts_dir(self.path), ignore_errors=True)

    def get_name(self) -> str:
        return "WriteMindRecord"


def _write_shard(writer, blocks, schema):
    with writer:
        writer.open()
        for block in blocks:
            rows = block_rows(block, schema)
            for first in range(0, len(rows), CHUNK_ROWS):
                writer.write_raw_data(rows[first:first + CHUNK_ROWS])
    return {"shard_id": writer.shard_id, "rows": writer.rows}


def write_mindrecord(dataset: ray.data.Dataset, path: str | os.PathLike, schema: dict, *, shard_num: int = 1,
                     index_fields: list[str] | None = None, desc: str | None = None, overwrite: bool = False,
                     ray_remote_args: dict | None = None, concurrency: int | None = None) -> None:
    """Write ``dataset`` as the MindRecord dataset ``path`` (``shard_num`` files), in its row order.

    The dataset is repartitioned into ``shard_num`` blocks (order kept) and each is written by one
    Ray task into the parts folder beside ``path``, which every node must see (a shared
    filesystem). Values must fit ``schema`` as for :meth:`recordio.FileWriter.write_raw_data`
    (arrays of the schema's dtype; no casts). Raises what the failed task raised, and then no
    dataset is published.
    """
    sink = MindRecordDatasink(path, schema, shard_num, index_fields=index_fields, desc=desc, overwrite=overwrite)
    parts = dataset.repartition(shard_num)
    parts.context.execution_options.preserve_order = True      # task k gets block k: shard k
    parts.write_datasink(sink, ray_remote_args=ray_remote_args, concurrency=concurrency)
