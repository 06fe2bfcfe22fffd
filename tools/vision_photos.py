"""ImageNet-like JPEGs for the vision benchmarks: 400-500 px crops of scikit-image's colour photos, quality 90.

Each image is a random window of a random photo, resized so that its sides are 400-500 px (as most
ImageNet training images are after their own resize), encoded by OpenCV (libjpeg-turbo, 4:2:0).
Seeded: the same ``n`` and ``seed`` give the same bytes.
"""

import numpy as np

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "retina")
QUALITY = 90


def _photos():
    import skimage.data
    return [getattr(skimage.data, name)() for name in PHOTOS]


def jpegs(n, seed=0):
    """``n`` JPEG byte strings (see the module docstring)."""
    import cv2
    rng = np.random.default_rng(seed)
    photos = _photos()
    out = []
    for _ in range(n):
        photo = photos[rng.integers(len(photos))]
        h, w = photo.shape[:2]
        ch, cw = int(rng.integers(h // 2, h + 1)), int(rng.integers(w // 2, w + 1))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        oh, ow = int(rng.integers(400, 501)), int(rng.integers(400, 501))
        img = cv2.resize(photo[y:y + ch, x:x + cw], (ow, oh), interpolation=cv2.INTER_AREA)
        ok, data = cv2.imencode(".jpg", img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, QUALITY])
        out.append(data.tobytes())
    return out


def write_mindrecord(path, n, seed=0):
    """A MindRecord file of ``n`` rows {image: JPEG bytes, label: int32}."""
    from recordio import FileWriter
    with FileWriter(path, shard_num=1, overwrite=True) as w:
        w.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "photos")
        w.write_raw_data([{"image": data, "label": i % 1000} for i, data in enumerate(jpegs(n, seed))])
    return path
