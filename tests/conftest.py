"""Shared fixtures and markers for the recordio test suite."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest
from hypothesis import settings

# Hypothesis: CI replays the same examples every run (derandomize); locally the search stays random
# (HYPOTHESIS_PROFILE=ci reproduces CI).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = pathlib.Path(__file__).resolve().parent
GOLDEN_COPIES = TESTS / "golden"                       # small golden cases carried in the repo
SHARED_GOLDEN = ROOT.parent / "shared" / "golden"      # the full set, when it sits beside the clone

# Which recordio this run tests: the checkout (an editable install) or an installed wheel
# (tools/test_wheel.sh, from a folder outside the checkout). In the second case no child process may
# get the checkout on its sys.path (PYTHONPATH, or a cwd with `python -c`), or it would import the
# sources instead of the wheel: tests start children through child_pythonpath() and cwd=TESTS.
INSTALLED = not pathlib.Path(importlib.util.find_spec("recordio").origin).resolve().is_relative_to(ROOT / "recordio")
os.environ.setdefault("RECORDIO_GOLDEN", str(GOLDEN_COPIES))      # tools/fuzz.py's cases, installed or not


def child_pythonpath(*folders):
    """PYTHONPATH for a child process: ``folders``, then the checkout when the run tests the checkout."""
    return os.pathsep.join([*map(str, folders), *([] if INSTALLED else [str(ROOT)])])


def _cuda_available():
    if "torch" not in sys.modules and os.environ.get("RECORDIO_SKIP_GPU"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("gpu") for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs CUDA")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _settings_restored():
    """Each test leaves recordio's process-wide settings (seed, order mode, bytes form, MindSpore's
    engine options) as it found them: a test that sets a seed does not decide how later tests draw."""
    import copy

    from recordio import config
    saved = (dict(config._settings), list(config._bytes_form), list(config._order_mode), copy.deepcopy(config._engine))
    yield
    for live, kept in zip((config._settings, config._bytes_form, config._order_mode, config._engine), saved):
        live.clear()
        if isinstance(live, dict):
            live.update(kept)
        else:
            live.extend(kept)


@pytest.fixture(scope="session")
def golden_copies():
    return GOLDEN_COPIES


@pytest.fixture(scope="session")
def shared_golden():
    if not SHARED_GOLDEN.is_dir():
        pytest.skip("the full golden set (../shared/golden) is not beside this clone")
    return SHARED_GOLDEN


@pytest.fixture(scope="session")
def mindspore_python():
    python = os.environ.get("RECORDIO_MINDSPORE_PYTHON")
    if not python:
        pytest.skip("RECORDIO_MINDSPORE_PYTHON is not set (no MindSpore 2.10 virtualenv)")
    try:
        done = subprocess.run([python, "-c", "import mindspore.mindrecord, mindspore.dataset"],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"RECORDIO_MINDSPORE_PYTHON={python} cannot run: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"RECORDIO_MINDSPORE_PYTHON={python} cannot import mindspore: {last}")
    return python


@pytest.fixture
def fresh_slow_warnings(monkeypatch):
    """recordio.compiled's once-per-run slow-path warnings as in a new run: none given yet, none silenced.
    Returns a function that starts such a run again (with ``allow_slow``: RECORDIO_ALLOW_SLOW=1 set)."""
    from recordio import compiled

    def fresh(allow_slow=False):
        monkeypatch.setattr(compiled, "_warned", set())
        monkeypatch.delenv(compiled.WARNED, raising=False)
        if allow_slow:
            monkeypatch.setenv(compiled.ALLOW_SLOW, "1")
        else:
            monkeypatch.delenv(compiled.ALLOW_SLOW, raising=False)

    fresh()
    return fresh
