"""``recordio count PATH``: the number of rows, from the index only."""

import recordio
from recordio.tools._common import PATH_HELP, dataset_path

HELP = "print the number of rows of a dataset (read from the index, no data page is read)"
EXAMPLE = "recordio count out/train.mindrecord0 --where label=3"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)
    parser.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                        help="count only rows whose indexed FIELD equals VALUE (repeatable: all must hold)")
    parser.add_argument("--json", action="store_true", help="print {\"rows\": N} as JSON")


def run(args):
    if args.where:
        from recordio.mindrecord.read.description import count_where

        conditions = [split_where(w) for w in args.where]
        n = count_where(args.path, conditions)
    else:
        n = recordio.count_rows(args.path)
    if args.json:
        import json                  # only when asked for: `recordio count` is timed as a whole process

        n = json.dumps({"rows": n})
    print(n)
    return 0


def split_where(text):
    """``FIELD=VALUE`` → ``(field, value)``."""
    field, sep, value = text.partition("=")
    if not sep or not field:
        raise ValueError(f"--where expects FIELD=VALUE, got {text!r}")
    return field, value
