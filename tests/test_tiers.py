"""The quick tier (``pytest -m "not slow"``, the edit-test loop) still touches every test module:
each keeps at least one test that is not marked slow."""

import ast

from conftest import TESTS


def _is_slow(decorators):
    return any("mark.slow" in ast.unparse(d) for d in decorators)


def quick_tests(path):
    """The test functions of a module that the quick tier runs (none when the whole module is slow)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            if "mark.slow" in ast.unparse(node.value):
                return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if not _is_slow(node.decorator_list):
                found.append(node.name)
    return found


def test_the_check_sees_a_slow_module(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text("import pytest\n\n@pytest.mark.slow\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n")
    assert quick_tests(path) == ["test_b"]
    path.write_text("import pytest\npytestmark = pytest.mark.slow\n\ndef test_b():\n    pass\n")
    assert quick_tests(path) == []


def test_every_test_module_keeps_quick_tests():
    modules = sorted(TESTS.glob("test_*.py"))
    assert len(modules) >= 100
    assert [m.name for m in modules if not quick_tests(m)] == []
