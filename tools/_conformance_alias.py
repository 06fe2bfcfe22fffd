"""The import mapping of ``recordio conformance``: MindSpore's tests run unchanged on recordio.

This file is copied next to a generated ``sitecustomize.py`` into a folder on the test process's
``PYTHONPATH`` (so worker processes the tests start get it too); it imports nothing of recordio
until a ``mindspore`` module is imported. Two modes:

``recordio``
    ``mindspore.X`` is recordio's module for X: first ``recordio.X`` (``mindspore.mindrecord`` ->
    ``recordio.mindrecord``, ``mindspore.dataset`` -> ``recordio.dataset``), then the porting table
    of docs/porting.md (``mindspore.dataset.vision`` -> ``recordio.vision``,
    ``mindspore.dataset.transforms`` -> ``recordio.transforms``). ``mindspore`` itself and
    ``mindspore.log`` are small shims of this file (they are not data code). A name recordio lacks
    fails to import, as it would for a user who changed the import lines.
``stub``
    every ``mindspore`` module is a placeholder whose attributes are placeholders: only for
    ``pytest --collect-only``, to list the tests whatever either side can import.
"""

import importlib
import importlib.abc
import importlib.util
import logging
import sys
import types

PORTING = (("mindspore.dataset.vision", "recordio.vision"),
           ("mindspore.dataset.transforms", "recordio.transforms"))


def install(mode):
    """Put the finder first on ``sys.meta_path`` (``mode``: ``"recordio"`` or ``"stub"``)."""
    if mode not in ("recordio", "stub"):
        raise ValueError(f"conformance: unknown import mapping mode {mode!r}")
    sys.meta_path.insert(0, _Finder(mode))


def candidates(name):
    """recordio's modules that may answer MindSpore's module ``name``, in the order tried."""
    rest = name[len("mindspore"):]
    found = ["recordio" + rest]
    for prefix, target in PORTING:
        if name == prefix or name.startswith(prefix + "."):
            found.append(target + name[len(prefix):])
    return list(dict.fromkeys(found))


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, mode):
        self.mode = mode

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mindspore" and not fullname.startswith("mindspore."):
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(self.mode), is_package=True)


class _Loader(importlib.abc.Loader):
    def __init__(self, mode):
        self.mode = mode

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        if self.mode == "stub":
            real = _StubModule(name)
        elif name in _SHIMS:
            real = _SHIMS[name](name)
        else:
            real = _Alias(name, _import_first(name))
        sys.modules[name] = real          # the import statement returns what sys.modules holds


def _import_first(name):
    tried = candidates(name)
    for target in tried:
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (target == exc.name or target.startswith(exc.name + ".")):
                raise                       # recordio's module exists but failed inside: not ours to hide
    raise ModuleNotFoundError(f"No module named {name!r} (mapped to {' / '.join(tried)}: none exists)",
                              name=name)


class _Alias(types.ModuleType):
    """``mindspore.X`` as a view of recordio's module: attributes are read from it, while what the
    import system sets (a submodule imported as ``mindspore.X.Y``) stays on the view, so one test
    module's imports never change recordio's modules nor what another test module finds there."""

    def __init__(self, name, target):
        super().__init__(name, target.__doc__)
        self.__path__ = []                       # mindspore.X.Y is always asked of the finder
        self.__file__ = getattr(target, "__file__", None)
        object.__setattr__(self, "_conformance_target", target)

    def __getattr__(self, attr):
        return getattr(object.__getattribute__(self, "_conformance_target"), attr)

    def __dir__(self):
        return sorted(set(dir(object.__getattribute__(self, "_conformance_target"))) | set(self.__dict__))


def _package(name):
    module = types.ModuleType(name, "conformance shim: the mindspore package itself holds no data code")
    module.__path__ = []
    return module


def _log(name):
    """``from mindspore import log as logger``: MindSpore's logger functions over ``logging``."""
    module = types.ModuleType(name, "conformance shim of mindspore.log")
    logger = logging.getLogger("mindspore")
    for level in ("debug", "info", "warning", "error", "critical", "exception"):
        setattr(module, level, getattr(logger, level))
    module.warn = logger.warning
    return module


_SHIMS = {"mindspore": _package, "mindspore.log": _log}


class _AnyMeta(type):
    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _any(attr)

    def __iter__(cls):
        return iter(())


class _Any(metaclass=_AnyMeta):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _any(attr)()

    def __call__(self, *args, **kwargs):
        return _any("result")()


def _any(name):
    return _AnyMeta(name, (_Any,), {})


class _StubModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name, "conformance placeholder (collection only)")
        self.__path__ = []

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _any(attr)
