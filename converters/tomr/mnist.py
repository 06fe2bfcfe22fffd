"""MindSpore's ``MnistToMR``: MNIST idx files -> ``<destination>_train.mindrecord`` and ``_test``.

As MindSpore: schema ``{label: int64, data: bytes}`` (``data`` the image encoded by OpenCV
as JPEG), description ``mnist_schema``, ``label`` indexed, ``partition_number`` files per
split, header size 16 MiB and page size 64 MiB. The idx files are read by
:func:`recordio.converters.mnist.read_idx`, which checks their headers (MindSpore skips the
header bytes unchecked); an uncompressed file is taken when its ``.gz`` is missing.
"""

import os

import recordio
from recordio.converters.mnist import read_idx
from recordio.converters.tomr.common import ToMR, check_filename, check_partition, import_optional

__all__ = ["MnistToMR"]

_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
          "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


class MnistToMR(ToMR):
    """MNIST idx files (``train-images-idx3-ubyte.gz``, ...) -> MindRecord (MindSpore's class)."""

    sizes = (1 << 24, 1 << 26)

    def __init__(self, source, destination, partition_number=1):
        self.cv_import = import_optional("cv2", "vision")
        self.image_size, self.num_channels = 28, 1
        check_filename(source)
        self.source = source
        paths = {split: [os.path.join(source, name) for name in names] for split, names in _FILES.items()}
        (self.train_data_filename_, self.train_labels_filename_) = paths["train"]
        (self.test_data_filename_, self.test_labels_filename_) = paths["test"]
        for path in paths["train"] + paths["test"]:
            check_filename(path)
        check_filename(destination)
        self.partition_number = check_partition(partition_number)
        self.writer_train = recordio.FileWriter(f"{destination}_train.mindrecord", self.partition_number)
        self.writer_test = recordio.FileWriter(f"{destination}_test.mindrecord", self.partition_number)
        self.mnist_schema_json = {"label": {"type": "int64"}, "data": {"type": "bytes"}}

    def _convert(self):
        """Write both splits."""
        splits = ((self.writer_train, self.train_data_filename_, self.train_labels_filename_),
                  (self.writer_test, self.test_data_filename_, self.test_labels_filename_))
        for writer, images_path, labels_path in splits:
            self.write(writer, self.mnist_schema_json, "mnist_schema", self._rows(images_path, labels_path), ["label"])

    def _rows(self, images_path, labels_path):
        images, labels = read_idx(_existing(images_path)), read_idx(_existing(labels_path))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"{images_path} holds images of shape {images.shape} but {labels_path} holds "
                             f"labels of shape {labels.shape} (expected N x H x W images and N labels)")
        for image, label in zip(images, labels):
            ok, jpeg = self.cv_import.imencode(".jpeg", image[..., None])
            if not ok:
                raise ValueError(f"{images_path}: OpenCV could not encode an image as JPEG")
            yield {"label": int(label), "data": jpeg.tobytes()}


def _existing(path):
    """``path``, or the same file without ``.gz`` when only that one exists."""
    if not os.path.exists(path) and os.path.exists(path[:-3]):
        return path[:-3]
    return path
