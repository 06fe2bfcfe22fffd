"""Keyed draws of one sample (a host op's per-row parameters): the compiled key folds (``recordio._keys``)
against the Python-int folds that stand in for them when the part is not built, in one run.

    python -m recordio.tools.bench_keys [--rows 20000] [--images 200] [--repeats 5]

Each pass of a contender runs in a fresh process (the Python-int one with ``recordio._keys`` blocked
from import, as in an install without a C compiler); the contenders alternate, ``--repeats`` passes
each. The first pass is the headline, the best of the passes follows it. Every process's draws are
compared: they must be the same values. Rows, per row of the data:

* ``colour draws``: ``Keys(seed, epoch, row, op).unit_floats(...)`` of RandomColorAdjust's 8 draws;
* ``train chain draws``: the train chain's draws under its row and op scopes, as a map runs them:
  RandomCropDecodeResize's box (on a 500x375 image), RandomHorizontalFlip, RandomColorAdjust;
* ``train chain``: the whole chain (RandomCropDecodeResize(224) -> flip -> RandomColorAdjust(0.4, 0.4,
  0.4) -> Rescale -> Normalize -> HWC2CHW) in a one-worker ``GeneratorDataset.map`` over ``--images``
  ImageNet-like JPEGs (``tools/vision_photos.py``).

Rates are rows per second of the process's CPU time (all its threads: on a shared machine this moves
less than wall time).
"""

import argparse
import hashlib
import json
import os
import sys
import time

from recordio.tools._common import alternate_children, bench_main, bench_row

CONTENDERS = ("compiled", "python")
SEED, EPOCH, MAP_UID = 5489, 3, 0
COLOUR_DRAWS = [(k,) for k in range(4)] + [(4, k) for k in range(4)]


def _block_the_part():
    """Make ``import recordio._keys`` fail in this process (before recordio.keys loads it)."""
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "recordio._keys":
                raise ImportError("recordio._keys blocked by bench_keys")

    sys.meta_path.insert(0, Block())
    os.environ["RECORDIO_ALLOW_SLOW"] = "1"


def colour_draws(rows, start, digest):
    from recordio.keys import Keys

    t0 = time.process_time()
    for row in range(start, start + rows):
        digest.append(Keys(SEED, EPOCH, row, 77).unit_floats(COLOUR_DRAWS))
    return time.process_time() - t0


def chain_draws(rows, start, digest):
    """The train chain's draws, row by row, under the scopes a map sets (its ops' uids computed per row)."""
    from recordio import vision
    from recordio.keys import current_keys, derive_uid, op_scope, row_scope

    crop, flip = vision.RandomCropDecodeResize(224, scale=(0.08, 1.0)), vision.RandomHorizontalFlip()
    colour = vision.RandomColorAdjust(0.4, 0.4, 0.4)
    t0 = time.process_time()
    for row in range(start, start + rows):
        with row_scope(SEED, EPOCH, row):
            with op_scope(derive_uid(MAP_UID, 0)):
                box = crop.region(375, 500)
            with op_scope(derive_uid(MAP_UID, 1)):
                flipped = flip.draw(current_keys())
            with op_scope(derive_uid(MAP_UID, 2)):
                params = colour.draw(current_keys())
        digest.append((box, flipped, params))
    return time.process_time() - t0


def train_chain(jpegs):
    import numpy as np

    from recordio import GeneratorDataset, vision

    ops = [vision.RandomCropDecodeResize(224, scale=(0.08, 1.0)), vision.RandomHorizontalFlip(),
           vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1.0 / 255, 0.0),
           vision.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), vision.HWC2CHW()]
    data = GeneratorDataset([(np.frombuffer(j, np.uint8),) for j in jpegs], ["image"], shuffle=False)
    data = data.map(ops, "image", num_parallel_workers=1, python_multiprocessing=False)
    t0 = time.process_time()
    total = sum(float(row["image"][0, 0, 0]) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True))
    return time.process_time() - t0, total


def child(contender, rows, images):
    """One contender's pass: {measure: seconds} and a digest of every value drawn."""
    if contender == "python":
        _block_the_part()
    from recordio import compiled

    state = compiled.report()["recordio._keys"]
    assert state.startswith("active" if contender == "compiled" else "missing"), state
    from recordio.tools import vision_photos

    jpegs = vision_photos.jpegs(images)
    digest = []
    times = {"colour draws": colour_draws(rows, 0, digest), "train chain draws": chain_draws(rows, 0, digest)}
    times["train chain"], total = train_chain(jpegs)
    digest.append(total)
    text = repr([[v.tolist() if hasattr(v, "tolist") else v for v in _flat(d)] for d in digest])
    return {"times": times, "digest": hashlib.sha256(text.encode()).hexdigest()}


def _flat(value):
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return value if isinstance(value, (list, tuple)) else [value]


def add_arguments(parser):
    parser.add_argument("--rows", type=int, default=20_000, help="rows of draws a pass (default 20000)")
    parser.add_argument("--images", type=int, default=400, help="JPEGs through the train chain a pass (default 400)")
    parser.add_argument("--repeats", type=int, default=5, help="passes of each contender (default 5)")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)     # one pass, in this process


def measure(args):
    """{contender: {measure: [seconds of each pass]}}: the contenders alternate, a fresh process a pass."""
    return alternate_children("recordio.tools.bench_keys", CONTENDERS, args.repeats,
                              ["--rows", str(args.rows), "--images", str(args.images)],
                              "the compiled and the Python folds drew different values")


def run(args):
    if args.child:
        print(json.dumps(child(args.child, args.rows, args.images)))
        return []
    found = measure(args)
    out = []
    for name, count in (("colour draws", args.rows), ("train chain draws", args.rows), ("train chain", args.images)):
        on, off = found["compiled"][name], found["python"][name]
        for label, pick in (("first pass", lambda t: t[0]), (f"best of {args.repeats}", min)):
            out.append(bench_row(f"{name}, {label}: compiled folds", count / pick(on), "rows/cpu-s",
                                 "Python-int folds", count / pick(off)))
    return out


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=52)


if __name__ == "__main__":
    raise SystemExit(main())
