"""Optional dependencies: which extra of the ``mindrecordio`` package installs each, and the error
that says so when a feature is used without it.

Reading, writing, counting and verifying need only the core dependencies; everything else is an
extra. A module that needs one imports it inside :func:`requires`::

    with requires("recordio.vision"):
        import cv2

so that a missing package raises :class:`~recordio.errors.MissingExtraError` at the feature's first
use, naming the feature and the command that installs it, instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from recordio.errors import MissingExtraError

# Top-level module -> (what to call it in a message, the extra that installs it).
PACKAGES = {
    "aiohttp": ("aiohttp", "remote"),
    "crc32c": ("crc32c", "tfrecord"),
    "cv2": ("OpenCV", "vision"),
    "datasets": ("Hugging Face datasets", "hf"),
    "fsspec": ("fsspec", "remote"),
    "google": ("protobuf", "tfrecord"),
    "jinja2": ("Jinja2", "view"),
    "matplotlib": ("matplotlib", "plot"),
    "multipart": ("python-multipart", "view"),
    "pandas": ("pandas", "csv"),
    "PIL": ("Pillow", "vision"),
    "pyarrow": ("pyarrow", "arrow"),
    "pyspark": ("PySpark", "spark"),
    "ray": ("Ray Data", "ray"),
    "s3fs": ("s3fs", "remote"),
    "starlette": ("Starlette", "view"),
    "tokenizers": ("Hugging Face tokenizers", "text"),
    "torch": ("PyTorch", "torch"),
    "tqdm": ("tqdm", "progress"),
    "uvicorn": ("uvicorn", "view"),
    "webdataset": ("webdataset", "webdataset"),
}


def message(feature: str, module: str, extra: str | None = None) -> str:
    """``'<feature> needs <package>: pip install "mindrecordio[<extra>]"'``."""
    what, default_extra = PACKAGES[module.split(".")[0]]
    return f'{feature} needs {what}: pip install "mindrecordio[{extra or default_extra}]"'


@contextlib.contextmanager
def requires(feature: str, extra: str | None = None) -> Iterator[None]:
    """Turn a missing optional package imported in the block into :class:`MissingExtraError`.

    ``extra`` overrides the package's own extra where a feature's extra installs it too (the
    ``ray`` extra brings pyarrow). A missing module that is not an optional dependency (a broken
    install of recordio itself) is re-raised unchanged.
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in PACKAGES:
            raise
        # The outermost feature names what the caller did (recordio.TorchDataset, not a module it loads).
        cause = exc.__cause__ if isinstance(exc, MissingExtraError) else exc
        raise MissingExtraError(message(feature, root, extra), name=exc.name) from cause


def import_module(module: str, feature: str, extra: str | None = None):
    """``importlib.import_module(module)`` inside :func:`requires`."""
    import importlib

    with requires(feature, extra):
        return importlib.import_module(module)
