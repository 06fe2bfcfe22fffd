"""The main job: real photos -> an ImageFolder -> sharded MindRecord -> read back -> info and count.

Runs offline: the photos are the samples that ship inside scikit-image.
Usage: python examples/main_job.py [--out DIR] [--per-class N]
"""

import argparse
import io
import os
import shutil
import sys

import numpy as np

import recordio
from recordio.tools.__main__ import main as cli

PHOTOS = {"cat": ["chelsea", "cat"], "coffee": ["coffee"], "astronaut": ["astronaut"], "rocket": ["rocket"]}


def build_image_folder(root, per_class, seed=0):
    """Lay out crops/flips of scikit-image's photos as root/<class>/<n>.jpg."""
    import cv2
    from skimage import data

    rng = np.random.default_rng(seed)
    for label, names in PHOTOS.items():
        os.makedirs(os.path.join(root, label), exist_ok=True)
        sources = [getattr(data, n)() for n in names]
        for i in range(per_class):
            img = sources[i % len(sources)]
            h, w = img.shape[:2]
            ch, cw = int(h * rng.uniform(0.5, 0.9)), int(w * rng.uniform(0.5, 0.9))
            y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
            crop = img[y:y + ch, x:x + cw]
            if rng.random() < 0.5:
                crop = crop[:, ::-1]
            bgr = cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_RGB2BGR)
            ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(70, 95))])
            with open(os.path.join(root, label, f"{i:05d}.jpg"), "wb") as f:
                f.write(buf.tobytes())


def write_records(folder, out, shards):
    labels = sorted(os.listdir(folder))
    rows = []
    for label_id, label in enumerate(labels):
        for name in sorted(os.listdir(os.path.join(folder, label))):
            with open(os.path.join(folder, label, name), "rb") as f:
                rows.append({"image": f.read(), "label": label_id, "file_name": f"{label}/{name}"})
    with recordio.FileWriter(out, shard_num=shards, overwrite=True) as writer:
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"},
                           "file_name": {"type": "string"}}, "scikit-image photos")
        writer.add_index(["label"])
        for start in range(0, len(rows), 64):
            writer.write_raw_data(rows[start:start + 64])
    return len(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/main-job")
    parser.add_argument("--per-class", type=int, default=64)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args(argv)
    folder = os.path.join(args.out, "imagefolder")
    shutil.rmtree(folder, ignore_errors=True)
    build_image_folder(folder, args.per_class)
    records = os.path.join(args.out, "photos.mindrecord")
    n = write_records(folder, records, args.shards)
    first = records + "0"
    with recordio.FileReader(first) as reader:
        assert len(reader) == n and sum(1 for _ in reader) == n
    print(f"wrote and read back {n} photos in {args.shards} shards")
    for command in (["info", first], ["count", first], ["verify", first]):
        print(f"$ recordio {' '.join(command)}")
        if cli(command) != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
