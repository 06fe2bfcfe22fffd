"""The work behind ``recordio conformance``: the work folder, the data, and pytest runs per side.

    <work>/data/          one copy of the sources with make_data.py's substitute data written in
    <work>/collect/       a copy where the tests are only listed (every mindspore module a placeholder)
    <work>/recordio/      a fresh copy for recordio's run, <work>/mindspore/ for MindSpore's
    <work>/inject/        plugin/ (both sides), mapping/ (recordio: sitecustomize.py + the import
                          mapping), overlay/ (test packages MindSpore's interpreter lacks)
    <work>/cpus8.so       the CPU-count shim (LD_PRELOAD on both sides)
    <work>/<side>.jsonl   each test's outcome, <work>/<side>.log pytest's output

A pytest run that dies (a crash in native code) or stalls is killed and started again on the tests
it had not reached; the test it was in fails with "no result".
"""

import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
TESTS = pathlib.Path("tests/ut/python")

CPU_SHIM_C = r"""
/* recordio conformance: report at least 8 CPUs (MindSpore refuses num_parallel_workers above the count) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#define AT_LEAST 8
long sysconf(int name) {
    static long (*real)(int);
    if (!real) real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    long value = real(name);
    if ((name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF) && value < AT_LEAST) return AT_LEAST;
    return value;
}
int get_nprocs(void) {
    static int (*real)(void);
    if (!real) real = (int (*)(void))dlsym(RTLD_NEXT, "get_nprocs");
    int value = real();
    return value < AT_LEAST ? AT_LEAST : value;
}
int get_nprocs_conf(void) {
    static int (*real)(void);
    if (!real) real = (int (*)(void))dlsym(RTLD_NEXT, "get_nprocs_conf");
    int value = real();
    return value < AT_LEAST ? AT_LEAST : value;
}
"""

SITECUSTOMIZE = ('"""recordio conformance: MindSpore\'s imports mapped to recordio (generated)."""\n'
                 "import os\n\nimport _conformance_alias\n\n"
                 '_conformance_alias.install(os.environ.get("RECORDIO_CONFORMANCE_MODE", "recordio"))\n')

PYTEST_INI = "[pytest]\n# recordio conformance: no settings of anyone's project apply\n"

OVERLAY_DISTRIBUTIONS = ("pytest", "matplotlib", "opencv-python-headless", "pillow")


class ConformanceError(RuntimeError):
    """The run could not be set up (sources, data, compiler, interpreter)."""


def copy_tree(src, dest):
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def write_data(data, make_data, mindrecord_python, pythonpath, log):
    """Run make_data.py in ``data``: the images etc. with this interpreter, the MindRecord stand-ins
    with ``mindrecord_python`` (MindSpore's, so that they are MindSpore-written like the originals;
    ``pythonpath``: its overlay)."""
    target = data / "tests/ut/data/mindrecord"
    env = dict(os.environ, PEER_TESTS_SRC=str(data))
    overlay_env = dict(env, PYTHONPATH=os.pathsep.join(map(str, pythonpath)))
    for python, extra, run_env in ((sys.executable, [], env), (mindrecord_python, ["--mindrecord"], overlay_env)):
        done = subprocess.run([str(python), str(make_data), *extra, str(target)], env=run_env, capture_output=True,
                              text=True)
        log((done.stdout + done.stderr).strip())
        if done.returncode != 0:
            raise ConformanceError(f"{make_data} {' '.join(extra)} failed (exit {done.returncode}) with {python}")


def build_cpu_shim(root):
    """Compile the CPU-count shim with gcc; returns the .so path."""
    source = root / "cpus8.c"
    source.write_text(CPU_SHIM_C)
    library = root / "cpus8.so"
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise ConformanceError("no C compiler (gcc) for the CPU-count shim; pass --no-cpu-shim to run without it")
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ConformanceError(f"compiling the CPU-count shim failed: {done.stderr.strip()}")
    return library


def write_injected(inject):
    """plugin/ (both sides) and mapping/ (recordio side) with their files."""
    plugin, mapping = inject / "plugin", inject / "mapping"
    for folder in (plugin, mapping):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "_conformance_plugin.py", plugin / "_conformance_plugin.py")
    shutil.copy(HERE / "_conformance_alias.py", mapping / "_conformance_alias.py")
    (mapping / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (inject / "pytest.ini").write_text(PYTEST_INI)
    return plugin, mapping


def _importable(python, names, pythonpath=()):
    code = ("import importlib, json, sys\nout = {}\nfor n in sys.argv[1:]:\n    try:\n"
            "        importlib.import_module(n); out[n] = True\n    except Exception:\n        out[n] = False\n"
            "print(json.dumps(out))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, pythonpath)), MPLBACKEND="Agg")
    done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise ConformanceError(f"{python} does not run: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _closure(names):
    """This interpreter's distributions ``names`` and everything they require, {name: Distribution}."""
    found = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[key] = dist
        todo += [re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0] for r in dist.requires or [] if "extra ==" not in r]
    return found


def _top_names(dist):
    tops = {f.parts[0] for f in dist.files or [] if len(f.parts) > 0}
    return sorted(t for t in tops if not t.endswith((".dist-info", ".data", ".pth")) and t not in ("__pycache__", "..")
                  and not t.startswith("_distutils") and (t.endswith(".py") or "." not in t))


def build_overlay(python, overlay, log, extra=()):
    """Links to this interpreter's pytest (and the other packages the tests or make_data.py import)
    for the ``python`` that lacks them; MindSpore's own packages are never touched."""
    overlay.mkdir(parents=True, exist_ok=True)
    dists = _closure(OVERLAY_DISTRIBUTIONS)
    tops = {key: [t.removesuffix(".py") for t in _top_names(d)] for key, d in dists.items()}
    have = _importable(python, sorted({t for names in tops.values() for t in names}), extra)
    linked = []
    for key, dist in dists.items():
        if not tops[key] or all(have.get(t) for t in tops[key]):
            continue
        for top in _top_names(dist):
            source = pathlib.Path(dist.locate_file(top))
            if source.exists() and not (overlay / top).exists():
                (overlay / top).symlink_to(source)
        linked.append(f"{dist.metadata['Name']} {dist.version}")
    if not _importable(python, ["pytest"], [*extra, overlay])["pytest"]:
        raise ConformanceError(f"{python} cannot import pytest, even with this interpreter's beside it: "
                               "install pytest there")
    log(f"overlay for {python}: {', '.join(linked) or 'nothing needed'}")
    return overlay


class Side:
    """One interpreter running the tests in its own copy: ``run()`` fills ``items``/``results``."""

    def __init__(self, name, python, copy, results, log_path, env):
        self.name, self.python, self.copy = name, python, copy
        self.results, self.log_path, self.env = results, log_path, env
        self.items = {}            # nodeid -> key, in collection order
        self.outcomes = {}         # nodeid -> {"outcome", "message"}
        self.collect_errors = {}   # module path -> first line

    def command(self, ini, targets, deselect, collect_only=False):
        cmd = [str(self.python), "-m", "pytest", "-p", "_conformance_plugin", "-p", "no:cacheprovider",
               "--noconftest", "--continue-on-collection-errors", "-q", "-c", str(ini), "--rootdir", "."]
        cmd += [f"--deselect={d}" for d in deselect]
        return cmd + (["--collect-only"] if collect_only else []) + list(targets)

    def run(self, ini, targets, deselect, stall_s, collect_only=False, attempts=25):
        """Run pytest on ``targets`` until every collected test has a result."""
        self.results.unlink(missing_ok=True)
        pending = list(targets)
        for _ in range(attempts):
            before = len(self.outcomes)
            code, stalled = self._once(self.command(ini, pending, deselect, collect_only), stall_s)
            if self._read() or collect_only:
                return
            self._mark_unfinished(code, stalled, stall_s)
            pending = [n for n in self.items if n not in self.outcomes]
            if not pending or len(self.outcomes) == before:
                break
        for nodeid in self.items:
            self.outcomes.setdefault(nodeid, {"outcome": "failed", "message": "no result: the run ended before it"})

    def _once(self, cmd, stall_s):
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write("\n$ " + " ".join(cmd) + "\n")
            log.flush()
            proc = subprocess.Popen(cmd, cwd=self.copy / TESTS, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            return self._watch(proc, stall_s)

    def _watch(self, proc, stall_s):
        last, seen = time.monotonic(), -1
        while proc.poll() is None:
            time.sleep(2)
            size = self.results.stat().st_size if self.results.exists() else 0
            if size != seen:
                last, seen = time.monotonic(), size
            elif time.monotonic() - last > stall_s:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return proc.returncode, True
        return proc.returncode, False

    def _read(self):
        """Fold the JSON lines into items/outcomes; True when pytest reached the end of its session."""
        finished, started = False, None
        self._last_started = None
        if not self.results.exists():
            return False
        for line in self.results.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            kind = record["kind"]
            if kind == "item":
                self.items.setdefault(record["nodeid"], record["key"])   # the first collection names them
            elif kind == "collect_error":
                self.collect_errors[record["nodeid"]] = record["message"]
            elif kind == "start":
                started = record["nodeid"]
                finished = False
            elif kind == "report":
                self._fold(record)
            elif kind == "finished":
                finished = True
        self._last_started = started
        return finished

    def _fold(self, record):
        nodeid, outcome = record["nodeid"], record["outcome"]
        current = self.outcomes.get(nodeid)
        if outcome == "failed":
            if current is None or current["outcome"] != "failed":
                where = "" if record["when"] == "call" else f"error in {record['when']}: "
                self.outcomes[nodeid] = {"outcome": "failed", "message": where + record["message"]}
        elif current is None or (current["outcome"] == "passed" and outcome == "skipped"):
            if record["when"] == "call" or outcome == "skipped":
                self.outcomes[nodeid] = {"outcome": outcome, "message": record["message"]}

    def _mark_unfinished(self, code, stalled, stall_s):
        """The test the dead or stalled run was in fails."""
        nodeid = self._last_started
        if nodeid is None or nodeid in self.outcomes:
            return
        why = f"stalled: no progress for {stall_s:.0f} s, killed" if stalled else f"the test process died (exit {code})"
        self.outcomes[nodeid] = {"outcome": "failed", "message": f"no result: {why}"}


def side_env(pythonpath, results, timeout_s, preload=None, mode=None):
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    parts = [str(p) for p in pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update(PYTHONPATH=os.pathsep.join(parts), RECORDIO_CONFORMANCE_RESULTS=str(results), MPLBACKEND="Agg",
               RECORDIO_CONFORMANCE_TIMEOUT=str(timeout_s), PYTHONDONTWRITEBYTECODE="1")
    if preload is not None:
        env["LD_PRELOAD"] = " ".join(filter(None, [str(preload), env.get("LD_PRELOAD", "")]))
    if mode is not None:
        env["RECORDIO_CONFORMANCE_MODE"] = mode
    return env
