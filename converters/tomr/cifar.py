"""MindSpore's ``Cifar10ToMR`` and ``Cifar100ToMR``: CIFAR python batches -> two JPEG datasets.

As MindSpore: ``destination`` gets the train split and ``destination + "_test"`` the test
split, one file each, schema ``{id: int64, label: int64, data: bytes}`` (CIFAR-100:
``fine_label``, ``coarse_label``), ``data`` the image re-encoded by OpenCV as JPEG (lossy;
``recordio convert cifar10`` keeps the exact pixels as PNG), ``id`` the row number, the
description ``img_train``/``img_test`` and the index fields given to ``transform``.
Training batches are read in the order the directory lists them (``os.listdir``), as
MindSpore reads them. Batches are read by :func:`recordio.converters.cifar.load_batch`,
which builds numpy arrays only (no code runs from a crafted pickle).
"""

import os
import re

import numpy as np

import recordio
from recordio.converters.cifar import load_batch
from recordio.converters.tomr.common import PathNotExistsError, ToMR, check_filename, import_optional

__all__ = ["Cifar100ToMR", "Cifar10ToMR"]


class _CifarToMR(ToMR):
    """What the two CIFAR classes share; subclasses name the files, label fields and batch kind."""

    kind = ""
    label_fields: tuple = ()
    batch = None                 # MindSpore's writes a split in one write_raw_data call

    def __init__(self, source, destination):
        self.cv_import = import_optional("cv2", "vision")
        check_filename(source)
        self.source = source
        files = os.listdir(self.source)
        for wanted, found in self._required(files):
            if not found:
                raise PathNotExistsError(wanted)
        check_filename(destination)
        self.destination = destination
        self.writer = None
        self.fields = None

    def transform(self, fields=None):
        """Write ``destination`` (train) and ``destination + "_test"``; ``fields``: index fields."""
        return self.run(fields)

    def run(self, fields=None):
        """The same as ``transform(fields)``."""
        if fields and not isinstance(fields, list):
            raise ValueError("The parameter fields should be None or list")
        self.fields = fields
        return super().run()

    def _convert(self):
        train, test = self._splits()
        self._write(self.destination, train, "img_train")
        self._write(self.destination + "_test", test, "img_test")

    def _rows(self, pixels, labels):
        """Rows ``{id, data, <labels>}``: images N x 3072 (CHW planes) -> HWC -> BGR -> JPEG."""
        images = pixels.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        for i, image in enumerate(images):
            ok, jpeg = self.cv_import.imencode(".jpeg", np.ascontiguousarray(image[..., [2, 1, 0]]))
            if not ok:
                raise ValueError(f"{self.source}: OpenCV could not encode image {i} as JPEG")
            row = {"id": i, "data": jpeg.tobytes()}
            row.update({name: int(values[i]) for name, values in zip(self.label_fields, labels)})
            yield row

    def _write(self, file_name, rows, desc):
        schema = {"id": {"type": "int64"}, **{f: {"type": "int64"} for f in self.label_fields},
                  "data": {"type": "bytes"}}
        self.write(recordio.FileWriter(file_name, 1), schema, desc, rows, self.fields)

    def _load(self, name):
        return load_batch(os.path.join(os.path.realpath(self.source), name), self.kind, "python")


class Cifar10ToMR(_CifarToMR):
    """CIFAR-10 python batches (``data_batch_*``, ``test_batch``) -> MindRecord (MindSpore's class)."""

    kind = "cifar10"
    label_fields = ("label",)

    @staticmethod
    def _required(files):
        return [("data_batch_*", any(f.startswith("data_batch_") for f in files)),
                ("test_batch", any(f.startswith("test_batch") for f in files))]

    def _splits(self):
        files = os.listdir(self.source)
        train = [self._load(f) for f in files if re.match("data_batch_*", f)]
        tests = [f for f in files if re.match("test_batch", f)]
        if len(tests) != 1:
            raise ValueError(f"{self.source}: expected one test_batch file, found {sorted(tests)}")
        test = self._load(tests[0])
        pixels = np.concatenate([b[0] for b in train]) if train else np.zeros((0, 3072), np.uint8)
        labels = np.concatenate([b[1] for b in train]) if train else np.zeros(0, np.int64)
        return self._rows(pixels, [labels]), self._rows(test[0], [test[1]])


class Cifar100ToMR(_CifarToMR):
    """CIFAR-100 python batches (``train``, ``test``) -> MindRecord (MindSpore's class)."""

    kind = "cifar100"
    label_fields = ("fine_label", "coarse_label")

    @staticmethod
    def _required(files):
        return [("train", "train" in files), ("test", "test" in files)]

    def _splits(self):
        train, test = self._load("train"), self._load("test")
        return self._rows(train[0], train[1:]), self._rows(test[0], test[1:])
