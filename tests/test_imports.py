"""`import recordio` stays light; the count path does not even load numpy; imports run one way."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _loaded_after(code):
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT / "tests")
    return set(out.stdout.split())


def test_import_recordio_loads_no_torch_cv2_numpy():
    loaded = _loaded_after("import recordio")
    assert not {"torch", "cv2", "numpy"} & loaded


def test_reading_and_writing_need_no_torch_or_cv2(tmp_path):
    code = (f"import recordio, numpy as np\n"
            f"w = recordio.FileWriter({str(tmp_path / 'x.mr')!r}); w.add_schema({{'a': {{'type': 'int32'}}}})\n"
            f"w.write_raw_data([{{'a': 1}}]); w.commit()\n"
            f"r = recordio.FileReader({str(tmp_path / 'x.mr')!r}); list(r)")
    loaded = _loaded_after(code)
    assert not {"torch", "cv2"} & loaded


def test_count_rows_does_not_import_numpy():
    golden = ROOT / "tests" / "golden" / "matrix_s4_index" / "matrix_s4_index.mindrecord0"
    loaded = _loaded_after(f"import recordio\nassert recordio.count_rows({str(golden)!r}) == 24")
    assert "numpy" not in loaded


def _imports(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.slow
def test_library_never_imports_tools_or_converters():
    for path in (ROOT / "recordio").rglob("*.py"):
        bad = {n for n in _imports(path) if n.startswith(("recordio.tools", "recordio.converters"))}
        assert not bad, f"{path} imports {bad}"


def test_storage_modules_do_not_import_the_pipeline_or_torch():
    paths = [ROOT / "recordio" / "errors.py", *(ROOT / "recordio" / "mindrecord").rglob("*.py")]
    assert len(paths) > 15
    for path in paths:
        bad = {n for n in _imports(path) if n.startswith(("recordio.dataset", "recordio.sink", "recordio.offload",
                                                          "recordio.training", "torch", "cv2"))}
        assert not bad, f"{path} imports {bad}"



# recordio.dataset.order answers the samplers' names (a lazy import in its ``__getattr__``) for code written
# before they moved to recordio.dataset.samplers, which builds on order: the one import that runs back up.
COMPAT_ALIASES = {("recordio.dataset.order", "recordio.dataset.samplers")}


def _dataset_import_graph():
    """``{module: modules of recordio.dataset it imports}``, deferred (function-level) imports included."""
    modules = {}
    for path in (ROOT / "recordio" / "dataset").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path}: a relative import"
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = (targets & modules.keys()) - {name}
    return graph


def _reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_dataset_modules_import_in_no_circle():
    graph = _dataset_import_graph()
    assert len(graph) > 30
    for module, target in COMPAT_ALIASES:
        assert target in graph[module], f"{module} no longer imports {target}: drop it from COMPAT_ALIASES"
        graph[module] = graph[module] - {target}
    reach = {name: _reachable(graph, name) for name in graph}
    circles = {tuple(sorted(n for n in reach[name] if name in reach[n])) for name in graph if name in reach[name]}
    assert not circles, f"modules of recordio.dataset that import each other: {circles}"
