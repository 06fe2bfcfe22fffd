"""``set_init_step(k)`` under ``config.set_fast_recovery(True / False)``: a MindDataset alone (sharded)
and concatenated with a PaddedDataset (sharded by ``use_sampler``), batched and repeated, resumed at
step ``k``. Written once, run on MindSpore 2.10 (as a script, by ``test_init_step_ms``) and on
recordio. Imports neither library; the numbered files are those of ``ms_concat_cases``."""

import json
import sys

import ms_concat_cases

KINDS = ["plain", "mind+pad", "map+pad"]
SPLITS = [(1, 0), (3, 1), (8, 2)]
STEPS = [0, 1, 3, 5, 7, 9]


def build(ds, folder, kind, shards, shard):
    if kind == "plain":
        data = ds.MindDataset(f"{folder}/a.mindrecord", columns_list=["id"], shuffle=False, num_shards=shards,
                              shard_id=shard)
    else:
        data = ms_concat_cases.build(ds, folder, kind)
        data.use_sampler(ds.DistributedSampler(shards, shard, shuffle=False))
    return data.batch(2).repeat(2)


def run(ds, config, folder, fast, kind, shards, shard, step, epochs=2):
    """The batches of each epoch left after ``set_init_step(step)``, or the error's type and text."""
    config.set_fast_recovery(fast)
    data = build(ds, folder, kind, shards, shard)
    size = data.get_dataset_size()
    data.set_init_step(step)
    try:
        it = data.create_tuple_iterator(num_epochs=epochs, output_numpy=True)
        return [[r[0].tolist() for r in it] for _ in range(epochs - step // size)]
    except RuntimeError as exc:
        return ["RuntimeError", str(exc)]


def cases():
    return [(fast, kind, n, s, k) for fast in (True, False) for kind in KINDS for n, s in SPLITS for k in STEPS]


if __name__ == "__main__":            # under MindSpore's Python: FOLDER -> one JSON line per case
    import mindspore.dataset as msds
    for case in cases():
        print(json.dumps([list(case), run(msds, msds.config, sys.argv[1], *case)]), flush=True)
