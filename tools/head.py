"""``recordio head PATH -n N``: the first rows, blobs shown as size and short hash."""

import hashlib

import recordio
from recordio.tools._common import PATH_HELP, dataset_path, print_json

HELP = "print the first rows of a dataset (bytes and arrays summarised)"
EXAMPLE = "recordio head out/train.mindrecord0 -n 5 --columns label,file_name"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)
    parser.add_argument("-n", type=int, default=10, help="number of rows (default 10)")
    parser.add_argument("--columns", help="comma-separated fields to show (default: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--grid", metavar="PNG", help="also write a contact sheet of the images to PNG")
    parser.add_argument("--image-column", default="image", help="the encoded-image field for --grid")
    parser.add_argument("--label-column", default="label", help="the label field for --grid")


def summarize(value):
    if isinstance(value, bytes):
        return f"<{len(value)} bytes sha256:{hashlib.sha256(value).hexdigest()[:12]}>"
    if hasattr(value, "shape") and getattr(value, "ndim", 0) > 0:
        flat = value.ravel()
        preview = ", ".join(str(v) for v in flat[:4].tolist()) + (", ..." if flat.size > 4 else "")
        return f"<{value.dtype} array {list(value.shape)}: [{preview}]>"
    return value.item() if hasattr(value, "item") else value


def run(args):
    if args.n < 0:
        raise ValueError(f"-n must be >= 0, got {args.n}")
    columns = args.columns.split(",") if args.columns else None
    with recordio.FileReader(args.path, columns=columns) as reader:
        rows = reader[:args.n]
    for i, row in enumerate(rows):
        shown = {k: summarize(v) for k, v in row.items()}
        if args.json:
            print_json(shown)
        else:
            print(f"[{i}] " + "  ".join(f"{k}={v}" for k, v in shown.items()))
    if args.grid:
        from recordio.tools.grid import write_grid

        write_grid(args.path, args.grid, args.n or 16, args.image_column, args.label_column)
        print(f"wrote {args.grid}")
    return 0
