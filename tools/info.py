"""``recordio info PATH``: schema, index fields and shards of a dataset."""

import recordio
from recordio.tools._common import PATH_HELP, dataset_path, human_bytes, print_json

HELP = ("describe a dataset: schema, index fields, shards with rows, pages and sizes, and the elements "
        "(tokens) of its array fields")
EXAMPLE = "recordio info out/train.mindrecord0 --json"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)
    parser.add_argument("--json", action="store_true", help="print the description as JSON")
    parser.add_argument("--no-elements", dest="elements", action="store_false",
                        help="skip the element (token) counts of variable-shape array fields: a dataset "
                             "written by MindSpore has them counted by a scan of its blobs' prefixes")


_SOURCE = {"schema": "rows x shape", "index": "recorded in the .db files", "scan": "counted by a scan"}


def _type(spec):
    return spec["type"] if "shape" not in spec else f"{spec['type']}{spec['shape']}"


def run(args):
    info = recordio.describe(args.path)
    if args.elements:
        info["elements"] = recordio.count_elements(args.path)
    if args.json:
        print_json(info)
        return 0
    print(f"version {info['version']}, header {human_bytes(info['header_size'])}, "
          f"page {human_bytes(info['page_size'])}")
    if info["desc"]:
        print(f"desc: {info['desc']}")
    print("schema:")
    for name, spec in info["schema"].items():
        marks = " (indexed)" if name in info["index_fields"] else ""
        print(f"  {name}: {_type(spec)}{marks}")
    for name, counted in info.get("elements", {}).items():
        print(f"  {name}: {counted['elements']:,} elements ({_SOURCE[counted['source']]})")
    print(f"rows: {info['rows']} in {len(info['shards'])} shard(s)")
    for s in info["shards"]:
        checks = "checksums" if s["checksums"] else "no checksums"
        print(f"  {s['file']}: {s['rows']} rows, {s['pages']} pages ({s['blob_pages']} blob, "
              f"{s['raw_pages']} raw), {human_bytes(s['apparent_bytes'])} apparent, "
              f"{human_bytes(s['allocated_bytes'])} allocated, {checks}")
    return 0
