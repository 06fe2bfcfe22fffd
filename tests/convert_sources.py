"""Real source data for the converter tests, built from scikit-image's bundled photos.

* :func:`make_imagefolder` – a class-per-folder tree of JPEG/PNG files (crops, flips and
  re-encodes of the photos), returning ``{relative path: decoded RGB pixels}``.
* :func:`cifar_pixels` – N real 32x32x3 images (downscaled crops of the photos).
* :func:`write_cifar` – CIFAR-10/100 batches in the python pickle or binary layout, exactly
  as published by the CIFAR authors.
"""

import os
import pickle

import cv2
import numpy as np
import skimage.data

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry")
CLASSES = {"cat": ("chelsea",), "people": ("astronaut", "coffee"), "space": ("rocket", "hubble_deep_field")}


def photo(name):
    return getattr(skimage.data, name)()


def _variants(image, n, rng):
    """``n`` crops of ``image`` (some flipped), each at least 48x48."""
    h, w = image.shape[:2]
    for i in range(n):
        ch, cw = int(rng.integers(48, h // 2 + 48)), int(rng.integers(48, w // 2 + 48))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        crop = image[y:y + ch, x:x + cw]
        yield np.ascontiguousarray(crop[:, ::-1] if i % 2 else crop)


def make_imagefolder(root, per_photo=2, seed=0):
    """Write an ImageFolder under ``root``; returns {relative path: RGB pixels as decoded from the file}."""
    rng = np.random.default_rng(seed)
    pixels = {}
    for cls, names in CLASSES.items():
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        for name in names:
            for i, crop in enumerate(_variants(photo(name), per_photo, rng)):
                ext = ".png" if i % 3 == 2 else ".jpg"
                rel = f"{cls}/{name}_{i:03d}{ext}"
                ok, buf = cv2.imencode(ext, cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))
                with open(os.path.join(root, rel), "wb") as f:
                    f.write(buf.tobytes())
                decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
                pixels[rel] = cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)
    return pixels


def cifar_pixels(n, seed=0):
    """``n`` real 32x32x3 uint8 RGB images: downscaled crops of the photos."""
    rng = np.random.default_rng(seed)
    sources = [photo(p) for p in PHOTOS]
    out = np.empty((n, 32, 32, 3), np.uint8)
    for i in range(n):
        image = sources[i % len(sources)]
        size = int(rng.integers(40, 160))
        y, x = int(rng.integers(0, image.shape[0] - size)), int(rng.integers(0, image.shape[1] - size))
        out[i] = cv2.resize(image[y:y + size, x:x + size], (32, 32), interpolation=cv2.INTER_AREA)
    return out


def _planes(images):
    """HWC images -> CIFAR's rows of 3072 bytes: the R, G and B planes, each 32x32 row-major."""
    return images.transpose(0, 3, 1, 2).reshape(len(images), 3072)


def write_cifar(root, kind, layout, images, fine, coarse=None, split_sizes=None):
    """Write CIFAR batches under ``root`` (the published folder names); returns the batch folder.

    ``split_sizes`` {file name: count} splits the images in order across the batch files.
    """
    folder = os.path.join(root, {("cifar10", "python"): "cifar-10-batches-py",
                                 ("cifar10", "binary"): "cifar-10-batches-bin",
                                 ("cifar100", "python"): "cifar-100-python",
                                 ("cifar100", "binary"): "cifar-100-binary"}[(kind, layout)])
    os.makedirs(folder, exist_ok=True)
    start = 0
    for name, count in split_sizes.items():
        sl = slice(start, start + count)
        start += count
        if layout == "python":
            _write_pickle_batch(os.path.join(folder, name), kind, images[sl], fine[sl],
                                None if coarse is None else coarse[sl])
        else:
            _write_binary_batch(os.path.join(folder, name), images[sl], fine[sl],
                                None if coarse is None else coarse[sl])
    _write_meta(folder, kind, layout)
    return folder


def _write_pickle_batch(path, kind, images, fine, coarse):
    batch = {b"batch_label": b"testing batch", b"data": _planes(images),
             b"filenames": [f"img_{i}.png".encode() for i in range(len(images))]}
    if kind == "cifar10":
        batch[b"labels"] = [int(v) for v in fine]
    else:
        batch[b"fine_labels"] = [int(v) for v in fine]
        batch[b"coarse_labels"] = [int(v) for v in coarse]
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=2)


def _write_binary_batch(path, images, fine, coarse):
    head = [np.asarray(fine, np.uint8)[:, None]]
    if coarse is not None:
        head.insert(0, np.asarray(coarse, np.uint8)[:, None])
    records = np.concatenate(head + [_planes(images)], axis=1)
    records.tofile(path)


def _write_meta(folder, kind, layout):
    fine = [f"fine_{i}" for i in range(10 if kind == "cifar10" else 100)]
    coarse = [f"coarse_{i}" for i in range(20)]
    if layout == "python":
        meta = ({b"label_names": [n.encode() for n in fine], b"num_cases_per_batch": 10000}
                if kind == "cifar10" else
                {b"fine_label_names": [n.encode() for n in fine], b"coarse_label_names": [n.encode() for n in coarse]})
        with open(os.path.join(folder, "batches.meta" if kind == "cifar10" else "meta"), "wb") as f:
            pickle.dump(meta, f, protocol=2)
        return
    files = {"batches.meta.txt": fine} if kind == "cifar10" else {
        "fine_label_names.txt": fine, "coarse_label_names.txt": coarse}
    for name, lines in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write("\n".join(lines) + "\n\n")


class DyingOnceImageFolder:
    """An ImageFolder source whose worker dies (os._exit) the first time it reads ``victim``.

    Used to check that a retried shard task leaves no duplicate rows. ``marker`` records
    that the death happened (visible to every process on the machine).
    """

    def __init__(self, root, victim, marker):
        from recordio.converters.imagefolder import ImageFolderSource

        self.inner = ImageFolderSource(root)
        self.victim, self.marker = victim, str(marker)
        for name in ("kind", "schema", "desc", "index_fields", "chunk_rows", "units", "unit_rows", "where",
                     "facts"):
            setattr(self, name, getattr(self.inner, name))

    def read(self, unit):
        if unit[0] == self.victim and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(3)
        return self.inner.read(unit)
