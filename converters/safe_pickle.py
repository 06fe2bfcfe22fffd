"""Loading dataset pickles (CIFAR batches) without letting them run code.

The unpickler builds only plain containers and numpy arrays; any other global in the
stream is refused with the file's path and the global's name.
"""

import importlib
import pickle

__all__ = ["load_pickle"]

_ALLOWED = {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),
}


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name} (only numpy arrays "
                                         f"and plain containers are allowed in a dataset pickle)")
        if module.startswith("numpy.core") or module.startswith("numpy._core"):
            return getattr(_numpy_core(module.split(".", 2)[2]), name)
        return getattr(importlib.import_module(module), name)


def _numpy_core(submodule):
    """numpy's core submodule under its numpy 2 name (``numpy._core``) or its numpy 1 name."""
    try:
        return importlib.import_module(f"numpy._core.{submodule}")
    except ImportError:
        return importlib.import_module(f"numpy.core.{submodule}")


def load_pickle(path):
    """The object pickled in ``path`` (Python 2 byte strings kept as ``bytes``)."""
    with open(path, "rb") as f:
        return _NumpyOnlyUnpickler(f, encoding="bytes").load()
