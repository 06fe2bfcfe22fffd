"""``recordio cache``: what the node-local cache of remote datasets holds; ``--clear`` empties it."""

from recordio.mindrecord import cache_info, clear_cache
from recordio.tools._common import human_bytes, print_json

HELP = "show the local cache of datasets read from URLs (objects, bytes held); --clear empties it"
EXAMPLE = "recordio cache --dir /scratch/recordio-cache   # or: recordio cache --clear"


def add_arguments(parser):
    parser.add_argument("--dir", help="the cache folder (default: $RECORDIO_CACHE_DIR or ~/.cache/recordio/remote)")
    parser.add_argument("--clear", action="store_true", help="remove every cached object")
    parser.add_argument("--json", action="store_true", help="print the objects as JSON")


def run(args):
    if args.clear:
        print(f"removed {clear_cache(args.dir)} cached object(s)")
        return 0
    entries = cache_info(args.dir)
    if args.json:
        print_json(entries)
        return 0
    for e in entries:
        print(f"{e['url']}: {human_bytes(e['cached_bytes'])} of {human_bytes(e['size'])} cached")
    total = sum(e["cached_bytes"] for e in entries)
    print(f"{len(entries)} object(s), {human_bytes(total)} cached")
    return 0
