"""The fuzzing campaign for untrusted datasets (docs/threat-model.md): mutate, run, judge.

Each mutant is a copy of a golden case (``tests/golden``) with one to three mutations of its
headers, page tables, entries, blobs, ``.db`` rows and schema, or of the folder (symlinks, FIFOs,
planted journals). A forked child runs every operation a user would on it — ``FileReader`` (by
index, ``verify=True``, by page table), ``count_rows``, ``verify``, ``describe``, ``count_where``
and ``open_for_append`` + commit — under ``setrlimit`` limits on memory and CPU time and a wall
clock, with an audit hook that records every file it opens, renames, truncates or removes.

A mutant fails when the child dies of a signal, runs out of time or memory, raises anything but
a ``RecordIOError``, touches a path outside the mutant's folder, or changes the sentinel files
beside it. Failing mutants are saved under ``tests/fuzz_cases/`` and replayed by
``tests/test_fuzz.py``.

::

    python -m recordio.tools.fuzz --minutes 30 --seed 7 --save tests/fuzz_cases
    python -m recordio.tools.fuzz --mutants 40 --seed 1          # the slice CI runs
"""

import argparse
import gzip
import json
import os
import pathlib
import random
import shutil
import signal
import sys
import tempfile
import time

from recordio.tools.fuzz_mutations import MUTATIONS, WEIGHTS, data_files, mutate_bytes

HELP = "fuzz the readers, count, verify and append with mutated golden datasets"
EXAMPLE = "python -m recordio.tools.fuzz --minutes 30 --seed 7 --save tests/fuzz_cases"

ROOT = pathlib.Path(__file__).resolve().parents[1]


def golden():
    """The golden cases mutants are made from: ``$RECORDIO_GOLDEN``, else the checkout's ``tests/golden``
    (an installed package has no tests: set the variable or ``--golden``)."""
    return pathlib.Path(os.environ.get("RECORDIO_GOLDEN") or ROOT / "tests" / "golden")
CASES = ("one_row", "arrays_fixed", "arrays_variable", "multi_blob", "matrix_s1_index", "matrix_s4_index",
         "no_blob", "all_blob_no_raw", "empty_values", "single_int_array_blob", "sparse_shards")
MEMORY_LIMIT = 768 << 20          # bytes the child may allocate beyond what it had when forked
CPU_LIMIT = 20                    # seconds of CPU per mutant
WALL_LIMIT = 40                   # seconds of wall time per mutant


# --- running one mutant ---------------------------------------------------------------------------

def _operations(first):
    import recordio
    from recordio.mindrecord.read.description import count_where

    def read(**kw):
        with recordio.FileReader(first, **kw) as reader:
            for _ in reader:
                pass

    def where():
        info = recordio.describe(first)
        for field in info["index_fields"][:1]:
            count_where(first, [(field, "1")])

    def append():
        writer = recordio.FileWriter.open_for_append(first, fsync=False)
        writer.commit()
        read()

    def overwrite():
        with recordio.FileWriter(first, overwrite=True, fsync=False) as writer:
            writer.add_schema({"a": {"type": "int32"}})
            writer.write_raw_data([{"a": 1}])

    return [("read", read), ("read-verify", lambda: read(verify=True)), ("read-pages", lambda: read(use_index=False)),
            ("read-list", lambda: recordio.FileReader([first])), ("count", lambda: recordio.count_rows(first)),
            ("verify", lambda: recordio.verify(first)), ("describe", where), ("append", append),
            ("overwrite", overwrite)]


_WATCHED = {"open", "os.rename", "os.replace", "os.truncate", "os.remove", "os.unlink", "os.rmdir", "os.symlink",
            "os.link", "os.mkdir", "os.chmod", "sqlite3.connect", "os.listdir", "os.scandir"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(folder, touched):
    """An audit hook recording paths outside ``folder`` that are in its sandbox, or written anywhere."""
    real = os.path.realpath(folder)
    sandbox = os.path.dirname(real) + os.sep

    def hook(event, args):
        if event not in _WATCHED or not args:
            return
        writes = event not in ("open", "os.listdir", "os.scandir", "sqlite3.connect") or _writes(args)
        for arg in args[:2] if event in ("os.rename", "os.replace", "os.symlink", "os.link") else args[:1]:
            path = _event_path(arg)
            if path is None:
                continue
            resolved = os.path.realpath(path)
            if resolved != real and not resolved.startswith(real + os.sep) and (
                    resolved.startswith(sandbox) or writes):
                touched.append(f"{event} {path}")
    return hook


def _writes(args):
    mode, flags = (args + (None, None))[1:3]
    return (isinstance(mode, str) and bool(set(mode) & set("wax+"))) or (
        isinstance(flags, int) and bool(flags & _WRITE_FLAGS))


def _event_path(arg):
    if not isinstance(arg, (str, bytes, os.PathLike)):
        return None
    path = os.fsdecode(arg)
    if path.startswith("file:"):
        path = path[5:].split("?")[0].replace("%3f", "?").replace("%23", "#").replace("%25", "%")
    return path or None


def limit_resources(memory=MEMORY_LIMIT, cpu=CPU_LIMIT):
    """Cap this process: ``memory`` bytes of address space beyond its current size, ``cpu`` seconds."""
    import resource

    size = _vm_size()
    resource.setrlimit(resource.RLIMIT_AS, (size + memory, size + memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def run_operations(folder, first, names=None):
    """Run the operations ``names`` (default: all, append and overwrite last) on the dataset ``first``
    with an audit hook on ``folder``: ``{op: "ok" | "error: <RecordIOError class>" | "FAIL ..."}`` and
    ``touched``: paths outside ``folder`` it opened in the sandbox, or wrote anywhere."""
    from recordio import RecordIOError

    touched, results = [], {}
    sys.addaudithook(_audit(folder, touched))
    for name, op in _operations(str(first)):
        if names is not None and name not in names:
            continue
        try:
            op()
            results[name] = "ok"
        except RecordIOError as exc:
            results[name] = f"error: {type(exc).__name__}: {str(exc)[:1000]}"
        except BaseException as exc:  # the finding: anything but a RecordIOError
            results[name] = f"FAIL {type(exc).__name__}: {str(exc)[:300]}"
    results["touched"] = touched[:10]
    return results


def child(folder, first, out_fd):
    """In the forked child: limits, then every operation; a JSON report to ``out_fd``."""
    limit_resources()
    os.write(out_fd, json.dumps(run_operations(folder, first)).encode())
    os._exit(0)


def _vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_mutant(folder, first):
    """Fork a child that runs every operation on the dataset ``first``; returns (failures, results)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            child(folder, first, write_fd)
        finally:
            os._exit(70)
    os.close(write_fd)
    status, chunks = _wait(pid, read_fd)
    os.close(read_fd)
    return _judge(status, b"".join(chunks))


def _wait(pid, fd):
    deadline = time.monotonic() + WALL_LIMIT
    chunks = []
    os.set_blocking(fd, False)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        chunks += _drain(fd)
        if done:
            return status, chunks + _drain(fd)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hang", chunks
        time.sleep(0.005)


def _drain(fd):
    out = []
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return out
        if not data:
            return out
        out.append(data)


def _judge(status, output):
    if status == "hang":
        return [f"hang: more than {WALL_LIMIT} s of wall time"], {}
    if os.WIFSIGNALED(status):
        return [f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"], {}
    try:
        results = json.loads(output)
    except ValueError:
        return [f"child exited with {os.waitstatus_to_exitcode(status)} and no report"], {}
    failures = [f"{op}: {r}" for op, r in results.items() if isinstance(r, str) and r.startswith("FAIL")]
    failures += [f"{op}: {r}" for op, r in results.items() if isinstance(r, str) and "MemoryError" in r]
    failures += [f"touched outside the dataset: {t}" for t in results.get("touched", [])]
    return failures, results


# --- the campaign --------------------------------------------------------------------------------

def make_sandbox(root, case, rng):
    """``root/ds`` (a copy of ``case``, checksums added half the time) and ``root/outside`` (sentinels)."""
    folder = root / "ds"
    shutil.copytree(golden() / case, folder, ignore=shutil.ignore_patterns("*.pkl"))
    make_outside(root)
    first = data_files(folder)[0]
    if rng.random() < 0.5:
        from recordio.mindrecord.read.verification import add_checksums
        add_checksums(str(first))          # recordio's checksum table, so verify=True has work to do
    return folder, first


def make_outside(root):
    """The sentinels beside a mutant: a dataset and a file that mutations aim at, which must not change."""
    outside = root / "outside"
    shutil.copytree(golden() / "one_row", outside, ignore=shutil.ignore_patterns("*.pkl"))
    (outside / "victim.bin").write_bytes(b"sentinel" * 8)


def snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(pathlib.Path(folder).iterdir())}


def build_mutant(seed, root):
    """Mutant ``seed`` (a pure function of the seed) in ``root/ds``; returns (description, folder, first)."""
    rng = random.Random(seed)
    case = rng.choice(CASES)
    folder, first = make_sandbox(root, case, rng)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        mutation = rng.choices(MUTATIONS, WEIGHTS)[0]
        try:
            done.append(mutation(rng, folder, first))
        except Exception:  # noqa: BLE001 - an earlier mutation broke the layout the mutator reads
            done.append(mutate_bytes(rng, folder, first))
    return {"seed": seed, "case": case, "first": first.name, "mutations": done}, folder, first


def one_mutant(seed, root):
    """Build and run mutant ``seed`` in ``root``; returns (description, failures)."""
    description, folder, first = build_mutant(seed, root)
    before = snapshot(root / "outside")
    failures, _ = run_mutant(folder, first)
    if snapshot(root / "outside") != before:
        failures.append("a sentinel file outside the dataset changed")
    return description, failures


def save_case(description, failures, root, save):
    """Save failing mutant ``description["seed"]`` (built again in ``root``, as it was before it ran)
    compactly: ``case.json`` says how each file of its folder differs from the golden case (same
    bytes, gzip-ed new bytes, a symlink, a FIFO, a directory, removed)."""
    target = pathlib.Path(save) / f"seed-{description['seed']}"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    build_mutant(description["seed"], pathlib.Path(root))
    folder, base = pathlib.Path(root) / "ds", golden() / description["case"]
    files = {p.name: _describe_file(p, base / p.name, target) for p in sorted(folder.iterdir())}
    files.update({p.name: "removed" for p in base.iterdir() if p.name not in files and p.suffix != ".pkl"})
    (target / "case.json").write_text(json.dumps(dict(description, failures=failures, files=files), indent=1) + "\n")
    return target


def _save_fresh(description, failures, save):
    with tempfile.TemporaryDirectory(prefix="rio-save-") as tmp:
        return save_case(description, failures, tmp, save)


def _describe_file(path, golden, target):
    if path.is_symlink():
        return {"symlink": os.readlink(path)}
    if path.is_fifo() or path.is_dir():
        return "fifo" if path.is_fifo() else "directory"
    data = path.read_bytes()
    if golden.is_file() and golden.read_bytes() == data:
        return "golden"
    name = f"file-{len(os.listdir(target))}.gz"
    (target / name).write_bytes(gzip.compress(data, 9, mtime=0))
    return {"gzip": name}


def restore_case(case_dir, root):
    """Rebuild a saved mutant's folder as ``root/ds`` (and its sentinels); returns (case, first)."""
    case_dir = pathlib.Path(case_dir)
    case = json.loads((case_dir / "case.json").read_text())
    folder = root / "ds"
    folder.mkdir()
    for name, how in case["files"].items():
        path = folder / name
        if how == "golden":
            shutil.copy(golden() / case["case"] / name, path)
        elif how in ("fifo", "directory"):
            os.mkfifo(path) if how == "fifo" else path.mkdir()
        elif isinstance(how, dict) and "symlink" in how:
            path.symlink_to(how["symlink"])
        elif isinstance(how, dict):
            path.write_bytes(gzip.decompress((case_dir / how["gzip"]).read_bytes()))
    make_outside(root)
    return case, folder / case["first"]


def replay(case_dir):
    """Run a saved case again (in a scratch folder); returns its failures."""
    with tempfile.TemporaryDirectory(prefix="rio-replay-") as tmp:
        root = pathlib.Path(tmp)
        _, first = restore_case(case_dir, root)
        before = snapshot(root / "outside")
        failures, _ = run_mutant(root / "ds", first)
        if snapshot(root / "outside") != before:
            failures.append("a sentinel file outside the dataset changed")
    return failures


def _preload():
    """Import, before any fork, every module a child uses: edits to the source during a long
    campaign then cannot mix old and new code in one child."""
    import importlib

    for name in ("read.reader", "read.count", "read.verification", "read.description", "write.writer",
                 "write.append", "write.recovery", "read.fileset", "index", "write.shard_writer"):
        importlib.import_module(f"recordio.mindrecord.{name}")


def campaign(seed, mutants=None, minutes=None, save=None, log=print):
    """Run mutants ``seed, seed+1, ...`` until ``mutants`` ran or ``minutes`` passed; returns a summary."""
    _preload()
    start = time.monotonic()
    count, found = 0, []
    while (mutants is None or count < mutants) and (minutes is None or time.monotonic() - start < minutes * 60):
        with tempfile.TemporaryDirectory(prefix="rio-fuzz-") as tmp:
            description, failures = one_mutant(seed + count, pathlib.Path(tmp))
            if failures:
                where = _save_fresh(description, failures, save) if save else None
                found.append(dict(description, failures=failures, saved=str(where) if where else None))
                log(f"FAIL seed {seed + count}: {failures[:3]} ({description['mutations']})")
        count += 1
        if count % 100 == 0:
            log(f"{count} mutants, {len(found)} failing, {time.monotonic() - start:.0f} s")
    return {"seed": seed, "mutants": count, "failures": len(found), "seconds": round(time.monotonic() - start, 1),
            "found": found}


def add_arguments(parser):
    parser.add_argument("--seed", type=int, default=0, help="first mutant's seed (mutant k uses seed + k)")
    parser.add_argument("--mutants", type=int, help="stop after this many mutants")
    parser.add_argument("--minutes", type=float, help="stop after this much time")
    parser.add_argument("--save", help="folder for failing mutants (e.g. tests/fuzz_cases)")
    parser.add_argument("--json", help="write the summary to this file")
    parser.add_argument("--golden", help="the golden cases' folder (default: $RECORDIO_GOLDEN or the checkout's "
                                         "tests/golden)")


def run(args):
    if args.golden:
        os.environ["RECORDIO_GOLDEN"] = args.golden
    if args.mutants is None and args.minutes is None:
        args.mutants = 100
    summary = campaign(args.seed, args.mutants, args.minutes, args.save)
    print(f"{summary['mutants']} mutants in {summary['seconds']} s, {summary['failures']} failing")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if summary["failures"] else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m recordio.tools.fuzz", description=HELP,
                                     epilog=f"example:\n  {EXAMPLE}", allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
