"""What a lower layer calls and a higher one provides, handed down by the package root.

Imports run one way (errors/config/keys -> mindrecord -> dataset -> sink -> training;
``tests/test_layers.py``). MindSpore's API puts one object of a higher layer on a lower layer's
class: ``Dataset.device_que()`` returns the sink's ``DeviceQueue``. The dataset layer asks for it
here (:func:`provided`); ``recordio/__init__.py``, the one module that names every layer and the
first to run when any of them is imported, says where it is (:func:`provide`). No layer imports
a higher one, and nothing is loaded before it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["provide", "provided"]

_LOADERS: dict[str, Callable[[], Any]] = {}      # set by recordio/__init__.py only


def provide(name: str, load: Callable[[], Any]) -> None:
    """Make ``load()`` (called at each use; it imports what it returns) the provider of ``name``."""
    _LOADERS[name] = load


def provided(name: str) -> Any:
    """What the layer that provides ``name`` gives for it."""
    if name not in _LOADERS:
        raise LookupError(f"nothing provides {name!r}: recordio/__init__.py hands it down (recordio.hooks)")
    return _LOADERS[name]()
