"""MindSpore's ``ImageNetToMR``: a map file (``<folder> <label>`` lines) and an image folder -> MindRecord.

As MindSpore: schema ``{label: int32, image: bytes, file_name: string}`` (the JPEG file's
bytes as they are, ``file_name`` its path as ``os.path.join(image_dir, folder, name)``),
description ``imagenet_schema``, ``label`` and ``file_name`` indexed, rows written with
``parallel_writer=True`` in batches of 256, header size 16 MiB and page size 32 MiB (MindSpore
asks for 64 MiB pages, but its parallel writer ignores that). Folders are
taken in the map file's order and files in the order the directory lists them; only names
ending in ``JPEG`` or ``jpg`` are taken. Files skipped as MindSpore skips them (another
suffix, an empty file, a folder the map names that is missing) are reported in a warning.

A map line is ``<folder> <label>``, perhaps followed by more words (ignored, as MindSpore
ignores them). Stricter than MindSpore: a line without an int label or a label given twice
raises ValueError naming the line (MindSpore fails on the first, and silently keeps the
last folder for the second).
"""

import os
import warnings

import recordio
from recordio.converters.tomr.common import PathNotExistsError, ToMR, check_filename, check_partition

__all__ = ["ImageNetToMR", "read_map_file"]

SCHEMA = {"label": {"type": "int32"}, "image": {"type": "bytes"}, "file_name": {"type": "string"}}
SUFFIXES = ("JPEG", "jpg")


def read_map_file(path):
    """``{label: folder}`` of a map file, in the file's order."""
    labels = {}
    with open(os.path.realpath(path)) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) < 2 or not parts[1].lstrip("-").isdigit():
                raise ValueError(f"{path}: line {number}: expected '<folder> <label>', found {line.strip()!r}")
            label = int(parts[1])
            if label in labels:
                raise ValueError(f"{path}: line {number}: label {label} is given twice "
                                 f"({labels[label]!r} and {parts[0]!r})")
            labels[label] = parts[0]
    return labels


class ImageNetToMR(ToMR):
    """ImageNet-style folders of JPEGs named by a map file -> MindRecord (MindSpore's class)."""

    parallel_writer = True

    def __init__(self, map_file, image_dir, destination, partition_number=1):
        check_filename(map_file)
        self.map_file = map_file
        check_filename(image_dir)
        self.image_dir = image_dir
        check_filename(destination)
        self.destination = destination
        self.partition_number = check_partition(partition_number)
        self.writer = recordio.FileWriter(self.destination, self.partition_number)

    def _convert(self):
        # MindSpore calls set_header_size(1 << 24) and set_page_size(1 << 26) here, but with
        # parallel_writer=True its writer processes keep the defaults (16 MiB, 32 MiB): so do we.
        skipped = []
        self.write(self.writer, SCHEMA, "imagenet_schema", self._rows(skipped), ["label", "file_name"])
        if skipped:
            warnings.warn(f"{self.image_dir}: {len(skipped)} input(s) skipped as MindSpore skips them: "
                          + "; ".join(skipped[:10]) + ("; ..." if len(skipped) > 10 else ""), stacklevel=4)

    def _folders(self, skipped):
        if not os.path.exists(os.path.realpath(self.map_file)):
            raise OSError(f"map file {self.map_file} not exists")
        folders = {}
        for label, name in read_map_file(self.map_file).items():
            path = os.path.join(self.image_dir, name)
            if os.path.isdir(path):
                folders[label] = path
            else:
                skipped.append(f"{path}: no such folder")
        if not folders:
            raise PathNotExistsError(f"not valid image dir in {self.image_dir}")
        return folders

    def _rows(self, skipped):
        for label, folder in self._folders(skipped).items():
            for item in os.listdir(folder):
                file_name = os.path.join(folder, item)
                if not item.endswith(SUFFIXES):
                    skipped.append(f"{file_name}: not a .JPEG/.jpg name")
                    continue
                with open(os.path.realpath(file_name), "rb") as f:
                    image = f.read()
                if not image:
                    skipped.append(f"{file_name}: empty file")
                    continue
                yield {"file_name": str(file_name), "label": int(label), "image": image}
