"""Small helpers shared by the command modules."""

import argparse
import json
import sys


def print_json(obj):
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def bench_main(doc, add_arguments, run, argv=None, value_format="10.4g", ratio_words="x"):
    """``main()`` of a benchmark tool: its arguments plus ``--json``; the rows of ``run(args)`` printed as
    ``name value unit  ratio<ratio_words> baseline``, or as JSON."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    results = run(args)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        extra = f"   {r['ratio']:.2f}{ratio_words} {r['baseline']}" if r.get("ratio") is not None else ""
        print(f"  {r['name']:<52} {r['value']:>{value_format}} {r['unit']}{extra}")
    return 0


def format_row(r, width=78):
    """One result row: ``name value unit  ratio x   target ...``."""
    text = f"{r['name']:<{width}} {r['value']:>12.4g} {r['unit']:<7}"
    if r["ratio"] is not None:
        text += f" {r['ratio']:>6.2f}x"
    return text + (f"   target {r['target']}" if r["target"] else "")


def report_main(doc, add_arguments, run, argv=None, width=78):
    """``main()`` of a benchmark whose ``--json FILE`` keeps the rows beside the printed table."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    results = run(args)
    for r in results:
        print(format_row(r, width))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version.split()[0], "results": results}, f, indent=2)
    return 0
