"""``recordio view PATH_OR_URL``: browse, filter and verify a dataset in a local web page (docs/view.md)."""

import json
import sys

HELP = ("serve a read-only web page to browse a dataset: overview and verify, rows with thumbnails, "
        "filters on indexed fields, facets, one page per row, and a JSON API under /api/")
EXAMPLE = "recordio view out/train.mindrecord0 --port 8765 --open"


def add_arguments(parser):
    parser.add_argument("path", help="any data file of the dataset, or its URL (s3://, http(s)://, ...)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; any other is announced with a warning)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--open", action="store_true", help="open the page in the default browser")
    parser.add_argument("--storage-options", metavar="JSON",
                        help="fsspec options for a dataset at a URL, as a JSON object")
    parser.add_argument("--cache-dir", help="the node-local cache folder for a dataset at a URL")


def run(args):
    from recordio.view import serve

    options = None
    if args.storage_options:
        options = json.loads(args.storage_options)
        if not isinstance(options, dict):
            raise ValueError(f"--storage-options expects a JSON object, got {args.storage_options[:80]!r}")
    if not 0 <= args.port < 65536:
        raise ValueError(f"--port must be in 0..65535, got {args.port}")
    return serve(args.path, host=args.host, port=args.port, open_browser=args.open, storage_options=options,
                 cache_dir=args.cache_dir, announce=_announce)


def _announce(text):
    """The URL on stdout; a warning on stderr."""
    print(text, file=sys.stderr if ": warning: " in text else sys.stdout, flush=True)
