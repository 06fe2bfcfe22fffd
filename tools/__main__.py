"""``recordio``: the command line. One module per command; this file only dispatches.

Each command module defines ``HELP`` (one line), ``EXAMPLE`` (shown in ``--help``),
``add_arguments(parser)`` and ``run(args) -> int``. Only the chosen command's module
is imported, so ``recordio count`` stays fast.
"""

import argparse
import importlib
import sys

from recordio.errors import RecordIOError

COMMANDS = {
    "info": "describe a dataset: schema, index fields, shards with rows, pages and sizes",
    "count": "print the number of rows (from the index; no data page is read)",
    "query": "list the rows whose indexed fields equal given values (--json, --csv or --table)",
    "verify": "check every shard: structure, index, checksums; exit 1 on any problem",
    "repair": "finish or undo an append interrupted by a crash (needs write access)",
    "cache": "show or clear the local cache of datasets read from URLs (s3://, http(s)://, ...)",
    "head": "print the first rows (bytes and arrays summarised); --grid draws the images",
    "convert": "convert ImageFolder, CIFAR-10/100, MNIST or Parquet data to MindRecord",
    "view": "browse, filter and verify a dataset in a local web page (read-only; needs the view extra)",
    "export": "export a dataset's scalar columns (e.g. to an Arrow/Parquet file)",
    "bench": "benchmark writing, reading, the pipeline, vision ops and the sink against baselines",
    "conformance": "run MindSpore's own mindrecord/MindDataset unit tests on recordio (and on MindSpore beside it)",
}


def load(name):
    return importlib.import_module(f"recordio.tools.{name}")


def build_parser(selected=None):
    """The parser; with ``selected`` only that command's arguments are loaded."""
    parser = _base_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in COMMANDS.items():
        if selected is not None and name != selected:
            sub.add_parser(name, help=text, add_help=False)
            continue
        module = load(name)
        cmd = sub.add_parser(name, help=text, description=module.HELP, allow_abbrev=False,
                             epilog=f"example:\n  {module.EXAMPLE}",
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected) if selected in COMMANDS else _top_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        return args._run(args)
    except (RecordIOError, OSError, ValueError, TypeError, ImportError) as exc:
        print(f"recordio: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("recordio: interrupted", file=sys.stderr)
        return 130


def _base_parser():
    import recordio

    parser = argparse.ArgumentParser(prog="recordio", allow_abbrev=False,
                                     description="Inspect, check, convert and benchmark MindRecord datasets.")
    parser.add_argument("--version", action="version", version=f"recordio {recordio.__version__}")
    return parser


def _top_parser():
    parser = _base_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in COMMANDS.items():
        sub.add_parser(name, help=text)
    return parser


if __name__ == "__main__":
    sys.exit(main())
