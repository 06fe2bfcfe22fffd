"""Shard tasks on Ray Data (``engine="ray"``, extra ``recordio[ray]``).

The driver makes a Ray dataset of shard ids; each Ray task writes whole shards (data file
and ``.db``) through :class:`recordio.ShardWriter` into the parts folder beside the target,
which every node must see (a shared filesystem). A retried task rewrites its part
atomically, so retries never duplicate rows; only the driver finalizes and publishes.
Uses the Ray that the caller initialised; otherwise connects to the cluster of
``RAY_ADDRESS`` (or starts a local one) for the conversion and shuts it down after.
"""

import json
import pickle

from recordio.converters.shard_task import write_shard
from recordio.errors import RecordIOError, WorkerError
from recordio.extras import requires

__all__ = ["run_ray"]


def _write(batch, job, tasks):
    """Write the shards of ``batch``; an error in the input travels back as data (Ray drops causes)."""
    out = {"shard_id": [], "rows": [], "skipped": [], "error": []}
    for shard_id in batch["shard_id"]:
        shard_id, rows, skipped, error = int(shard_id), 0, [], b""
        try:
            _, rows, skipped = write_shard(job, shard_id, tasks[shard_id])
        except (RecordIOError, OSError, ValueError) as exc:
            error = pickle.dumps(exc)
        for key, value in (("shard_id", shard_id), ("rows", rows), ("skipped", json.dumps(skipped)),
                           ("error", error)):
            out[key].append(value)
    return out


def run_ray(job, tasks, progress):
    """Write the shards ``tasks`` ({shard_id: units}) as Ray tasks; returns [(shard_id, rows, skipped)]."""
    with requires("engine='ray'", "ray"):           # names Ray Data and the extra that installs it
        import ray
        import ray.data
    started = not ray.is_initialized()
    if started:
        ray.init(log_to_driver=False)
    try:
        return _run(ray, job, tasks, progress)
    finally:
        if started:                  # a cluster this call started goes with it
            ray.shutdown()


def _run(ray, job, tasks, progress):
    context = ray.data.DataContext.get_current()
    bars, context.enable_progress_bars = context.enable_progress_bars, False   # ours is the bar
    try:
        return _collect(ray, _dataset(ray, job, tasks), progress)
    finally:
        context.enable_progress_bars = bars


def _dataset(ray, job, tasks):
    ids = sorted(tasks)
    dataset = ray.data.from_items([{"shard_id": i} for i in ids], override_num_blocks=len(ids))
    return dataset.map_batches(_write, batch_size=1, fn_kwargs={"job": job, "tasks": tasks}, num_cpus=1)


def _collect(ray, dataset, progress):
    results, errors = [], []
    try:
        for row in dataset.iter_rows():
            if row["error"]:
                errors.append(pickle.loads(row["error"]))
                continue
            progress.update(int(row["rows"]))
            results.append((int(row["shard_id"]), int(row["rows"]), json.loads(row["skipped"])))
    except ray.exceptions.RayError as exc:
        raise WorkerError(f"a Ray task failed while writing shards: {exc}") from exc
    if errors:
        raise errors[0]
    return results
