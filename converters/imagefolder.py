"""ImageFolder (a folder per class of image files) -> ``{image, label, file_name}`` records.

Labels follow torchvision's ``ImageFolder``: class folders sorted by name get 0, 1, 2, ...;
files are taken recursively, sorted, with the usual image extensions. ``image`` is the
original encoded file (or a re-encoded/resized one on request), ``file_name`` its path
relative to the root with ``/`` separators. The label map is stored in the dataset's
``desc`` as JSON: ``{"source": "imagefolder", "label_map": {"cat": 0, "dog": 1}, ...}``.
"""

import json
import os
import stat

from recordio.converters import engine, images

__all__ = ["EXTENSIONS", "ImageFolderSource", "convert_imagefolder", "label_map"]

EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
ENCODINGS = (None, "jpeg", "png")
CHECKS = ("header", "decode", "none")


def _classes(root):
    try:
        entries = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    except FileNotFoundError:
        raise FileNotFoundError(f"{root}: no such folder") from None
    if not entries:
        raise ValueError(f"{root}: no class folders (an ImageFolder has one folder of images per class)")
    return entries


def _files(root, folder):
    """Image files under ``root/folder`` as ``/``-separated relative paths, in torchvision's order
    (folders by sorted path, files sorted within each; hidden entries skipped, links followed)."""
    groups, pending = {}, [folder]
    while pending:
        rel = pending.pop()
        names = groups.setdefault(rel, [])
        for entry in os.scandir(os.path.join(root, rel)):
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                pending.append(f"{rel}/{entry.name}")
            elif entry.name.lower().endswith(EXTENSIONS):
                names.append(entry.name)
    return [f"{rel}/{name}" for rel in sorted(groups, key=lambda r: os.path.join(root, r))
            for name in sorted(groups[rel])]


def _read_regular(path):
    """The bytes of the regular file ``path``; a FIFO, device or socket is refused, never waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path}: not a regular file (mode {stat.filemode(mode)}); an image must be a file")
        return f.read()


def label_map(root):
    """``{class name: label}`` of the ImageFolder ``root``."""
    return {name: i for i, name in enumerate(_classes(os.fspath(root)))}


class ImageFolderSource:
    """The files of an ImageFolder as conversion units (one file, one row)."""

    kind = "imagefolder"
    schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}, "file_name": {"type": "string"}}
    index_fields = ["label"]
    chunk_rows = 64

    def __init__(self, root, resize=None, encode=None, quality=95, check="header"):
        if encode not in ENCODINGS:
            raise ValueError(f"encode must be one of jpeg, png or None, got {encode!r}")
        if check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(CHECKS)}, got {check!r}")
        if resize is not None and (isinstance(resize, bool) or not isinstance(resize, int) or resize < 1):
            raise ValueError(f"resize must be a positive int (the shorter side in pixels), got {resize!r}")
        self.root = os.path.abspath(os.fspath(root))
        self.labels = label_map(self.root)
        self.resize, self.encode, self.quality, self.check = resize, encode, quality, check
        self.desc = json.dumps({"source": "imagefolder", "label_map": self.labels,
                                "image": self._image_note()})

    def _image_note(self):
        if self.resize is None and self.encode is None:
            return "original file bytes"
        return f"re-encoded as {self.encode or 'jpeg for jpeg input, png otherwise'}" + (
            f", shorter side {self.resize}" if self.resize else "")

    def units(self):
        return [(rel, label) for name, label in self.labels.items() for rel in _files(self.root, name)]

    def unit_rows(self, unit):
        return 1

    def where(self, unit):
        return os.path.join(self.root, unit[0])

    def facts(self):
        return {"root": self.root, "resize": self.resize, "encode": self.encode, "quality": self.quality,
                "check": self.check}

    def read(self, unit):
        rel, label = unit
        data = _read_regular(self.where(unit))
        images.check_image(data, self.check)
        if self.resize is not None or self.encode is not None:
            data = images.reencode(data, self.resize, self.encode, self.quality)
        return [{"image": data, "label": label, "file_name": rel}]


def convert_imagefolder(root, destination, *, resize=None, encode=None, quality=95, check="header",
                        **options):
    """Convert the ImageFolder ``root`` into ``destination``; see :func:`engine.convert` for ``options``."""
    source = ImageFolderSource(root, resize=resize, encode=encode, quality=quality, check=check)
    return engine.convert(source, destination, **options)
