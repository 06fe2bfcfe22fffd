"""`recordio conformance` on a small synthetic source folder (no MindSpore sources needed).

The "MindSpore" side here is this interpreter with a small stand-in ``mindspore`` package (given with
``--mindspore-path``) that has two names recordio lacks, so the runner's mapping, counting, divergence
list, left-out tests, crash recovery and exit code are all exercised on known answers.
"""

import json
import shutil
import sys
import textwrap

import pytest

from recordio.tools import _conformance_alias as alias
from recordio.tools import conformance
from recordio.tools.__main__ import main

MINDRECORD_TESTS = '''
import os

from mindspore import log as logger
from mindspore.mindrecord import FileReader, FileWriter


def test_write_read():
    writer = FileWriter("rows.mindrecord", 1, overwrite=True)
    writer.add_schema({"id": {"type": "int32"}, "name": {"type": "string"}}, "rows")
    writer.write_raw_data([{"id": i, "name": str(i)} for i in range(3)])
    writer.commit()
    reader = FileReader("rows.mindrecord")
    assert [row["id"] for row in reader.get_next()] == [0, 1, 2]
    reader.close()
    logger.info("read back")


def test_crash_is_survived():
    os._exit(3)


def test_cpu_count_shim():
    assert os.cpu_count() >= 8


def test_name_only_mindspore_has():
    from mindspore.mindrecord import ONLY_IN_MINDSPORE
    assert ONLY_IN_MINDSPORE


def test_fails_on_both():
    assert 1 == 2
'''

DATASET_TESTS = '''
import pytest

import mindspore.dataset as ds
from mindspore.dataset.vision import Inter
from mindspore.mindrecord import FileWriter


def test_substitute_data_written():
    with open("../data/mindrecord/marker.txt") as f:
        assert f.read().split() == ["images", "mindrecord"]


@pytest.mark.parametrize("shuffle", [False, ds.Shuffle.GLOBAL])
def test_minddataset_rows(shuffle):
    name = "ds_%s.mindrecord" % id(shuffle)
    writer = FileWriter(name, 1, overwrite=True)
    writer.add_schema({"label": {"type": "int64"}}, "labels")
    writer.write_raw_data([{"label": i} for i in range(5)])
    writer.commit()
    rows = list(ds.MindDataset(name, shuffle=shuffle).create_dict_iterator(output_numpy=True))
    assert sorted(int(r["label"]) for r in rows) == list(range(5)) and Inter.BILINEAR is not None


def test_left_out_by_the_manifest():
    raise RuntimeError("a left-out test must not run")
'''

BROKEN_IMPORT_TESTS = '''
from mindspore.dataset.extra import VALUE


def test_one():
    assert VALUE == 1


def test_two():
    assert VALUE + 1 == 2
'''

FAKE_MAKE_DATA = '''
import os, sys
root = sys.argv[-1]
assert os.path.isdir(os.path.join(os.environ["PEER_TESTS_SRC"], "tests/ut/python"))
with open(os.path.join(root, "marker.txt"), "a") as f:
    f.write("mindrecord\\n" if "--mindrecord" in sys.argv else "images\\n")
'''

FAKE_MINDSPORE = {
    "mindspore/__init__.py": "",
    "mindspore/log.py": "from logging import getLogger\ninfo = getLogger('mindspore').info\n",
    "mindspore/mindrecord.py": "from recordio.mindrecord import FileReader, FileWriter\nONLY_IN_MINDSPORE = True\n",
    "mindspore/dataset/__init__.py": "from recordio.dataset import *\nfrom recordio.dataset import MindDataset, Shuffle\n",
    "mindspore/dataset/vision.py": "from recordio.vision import *\n",
    "mindspore/dataset/extra.py": "VALUE = 1\n",
}

LEFT_OUT = "dataset/test_minddataset_synthetic.py::test_left_out_by_the_manifest"
ONLY_MS = "mindrecord/test_synthetic.py::test_name_only_mindspore_has"
BROKEN = ["dataset/test_minddataset_broken.py::test_one", "dataset/test_minddataset_broken.py::test_two"]


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def folders(tmp_path, monkeypatch):
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler for the CPU-count shim")
    _write(tmp_path / "src", {"tests/ut/python/mindrecord/test_synthetic.py": MINDRECORD_TESTS,
                              "tests/ut/python/mindrecord/utils.py": "# not a test file\n",
                              "tests/ut/python/dataset/test_minddataset_synthetic.py": DATASET_TESTS,
                              "tests/ut/python/dataset/test_minddataset_broken.py": BROKEN_IMPORT_TESTS,
                              "tests/ut/python/dataset/test_other.py": "def test_not_a_part():\n    assert False\n",
                              "tests/ut/data/mindrecord/README": "data\n"})
    _write(tmp_path / "peer", {"make_data.py": FAKE_MAKE_DATA})
    _write(tmp_path / "fake_ms", FAKE_MINDSPORE)
    monkeypatch.setattr(conformance, "LEFT_OUT", (LEFT_OUT,))
    monkeypatch.setattr(conformance, "DIVERGENCES", {})
    return tmp_path


def _argv(root, *extra):
    return ["conformance", "--src", str(root / "src"), "--peer-tests", str(root / "peer"), "--timeout", "120",
            "--json", str(root / "report.json"), *extra]


@pytest.mark.slow
def test_counts_regressions_and_exit_code(folders, capsys):
    code = main(_argv(folders, "--workdir", str(folders / "work"), "--mindspore-python", sys.executable,
                      "--mindspore-path", str(folders / "fake_ms")))
    out = capsys.readouterr().out
    assert code == 1, out
    report = json.loads((folders / "report.json").read_text())
    parts = report["summary"]["parts"]
    assert parts["mindrecord"] == {"tests": 5, "recordio_passed": 2, "mindspore_passed": 3, "judged": 3,
                                   "recordio_passed_of_judged": 2}
    assert parts["MindDataset"] == {"tests": 5, "recordio_passed": 3, "mindspore_passed": 5, "judged": 5,
                                    "recordio_passed_of_judged": 3}
    assert sorted(report["summary"]["regressions"]) == sorted([ONLY_MS, *BROKEN])
    tests = report["tests"]
    assert LEFT_OUT not in tests and not any("test_other" in key for key in tests)
    assert "ImportError: cannot import name 'ONLY_IN_MINDSPORE'" in tests[ONLY_MS]["recordio"]["message"]
    assert "mindspore.dataset.extra" in tests[BROKEN[0]]["recordio"]["message"]
    crash = tests["mindrecord/test_synthetic.py::test_crash_is_survived"]
    assert crash["recordio"]["message"] == crash["mindspore"]["message"] == "no result: the test process died (exit 3)"
    for key in ("dataset/test_minddataset_synthetic.py::test_minddataset_rows[#0]",
                "dataset/test_minddataset_synthetic.py::test_minddataset_rows[#1]",
                "dataset/test_minddataset_synthetic.py::test_substitute_data_written",
                "mindrecord/test_synthetic.py::test_cpu_count_shim"):
        assert tests[key]["recordio"]["outcome"] == tests[key]["mindspore"]["outcome"] == "passed", key
    assert "dataset/test_minddataset_broken.py, its 2 test(s): collection: ModuleNotFoundError" in out
    assert "goal NOT met" in out


@pytest.mark.slow
def test_divergences_do_not_count_and_baseline_skips_mindspore(folders, capsys, monkeypatch):
    assert main(_argv(folders, "--workdir", str(folders / "w1"), "--part", "mindrecord", "--mindspore-python",
                      sys.executable, "--mindspore-path", str(folders / "fake_ms"))) == 1
    baseline = folders / "baseline.json"
    shutil.copy(folders / "report.json", baseline)
    monkeypatch.setattr(conformance, "DIVERGENCES", {ONLY_MS: "checks a name recordio leaves out on purpose"})
    capsys.readouterr()
    code = main(_argv(folders, "--workdir", str(folders / "w2"), "--part", "mindrecord", "--baseline", str(baseline)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{ONLY_MS} (mindspore passed, recordio failed): checks a name recordio leaves out on purpose" in out
    summary = json.loads((folders / "report.json").read_text())["summary"]
    assert summary["parts"]["mindrecord"]["judged"] == 2 and summary["goal_met"]
    assert not (folders / "w2" / "mindspore").exists()


@pytest.mark.slow
def test_without_mindspore_every_test_counts(folders, capsys, monkeypatch):
    monkeypatch.delenv("RECORDIO_MINDSPORE_PYTHON", raising=False)     # the default MindSpore side
    assert main(_argv(folders, "--workdir", str(folders / "w"), "--part", "mindrecord", "--no-cpu-shim")) == 1
    summary = json.loads((folders / "report.json").read_text())["summary"]
    assert summary["parts"]["mindrecord"] == {"tests": 5, "recordio_passed": 1}   # no shim: 1 CPU-count failure
    assert "recordio fails (no MindSpore side: all count)" in capsys.readouterr().out


def test_sources_checked_against_the_manifest(folders, capsys):
    (folders / "peer" / "MANIFEST.txt").write_text("# path commit chars\n"
                                                   "tests/ut/python/mindrecord/utils.py abc 99\n"
                                                   "tests/ut/python/mindrecord/gone.py abc 3\n")
    assert main(_argv(folders, "--workdir", str(folders / "w"))) == 1
    err = capsys.readouterr().err
    assert "mindrecord/utils.py: 18 chars, MANIFEST.txt says 99" in err and "missing tests/ut/python/mindrecord/gone.py" in err


@pytest.mark.parametrize("name,expected", [
    ("mindspore.mindrecord", ["recordio.mindrecord"]),
    ("mindspore.dataset", ["recordio.dataset"]),
    ("mindspore.dataset.vision", ["recordio.dataset.vision", "recordio.vision"]),
    ("mindspore.dataset.vision.utils", ["recordio.dataset.vision.utils", "recordio.vision.utils"]),
    ("mindspore.dataset.transforms", ["recordio.dataset.transforms", "recordio.transforms"]),
    ("mindspore.common.dtype", ["recordio.common.dtype"]),
])
def test_mapping_candidates(name, expected):
    assert alias.candidates(name) == expected


def test_mapping_in_a_fresh_interpreter(tmp_path):
    """The finder alone: mapped modules are recordio's own objects; a missing one names what was tried."""
    import subprocess
    code = textwrap.dedent("""
        import recordio.tools._conformance_alias as alias
        alias.install("recordio")
        import mindspore.dataset as ds
        import mindspore.dataset.vision as vision
        from mindspore.dataset import transforms
        import recordio.dataset, recordio.transforms, recordio.vision
        from mindspore import log as logger
        assert ds.MindDataset is recordio.dataset.MindDataset and vision.Decode is recordio.vision.Decode
        assert transforms.TypeCast is recordio.transforms.TypeCast
        import sys
        view = sys.modules["mindspore.dataset"]              # what the import system sets lands on the view
        assert view is not recordio.dataset and vars(view)["vision"] is vision
        logger.info("fine")
        try:
            import mindspore.dataset.no_such_thing
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("No module named 'mindspore.dataset.no_such_thing' (mapped to "
                                   "recordio.dataset.no_such_thing: none exists)")


def test_the_plugin_sets_the_modes_asked_for_on_recordios_side_only(monkeypatch):
    from recordio import config
    from recordio.tools import _conformance_plugin as plugin

    monkeypatch.setenv("RECORDIO_CONFORMANCE_ORDER_MODE", "mindspore")
    monkeypatch.setenv("RECORDIO_CONFORMANCE_BYTES_FORM", "mindspore")
    try:
        monkeypatch.setenv("RECORDIO_CONFORMANCE_MODE", "stub")        # the collecting side: untouched
        plugin.pytest_configure(None)
        assert (config.get_order_mode(), config.get_bytes_form()) == ("recordio", "uint8")
        monkeypatch.setenv("RECORDIO_CONFORMANCE_MODE", "recordio")
        plugin.pytest_configure(None)
        assert (config.get_order_mode(), config.get_bytes_form()) == ("mindspore", "mindspore")
    finally:
        config.set_order_mode("recordio")
        config.set_bytes_form("uint8")
