"""Converters: ImageFolder, CIFAR-10/100, MNIST/Fashion-MNIST, Parquet, CSV, TFRecord, text (packed token
rows), Megatron-LM token files, Hugging Face datasets and WebDataset shards into MindRecord, and back to
Arrow, Megatron-LM, Hugging Face datasets and WebDataset.

Every ``convert_*`` function takes the source, the destination file name and these options
(all keyword-only), and returns a :class:`Summary`:

* ``shard_num`` – data files to write (default: one per worker); the rows' order does not
  depend on it,
* ``workers`` – processes of the local pool (default: the CPU count),
* ``engine`` – ``"process"`` (default) or ``"ray"`` (Ray Data; extra ``recordio[ray]``),
* ``skip_bad`` – leave unreadable inputs out and list them in ``Summary.skipped``
  (default: the conversion fails, naming the input),
* ``overwrite`` – replace an existing dataset,
* ``quiet`` – no progress bar (it is drawn only when stderr is a terminal).

A conversion publishes atomically; rerun after a crash, it writes only the shards that
were not complete. See ``docs/convert.md``. MindSpore's converter classes (``Cifar10ToMR``, ...)
are in :mod:`recordio.converters.tomr` (and ``recordio.mindrecord``).
"""

from recordio.converters.cifar import convert_cifar10, convert_cifar100
from recordio.converters.csv import convert_csv
from recordio.converters.engine import Summary
from recordio.converters.hf import from_hf, to_hf
from recordio.converters.imagefolder import convert_imagefolder, label_map
from recordio.converters.mnist import convert_mnist
from recordio.converters.parquet import convert_parquet, to_arrow, write_arrow
from recordio.converters.megatron import convert_megatron, export_megatron
from recordio.converters.text import convert_text
from recordio.converters.tfrecord import FixedLenFeature, convert_tfrecord
from recordio.converters.webdataset import convert_webdataset, to_webdataset

__all__ = sorted([
    "FixedLenFeature", "Summary", "convert_cifar10", "convert_cifar100", "convert_csv", "convert_imagefolder",
    "convert_megatron", "convert_mnist", "convert_parquet", "convert_text", "convert_tfrecord",
    "convert_webdataset", "export_megatron", "from_hf", "label_map", "to_arrow", "to_hf", "to_webdataset",
    "write_arrow",
])
