"""``recordio export arrow PATH OUT``: a dataset's scalar columns as Parquet or Arrow IPC (Feather)."""

import argparse

HELP = "export a dataset's scalar columns to a Parquet or Arrow/Feather file (for pandas, Polars, DuckDB)"
EXAMPLE = "recordio export arrow out/train.mindrecord0 labels.parquet --columns label,file_name"


def add_arguments(parser):
    sub = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    text = "scalar columns -> .parquet, or .arrow/.feather (Arrow IPC file)"
    cmd = sub.add_parser("arrow", help=text, description=text, allow_abbrev=False,
                         epilog=f"example:\n  {EXAMPLE}", formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("path", help="any data file of the dataset")
    cmd.add_argument("out", help="the file to write: .parquet, .arrow or .feather")
    cmd.add_argument("--columns", default=None, metavar="A,B",
                     help="fields to export (default: every int, float and string field; bytes and 1-D "
                          "arrays when named)")


def run(args):
    from recordio.converters import to_arrow, write_arrow

    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    table = to_arrow(args.path, columns)
    write_arrow(table, args.out)
    print(f"wrote {table.num_rows} rows x {table.num_columns} columns ({', '.join(table.column_names)}) "
          f"to {args.out}")
    return 0
