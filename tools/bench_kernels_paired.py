"""The compiled vision kernels of two source trees in one process, call for call: for work on the kernels.

    python -m recordio.tools.bench_kernels_paired --paired TREE_A TREE_B [--rounds 30] [--calls 40]

Each tree is a checkout with its C parts built in place (``python setup.py build_ext --inplace``); this
loads ``recordio/vision/_kernels`` and ``_jpeg`` of both under names of their own, then alternates the two
trees' calls on the same inputs one by one, ``--rounds`` x ``--calls`` each, and keeps each one's fastest
call. Why one process and single calls: on a shared machine (CPU steal time) two runs minutes apart
differ by 20% or more, more than most kernel changes, and even blocks of calls a moment apart differ by
10% or more; single calls interleaved within one process meet the same conditions, and the fastest of
many is the one nothing interrupted.

The cases are the train chain's (``tools/vision_photos.py`` photos): the JPEG region decode of
RandomCropDecodeResize's boxes, their bilinear resize to 224x224, and the colour steps of
RandomColorAdjust in each order into the fused Rescale/Normalize/HWC2CHW run (``adjust_levels``); then
the whole pixel work of a train image: one ``_chain.crop_levels`` call where the tree has the crop chain,
else the three calls (region decode, resize, colour and level run) that the ops made before it.

Each row is B's time per call with A's beside it; the ratio is A / B (> 1: B is faster). Every case also
compares the two trees' outputs: a row's note says ``different bytes`` where they differ. This times
kernels, not what users meet: the chains' images/s come from ``bench_vision_chains`` (``--paired`` too).
"""

import importlib.machinery
import importlib.util
import itertools
import os
import sysconfig
import time

ORDERS = [()] + [tuple(p) for r in (1, 3) for p in itertools.permutations(range(3), r)]
STEP_NAMES = "BCS"            # brightness, contrast, saturation: RandomColorAdjust's steps (kinds 0, 1, 2)
FACTORS = (1.2, 0.8, 1.3, 0.0)


def load_kernels(tree, tag):
    """{"_kernels": module, "_jpeg": module[, "_chain": module]} of ``tree``'s built extensions, loaded as
    ``tag._kernels`` (an extension module's init function goes by the last part of its name only); ``_chain``
    where the tree has it (trees before it had the train chain as separate calls)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = {}
    for name in ("_kernels", "_jpeg", "_chain"):
        path = os.path.join(tree, "recordio", "vision", name + suffix)
        if not os.path.exists(path):
            if name == "_chain":
                continue
            raise ValueError(f"{tree}: {path} is not built (python setup.py build_ext --inplace there)")
        loader = importlib.machinery.ExtensionFileLoader(f"{tag}.{name}", path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
        loader.exec_module(module)
        found[name] = module
    return found


def unit_normalize():
    """The tables and the arithmetic (``adjust_levels``' program: (((x * k0) + k1) - k2) / k3 per channel) of
    ``Rescale(1/255, 0)``, ``Normalize`` with ImageNet's unit mean and std, ``HWC2CHW``: the train chain's run."""
    import numpy as np

    f32 = np.float32
    mean, std = np.array([0.485, 0.456, 0.406], f32), np.array([0.229, 0.224, 0.225], f32)
    program = np.array([[1.0 / 255] * 3, [0.0] * 3, mean, std], f32)
    levels = np.arange(256, dtype=f32)[None, :]
    tables = (((levels * program[0][:, None]) + program[1][:, None]) - program[2][:, None]) / program[3][:, None]
    return np.ascontiguousarray(tables, f32), program


def cases(images=8):
    """[(name, make(kernels) -> (call, output))] on the same inputs: ``call()`` is what is timed (into
    buffers of that tree's own), ``output()`` calls it and returns what it wrote, as bytes."""
    import cv2
    import numpy as np

    from recordio.keys import op_scope, row_scope
    from recordio.tools import vision_photos
    from recordio.vision import Decode, RandomCropDecodeResize
    from recordio.vision.decode import image_size

    jpegs = vision_photos.jpegs(images)
    crop = RandomCropDecodeResize(224, scale=(0.08, 1.0))
    boxes = []
    for i, data in enumerate(jpegs):
        with row_scope(0, 0, i), op_scope(1):
            boxes.append(crop.region(*image_size(np.frombuffer(data, np.uint8)))[0])
    pixels = [Decode()(np.frombuffer(data, np.uint8)) for data in jpegs]
    crops = [np.ascontiguousarray(img[y:y + h, x:x + w]) for img, (y, x, h, w) in zip(pixels, boxes)]
    tables, program = unit_normalize()
    photo = cv2.resize(crops[0], (224, 224), interpolation=cv2.INTER_LINEAR)

    def decode(k):
        def call():
            return [k["_jpeg"].decode_box(data, *box) for data, box in zip(jpegs, boxes)]
        return call, call

    def resize(k):
        outs = [np.empty((224, 224, 3), np.uint8) for _ in crops]

        def call():
            for img, out in zip(crops, outs):
                k["_kernels"].resize(img, out, 224, 224, 0, 0)

        def output():
            call()
            return [out.tobytes() for out in outs]
        return call, output

    def colour(order):
        def make(k):
            planes = np.empty((3, 224, 224), np.float32)

            def call():
                k["_kernels"].adjust_levels(photo, planes, bytes(order), *FACTORS, tables, True, program)

            def output():
                call()
                return planes.tobytes()
            return call, output
        return make

    def chain(k):
        planes = [np.empty((3, 224, 224), np.float32) for _ in jpegs]
        resized = np.empty((224, 224, 3), np.uint8)
        kinds = bytes((0, 1, 2))

        def one_call():
            for data, (y, x, h, w), out in zip(jpegs, boxes, planes):
                k["_chain"].crop_levels(data, y, x, h, w, (h, w, 0, 0), (224, 224), (0, 0, 224, 224), 0, out, kinds,
                                        *FACTORS, tables, True, program)

        def three_calls():
            for data, (y, x, h, w), out in zip(jpegs, boxes, planes):
                block, rows, cols, y0, x0 = k["_jpeg"].decode_box(data, y, x, h, w)
                box = np.frombuffer(block, np.uint8).reshape(rows, cols, 3)[y - y0:y - y0 + h, x - x0:x - x0 + w]
                k["_kernels"].resize(box, resized, 224, 224, 0, 0)
                k["_kernels"].adjust_levels(resized, out, kinds, *FACTORS, tables, True, program)

        call = one_call if "_chain" in k else three_calls

        def output():
            call()
            return [out.tobytes() for out in planes]
        return call, output

    found = [(f"decode_box: {images} train boxes", decode), (f"resize: {images} train boxes -> 224x224", resize)]
    for order in ORDERS:
        steps = "".join(STEP_NAMES[k] for k in order) or "none"
        found.append((f"adjust_levels: colour steps {steps} + Rescale/Normalize/HWC2CHW, 224x224", colour(order)))
    found.append((f"train images: decode, resize, colour BCS, level run, {images} boxes (one call with _chain)", chain))
    return found


def paired(trees, rounds=30, calls=40, images=8):
    """[(case, seconds per call of A, of B, same output)]: each tree's fastest single call of
    ``rounds * calls``, the two trees' calls alternating one by one."""
    kernels = [load_kernels(tree, f"recordio_bench_{side}") for tree, side in zip(trees, "ab")]
    found = []
    clock = time.perf_counter
    for name, make in cases(images):
        made = [make(k) for k in kernels]
        calls_ab = [call for call, _ in made]
        same = made[0][1]() == made[1][1]()
        best = [float("inf"), float("inf")]
        for n in range(rounds * calls):
            for side in ((0, 1) if n % 2 == 0 else (1, 0)):          # neither always goes first
                start = clock()
                calls_ab[side]()
                best[side] = min(best[side], clock() - start)
        found.append((name, best[0], best[1], same))
    return found


def add_arguments(parser):
    parser.add_argument("--paired", nargs=2, metavar=("TREE_A", "TREE_B"), required=True,
                        help="two source trees (checkouts with their C parts built in place)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of --calls calls per tree and case")
    parser.add_argument("--calls", type=int, default=40, help="calls per round (each timed alone)")
    parser.add_argument("--images", type=int, default=8, help="photos (train boxes) of the decode and resize cases")


def check(args):
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for tree in args.paired:
        if not os.path.isdir(os.path.join(tree, "recordio")):
            raise ValueError(f"{tree}: not a source tree (no recordio/ in it)")
        for name in ("_kernels", "_jpeg"):
            if not os.path.exists(os.path.join(tree, "recordio", "vision", name + suffix)):
                raise ValueError(f"{tree}: recordio/vision/{name} is not built there (python setup.py build_ext --inplace)")
    if min(args.rounds, args.calls, args.images) < 1:
        raise ValueError("--rounds, --calls and --images must be at least 1")


def rows(args):
    from recordio.tools._common import bench_row

    trees = [os.path.abspath(tree) for tree in args.paired]
    out = []
    for name, a, b, same in paired(trees, args.rounds, args.calls, args.images):
        note = f"fastest of {args.rounds * args.calls} calls" + ("" if same else "; different bytes")
        out.append(bench_row(name, b * 1e6, "us/call", "A", a * 1e6, lower_is_better=True, note=note))
    return out


def main(argv=None):
    from recordio.tools._common import bench_main

    return bench_main(__doc__, add_arguments, rows, argv, width=72, check=check)


if __name__ == "__main__":
    raise SystemExit(main())

