"""``recordio``: the command line. One module per command; this file only dispatches.

Each command module defines ``HELP`` (one line), ``EXAMPLE`` (shown in ``--help``),
``add_arguments(parser)`` and ``run(args) -> int``. Only the chosen command's module
is imported, so ``recordio count`` stays fast.
"""

import argparse
import importlib
import os
import sys

from recordio.errors import RecordIOError

SIGPIPE_EXIT = 141          # 128 + SIGPIPE: what `cat big | head -1` gives cat (the shell prints nothing)

COMMANDS = {
    "info": "describe a dataset: schema, index fields, shards with rows, pages and sizes",
    "count": "print the number of rows (from the index; no data page is read)",
    "query": "list the rows whose indexed fields equal given values (--json, --csv or --table)",
    "verify": "check every shard: structure, index, checksums; exit 1 on any problem",
    "repair": "finish or undo an append interrupted by a crash (needs write access)",
    "cache": "show or clear the local cache of datasets read from URLs (s3://, http(s)://, ...)",
    "head": "print the first rows (bytes and arrays summarised); --grid draws the images",
    "convert": ("convert imagefolder, cifar10, cifar100, mnist, parquet, csv, tfrecord, text, megatron or "
                "webdataset data to MindRecord (`recordio convert FORMAT --help` for one)"),
    "view": "browse, filter and verify a dataset in a local web page (read-only; needs the view extra)",
    "export": "export a dataset's scalar columns (e.g. to an Arrow/Parquet file)",
    "bench": "benchmark writing, reading, the pipeline, vision ops and the sink against baselines",
    "conformance": "run MindSpore's own mindrecord/MindDataset unit tests on recordio (and on MindSpore beside it)",
    "doctor": "list the compiled parts (C extensions) and whether each is active; exit 1 if one is not",
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
    try:
        code = _main(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()                 # a reader that went away (`| head`) shows here, not at exit
        return code
    except BrokenPipeError:                # `recordio info X --json | head -3`: stop quietly, as Unix tools do
        _drop_stdout()
        return SIGPIPE_EXIT


def _main(argv):
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected) if selected in COMMANDS else _top_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        return args._run(args)
    except BrokenPipeError:
        raise
    except (RecordIOError, OSError, ValueError, TypeError, ImportError) as exc:
        print(f"recordio: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("recordio: interrupted", file=sys.stderr)
        return 130


def _drop_stdout():
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):          # stdout is not a file (captured by a test): nothing is flushed
        pass


class _Version(argparse.Action):
    """``--version``: the version and the compiled parts, worked out only when asked for (the package
    metadata costs ~30 ms to import: every command would pay it)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and which compiled parts are active, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import recordio
        from recordio import compiled

        parts = ", ".join(f"{module} {state.split(':')[0]}" for module, state in compiled.report().items())
        sys.stdout.write(f"recordio {recordio.__version__}\ncompiled parts: {parts}\n")
        parser.exit()


def _base_parser():
    parser = argparse.ArgumentParser(prog="recordio", allow_abbrev=False,
                                     description="Inspect, check, convert and benchmark MindRecord datasets.")
    parser.add_argument("--version", action=_Version)
    return parser


def _top_parser():
    parser = _base_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in COMMANDS.items():
        sub.add_parser(name, help=text)
    return parser


if __name__ == "__main__":
    sys.exit(main())
