"""Wall time of ``recordio`` commands as whole processes (SPEC §3.4: ``recordio count`` well under 100 ms).

Each run is a fresh process (the interpreter's start included, as a user meets it); the bare
interpreter (``python -c pass``) and ``import recordio`` are timed beside it in the same run,
interleaved, so that a loaded machine slows all of them alike. Prints min and median of each.

    python tools/time_cli.py [--runs 30] [-- count PATH ...]
"""

import argparse
import pathlib
import resource
import statistics
import subprocess
import sys
import time

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "tests" / "golden" / "matrix_s4_index" / "matrix_s4_index.mindrecord0"


def contenders(command):
    python = sys.executable
    return {"python -c pass": [python, "-c", "pass"],
            "python -c 'import recordio'": [python, "-c", "import recordio"],
            f"recordio {' '.join(command)[:30]}": [python, "-m", "recordio.tools", *command]}


def library_call(command):
    """The library call a ``count PATH`` command makes, as ``python -c`` (what the CLI adds is the rest)."""
    if len(command) == 2 and command[0] == "count":
        return {"python -c 'recordio.count_rows(...)'": [sys.executable, "-c", "import recordio; "
                                                          f"print(recordio.count_rows({command[1]!r}))"]}
    return {}


def timed(argv):
    """(wall, CPU) seconds of one run; CPU time (user + system) moves less with the machine's load."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each (default 30)")
    parser.add_argument("command", nargs="*", help=f"the recordio command (default: count {GOLDEN})")
    args = parser.parse_args(argv)
    command = args.command or ["count", str(GOLDEN)]
    each = {**contenders(command), **library_call(command)}
    runs = {name: [] for name in each}
    for _ in range(args.runs):
        for name, argv_ in each.items():
            runs[name].append(timed(argv_))
    for name, times in runs.items():
        wall, cpu = ([t[k] * 1e3 for t in times] for k in (0, 1))
        print(f"{name:<44} wall min {min(wall):6.1f} ms, median {statistics.median(wall):6.1f} ms;   "
              f"CPU min {min(cpu):6.1f} ms, median {statistics.median(cpu):6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
