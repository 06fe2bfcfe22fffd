"""The layers of the package, held by parsing every import (module level and inside functions).

    errors, config, extras, hooks, compiled  ->  keys, batch_slots, common  ->  mindrecord (the bytes)  ->  vision, transforms  ->  offload
    ->  dataset (the pipeline)  ->  sink  ->  training;  mindrecord  ->  ray, spark (the Ray Data and Spark bridges)

A package may import those on its own floor or below; nothing inside ``recordio/`` imports the
converters or the tools, which use the public API only, nor the package root (``import recordio``,
``from recordio import FileWriter``: the root names every layer). Where MindSpore's API puts a higher
layer's object on a lower layer's class (``Dataset.device_que``), the root hands it down through
``recordio.hooks``.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "recordio"

GROUND = {"errors", "config", "extras", "hooks", "compiled"}
ALLOWED = {
    "errors": set(),
    "config": {"errors"},
    "extras": {"errors"},                                 # which extra installs an optional package
    "hooks": set(),                                       # what the package root hands down to a lower layer
    "compiled": set(),                                    # the C extensions, and a warning when one is missing
    "keys": GROUND,
    "batch_slots": GROUND,                                # where a row's image output goes when a batch follows
    "common": GROUND,
    "mindrecord": GROUND | {"keys"},
    "vision": GROUND | {"keys", "batch_slots", "common"},
    "transforms": GROUND | {"keys", "batch_slots", "common", "vision"},
    "offload": GROUND | {"keys", "batch_slots", "common", "vision", "transforms"},
    "dataset": GROUND | {"keys", "batch_slots", "common", "mindrecord", "vision", "transforms", "offload"},
    "sink": GROUND | {"keys", "batch_slots", "common", "dataset", "offload"},
    "training": GROUND | {"keys", "batch_slots", "common", "dataset", "offload", "sink"},
    "ray": GROUND | {"keys", "mindrecord"},                  # the Ray Data bridge (imports ray)
    "spark": GROUND | {"keys", "mindrecord"},                # the Spark bridge (imports pyspark)
    "view": GROUND | {"mindrecord"},                         # recordio view, the web app (imports starlette)
}
NEVER = {"converters", "tools"}
SUBMODULES = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
              } | NEVER                               # what ``from recordio import <name>`` imports as a module


def _unit(path):
    """The layer a file of ``recordio/`` belongs to (its top-level module or package)."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported(tree):
    """(line, first name under ``recordio``) of every import of a ``recordio`` module; ``"recordio"`` for
    the package root itself (``import recordio``, ``from recordio import FileWriter``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [(node.lineno, node.module)]
            if node.module == "recordio":      # from recordio import keys, config, __version__
                names = [(node.lineno, f"recordio.{a.name}" if a.name in SUBMODULES or a.name.startswith("__")
                          else "recordio") for a in node.names]
        else:
            continue
        for line, name in names:
            parts = name.split(".")
            if parts[0] != "recordio":
                continue
            if len(parts) == 1:
                yield line, "recordio"           # the root: its lazy map reaches every layer
            elif not parts[1].startswith("__"):
                yield line, parts[1]


def violations():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == PACKAGE and path.name == "__init__.py":
            continue                            # the public lazy map names everything
        unit = _unit(path)
        allowed = ALLOWED.get(unit)
        assert allowed is not None, f"{path}: a new top-level module or package: give it a layer"
        for line, target in _imported(ast.parse(path.read_text(), str(path))):
            if target != unit and (target in NEVER or target not in allowed):
                what = "the package root" if target == "recordio" else f"recordio.{target}"
                found.append(f"{path.relative_to(ROOT)}:{line}: {unit} imports {what}")
    return found


def test_every_import_follows_the_layers():
    assert violations() == []


def test_the_layer_table_covers_the_tree():
    units = {_unit(p) for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py"}
    assert units == set(ALLOWED)


@pytest.mark.parametrize("code,expected", [
    ("from recordio.dataset.node import Dataset", ["dataset"]),
    ("def f():\n    from recordio import converters", ["converters"]),
    ("import recordio.sink.datasink", ["sink"]),
    ("from recordio import __version__", []),
    ("def f():\n    import recordio", ["recordio"]),
    ("from recordio import FileWriter, config", ["recordio", "config"]),
    ("import recordio.dataset.order.shuffle", ["dataset"]),
])
def test_the_parser_sees_imports(code, expected):
    assert [t for _, t in _imported(ast.parse(code))] == expected
