"""``recordio conformance --src DIR``: MindSpore's own unit tests, run unchanged on recordio.

The judge of the drop-in: MindSpore's ``tests/ut/python/mindrecord`` tests and its MindDataset tests
(``../shared/peer-tests/MANIFEST.txt`` lists the files; bring them into a folder outside this
repository) run on recordio through an import mapping (``_conformance_alias.py``), and, with
``--mindspore-python``, on MindSpore 2.10 beside it, each side in its own fresh copy with the same
substitute data (make_data.py). The report lists every test MindSpore passes and recordio fails;
exit 0 only when there is none besides the deliberate divergences below. See docs/conformance.md.
"""

import json
import os
import pathlib
import re
import sys
import tempfile
import time

from recordio.tools import _conformance_run as work

HELP = ("run MindSpore's own mindrecord and MindDataset unit tests on recordio (and on MindSpore 2.10 "
        "beside it); exit 1 if recordio fails one MindSpore passes")
EXAMPLE = "recordio conformance --src ~/mindspore-tests --mindspore-python ~/ms-venv/bin/python --json report.json"

REPO = pathlib.Path(__file__).resolve().parents[1]

PARTS = {"mindrecord": ("mindrecord/test_*.py",), "MindDataset": ("dataset/test_minddataset*.py",)}

# MANIFEST.txt: tests that need dataset/conftest.py's cleanup_tmp_file fixture, left out on both sides
LEFT_OUT = ("dataset/test_minddataset_sampler.py::test_minddataset_distributed_samples",
            "dataset/test_minddataset_exception.py::test_write_with_invalid_float_type",
            "dataset/test_minddataset_padded.py::test_minddataset_padded_samples_exception")

_BYTES_FORM = ("asserts MindSpore's S<n> (numpy.bytes_) form of bytes columns; recordio gives lossless 1-D "
               "uint8 arrays (SPEC §4: S<n> drops trailing NUL bytes, b'' cannot be told from b'\\x00'); "
               "config.set_bytes_form('mindspore') gives MindSpore's form to scripts that check it")

_OUT_OF_RANGE = ("SubsetSampler/SubsetRandomSampler indices outside [-N, N) raise IndexError naming the index; "
                 "MindSpore reads some other row for them (a row repeated or read in place of another, silently)")
_SEEDED = ("asserts the first row of MindSpore's own seeded shuffle (its C++ generator); recordio's default orders "
           "are keyed permutations (SPEC §3: the same for any worker count, resumable) and differ by design; "
           "config.set_order_mode('mindspore') reproduces MindSpore's orders, and these tests pass with it")

# tests that check a deliberate divergence (SPEC §4): reported apart, not counted against the goal
DIVERGENCES = {
    "dataset/test_minddataset_multi_images_and_ndarray.py::test_cv_minddataset_reader_multi_image_and_ndarray_tutorial":
        _BYTES_FORM,
    "dataset/test_minddataset.py::test_write_with_multi_bytes_and_MindDataset": _BYTES_FORM,
    "dataset/test_minddataset.py::test_write_with_multi_bytes_and_array_and_read_by_MindDataset": _BYTES_FORM,
    "dataset/test_minddataset_padded.py::test_cv_minddataset_partition_padded_samples": _BYTES_FORM,
    "dataset/test_minddataset_padded.py::test_cv_minddataset_partition_padded_samples_multi_epoch": _BYTES_FORM,
    "dataset/test_minddataset_sampler.py::test_minddataset_getitem_random_sampler": _BYTES_FORM,
    "dataset/test_minddataset_sampler.py::test_minddataset_getitem_shuffle_num_samples": _BYTES_FORM,
    "dataset/test_minddataset_sampler.py::test_minddataset_getitem_shuffle_distributed_sampler": _BYTES_FORM,
    "dataset/test_minddataset_sampler.py::test_minddataset_getitem_distributed_sampler": _BYTES_FORM,
    "dataset/test_minddataset_sampler.py::test_minddataset_getitem_random_sampler_and_distributed_sampler":
        _BYTES_FORM,
    "dataset/test_minddataset.py::test_field_is_null_numpy":
        "MindSpore reports a zero-length array column with shape [] (and returns garbage for it); recordio "
        "returns the stored empty array, shape [0] (SPEC §4)",
    "dataset/test_minddataset_exception.py::test_mindrecord_exception":
        "an exception inside map reaches the caller as its own type (SPEC §2); MindSpore wraps it in RuntimeError",
    "mindrecord/test_mindrecord_base.py::test_file_writer_parallel":
        "a second FileWriter on a dataset whose first writer is neither committed nor aborted is refused "
        "(one writer per dataset, docs/atomic-commit.md); MindSpore lets both write",
    "dataset/test_minddataset_padded.py::test_cv_minddataset_partition_padded_samples_dataset_size_no_divisible":
        "rows + num_padded not divisible by num_shards raises when the MindDataset is built; MindSpore raises "
        "later, at get_dataset_size or iteration",
    "dataset/test_minddataset_sampler.py::test_cv_minddataset_subset_random_sample_out_of_range": _OUT_OF_RANGE,
    "dataset/test_minddataset_sampler.py::test_cv_minddataset_subset_random_sample_negative": _OUT_OF_RANGE,
    "dataset/test_minddataset_sampler.py::test_func_minddataset_with_subset_random_sampler_01": _OUT_OF_RANGE,
    "dataset/test_minddataset_sampler.py::test_func_minddataset_with_subset_random_sampler_02": _OUT_OF_RANGE,
    "dataset/test_minddataset.py::test_parameter_shuffle": _SEEDED,
    "dataset/test_minddataset.py::test_parameter_RandomSampler": _SEEDED,
    "dataset/test_minddataset.py::test_parameter_DistributedSampler": _SEEDED,
    "dataset/test_minddataset.py::test_parameter_shuffle_num_shards_shard_id": _SEEDED,
    "dataset/test_minddataset_padded.py::test_nlp_minddataset_reader_basic_padded_samples_check_whole_reshuffle_result_per_epoch":
        "asserts that no shard sees the same rows in two of three epochs: true for MindSpore's seed 0, a matter "
        "of luck for any shuffle with shards of 2 rows of which 8 of 18 are padded (recordio's padded rows move "
        "between shards every epoch, as MindSpore's)",
    "dataset/test_minddataset_padded.py::test_cv_minddataset_reader_basic_padded_samples_type_cast":
        "asserts that MindSpore's seeded global shuffle leaves shard 1 of 3 without padded rows in the first "
        "epoch; recordio's keyed shuffle moves the padded rows between shards too (as MindSpore's does, "
        "epoch to epoch) but to other places, and compares the padded bytes in MindSpore's S<n> form",
}


def add_arguments(parser):
    parser.add_argument("--src", required=True, type=pathlib.Path,
                        help="the folder holding MindSpore's tests/ut/python/... and tests/ut/data/... (MANIFEST.txt)")
    parser.add_argument("--peer-tests", type=pathlib.Path,
                        default=os.environ.get("RECORDIO_PEER_TESTS", REPO.parent / "shared" / "peer-tests"),
                        help="the folder with MANIFEST.txt and make_data.py (default $RECORDIO_PEER_TESTS "
                             "or ../shared/peer-tests beside the repository)")
    parser.add_argument("--mindspore-python", default=os.environ.get("RECORDIO_MINDSPORE_PYTHON") or None,
                        help="MindSpore 2.10's interpreter: run the tests there too, and write the MindRecord "
                             "stand-ins with it (default $RECORDIO_MINDSPORE_PYTHON; without it recordio writes them)")
    parser.add_argument("--mindspore-path", type=pathlib.Path, action="append", default=[], metavar="DIR",
                        help="a folder of packages for MindSpore's interpreter only, e.g. pandas<3 for the CSV "
                             "tests (pip install --target DIR --no-deps 'pandas<3' pytz); repeatable")
    parser.add_argument("--baseline", type=pathlib.Path,
                        help="take MindSpore's results from an earlier --json file instead of running MindSpore")
    parser.add_argument("--part", choices=sorted(PARTS), action="append",
                        help="run only this part (repeatable; default both)")
    parser.add_argument("--workdir", type=pathlib.Path,
                        help="work folder (default a new temporary folder, kept: it holds the logs)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one test may run (default 600)")
    parser.add_argument("--no-cpu-shim", action="store_true",
                        help="do not LD_PRELOAD the shim that reports at least 8 CPUs")
    parser.add_argument("--order-mode", choices=("recordio", "mindspore"), default="recordio",
                        help="recordio's side runs with config.set_order_mode(this) (default recordio)")
    parser.add_argument("--bytes-form", choices=("uint8", "mindspore"), default="uint8",
                        help="recordio's side runs with config.set_bytes_form(this) (default uint8)")
    parser.add_argument("--json", type=pathlib.Path, help="write every test's result on both sides to this file")


def run(args):
    src = args.src.expanduser().resolve()
    if not (src / work.TESTS).is_dir():
        raise FileNotFoundError(f"--src {src}: no {work.TESTS} folder (bring the files MANIFEST.txt lists)")
    parts = args.part or list(PARTS)
    root = (args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="recordio-conformance-"))).resolve()
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    os.environ.update(RECORDIO_CONFORMANCE_ORDER_MODE=getattr(args, "order_mode", "recordio"),     # the plugin
                      RECORDIO_CONFORMANCE_BYTES_FORM=getattr(args, "bytes_form", "uint8"))     # sets them
    overlay = []
    if args.mindspore_python:
        overlay = [p.resolve() for p in args.mindspore_path]
        overlay.append(work.build_overlay(args.mindspore_python, root / "inject" / "overlay", _log, overlay))
    data = _prepare(args, src, root, overlay)
    sides = _run_sides(args, data, root, parts, overlay)
    rows = compare(sides, parts)
    if args.baseline is not None:
        _apply_baseline(rows, args.baseline)
    summary = summarize(rows, parts, has_mindspore=bool(args.mindspore_python or args.baseline))
    summary["unlisted"] = sides["collect"].collect_errors
    print(render(summary, rows, root, time.monotonic() - started))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "tests": rows, "workdir": str(root)}, indent=1))
    return 0 if summary["goal_met"] else 1


def _log(text):
    if text:
        print(text, file=sys.stderr, flush=True)


def _prepare(args, src, root, overlay):
    manifest, make_data = args.peer_tests / "MANIFEST.txt", args.peer_tests / "make_data.py"
    if manifest.exists():
        _check_manifest(manifest, src)
    data = work.copy_tree(src, root / "data")
    if make_data.exists():
        python = args.mindspore_python or sys.executable
        work.write_data(data, make_data, python, overlay, _log)
    else:
        _log(f"conformance: no {make_data}: the tests run on the data --src holds")
    return data


def _check_manifest(manifest, src):
    """Each file MANIFEST.txt lists is in ``src`` with its length; a missing one is an error."""
    problems = []
    for line in manifest.read_text().splitlines():
        fields = line.split()
        if not fields or line.startswith("#") or len(fields) < 3:
            continue
        path, chars = src / fields[0], int(fields[2])
        if not path.exists():
            problems.append(f"missing {fields[0]}")
            continue
        with open(path, encoding="utf-8", newline="") as f:
            found = len(f.read())
        if found != chars:
            problems.append(f"{fields[0]}: {found} chars, MANIFEST.txt says {chars}")
    if problems:
        raise FileNotFoundError(f"--src {src} does not match {manifest}: " + "; ".join(problems))


def _targets(parts):
    return [pattern for part in parts for pattern in PARTS[part]]


def _expand(copy, patterns):
    base = copy / work.TESTS
    return sorted(str(p.relative_to(base)) for pattern in patterns for p in base.glob(pattern))


def _run_sides(args, data, root, parts, overlay):
    plugin, mapping = work.write_injected(root / "inject")
    ini = root / "inject" / "pytest.ini"
    preload = None if args.no_cpu_shim else work.build_cpu_shim(root)
    stall = args.timeout + 120
    sides = {}
    plan = [("collect", sys.executable, [plugin, mapping], "stub", None)]
    plan.append(("recordio", sys.executable, [plugin, mapping], "recordio", preload))
    if args.mindspore_python and args.baseline is None:
        plan.append(("mindspore", args.mindspore_python, [plugin, *overlay], None, preload))
    for name, python, path, mode, lib in plan:
        copy = work.copy_tree(data, root / name)
        results = root / f"{name}.jsonl"
        env = work.side_env(path, results, args.timeout, lib, mode)
        side = work.Side(name, python, copy, results, root / f"{name}.log", env)
        _log(f"conformance: {name} side ({python}) in {copy}")
        side.run(ini, _expand(copy, _targets(parts)), LEFT_OUT, stall, collect_only=name == "collect")
        sides[name] = side
    return sides


def part_of(key):
    return "mindrecord" if key.startswith("mindrecord/") else "MindDataset"


def _by_key(side):
    """{key: {"nodeid", "outcome", "message"}} of one side; a module that failed to import fails its tests."""
    out = {}
    for nodeid, key in side.items.items():
        out[key] = dict(side.outcomes.get(nodeid, {"outcome": "failed", "message": "no result"}), nodeid=nodeid)
    return out


def compare(sides, parts):
    """{key: {"part", "divergence", side: result}} over every test the placeholder collection lists."""
    rows = {}
    for side in sides.values():          # the placeholder collection first: it lists every test
        for key in side.items.values():
            rows.setdefault(key, {"part": part_of(key), "divergence": DIVERGENCES.get(key.split("[#")[0])})
    for name in ("recordio", "mindspore"):
        if name not in sides:
            continue
        results = _by_key(sides[name])
        errors = sides[name].collect_errors
        for key, row in rows.items():
            module = key.split("::")[0]
            if key in results:
                row[name] = results[key]
            elif module in errors:
                row[name] = {"outcome": "failed", "message": "collection: " + errors[module], "nodeid": None}
            else:
                row[name] = {"outcome": "failed", "message": "not collected on this side", "nodeid": None}
    return rows


def _apply_baseline(rows, path):
    earlier = json.loads(path.read_text())["tests"]
    for key, row in rows.items():
        if key in earlier and "mindspore" in earlier[key]:
            row["mindspore"] = earlier[key]["mindspore"]


def summarize(rows, parts, has_mindspore):
    summary = {"parts": {}, "regressions": [], "divergences": [], "has_mindspore": has_mindspore}
    for part in parts:
        mine = {k: r for k, r in rows.items() if r["part"] == part}
        counts = {"tests": len(mine), "recordio_passed": _passed(mine, "recordio")}
        if has_mindspore:
            judged = {k: r for k, r in mine.items() if _ok(r, "mindspore") and not r["divergence"]}
            counts.update(mindspore_passed=_passed(mine, "mindspore"), judged=len(judged),
                          recordio_passed_of_judged=_passed(judged, "recordio"))
        summary["parts"][part] = counts
    for key, row in rows.items():
        expected = _ok(row, "mindspore") if has_mindspore else True
        if row["divergence"]:
            summary["divergences"].append(key)
        elif expected and not _ok(row, "recordio"):
            summary["regressions"].append(key)
    summary["goal_met"] = not summary["regressions"]
    return summary


def _ok(row, side):
    return row.get(side, {}).get("outcome") == "passed"


def _passed(rows, side):
    return sum(_ok(r, side) for r in rows.values())


def render(summary, rows, root, seconds):
    ms = summary["has_mindspore"]
    lines = ["MindSpore's unit tests on recordio" + (" and MindSpore" if ms else "") + f" ({seconds:.0f} s)", ""]
    head = f"{'part':<12} {'tests':>5} {'MindSpore':>10} {'recordio':>9}"
    lines.append(head + ("  recordio of MindSpore-passed (divergences aside)" if ms else ""))
    for part, c in summary["parts"].items():
        line = f"{part:<12} {c['tests']:>5} {c.get('mindspore_passed', '-'):>10} {c['recordio_passed']:>9}"
        lines.append(line + (f"  {c['recordio_passed_of_judged']}/{c['judged']}" if ms else ""))
    which = "MindSpore passes and recordio fails" if ms else "recordio fails (no MindSpore side: all count)"
    lines += ["", f"tests {which}: {len(summary['regressions'])}"]
    lines += _failures(summary["regressions"], rows)
    lines += ["", f"deliberate divergences (not counted): {len(summary['divergences'])}"]
    for key in summary["divergences"]:
        outcomes = ", ".join(f"{s} {rows[key][s]['outcome']}" for s in ("mindspore", "recordio") if s in rows[key])
        lines.append(f"  {key} ({outcomes}): {rows[key]['divergence']}")
    unlisted = summary.get("unlisted", {})
    lines += [f"  could not list the tests of {m}: {e}" for m, e in unlisted.items()]
    lines += ["", f"causes: {_causes(summary, rows)}", f"work folder (logs, copies): {root}",
              "goal " + ("met" if summary["goal_met"] else "NOT met") + ": recordio passes every test "
              + ("MindSpore passes" if ms else "") + " except the listed divergences"]
    return "\n".join(lines)


def _failures(keys, rows):
    """One line per failing test; the tests of a module that failed to import share one line."""
    lines, modules = [], {}
    for key in keys:
        message = rows[key]["recordio"]["message"]
        if message.startswith("collection: "):
            modules.setdefault((key.split("::")[0], message), []).append(key)
        else:
            lines.append(f"  {key}: {message}")
    for (module, message), keys_ in modules.items():
        lines.append(f"  {module}, its {len(keys_)} test(s): {message}")
    return lines


def _causes(summary, rows):
    """How many failures start with each exception name (a first sorting of the regressions)."""
    counts = {}
    for key in summary["regressions"]:
        message = re.sub(r"^(collection|error in \w+): ", "", rows[key]["recordio"]["message"])
        name = "AssertionError" if message.startswith("assert ") else message.split(":", 1)[0].split("(", 1)[0]
        name = name.strip() or "?"
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"
