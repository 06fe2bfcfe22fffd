"""Real inputs for MindSpore's converter classes (``*ToMR``) and the CSV / TFRecord converters.

* :func:`cifar_folder` – CIFAR-10/100 python batches of real photo crops, pickled so that
  numpy 1 and MindSpore's restricted unpickler load them too;
* :func:`mnist_folder` – gzipped idx files of scikit-learn's handwritten digits (28x28);
* :func:`imagenet_folder` – an ImageNet-style map file and folders of JPEG photo crops;
* :func:`write_csv` – a CSV with int, float, bool and text columns;
* :func:`write_tfrecord` – ``tf.train.Example`` records written by the ``tfrecord`` package.
"""

import gzip
import os
import pickle
import struct

import cv2
import numpy as np
from convert_sources import _planes, cifar_pixels, photo

__all__ = ["cifar_folder", "imagenet_folder", "mnist_folder", "write_csv", "write_tfrecord"]


def _pickle(obj):
    """Protocol 3, with numpy's reconstructor under its numpy 1 name (MindSpore's venv has numpy 1)."""
    return pickle.dumps(obj, protocol=3).replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


def cifar_folder(root, kind, sizes, seed=0):
    """CIFAR python batches ``{file name: rows}`` under ``root``; returns {name: (pixels HWC, labels...)}."""
    os.makedirs(root, exist_ok=True)
    out = {}
    for k, (name, n) in enumerate(sizes.items()):
        images = cifar_pixels(n, seed + k)
        fine = (np.arange(n) * 7 + k) % (10 if kind == "cifar10" else 100)
        batch = {b"batch_label": name.encode(), b"data": _planes(images),
                 b"filenames": [f"img_{i}.png".encode() for i in range(n)]}
        if kind == "cifar10":
            batch[b"labels"] = [int(v) for v in fine]
            out[name] = (images, fine)
        else:
            coarse = fine % 20
            batch[b"fine_labels"], batch[b"coarse_labels"] = [int(v) for v in fine], [int(v) for v in coarse]
            out[name] = (images, fine, coarse)
        with open(os.path.join(root, name), "wb") as f:
            f.write(_pickle(batch))
    return out


def _digits(n, offset):
    from sklearn.datasets import load_digits

    digits = load_digits()
    pick = (np.arange(n) + offset) % len(digits.images)
    images = np.stack([cv2.resize((digits.images[i] * 16).clip(0, 255).astype(np.uint8), (28, 28),
                                  interpolation=cv2.INTER_LINEAR) for i in pick])
    return images, digits.target[pick].astype(np.uint8)


def mnist_folder(root, train=60, test=20):
    """Gzipped MNIST idx files of real handwritten digits; returns {split: (images, labels)}."""
    os.makedirs(root, exist_ok=True)
    out = {}
    for prefix, n, offset in (("train", train, 0), ("t10k", test, 500)):
        images, labels = _digits(n, offset)
        with open(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(gzip.compress(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes(), mtime=0))
        with open(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(gzip.compress(struct.pack(">II", 2049, n) + labels.tobytes(), mtime=0))
        out[prefix] = (images, labels)
    return out


def imagenet_folder(root, classes=3, per_class=4, seed=0):
    """``root/map.txt`` and ``root/images/<wnid>/*.JPEG``; returns (map file, image dir)."""
    rng = np.random.default_rng(seed)
    image_dir = os.path.join(root, "images")
    lines = []
    names = ("chelsea", "astronaut", "coffee", "rocket")
    for c in range(classes):
        wnid = f"n{1440764 + c * 17:08d}"
        lines.append(f"{wnid} {c}\n")
        os.makedirs(os.path.join(image_dir, wnid))
        image = photo(names[c % len(names)])
        for i in range(per_class):
            size = int(rng.integers(60, 200))
            crop = image[:size, i * 10:i * 10 + size]
            ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))
            ext = ".JPEG" if i % 2 == 0 else ".jpg"
            with open(os.path.join(image_dir, wnid, f"{wnid}_{i}{ext}"), "wb") as f:
                f.write(jpeg.tobytes())
    map_file = os.path.join(root, "map.txt")
    with open(map_file, "w") as f:
        f.writelines(lines)
    return map_file, image_dir


CSV_TEXT = ("Name,Age,EmployNumber,Sales,Over18,City\n"
            "Ana,31,1001,1234.5,True,Lisbon\n"
            "Bo,17,1002,0.25,False,\"Oslo, Norway\"\n"
            "Chen,45,1003,-3.0,True,Beijing\n"
            "Dara,28,1004,1e3,False,Cork\n"
            "Émile,52,1005,77.125,True,Lyon\n")


def write_csv(path, text=CSV_TEXT):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def write_tfrecord(path, n, seed=0, image_size=(48, 64)):
    """``n`` Examples {file_name, image_bytes (JPEG), int64_scalar, float_scalar, int64_list[6],
    float_list[7]} written by the ``tfrecord`` package; returns the rows as written."""
    import tfrecord

    rng = np.random.default_rng(seed)
    source = photo("astronaut")
    rows = []
    writer = tfrecord.TFRecordWriter(str(path))
    for i in range(n):
        y, x = int(rng.integers(0, 300)), int(rng.integers(0, 300))
        crop = source[y:y + image_size[0], x:x + image_size[1]]
        jpeg = cv2.imencode(".jpg", cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))[1].tobytes()
        row = {"file_name": f"img_{i:05d}.jpg", "image_bytes": jpeg, "int64_scalar": int(rng.integers(-9, 10 ** 12)),
               "float_scalar": float(np.float32(rng.standard_normal())),
               "int64_list": rng.integers(-100, 100, 6).astype(np.int64),
               "float_list": rng.standard_normal(7).astype(np.float32)}
        writer.write({"file_name": (row["file_name"].encode(), "byte"), "image_bytes": (jpeg, "byte"),
                      "int64_scalar": (row["int64_scalar"], "int"), "float_scalar": (row["float_scalar"], "float"),
                      "int64_list": (row["int64_list"].tolist(), "int"),
                      "float_list": (row["float_list"].tolist(), "float")})
        rows.append(row)
    writer.close()
    return rows
