"""``recordio query PATH --where FIELD=VALUE``: the rows whose indexed fields hold the given values."""

import csv
import json
import sys

import recordio
from recordio.mindrecord.read.query import check_rows, matching_rows
from recordio.tools.count import split_where
from recordio.tools.head import summarize
from recordio.tools._common import PATH_HELP, dataset_path

HELP = ("list the rows whose indexed fields equal the given values (the .db finds them; values are read "
        "from the data files)")
EXAMPLE = "recordio query out/train.mindrecord0 --where label=3 --columns file_name,label --table"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)
    parser.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                        help="indexed FIELD equals VALUE (repeatable: all must hold; none lists every row)")
    parser.add_argument("--columns", help="comma-separated fields to show (default: all; bytes and arrays "
                                          "summarised)")
    parser.add_argument("--limit", type=int, help="list at most this many rows")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="one JSON object per row (the default)")
    form.add_argument("--csv", action="store_true", help="CSV with a header line")
    form.add_argument("--table", action="store_true", help="an aligned text table")


def run(args):
    if args.limit is not None and args.limit < 0:
        raise ValueError(f"--limit must be >= 0, got {args.limit}")
    columns = args.columns.split(",") if args.columns else None
    with recordio.FileReader(args.path) as reader:
        conditions = [split_where(w) for w in args.where]
        rows = matching_rows(reader, conditions)[:args.limit]
        values = check_conditions(reader, rows, conditions)
        records = [{"row": int(i), **{k: summarize(v) for k, v in row.items() if columns is None or k in columns}}
                   for i, row in zip(rows, values)]
        header = list(records[0]) if records else ["row"] + (columns or list(reader.schema))
    _print(records, header, args)
    return 0


def check_conditions(reader, rows, conditions):
    """The rows' values, each condition checked against the data file (a .db that lies is refused)."""
    values = reader.__getitems__(rows)
    for field, text in conditions:
        check_rows(reader, rows, values, field, text)
    return values


def _print(records, header, args):
    if args.csv:
        out = csv.DictWriter(sys.stdout, fieldnames=header, lineterminator="\n")
        out.writeheader()
        out.writerows(records)
    elif args.table:
        from tabulate import tabulate

        print(tabulate([[r.get(h) for h in header] for r in records], headers=header))
    else:
        for record in records:
            print(json.dumps(record, default=str))
