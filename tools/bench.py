"""``recordio bench``: run the benchmark suites, each against its baseline in the same run.

A suite is a module ``recordio.tools.bench_<name>`` with ``run(args) -> list[dict]``; each
result row has ``name``, ``value``, ``unit`` and, when compared, ``baseline`` (what it is
compared with), ``baseline_value`` and ``ratio`` (value / baseline_value, so > 1 is better
for rates). ``args`` carries ``quick``, ``workdir``, ``mindspore_python`` and ``device``.
"""

import importlib
import os
import tempfile

HELP = "benchmark writing, reading, the pipeline, vision ops, the sink, conversion and token rows against baselines"
EXAMPLE = "recordio bench --suite storage --quick --json bench.json --plot bench.png"
SUITES = ("storage", "pipeline", "vision", "sink", "convert", "mindpage", "tokens", "cold", "models", "scale",
          "remote")
DEFAULT_SUITES = SUITES[:-2]          # scale writes 10M rows, remote needs the S3 server: asked for by name


def add_arguments(parser):
    parser.add_argument("--suite", default=",".join(DEFAULT_SUITES),
                        help=f"comma-separated suites to run, of {', '.join(SUITES)} (default: all but scale and remote)")
    parser.add_argument("--quick", action="store_true", help="small workloads (a smoke run, not for quoting)")
    parser.add_argument("--workdir", help="where datasets are written (default: a temporary folder)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON"),
                        help="python of a virtualenv with MindSpore 2.10, for the MindSpore baselines "
                             "(default: $RECORDIO_MINDSPORE_PYTHON)")
    parser.add_argument("--device", default="cpu", help="torch device for the offload and sink suites")
    parser.add_argument("--scale-rows", metavar="N,N", help="dataset sizes of the scale suite (default "
                        "1000000,10000000; add 100000000 to measure 100M rows)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--plot", metavar="PNG", help="also draw the ratios against the baselines")


def _suites(text):
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; choose from {', '.join(SUITES)}")
    return names


def run(args):
    from recordio.extras import requires
    from recordio.mindrecord import codec
    from recordio.tools._common import format_row, write_results

    names = _suites(args.suite)
    results = []
    print(f"integer codec: {codec.BACKEND}", flush=True)
    with tempfile.TemporaryDirectory(prefix="recordio-bench-") as tmp:
        args.workdir = args.workdir or tmp
        for name in names:
            print(f"[{name}]", flush=True)
            with requires(f"recordio bench --suite {name}"):      # a missing package names its extra
                suite = importlib.import_module(f"recordio.tools.bench_{name}")
                for row in suite.run(args):
                    row = dict(row, suite=name)
                    results.append(row)
                    print(format_row(row), flush=True)
    if args.json:
        write_results(args.json, results)
    if args.plot:
        from recordio.tools.plot import plot_ratios

        plot_ratios(results, args.plot)
        print(f"wrote {args.plot}")
    return 0
