"""``recordio verify PATH``: check every shard; exit 1 on any problem."""

import recordio
from recordio.tools._common import PATH_HELP, dataset_path, print_json

HELP = "check every shard (structure, index vs header, checksums); exit 1 on any problem"
EXAMPLE = "recordio verify out/train.mindrecord0   # or: --add-checksums for a MindSpore-written dataset"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)
    parser.add_argument("--add-checksums", action="store_true",
                        help="after a clean structural check, add the checksum table to every .db")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args):
    if args.add_checksums:
        from recordio.mindrecord.read.verification import add_checksums

        for db in add_checksums(args.path):
            print(f"added checksums to {db}")
    report = recordio.verify(args.path)
    if args.json:
        print_json({"ok": report.ok, "files": report.files, "rows": report.rows,
                    "checked_regions": report.checked_slots, "without_checksums": report.without_checksums,
                    "problems": [{"file": f, "problem": p} for f, p in report.problems]})
    else:
        print(report)
    return 0 if report.ok else 1
