"""No package reads another package's private names: neither ``obj._name`` nor ``from m import _name``.

Modules of one package (one folder) may share underscore names; across packages only public names are
used, so that a package can change its insides without breaking another. The check parses every module
of ``recordio/`` and ``converters/``: an ``import`` or ``from ... import`` of an underscore name (or
module) of another package, and an attribute ``x._name`` whose name no module of the reading package
defines (as a function, class, module-level name or ``self._name``) but a module of another package
does. :data:`ALLOWED` lists the exceptions, each with the reason it stays.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TREES = ("recordio", "converters")

# (reading package, name): why it stays
ALLOWED = {
    ("recordio.mindrecord", "_codec"): "the C extension, imported by its own package's codec.py",
}


def _package(path):
    """The package a file belongs to (its folder as a dotted name)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def _modules():
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            yield path, _package(path), ast.parse(path.read_text(), str(path))


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _defined(tree):
    """Underscore names a module defines: functions, classes, module names and ``self._x`` attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)            # __slots__ entries, getattr/setattr names, state keys
    return {n for n in names if _private(n)}


def _owner(module):
    """The package that holds the module or package ``module`` (a dotted name)."""
    return module if (ROOT / module.replace(".", "/")).is_dir() else module.rpartition(".")[0]


def _imports_of_private(tree, package):
    """``(line, what)`` for each import of an underscore name or module of another package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("recordio"):
            source = node.module
            hidden = next((i for i, p in enumerate(source.split(".")) if _private(p)), None)
            for alias in node.names:
                if hidden is not None:
                    owner = ".".join(source.split(".")[:hidden])
                elif _private(alias.name):
                    owner = _owner(source)
                else:
                    continue
                if owner != package and (package, alias.name) not in ALLOWED:
                    yield node.lineno, f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in (a for a in node.names if a.name.startswith("recordio.")):
                parts = alias.name.split(".")
                for i, part in enumerate(parts):
                    if _private(part) and ".".join(parts[:i]) != package:
                        yield node.lineno, alias.name
                        break


def violations():
    modules = list(_modules())
    owned: dict[str, set] = {}
    for _, package, tree in modules:
        owned.setdefault(package, set()).update(_defined(tree))
    everywhere = set().union(*owned.values())
    found = []
    for path, package, tree in modules:
        where = path.relative_to(ROOT)
        found += [f"{where}:{line}: imports {what}" for line, what in _imports_of_private(tree, package)]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in owned[package]
                    and node.attr in everywhere and (package, node.attr) not in ALLOWED):
                found.append(f"{where}:{node.lineno}: reads .{node.attr} (private to another package)")
    return found


def test_no_package_reads_another_packages_private_names():
    assert violations() == []


def test_the_check_finds_a_private_read(tmp_path, monkeypatch):
    """The check can fail: a module reading another package's private attribute and import are found."""
    fake = tmp_path / "recordio" / "elsewhere"
    fake.mkdir(parents=True)
    (tmp_path / "recordio" / "owner.py").write_text("class A:\n    def __init__(self):\n        self._secret = 1\n")
    (fake / "reader.py").write_text("from recordio.owner import _hidden\n\ndef f(a):\n    return a._secret\n")
    (tmp_path / "converters").mkdir()
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    found = violations()
    assert any("reads ._secret" in f for f in found) and any("imports recordio.owner._hidden" in f for f in found)
