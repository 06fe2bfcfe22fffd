"""Bilinear resizes of uint8 RGB images as the image chains meet them: the compiled resize
(``recordio.vision._kernels.resize``) against cv2.resize (INTER_LINEAR, one thread) in one run.

    python -m recordio.tools.bench_resize [--calls 300] [--repeats 5]

Each pass of a contender runs in a fresh process; the contenders alternate, ``--repeats`` passes each.
The first pass is the headline, the best of the passes follows it. Every pass's outputs are hashed: the
two contenders must give the same bytes. Cases (photo-like images from ``tools/vision_photos.py``):

* ``train box -> 224``: crop boxes of RandomCropDecodeResize(224, scale=(0.08, 1)) on the 400-500 px
  photos, resized to 224x224 (upscales and reductions, as the train chain's resample);
* ``eval -> Resize(256)``: the eval chain's whole resize (shorter side 256);
* ``eval window``: the same resize followed by CenterCrop(224): the compiled resize computes the
  224x224 window only (cv2 resizes all, then the crop is a view).

Rates are resizes per second of the process's CPU time.
"""

import argparse
import hashlib
import json
import time

from recordio.tools._common import alternate_children, bench_main, bench_row

CONTENDERS = ("compiled", "cv2")
CASES = ("train box -> 224", "eval -> Resize(256)", "eval window -> CenterCrop(224)")


def _inputs(calls):
    """(case, [(image, (h, w), window)]) for each case, the same every run."""
    import numpy as np

    from recordio.keys import op_scope, row_scope
    from recordio.tools import vision_photos
    from recordio.vision import Decode, RandomCropDecodeResize

    photos = [Decode()(np.frombuffer(j, np.uint8)) for j in vision_photos.jpegs(16)]
    crop = RandomCropDecodeResize(224, scale=(0.08, 1.0))
    train = []
    for i in range(calls):
        img = photos[i % len(photos)]
        with row_scope(1, 0, i), op_scope(0):
            (y, x, h, w), size = crop.region(*img.shape[:2])
        train.append((img[y:y + h, x:x + w], size, None))
    full, window = [], []
    for i in range(calls):
        img = photos[i % len(photos)]
        h, w = img.shape[:2]
        oh, ow = (256, int(w * 256 / h)) if h <= w else (int(h * 256 / w), 256)
        full.append((img, (oh, ow), None))
        window.append((img, (oh, ow), ((oh - 224) // 2, (ow - 224) // 2, 224, 224)))
    return dict(zip(CASES, (train, full, window)))


def child(contender, calls):
    import cv2
    import numpy as np

    from recordio.vision import resampling

    cv2.setNumThreads(1)
    kernels = resampling.compiled_resize()
    if contender == "compiled" and kernels is None:
        raise RuntimeError("the compiled resize is not built or turned itself off")
    times, digest = {}, hashlib.sha256()
    for case, work in _inputs(calls).items():
        outs = []
        t0 = time.process_time()
        for img, (h, w), window in work:
            if contender == "compiled":
                y, x, oh, ow = window or (0, 0, h, w)
                out = np.empty((oh, ow, 3), np.uint8)
                kernels.resize(img, out, h, w, y, x)
            else:
                out = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)
                if window is not None:
                    y, x, oh, ow = window
                    out = out[y:y + oh, x:x + ow]
            outs.append(out)
        times[case] = time.process_time() - t0
        for out in outs:
            digest.update(np.ascontiguousarray(out).tobytes())
    return {"times": times, "digest": digest.hexdigest()}


def add_arguments(parser):
    parser.add_argument("--calls", type=int, default=300, help="resizes of each case a pass (default 300)")
    parser.add_argument("--repeats", type=int, default=5, help="passes of each contender (default 5)")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)     # one pass, in this process


def run(args):
    if args.child:
        print(json.dumps(child(args.child, args.calls)))
        return []
    found = alternate_children("recordio.tools.bench_resize", CONTENDERS, args.repeats, ["--calls", str(args.calls)],
                               "the compiled resize and cv2.resize gave different bytes")
    out = []
    for case in CASES:
        on, off = found["compiled"][case], found["cv2"][case]
        for label, pick in (("first pass", lambda t: t[0]), (f"best of {args.repeats}", min)):
            out.append(bench_row(f"{case}, {label}: compiled", args.calls / pick(on), "resizes/cpu-s",
                                 "cv2.resize", args.calls / pick(off)))
    return out


def main(argv=None):
    return bench_main(__doc__, add_arguments, run, argv, width=56)


if __name__ == "__main__":
    raise SystemExit(main())
