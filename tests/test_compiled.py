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
    assert names <= {"__future__", "_imp", "functools", "importlib", "os", "sys", "warnings"}, names   # builtins and light stdlib


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
