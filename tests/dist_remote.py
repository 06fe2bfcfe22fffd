"""Run by tests/test_remote.py under ``torchrun --nproc_per_node=2`` (gloo, CPU): each rank reads one
shuffled epoch of a dataset in moto's S3 server (rank and world size from torch.distributed), through
one cache folder shared by the two ranks, and writes the ids it read and its request counters to
``<out>/rank<r>.json``."""

import json
import os
import sys

import torch.distributed as dist

from recordio.dataset import MindDataset


def main(url, endpoint, cache, out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
               "client_kwargs": {"region_name": "us-east-1"}}
    ds = MindDataset(url, columns_list=["id", "data"], shuffle=True, storage_options=options, cache_dir=cache)
    ids = [int(r["id"]) for r in ds.create_dict_iterator(num_epochs=1, output_numpy=True)]
    stats = ds.reader.shard_set.storage.stats
    dist.barrier()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"ids": ids, "world": dist.get_world_size(), **stats}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:5])
