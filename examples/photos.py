"""Real photos, offline: an ImageFolder of crops of the colour photos that ship inside scikit-image.

Each class is one photo. Every image is a random crop of it (a tenth to a half of the area of
its split's part of the photo, any aspect between 3:4 and 4:3), flipped half of the time, slightly
brightened or darkened, resized to ``size`` x ``size`` pixels and JPEG-encoded at a random quality.
The ``train`` split is cut from the left 70% of each photo and the ``val`` split from the right
30%, so the held-out images show parts of the photos that training never saw.

    python examples/photos.py photos --per-class 500        # photos/train/<class>/*.jpg, photos/val/...
"""

import argparse
import os

import numpy as np

CLASSES = ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry", "rocket")
SPLITS = {"train": (0, 0.0, 0.7), "val": (1, 0.7, 1.0)}     # seed, and the part of the width


def load_photo(name):
    """One scikit-image sample photo as an RGB uint8 array (no download: the files ship in the wheel)."""
    from skimage import data

    return getattr(data, name)()


def crop_box(rng, height, width):
    """A random box ``(y, x, h, w)`` covering 10-50% of the area with an aspect in [3/4, 4/3]."""
    area = height * width * rng.uniform(0.1, 0.5)
    aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
    h = min(height, int(round(np.sqrt(area / aspect))))
    w = min(width, int(round(np.sqrt(area * aspect))))
    return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w


def make_image(rng, photo, size):
    """One augmented JPEG (bytes) cut from ``photo``."""
    import cv2

    y, x, h, w = crop_box(rng, *photo.shape[:2])
    crop = photo[y:y + h, x:x + w]
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    crop = cv2.resize(np.ascontiguousarray(crop), (size, size), interpolation=cv2.INTER_AREA)
    crop = np.clip(crop.astype(np.float32) * rng.uniform(0.8, 1.2), 0, 255).astype(np.uint8)
    quality = int(rng.integers(60, 96))
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(crop, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError(f"OpenCV could not encode a {size}x{size} JPEG")
    return buf.tobytes()


def write_class(folder, rng, photo, count, size):
    os.makedirs(folder, exist_ok=True)
    for i in range(count):
        with open(os.path.join(folder, f"{i:05d}.jpg"), "wb") as f:
            f.write(make_image(rng, photo, size))


def build_image_folder(root, per_class, val_per_class, size=96, classes=CLASSES):
    """Write ``root/train/<class>/*.jpg`` and ``root/val/<class>/*.jpg``; returns the split folders."""
    counts = {"train": per_class, "val": val_per_class}
    for split, (seed, start, stop) in SPLITS.items():
        for k, name in enumerate(classes):
            photo = load_photo(name)
            part = photo[:, int(start * photo.shape[1]):int(stop * photo.shape[1])]
            write_class(os.path.join(root, split, name), np.random.default_rng([seed, k]), part, counts[split], size)
    return {split: os.path.join(root, split) for split in SPLITS}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="where to write train/ and val/")
    parser.add_argument("--per-class", type=int, default=500, help="training images per class (default 500)")
    parser.add_argument("--val-per-class", type=int, default=100, help="validation images per class (default 100)")
    parser.add_argument("--size", type=int, default=96, help="image side in pixels (default 96)")
    args = parser.parse_args(argv)
    build_image_folder(args.root, args.per_class, args.val_per_class, args.size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
