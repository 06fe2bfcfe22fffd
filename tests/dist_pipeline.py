"""Run by tests/test_torch_distributed.py under ``torchrun --nproc_per_node=2`` (gloo, CPU).

Each rank iterates a MindDataset with no ``num_shards`` (rank and world size come from
torch.distributed), then the same pipeline through a DataLoader with 2 workers, and writes what it
saw to ``<out>/rank<r>.json``.
"""

import json
import os
import sys

import torch.distributed as dist
from torch.utils.data import DataLoader

from recordio.dataset import MindDataset, TorchDataset
from numbered import ids_of


def main(path, out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = MindDataset(path, columns_list=["id", "label"])
    size = ds.get_dataset_size()
    direct = ids_of(ds.create_dict_iterator(num_epochs=1, output_numpy=True))
    loader = DataLoader(TorchDataset(MindDataset(path, columns_list=["id", "label"]).batch(4)),
                        batch_size=None, num_workers=2)
    loaded = ids_of(loader)
    dist.barrier()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"size": size, "direct": direct, "loader": loaded, "world": dist.get_world_size()}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
