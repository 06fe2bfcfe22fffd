"""Small helpers shared by the command modules."""

import argparse
import json
import os
import subprocess
import sys

PATH_HELP = "any data file of the dataset, or the name given to FileWriter (out/train.mindrecord for its shards ...0, ...1)"


def dataset_path(text):
    """The ``path`` argument of a command: a data file or URL as given, or the name given to ``FileWriter``
    for a sharded dataset (``out/train.mindrecord``, shards ``out/train.mindrecord0``...): its first shard."""
    if "://" in text or os.path.exists(text) or not os.path.exists(text + "0"):
        return text
    return text + "0"


def print_json(obj):
    import json

    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def bench_row(name, value, unit, baseline=None, baseline_value=None, target="", *, note="", lower_is_better=False,
              scale=1):
    """One result row of a benchmark (the rows ``recordio bench`` prints, plots and writes as JSON):
    ``value`` in ``unit`` (divided by ``scale``), compared with ``baseline`` (what it is compared with)
    at ``baseline_value``; ``ratio`` is value / baseline_value for rates, baseline_value / value for times
    (``lower_is_better``), so that > 1 is better either way; ``target``: the goal for the ratio."""
    value = value / scale
    base = None if baseline_value is None else baseline_value / scale
    ratio = None
    if base and value:
        ratio = round(base / value if lower_is_better else value / base, 3)
    row = {"name": name, "value": round(value, 4), "unit": unit, "baseline": baseline,
           "baseline_value": None if base is None else round(base, 4), "ratio": ratio, "target": target}
    if note:
        row["note"] = note
    return row


def format_row(r, width=64):
    """One result row as a line: ``name value unit  ratio x baseline (its value)   target ...   note``."""
    text = f"  {r['name']:<{width}} {r['value']:>12.4g} {r.get('unit') or '':<10}"
    if r.get("ratio") is not None:
        text += f" {r['ratio']:>6.2f}x {r.get('baseline') or ''}"
        if r.get("baseline_value") is not None:
            text += f" ({r['baseline_value']:.4g})"
    if r.get("target"):
        text += f"   target {r['target']}"
    if r.get("note"):
        text += f"   {r['note']}"
    return text


def bench_main(doc, add_arguments, run, argv=None, width=64, check=None):
    """``main()`` of every benchmark tool: its arguments (``add_arguments(parser)``; ``check(args)`` may
    raise ``ValueError`` for a bad combination) plus ``--json FILE``; prints the rows of ``run(args)`` and
    writes them as ``recordio bench --json`` does."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if check is not None:
        try:
            check(args)
        except ValueError as exc:
            parser.error(str(exc))
    results = run(args)
    for r in results:
        print(format_row(r, width), flush=True)
    if args.json:
        write_results(args.json, results)
    return 0


def bench_options(args, add_arguments):
    """The options of a bench from ``args``, which may lack any (``recordio bench`` passes its own
    namespace): the defaults of ``add_arguments`` where ``args`` has no value, as a dict."""
    defaults = argparse.ArgumentParser()
    add_arguments(defaults)
    opts = vars(defaults.parse_args([]))
    opts.update({k: v for k, v in vars(args).items() if k in opts and v is not None})
    return opts


def write_results(path, results):
    """The rows as JSON, with the Python that measured them."""
    import json

    with open(path, "w") as f:
        json.dump({"python": sys.version.split()[0], "results": results}, f, indent=2)


def alternate_children(module, contenders, repeats, child_args, mismatch):
    """{contender: {measure: [seconds of each pass]}} from ``python -m module --child CONTENDER *child_args``,
    the contenders alternating, a fresh process a pass. Each child prints one JSON line with ``times``
    ({measure: seconds}) and ``digest`` (of what it computed); differing digests raise ``mismatch``."""
    found, digests = {c: {} for c in contenders}, set()
    for _ in range(repeats):
        for contender in contenders:
            done = subprocess.run([sys.executable, "-m", module, "--child", contender, *child_args],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{module}: the {contender} process failed: {done.stderr[-2000:]}")
            one = json.loads(done.stdout.splitlines()[-1])
            digests.add(one["digest"])
            for name, seconds in one["times"].items():
                found[contender].setdefault(name, []).append(seconds)
    if len(digests) != 1:
        raise RuntimeError(f"{module}: {mismatch}")
    return found
