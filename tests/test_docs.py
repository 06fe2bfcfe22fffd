"""The documentation: every ```python snippet of README.md and docs/*.md runs, and every public name
has a docstring.

The snippets of one file run in order, each in a fresh interpreter, in one temporary folder that
starts empty: a page can be a tutorial whose later snippets use the files its earlier ones wrote,
but every page makes its own data. Snippets that are not meant to run (output, shell sessions,
fragments) use another fence (```text, ```bash).
"""

import importlib
import inspect
import os
import pathlib
import re
import subprocess
import sys
import warnings

import pytest

from conftest import ROOT, child_pythonpath

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMESPACES = ("recordio", "recordio.vision", "recordio.transforms", "recordio.converters", "recordio.ray", "recordio.spark")
LINKED = ("quickstart.md", "howto-spark.md", "porting.md", "howto-distributed.md", "howto-resume.md", "howto-ray.md",
          "howto-verify.md", "bridges.md", "FORMAT.md", "threat-model.md")


def snippets(path):
    """``(line, code)`` of every ```python block of ``path``, in order."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


def run_snippet(code, folder):
    script = folder / ".snippet.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([child_pythonpath(), os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(script)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=180)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in DOCS if snippets(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_snippets_run(path, tmp_path):
    for line, code in snippets(path):
        done = run_snippet(code, tmp_path)
        assert done.returncode == 0, (f"{path.relative_to(ROOT)}:{line}: the snippet failed\n{code}\n"
                                      f"--- stderr ---\n{done.stderr[-4000:]}")


def test_snippets_are_found():
    found = {p.name for p in DOCS if snippets(p)}
    assert {"README.md", "quickstart.md", "porting.md", "howto-resume.md"} <= found


def test_docs_index_links_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    for page in LINKED:
        assert f"]({page})" in index, f"docs/README.md does not link {page}"
        assert (ROOT / "docs" / page).exists(), page
    assert "](docs/README.md)" in (ROOT / "README.md").read_text()


def public_names():
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name in module.__all__:
            yield pytest.param(namespace, name, id=f"{namespace}.{name}")


def own_docstring(obj):
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return (doc or "").strip()


@pytest.mark.parametrize("namespace, name", list(public_names()))
def test_public_name_has_a_docstring(namespace, name):
    obj = getattr(importlib.import_module(namespace), name)
    assert own_docstring(obj), f"{namespace}.{name} has no docstring of its own"


def test_every_namespace_has_a_sorted_all():
    for namespace in NAMESPACES:
        names = importlib.import_module(namespace).__all__
        assert names, namespace
        assert own_docstring(importlib.import_module(namespace)), f"{namespace} has no module docstring"


def test_build_docs_writes_the_reference(tmp_path):
    pytest.importorskip("pdoc")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_docs
    finally:
        sys.path.remove(str(ROOT / "tools"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)           # e.g. a name in __all__ pdoc cannot resolve
        pages = build_docs.build(tmp_path / "api")
    assert {"index.html", "recordio.html", "recordio/vision.html", "recordio/converters.html"} <= set(pages)
    text = (tmp_path / "api" / "recordio.html").read_text()
    assert "FileWriter" in text and "write_raw_data" in text and "count_rows" in text
    for name in importlib.import_module("recordio").__all__:
        assert name in text, f"the API reference does not mention {name}"
