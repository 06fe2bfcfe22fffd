"""The package is typed: a ``py.typed`` marker, annotations on the public API, and mypy finds no error."""

import importlib
import importlib.util
import inspect
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# (module, names): the public callables whose signatures must be fully annotated
PUBLIC = [
    ("recordio.keys", ["hash_words", "derive_uid", "row_scope", "op_scope", "current_keys", "Keys", "Keys.uniform",
                       "Keys.integers", "Keys.bernoulli", "Keys.permutation"]),
    ("recordio.vision", ["Decode", "Resize", "CenterCrop", "RandomCrop", "RandomResizedCrop", "RandomCropDecodeResize",
                         "RandomHorizontalFlip", "RandomVerticalFlip", "SlicePatches", "Normalize", "Rescale",
                         "RandomColorAdjust", "RandomSharpness", "Grayscale", "ToTensor"]),
    ("recordio.transforms", ["TypeCast", "Compose"]),
    ("recordio.mindrecord.write.writer", ["FileWriter", "FileWriter.open_for_append", "FileWriter.add_schema",
                                    "FileWriter.add_index", "FileWriter.write_raw_data", "FileWriter.commit",
                                    "FileWriter.set_header_size", "FileWriter.set_page_size"]),
    ("recordio.mindrecord.read.reader", ["FileReader", "FileReader.__getitem__", "FileReader.__getitems__",
                                    "FileReader.get_next", "FileReader.index_column", "FileReader.close"]),
    ("recordio.mindrecord.write.shard_writer", ["ShardWriter", "ShardWriter.write_raw_data", "ShardWriter.commit",
                                          "missing_shards", "finalize_shards"]),
    ("recordio.mindrecord.read.count", ["count_rows"]),
    ("recordio.mindrecord.read.verification", ["verify", "add_checksums"]),
    ("recordio.mindrecord.read.description", ["describe", "count_where"]),
    ("recordio.config", ["set_seed", "get_seed", "set_prefetch_size", "get_prefetch_size",
                         "set_num_parallel_workers", "get_num_parallel_workers", "set_auto_offload",
                         "get_auto_offload"]),
    ("recordio.dataset", ["MindDataset", "GeneratorDataset", "SequentialSampler", "RandomSampler",
                          "DistributedSampler", "SubsetSampler", "SubsetRandomSampler", "PKSampler"]),
    ("recordio.dataset.node", ["Dataset.map", "Dataset.batch", "Dataset.shuffle", "Dataset.repeat",
                               "Dataset.project", "Dataset.rename", "Dataset.filter", "Dataset.take",
                               "Dataset.skip", "Dataset.zip", "Dataset.concat", "Dataset.get_col_names",
                               "Dataset.get_dataset_size", "Dataset.get_batch_size", "Dataset.output_shapes",
                               "Dataset.output_types", "Dataset.create_dict_iterator",
                               "Dataset.create_tuple_iterator", "Dataset.state_dict", "Dataset.load_state_dict",
                               "Dataset.save", "Dataset.offload_plan", "Dataset.offload_module"]),
    ("recordio.training", ["train", "Callback.on_train_begin", "Callback.on_train_epoch_begin",
                           "Callback.on_train_step_begin", "Callback.on_train_step_end",
                           "Callback.on_train_epoch_end", "Callback.on_train_end", "LossMonitor", "TimeMonitor"]),
    ("recordio.sink.datasink", ["DataSink", "DataSink.status", "DataSink.close"]),
    ("recordio.dataset.torch_adapter", ["TorchDataset", "TorchDataset.set_epoch"]),
]


def _resolve(module, dotted):
    obj = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj.__init__ if inspect.isclass(obj) else obj


@pytest.mark.parametrize("module,names", PUBLIC, ids=[m for m, _ in PUBLIC])
def test_public_signatures_are_annotated(module, names):
    if module in ("recordio.training", "recordio.sink.datasink", "recordio.dataset.torch_adapter"):
        pytest.importorskip("torch")
    missing = []
    for name in names:
        fn = _resolve(module, name)
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.name != "self" and p.kind not in
                  (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if any(p.annotation is p.empty for p in params) or sig.return_annotation is sig.empty:
            missing.append(name)
    assert not missing, f"{module}: not annotated: {missing}"


def test_public_methods_have_docstrings():
    from recordio.dataset.node import Dataset
    from recordio.training import Callback
    missing = [f"{cls.__name__}.{name}" for cls in (Dataset, Callback)
               for name, fn in vars(cls).items()
               if not name.startswith("_") and callable(fn) and not (fn.__doc__ or "").strip()]
    assert not missing


def test_the_package_is_marked_typed():
    assert (ROOT / "recordio" / "py.typed").is_file()


def test_mypy_finds_no_error():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the dev extra)")
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
