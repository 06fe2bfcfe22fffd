"""The public API: every name resolves, none is shadowed by a submodule, every one is documented."""

import importlib
import pkgutil
import types

import recordio


def test_every_public_name_resolves_and_has_a_docstring():
    for name in recordio.__all__:
        obj = getattr(recordio, name)
        assert obj.__doc__ and obj.__doc__.strip(), f"recordio.{name} has no docstring"


def test_no_public_function_is_shadowed_by_a_submodule():
    for info in pkgutil.walk_packages(recordio.__path__, "recordio."):
        if info.name.startswith(("recordio.tools", "recordio.converters")):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            continue            # an optional dependency is missing
    modules = {"config", "keys", "transforms", "vision"}
    for name in recordio.__all__:
        obj = getattr(recordio, name)
        assert isinstance(obj, types.ModuleType) == (name in modules), f"recordio.{name} is {obj!r}"


def test_all_is_sorted():
    assert recordio.__all__ == sorted(recordio.__all__)
