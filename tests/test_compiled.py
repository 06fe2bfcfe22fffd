"""A slow path is never silent: each missing compiled part warns once at its first use, names the part, its
cost and how to build it; ``RECORDIO_ALLOW_SLOW=1`` silences it; ``recordio doctor`` / ``--version`` list them.

Each case runs in a fresh process whose import of the part is blocked (as in an install without a C
compiler), then uses what the part speeds up and checks the values are still right.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import TESTS, child_pythonpath
from recordio import compiled

BLOCK = r'''
import sys, warnings, json
BLOCKED = sys.argv[1]

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked by the test)")

if BLOCKED:
    sys.meta_path.insert(0, Block())
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    result = USE()
    result = USE()                      # a second use: no second warning
print("RESULT" + json.dumps({"result": result, "warnings": [[w.category.__name__, str(w.message)] for w in seen]}))
'''

USES = {
    "recordio.mindrecord._codec": r'''
def USE():
    import os, tempfile, numpy as np, recordio
    path = os.path.join(tempfile.mkdtemp(), "t.mindrecord")
    with recordio.FileWriter(path) as w:
        w.add_schema({"ids": {"type": "int32", "shape": [-1]}})
        w.write_raw_data([{"ids": np.arange(i, 40 + i, dtype=np.int32)} for i in range(3)])
    return [int(r["ids"].sum()) for r in recordio.FileReader(path)]
''',
    "recordio._keys": r'''
def USE():
    from recordio import vision
    from recordio.keys import Keys, derive_uid, row_scope, op_scope
    keys = Keys(5489, 0, 7, 11)
    with row_scope(5489, 1, 3), op_scope(derive_uid(2, 5)):
        box = vision.RandomResizedCrop(8).region(40, 60)
    return keys.unit_floats([(0,), (1, -2)]) + [float(keys.uniform(3, -1.0, 2.0)[0]), derive_uid(9, 4), list(box)]
''',
    "recordio.vision._kernels": r'''
def USE():
    import numpy as np
    from recordio import vision
    img = np.random.default_rng(0).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    out = vision.RandomColorAdjust(brightness=(1.2, 1.2), contrast=(0.8, 0.8))(img)
    return int(out.astype(np.int64).sum())
''',
    "recordio.vision._jpeg": r'''
def USE():
    import cv2, numpy as np
    from recordio import vision
    img = cv2.resize(np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8), (96, 80))
    data = cv2.imencode(".jpg", img)[1].tobytes()
    return list(vision.RandomCropDecodeResize(24, scale=(0.2, 0.3))(data).shape)
''',
    "recordio.vision._chain": r'''
def USE():
    import cv2, numpy as np
    from recordio import transforms, vision
    from recordio.keys import row_scope
    img = cv2.resize(np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8), (96, 80))
    data = cv2.imencode(".jpg", img)[1].tobytes()
    chain = transforms.Compose([vision.RandomCropDecodeResize(24, scale=(0.2, 0.3)), vision.RandomHorizontalFlip(),
                                vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1 / 255, 0),
                                vision.Normalize([0.5] * 3, [0.25] * 3), vision.HWC2CHW()])
    with row_scope(1, 0, 2):
        return chain(data).astype(np.float64).sum().round(3)
''',
    "recordio.vision._pilfast": r'''
def USE():
    import io, numpy as np
    from PIL import Image
    from recordio import transforms, vision
    stream = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 96, 3), dtype=np.uint8)).save(stream, "JPEG")
    chain = transforms.Compose([vision.Decode(to_pil=True), vision.Resize(40), vision.CenterCrop(32), vision.ToTensor()])
    return float(chain(stream.getvalue()).astype(np.float64).sum())
''',
}

# The JPEG decoder built but failing its self-check (a libjpeg that decodes unlike OpenCV's): stand-in
# for it, a decoder that declines every box.
SELF_CHECK_FAILS = USES["recordio.vision._jpeg"].replace("    from recordio import vision\n", '''    from recordio import vision
    from recordio.vision import decode
    class Declines:
        def decode_box(self, *args):
            return None
    decode._jpeg = Declines()
''')


def run_case(use, blocked="", **env):
    script = use + BLOCK
    done = subprocess.run([sys.executable, "-c", script, blocked], capture_output=True, text=True, timeout=120,
                          cwd=TESTS, env={**os.environ, **env})
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT"):])


def slow_warnings(found):
    return [text for category, text in found["warnings"] if category == "RuntimeWarning" and "slower path" in text]


@pytest.mark.parametrize("module", sorted(USES))
def test_a_missing_part_warns_once_naming_it_the_cost_and_the_fix(module):
    built = run_case(USES[module])
    assert slow_warnings(built) == []
    missing = run_case(USES[module], blocked=module)
    assert missing["result"] == built["result"]              # the same values, slower
    [text] = slow_warnings(missing)
    assert module in text and "is not built" in text and "blocked by the test" in text
    assert compiled.PARTS[module].cost in text
    assert "pip install" in text and "python setup.py build_ext --inplace" in text and "RECORDIO_ALLOW_SLOW=1" in text


def test_a_part_that_fails_its_self_check_warns():
    found = run_case(SELF_CHECK_FAILS)
    [text] = slow_warnings(found)
    assert "recordio.vision._jpeg" in text and "disabled itself" in text and "self-check" in text
    assert "rebuild it against the libjpeg(-turbo) that OpenCV decodes with" in text


@pytest.mark.parametrize("value,warns", [("1", False), ("0", True)])
def test_allow_slow_silences_the_warning(value, warns):
    found = run_case(USES["recordio.mindrecord._codec"], blocked="recordio.mindrecord._codec",
                     RECORDIO_ALLOW_SLOW=value)
    assert bool(slow_warnings(found)) is warns


CHILDREN = r'''
import json, multiprocessing, sys, warnings
from slow_part_child import Block, use_blocked
BLOCKED = sys.argv[1]
sys.meta_path.insert(0, Block(BLOCKED))
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    USE()
found = {"parent": [str(w.message) for w in seen if "slower path" in str(w.message)]}
for method in ("spawn", "forkserver"):
    context = multiprocessing.get_context(method)
    for fresh in (False, True):
        queue = context.Queue()
        children = [context.Process(target=use_blocked, args=(BLOCKED, USE_SOURCE, fresh, queue)) for _ in range(2)]
        for child in children:
            child.start()
        found[f"{method} fresh={fresh}"] = [queue.get(timeout=120) for _ in children]
        for child in children:
            child.join()
print("RESULT" + json.dumps(found))
'''


@pytest.mark.parametrize("module", ["recordio.mindrecord._codec", "recordio.vision._kernels"])
def test_worker_processes_do_not_repeat_the_warning_of_their_run(module):
    """Workers started with spawn or forkserver import the parts afresh: the run's one warning (given in
    the parent) is not repeated by each; a process no parent warned for still warns."""
    script = f"USE_SOURCE = {USES[module]!r}\nexec(USE_SOURCE)\n" + CHILDREN
    done = subprocess.run([sys.executable, "-c", script, module], capture_output=True, text=True, timeout=300,
                          cwd=TESTS, env={**os.environ, "PYTHONPATH": child_pythonpath(TESTS)})
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    found = json.loads(lines[-1][len("RESULT"):])
    [text] = found["parent"]
    assert module in text
    for method in ("spawn", "forkserver"):
        assert found[f"{method} fresh=False"] == [[], []]
        assert [len(texts) for texts in found[f"{method} fresh=True"]] == [1, 1]


# A training script (a file, as a user's: spawn and forkserver processes import it first, so the part is
# blocked in them too): it warns, starts a plain `subprocess` (another program: it warns for itself), then
# runs a pipeline map in worker processes from a fork server (the run's workers: they stay quiet).
RUN = r'''
import importlib, json, os, subprocess, sys
from slow_part_child import Block, tag_warnings
BLOCKED, USER = sys.argv[1], sys.argv[2]
tag_warnings()
sys.meta_path.insert(0, Block(BLOCKED))
importlib.import_module(USER)                   # the module that loads the part; a fork server imports it too
CHILD = "import sys; from slow_part_child import Block, tag_warnings; tag_warnings(); " \
        "sys.meta_path.insert(0, Block(sys.argv[1])); import importlib; importlib.import_module(sys.argv[2])"


def in_worker(x):
    from recordio import compiled
    assert compiled.report()[BLOCKED].startswith("missing"), compiled.report()
    importlib.import_module(USER)
    return x * 0 + os.getpid()


if __name__ == "__main__":
    import numpy as np
    from recordio.dataset import GeneratorDataset, workers
    child = subprocess.Popen([sys.executable, "-c", CHILD, BLOCKED, USER])
    child.wait()
    workers._cuda_initialized = lambda: True    # as in a process that uses CUDA: the workers come from a fork server
    ds = GeneratorDataset([(np.int64(i),) for i in range(16)], "x", shuffle=False).map(
        in_worker, "x", num_parallel_workers=2, python_multiprocessing=True)
    pids = {int(row["x"]) for row in ds.create_dict_iterator(num_epochs=1, output_numpy=True)}
    print("RESULT" + json.dumps({"parent": os.getpid(), "child": child.pid, "code": child.returncode,
                                 "workers": sorted(pids)}))
'''
USERS = {"recordio.mindrecord._codec": "recordio.mindrecord.codec",           # the module that loads the part
         "recordio.vision._kernels": "recordio.vision.color_kernels"}


@pytest.mark.parametrize("module", sorted(USERS))
def test_another_program_warns_again_the_workers_of_the_run_do_not(module, tmp_path):
    """The environment that keeps the run's workers quiet reaches every program the run starts: a second
    training script (a plain ``subprocess``) still warns, once; the pipeline's workers (from a fork server
    here, so they import the parts afresh) and the fork server do not."""
    script = tmp_path / "train.py"
    script.write_text(RUN)
    env = {**os.environ, "PYTHONPATH": child_pythonpath(TESTS)}
    env.pop(compiled.WARNED, None)
    env.pop(compiled.ALLOW_SLOW, None)
    done = subprocess.run([sys.executable, str(script), module, USERS[module]], capture_output=True, text=True,
                          timeout=300, cwd=TESTS, env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    found = json.loads(lines[-1][len("RESULT"):])
    warned = [int(ln.split()[1]) for ln in done.stderr.splitlines() if ln.startswith("SLOWWARN ")]
    assert found["code"] == 0 and found["workers"] and found["parent"] not in found["workers"]
    assert sorted(warned) == sorted([found["parent"], found["child"]]), done.stderr[-3000:]


def test_a_fork_server_importing_the_main_module_of_the_process_that_warned_is_of_its_run(monkeypatch):
    """A fork server has an authentication key of its own, and (Python 3.13.8 and later) imports its
    parent's main module before it serves, while multiprocessing marks the process as inheriting: it is of
    the run of the parent that warned. Python 3.11 never preloads the main module, so the run script above
    cannot show it; the same check, on this process as the fork server of its parent."""
    from multiprocessing import process

    parent = os.getppid()
    monkeypatch.setenv(compiled.WARNED, f"0123456789abcdef:{parent}:recordio.vision._kernels")
    assert compiled._listed() == ("0123456789abcdef", parent, ["recordio.vision._kernels"])
    assert not compiled._of_run("0123456789abcdef", parent)           # another key, not inheriting
    assert compiled._of_run(compiled._run(), 1)                       # the key of this run
    monkeypatch.setattr(process.current_process(), "_inheriting", True, raising=False)
    assert compiled._of_run("0123456789abcdef", parent)
    assert not compiled._of_run("0123456789abcdef", parent + 1)       # the server of another process
    monkeypatch.setenv(compiled.WARNED, "recordio.vision._kernels")   # the form of earlier versions: no run
    assert compiled._listed() == ("", 0, [])


DOCTOR = r'''
import sys
from recordio.tools.__main__ import main
sys.exit(main(sys.argv[2:]))
'''


def cli(blocked, *argv):
    script = BLOCK.split("warnings.simplefilter")[0] + DOCTOR
    return subprocess.run([sys.executable, "-c", script, blocked, *argv], capture_output=True, text=True,
                          timeout=120, cwd=TESTS)


def test_doctor_and_version_list_the_parts():
    done = cli("", "doctor", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {m: "active" for m in compiled.PARTS}
    done = cli("recordio.vision._kernels", "doctor")
    assert done.returncode == 1, done.stderr
    assert "missing   recordio.vision._kernels" in done.stdout and "active    recordio.vision._jpeg" in done.stdout
    assert "python setup.py build_ext --inplace" in done.stdout and done.stderr == ""
    done = cli("recordio.mindrecord._codec", "--version")
    assert done.returncode == 0 and done.stdout.startswith("recordio ")
    assert "recordio.mindrecord._codec missing" in done.stdout and "recordio.vision._jpeg active" in done.stdout


def test_the_module_imports_nothing_of_recordio_and_nothing_heavy():
    import ast

    tree = ast.parse(open(compiled.__file__).read())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names <= {"__future__", "_imp", "functools", "hashlib", "importlib", "multiprocessing", "os", "sys",
                     "threading", "warnings"}, names   # builtins and light stdlib (multiprocessing.process alone, on a slow path)


def test_a_built_part_whose_package_needs_an_extra_is_unused_not_missing():
    """``report`` tells a part whose package cannot be imported (an extra is missing) from one that is not
    there: the first is "unused" (nothing runs slower), the second "missing"."""
    code = ("import sys, recordio.extras\n"
            "sys.modules['cv2'] = None\n"                  # no OpenCV: recordio.vision refuses to import
            "from recordio import compiled\n"
            "print(compiled.report()['recordio.vision._kernels'].split(':')[0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "unused", done.stderr[-2000:]
    assert not compiled._unused("recordio.mindrecord._no_such_part")     # its package imports: missing


def test_once_runs_a_check_once_when_threads_call_it_together():
    import threading
    import time

    calls = []

    @compiled.once
    def check(s=1):
        calls.append(s)
        time.sleep(0.05)                       # a check long enough for the other threads to arrive
        return s * 10

    got = []
    threads = [threading.Thread(target=lambda: got.append(check(2))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [20] * 4 and calls == [2]
    assert check(3) == 30 and calls == [2, 3]
    check.cache_clear()
    assert check(2) == 20 and calls == [2, 3, 2]
