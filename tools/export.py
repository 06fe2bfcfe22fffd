"""``recordio export arrow PATH OUT``: a dataset's scalar columns as Parquet or Arrow IPC (Feather);
``recordio export megatron PATH PREFIX``: a token column as a Megatron-LM indexed dataset;
``recordio export webdataset PATH PATTERN``: the whole dataset as WebDataset tar shards."""

import argparse

from recordio.tools._common import PATH_HELP, dataset_path

HELP = ("export a dataset's scalar columns to a Parquet or Arrow/Feather file (for pandas, Polars, DuckDB), a "
        "token column to a Megatron-LM indexed dataset, or the dataset to WebDataset tar shards")
EXAMPLE = "recordio export arrow out/train.mindrecord0 labels.parquet --columns label,file_name"
WDS_EXAMPLE = "recordio export webdataset out/train.mindrecord0 'wds/train-%06d.tar' --maxcount 10000"


def add_arguments(parser):
    sub = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    text = "scalar columns -> .parquet, or .arrow/.feather (Arrow IPC file)"
    cmd = sub.add_parser("arrow", help=text, description=text, allow_abbrev=False,
                         epilog=f"example:\n  {EXAMPLE}", formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("path", type=dataset_path, help=PATH_HELP)
    cmd.add_argument("out", help="the file to write: .parquet, .arrow or .feather")
    cmd.add_argument("--columns", default=None, metavar="A,B",
                     help="fields to export (default: every int, float and string field; bytes and 1-D "
                          "arrays when named)")
    text = "an int32/int64 [-1] column -> PREFIX.bin + PREFIX.idx (Megatron-LM / NeMo indexed dataset)"
    example = "recordio export megatron out/tokens.mindrecord0 corpus_text_document --column input_ids"
    cmd = sub.add_parser("megatron", help=text, description=text, allow_abbrev=False,
                         epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("path", type=dataset_path, help=PATH_HELP)
    cmd.add_argument("prefix", help="the files to write: PREFIX.bin and PREFIX.idx")
    cmd.add_argument("--column", default="input_ids", help="the token column (default input_ids)")
    cmd.add_argument("--dtype", default=None, help="token dtype of the files (default: the column's)")
    text = "every field -> WebDataset tar shards (bytes as KEY.<field>, strings .txt, numbers .npy)"
    cmd = sub.add_parser("webdataset", help=text, description=text, allow_abbrev=False,
                         epilog=f"example:\n  {WDS_EXAMPLE}", formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("path", type=dataset_path, help=PATH_HELP)
    cmd.add_argument("pattern", help="the tar files to write, with a %%d for the shard number (wds/train-%%06d.tar)")
    cmd.add_argument("--columns", default=None, metavar="A,B", help="fields to export (default: all)")
    cmd.add_argument("--maxcount", type=int, default=10000, metavar="N", help="samples per tar (default 10000)")


def run(args):
    if args.format == "megatron":
        from recordio.converters import export_megatron

        done = export_megatron(args.path, args.prefix, column=args.column, dtype=args.dtype)
        print(f"wrote {done['sequences']} sequences in {done['documents']} documents ({done['tokens']} tokens) to "
              f"{args.prefix}.bin / .idx")
        return 0
    from recordio.converters import to_arrow, to_webdataset, write_arrow

    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    if args.format == "webdataset":
        files = to_webdataset(args.path, args.pattern, columns=columns, maxcount=args.maxcount)
        print(f"wrote {len(files)} tar file(s): {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}")
        return 0
    table = to_arrow(args.path, columns)
    write_arrow(table, args.out)
    print(f"wrote {table.num_rows} rows x {table.num_columns} columns ({', '.join(table.column_names)}) "
          f"to {args.out}")
    return 0
