"""What ships: the wheel and the sdist hold every module of the source tree, the suite can run on the
installed wheel (tools/test_wheel.sh), a missing extra names itself, and the version comes from the
package metadata."""

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

import recordio
from conftest import INSTALLED, ROOT, TESTS

# Source folder -> where its files go in the wheel (setup.py's PACKAGE_ROOTS).
ROOTS = {"recordio": "recordio", "converters": "recordio/converters", "tools": "recordio/tools"}
SHIPPED = ("*.py", "*.pyi", "py.typed")
# Every C source and header of the extensions (setup.py), which the sdist must carry.
C_SOURCES = sorted(path.relative_to(ROOT).as_posix() for pattern in ("*.c", "*.h")
                   for path in (ROOT / "recordio").rglob(pattern))
# The compiled parts a wheel must hold (they need no library: RECORDIO_REQUIRE_CODEC=1 makes their build required).
REQUIRED = [re.compile(rf"^{re.escape(part)}\.[^/]*\.so$") for part in ("recordio/mindrecord/_codec", "recordio/_keys")]


def source_files():
    """Every file of the source tree that belongs in the wheel, as its path inside the wheel."""
    found = set()
    for folder, target in ROOTS.items():
        base = ROOT / folder
        for pattern in SHIPPED:
            for path in base.rglob(pattern):
                if "__pycache__" not in path.parts and (path.parent / "__init__.py").exists():
                    found.add(f"{target}/{path.relative_to(base).as_posix()}")
    return found


def missing_from(expected, shipped):
    """The expected files a listing lacks, and whether every required compiled part (the codec, the key
    folds) is in it."""
    return sorted(set(expected) - set(shipped)), all(any(part.match(name) for name in shipped) for part in REQUIRED)


def _build(kind, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"build-{kind}")
    done = subprocess.run([sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=900, env=dict(os.environ, RECORDIO_REQUIRE_CODEC="1"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return next(out.iterdir())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel tools/test_wheel.sh built (RECORDIO_WHEEL), else one built here from the checkout."""
    given = os.environ.get("RECORDIO_WHEEL")
    return pathlib.Path(given) if given else _build("wheel", tmp_path_factory)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    given = os.environ.get("RECORDIO_SDIST")
    return pathlib.Path(given) if given else _build("sdist", tmp_path_factory)


def test_the_source_tree_has_the_packages_it_should():
    expected = source_files()
    for name in ("recordio/transforms/__init__.py", "recordio/ray/__init__.py", "recordio/offload/tail.py",
                 "recordio/converters/tomr/__init__.py", "recordio/tools/__main__.py", "recordio/py.typed",
                 "recordio/mindrecord/_codec.pyi"):
        assert name in expected


def test_every_c_file_is_built_and_every_header_shipped():
    """setup.py names each C file (a source, or a header in depends) and MANIFEST.in each header, so a
    split extension's new files cannot be left out of the build or the sdist."""
    setup_py, manifest = (ROOT / "setup.py").read_text(), (ROOT / "MANIFEST.in").read_text().splitlines()
    assert {"recordio/mindrecord/_codec_ints.c", "recordio/mindrecord/_codec.h", "recordio/vision/_jpeg.c"} \
        <= set(C_SOURCES)
    assert [name for name in C_SOURCES if f'"{name}"' not in setup_py] == []
    assert [name for name in C_SOURCES if name.endswith(".h") and f"include {name}" not in manifest] == []


def test_the_check_fails_on_a_missing_module():
    expected = source_files()
    shipped = set(expected) | {"recordio/mindrecord/_codec.cpython-311-x86_64-linux-gnu.so",
                               "recordio/_keys.cpython-311-x86_64-linux-gnu.so"}
    assert missing_from(expected, shipped) == ([], True)
    assert missing_from(expected, shipped - {"recordio/ray/read.py"}) == (["recordio/ray/read.py"], True)
    assert missing_from(expected, {n for n in shipped if not n.endswith(".so")})[1] is False
    assert missing_from(expected, {n for n in shipped if not n.startswith("recordio/_keys.")})[1] is False


@pytest.mark.slow
def test_the_wheel_holds_every_module(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    missing, codec = missing_from(source_files(), names)
    assert not missing, f"{wheel.name} lacks {missing}"
    assert codec, f"{wheel.name} lacks the compiled integer codec or the compiled key folds"
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


@pytest.mark.slow
def test_the_sdist_holds_the_sources_the_wheel_is_built_from(sdist):
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        names = {name.partition("/")[2] for name in archive.getnames()}
    missing = sorted(_in_tree(source_files()) - names)
    assert top.startswith("mindrecordio-")
    assert not missing, f"{sdist.name} lacks {missing}"
    assert {"LICENSE", "README.md", "CHANGELOG.md", "setup.py", "pyproject.toml", *C_SOURCES} <= names


def _in_tree(wheel_names):
    """Wheel paths -> the source-tree paths they come from."""
    out = set()
    for name in wheel_names:
        for folder, target in sorted(ROOTS.items(), key=lambda kv: -len(kv[1])):
            if name.startswith(target + "/"):
                out.add(f"{folder}/{name[len(target) + 1:]}")
                break
    return out


def test_an_installed_package_holds_every_module():
    """Against an installed wheel: its RECORD lists every module of the source tree."""
    if not INSTALLED:
        pytest.skip("this run tests the checkout (editable install); tools/test_wheel.sh tests the wheel")
    files = {str(f) for f in importlib.metadata.files("mindrecordio")}
    missing, codec = missing_from(source_files(), files)
    assert not missing and codec, missing


def test_this_run_imports_the_installed_wheel_when_asked_to():
    """tools/test_wheel.sh sets RECORDIO_TEST_INSTALLED=1: then recordio must come from site-packages,
    with the compiled codec, not from the checkout."""
    if os.environ.get("RECORDIO_TEST_INSTALLED") != "1":
        pytest.skip("not the installed-wheel run (tools/test_wheel.sh)")
    from recordio.mindrecord import codec

    where = pathlib.Path(recordio.__file__).resolve()
    assert "site-packages" in where.parts, where
    assert not where.is_relative_to(ROOT / "recordio"), where
    assert INSTALLED
    assert codec.BACKEND != "numpy", codec.BACKEND
    child = subprocess.run([sys.executable, "-c", "import recordio; print(recordio.__file__)"], cwd=TESTS,
                           capture_output=True, text=True, check=True)
    assert "site-packages" in child.stdout


def test_version_comes_from_the_package_metadata():
    version = importlib.metadata.version("mindrecordio")
    assert recordio.__version__ == version
    done = subprocess.run([sys.executable, "-m", "recordio.tools", "--version"], capture_output=True, text=True,
                          cwd=TESTS)
    assert done.returncode == 0 and done.stdout.splitlines()[0] == f"recordio {version}", done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith("compiled parts: recordio.mindrecord._codec ")   # recordio doctor's list
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(version)}\b", changelog, re.M), f"CHANGELOG.md has no section for {version}"


# Each feature with its extra, used as a user would, in a child where the extra's packages cannot load.
FEATURES = [
    (["cv2"], "import recordio; recordio.vision.Decode()",
     'recordio.vision needs OpenCV: pip install "mindrecordio[vision]"'),
    (["PIL"], "import recordio; recordio.vision.Decode(to_pil=True)",
     'recordio.vision\'s PIL path needs Pillow: pip install "mindrecordio[vision]"'),
    (["PIL"], "import recordio; recordio.vision.ToPIL()",
     'recordio.vision\'s PIL path needs Pillow: pip install "mindrecordio[vision]"'),
    (["torch"], "import recordio; recordio.TorchDataset",
     'recordio.TorchDataset needs PyTorch: pip install "mindrecordio[torch]"'),
    (["torch"], "import recordio.offload.tail",
     'the offloaded augmentation tail (map(..., offload=True)) needs PyTorch: pip install "mindrecordio[torch]"'),
    (["torch"], "from recordio import DataSink", 'recordio.DataSink needs PyTorch: pip install "mindrecordio[torch]"'),
    (["ray"], "from recordio.ray import read_mindrecord", 'recordio.ray needs Ray Data: pip install "mindrecordio[ray]"'),
    (["pyarrow"], "from recordio.converters import to_arrow; to_arrow('x')",
     'Parquet/Arrow conversion needs pyarrow: pip install "mindrecordio[arrow]"'),
    (["fsspec", "s3fs"], "import recordio; recordio.FileReader('s3://bucket/x.mindrecord0')",
     'datasets at URLs (s3://, gs://, http(s)://) needs fsspec: pip install "mindrecordio[remote]"'),
]
BLOCK = "import sys\nfor name in {names!r}: sys.modules[name] = None\n"


@pytest.mark.slow
@pytest.mark.parametrize("blocked, code, message", FEATURES, ids=[f[1].split(";")[-1].strip() for f in FEATURES])
def test_a_missing_extra_names_the_feature_and_the_install_command(blocked, code, message):
    body = "\n".join(f"    {line.strip()}" for line in code.split(";"))
    script = BLOCK.format(names=blocked) + (
        "from recordio.errors import MissingExtraError\n"
        f"try:\n{body}\n"
        "except MissingExtraError as exc:\n"
        "    assert isinstance(exc, ModuleNotFoundError) and exc.name, exc\n"
        "    print(exc)\n"
        "else:\n    print('no error')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=TESTS, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == message


def test_import_recordio_needs_no_extra():
    blocked = ["torch", "cv2", "PIL", "pyarrow", "ray", "fsspec", "pandas", "tqdm"]
    code = BLOCK.format(names=blocked) + "import recordio, recordio.mindrecord, recordio.dataset, recordio.transforms\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=TESTS, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


BARE_SCRIPT = r'''
import os, sys, numpy as np, recordio
from recordio.errors import MissingExtraError
path = os.path.join(sys.argv[1], "bare.mindrecord")
with recordio.FileWriter(path, shard_num=2) as writer:
    writer.add_schema({"label": {"type": "int32"}, "data": {"type": "bytes"}}, "bare")
    writer.add_index(["label"])
    writer.write_raw_data([{"label": i % 3, "data": bytes([i])} for i in range(10)])
reader = recordio.FileReader(path + "0")
assert [row["label"] for row in reader] == [i % 3 for i in range(10)], "read"
assert recordio.count_rows(path + "0") == 10, "count"
assert recordio.verify(path + "0").ok, "verify"
batches = list(recordio.MindDataset(path + "0", shuffle=False).batch(5).create_dict_iterator(output_numpy=True))
assert [b["label"].tolist() for b in batches] == [[0, 1, 2, 0, 1], [2, 0, 1, 2, 0]], batches
for code in ("recordio.vision", "recordio.TorchDataset", "recordio.DataSink", "recordio.train"):
    try:
        eval(code)
    except MissingExtraError as exc:
        print(exc)
for module in ("recordio.offload.tail", "recordio.ray"):
    try:
        __import__(module)
    except MissingExtraError as exc:
        print(exc)
'''


@pytest.mark.slow
def test_the_bare_install_reads_writes_and_names_each_extra(wheel, tmp_path):
    """The wheel without extras in a fresh virtualenv: write, read, count, verify and MindDataset work;
    each feature that needs an extra says which."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = subprocess.run([str(python), "-c", BARE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        'recordio.vision needs OpenCV: pip install "mindrecordio[vision]"',
        'recordio.TorchDataset needs PyTorch: pip install "mindrecordio[torch]"',
        'recordio.DataSink needs PyTorch: pip install "mindrecordio[torch]"',
        'recordio.train needs PyTorch: pip install "mindrecordio[torch]"',
        'the offloaded augmentation tail (map(..., offload=True)) needs PyTorch: pip install "mindrecordio[torch]"',
        'recordio.ray needs Ray Data: pip install "mindrecordio[ray]"',
    ]
    done = subprocess.run([str(venv / "bin" / "recordio"), "--version"], capture_output=True, text=True, timeout=120)
    version, parts = done.stdout.strip().splitlines()
    assert version == f"recordio {importlib.metadata.version('mindrecordio')}"
    # without OpenCV the vision parts the wheel holds are built but unused (not "missing": nothing is slow)
    states = dict(item.rsplit(" ", 1) for item in parts.removeprefix("compiled parts: ").split(", "))
    with zipfile.ZipFile(wheel) as zf:
        held = {n.split("/")[-1].split(".")[0] for n in zf.namelist() if n.endswith(".so")}
    assert states == {"recordio.mindrecord._codec": "active", "recordio._keys": "active",
                      **{f"recordio.vision.{m}": "unused" if m in held else "missing"
                         for m in ("_kernels", "_jpeg", "_chain", "_pilfast")}}
