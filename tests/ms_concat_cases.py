"""A MindDataset concatenated with a PaddedDataset (or another MindDataset), sharded by the
concatenation's ``use_sampler(DistributedSampler(n, s, shuffle=False))``: written once, run on
MindSpore 2.10 (as a script, by ``test_ms_orders_concat``) and on recordio. Imports neither library."""

import json
import sys

import numpy as np

SIZES = {"a": 10, "b": 7, "c": 5}      # rows of the numbered MindRecord files a, b, c

# MindSpore 2.10 segfaults where a MindDataset child's share is empty (a shard past the child's rows)
# and on ConcatDataset.add_sampler: those cases are left out.
KINDS = ["mind+pad", "mind.concat(pad)", "mind.concat([pad])", "mind+mind", "pad+mind", "small", "map+pad",
         "three+", "three[]"]
SHARDS = {1: range(1), 2: range(2), 3: range(3), 4: range(4), 8: range(8), 16: range(10)}


def _pad(ds, n):
    return ds.PaddedDataset([{"id": np.array(100 + i, np.int64)} for i in range(n)])


def _mind(ds, folder, name):
    return ds.MindDataset(f"{folder}/{name}.mindrecord", columns_list=["id"], shuffle=False)


def build(ds, folder, kind):
    """The concatenation ``kind`` (``three+``: ``(a + pad) + b``, nested; ``map+pad``: a child
    MindSpore deals round robin)."""
    m = lambda name: _mind(ds, folder, name)          # noqa: E731
    return {"mind+pad": lambda: m("a") + _pad(ds, 4),
            "mind.concat(pad)": lambda: m("a").concat(_pad(ds, 4)),
            "mind.concat([pad])": lambda: m("a").concat([_pad(ds, 4)]),
            "mind+mind": lambda: m("a") + m("b"),
            "pad+mind": lambda: _pad(ds, 3) + m("a"),
            "small": lambda: m("c") + _pad(ds, 2),
            "map+pad": lambda: m("a").map(lambda x: x, ["id"]) + _pad(ds, 4),
            "three+": lambda: m("a") + _pad(ds, 3) + m("b"),
            "three[]": lambda: m("a").concat([_pad(ds, 3), m("b")])}[kind]()


def cases():
    out = [(k, n, s) for k in KINDS for n, ids in SHARDS.items() for s in ids]
    return [c for c in out if not (c[0] == "small" and c[1] >= 8 and c[2] >= 5)]


def run(ds, folder, kind, shards, shard, epochs=2):
    """``[ids of each epoch], get_dataset_size()`` of shard ``shard`` of ``shards``."""
    data = build(ds, folder, kind)
    data.use_sampler(ds.DistributedSampler(shards, shard, shuffle=False))
    size = data.get_dataset_size()
    it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [[int(r["id"]) for r in it] for _ in range(epochs)], size


if __name__ == "__main__":            # under MindSpore's Python: FOLDER -> one JSON line per case
    import mindspore.dataset as msds
    for case in cases():
        print(json.dumps([list(case), run(msds, sys.argv[1], *case)]), flush=True)
