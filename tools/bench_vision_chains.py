"""The image-training chains side by side (``recordio bench --suite vision``, part 3): recordio, MindSpore
2.10, torchvision v2, DALI (CPU), FFCV and the decode limit, on ImageNet-like JPEGs (``vision_photos``).

For each chain (``train``, ``eval``, ``eval_pil``, and ``train_host``/``eval_host``, what the first two leave
on the host when their tail is offloaded; see ``vision_contenders``) and each contender that is installed (a
python given for it, or found under ~/.cache/recordio-bench-venvs/), in a fresh process each:

* **per core**: one worker (recordio and MindSpore: ``num_parallel_workers=1``; torchvision: one thread,
  a plain loop; DALI: ``num_threads=1``; FFCV: ``num_workers=1``), batch 32. Reported as images per second of the process's CPU
  time (all its threads: on a shared machine this moves less than wall time) and in wall time;
* **all cores** (recordio, MindSpore, DALI, FFCV): ``os.cpu_count()`` workers, wall images/s;
* **as the scripts run it** (recordio, MindSpore; not the host parts): 8 workers (MindSpore refuses more
  workers than cores: it gets that many), batch 4, wall images/s.

Ratios are taken in the same run: recordio / each contender, and recordio / the decode limit
(libjpeg-turbo decoding only each image's crop box at the fastest admissible DCT scale, nothing else).
A first row says how much ``os.cpu_count()`` independent processes get over one at that time (on a shared
machine, the ceiling of every all-cores figure of the run).
Runs alternate between contenders; each measurement keeps the best of ``--repeat``.

**Paired** (``python -m recordio.tools.bench_vision_chains --paired TREE_A TREE_B``): recordio's own script
on one chain from two source trees (each with its C parts built in place, e.g. a worktree of the commit
before a change), alternating A, B in fresh processes for ``--pairs`` pairs; the median of the per-pair
ratios B / A. On a shared machine whose speed drifts within minutes, a 5-10% change shows here and not in
a best-of-N of separate runs.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from recordio.tools import vision_contenders, vision_photos

CHAINS = ("train", "eval", "eval_pil", "train_host", "eval_host")
HOST_CHAINS = {"train_host": "train", "eval_host": "eval"}   # the chains' host parts when their tail is offloaded
TAKES = {"recordio": CHAINS, "mindspore": CHAINS, "torchvision": ("train", "eval"), "dali": ("train", "eval"),
         "ffcv": ("train", "eval"), "decode limit": ("train", "eval")}    # a host part: its chain's limit
VENVS = {name: os.path.expanduser(f"~/.cache/recordio-bench-venvs/{name}/bin/python")
         for name in ("torchvision", "dali", "ffcv")}
BATCH, SCRIPT_WORKERS, SCRIPT_BATCH = 32, 8, 4


def pythons(args):
    """Contender -> python that runs it (recordio and the decode limit: this one)."""
    found = {"recordio": sys.executable, "decode limit": sys.executable}
    if getattr(args, "mindspore_python", None):
        found["mindspore"] = args.mindspore_python
    for name, default in VENVS.items():
        python = getattr(args, f"{name}_python", None) or default
        if os.path.exists(python):
            found[name] = python
    return found


def write_data(folder, n):
    """The MindRecord file and the JPEG blob of the same ``n`` photos; the MindRecord path."""
    path = os.path.join(folder, "photos.mindrecord")
    vision_photos.write_mindrecord(path, n)
    jpegs = vision_photos.jpegs(n)
    with open(os.path.join(folder, "photos.blob"), "wb") as f:
        f.write(b"".join(jpegs))
    np.save(os.path.join(folder, "photos.offsets.npy"), np.cumsum([0] + [len(j) for j in jpegs]))
    return path


def measure(python, name, data, chain, workers, batch, images, repo=None):
    """One run of ``name``'s script (``repo``: the source tree recordio is imported from; default this one)."""
    repo = repo or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GLOG_v="3", PYTHONPATH=repo,
               OMP_NUM_THREADS=str(workers))
    path = data if name in ("recordio", "mindspore", "decode limit") else data[:-len(".mindrecord")]
    argv = [python, "-c", vision_contenders.SCRIPTS[name], path, chain, str(workers), str(batch), str(images)]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{name} ({python}) failed on the {chain} chain: {out.stderr[-1500:]}")
    run = json.loads(lines[-1])
    run["cores"] = run["images_per_s"] / run["cpu_images_per_s"]      # CPUs the process got (CPU time / wall)
    return run


SPIN = "import time\ns = time.perf_counter()\nx = 0\nfor i in range(4_000_000):\n    x += i\nprint(time.perf_counter() - s)"


def cores_ceiling():
    """How many times one core's work the machine gives ``os.cpu_count()`` independent processes now (a
    pure-Python loop each, started together): the ceiling of any all-cores figure taken in this run."""
    def spin(count):
        procs = [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
                 for _ in range(count)]
        return max(float(p.communicate()[0]) for p in procs)
    cores = os.cpu_count() or 1
    return cores * spin(1) / spin(cores)


def plan(found):
    """(contender, chain, mode, workers, batch) of every measurement, in the order they alternate."""
    cores = os.cpu_count() or 1
    modes = [("core", 1, BATCH), ("all", cores, BATCH), ("scripts", SCRIPT_WORKERS, SCRIPT_BATCH)]
    out = []
    for chain in CHAINS:
        for mode, workers, batch in modes:
            for name in found:
                if chain not in TAKES[name] or (mode == "scripts" and (name not in ("recordio", "mindspore")
                                                                        or chain in HOST_CHAINS)):
                    continue
                if mode == "all" and name in ("torchvision", "decode limit"):
                    continue
                if name == "mindspore":         # MindSpore refuses more workers than cores
                    workers = min(workers, cores)
                out.append((name, chain, mode, workers, batch))
    return out


def measurements(args, images, repeats):
    """{(contender, chain, mode): best run} (see the module docstring); failures are reported, not fatal."""
    found = pythons(args)
    best, failed = {}, {}
    with tempfile.TemporaryDirectory(prefix="recordio-bench-chains-") as tmp:
        data = write_data(getattr(args, "workdir", None) or tmp, images)
        for _ in range(repeats):
            best.setdefault("ceiling", []).append(cores_ceiling())
            for name, chain, mode, workers, batch in plan(found):
                key = (name, chain, mode)
                if key in failed:
                    continue
                try:
                    run = measure(found[name], name, data, chain, workers, batch, images)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    failed[key] = str(exc).splitlines()[-1][:200]
                    continue
                old = best.get(key)
                best[key] = run if old is None else {k: max(old[k], run[k]) for k in run}
                if old is not None:                 # the CPUs of the run whose wall rate is kept
                    best[key]["cores"] = max(old, run, key=lambda r: r["images_per_s"])["cores"]
    return best, failed


def _row(name, value, unit, baseline=None, baseline_value=None, target=""):
    from recordio.tools._common import bench_row
    return bench_row(name, value, unit, baseline, baseline_value, target)


def chain_rows(best, failed):
    """Result rows: per core (CPU images/s), all cores and as the scripts run it (wall images/s)."""
    rows = []
    if best.get("ceiling"):
        rows.append(_row(f"all {os.cpu_count()} cores: independent processes / one (the machine now)",
                         max(best["ceiling"]), "x"))
    for chain in CHAINS:
        ours = best.get(("recordio", chain, "core"))
        if ours is None:
            continue
        cpu = ours["cpu_images_per_s"]
        rows.append(_row(f"{chain} per core: recordio (CPU images/s)", cpu, "images/s"))
        for name in ("mindspore", "torchvision", "dali", "ffcv", "decode limit"):
            theirs = best.get((name, HOST_CHAINS.get(chain, chain) if name == "decode limit" else chain, "core"))
            if theirs is not None:
                target = {"mindspore": ">= 2", "decode limit": ">= 0.7"}.get(name, ">= 1.2")
                target = "" if chain in HOST_CHAINS and name != "decode limit" else target      # the issue's
                rows.append(_row(f"{chain} per core: recordio vs {name}", cpu, "images/s", f"{name} per core",
                                 theirs["cpu_images_per_s"], target))
        rows.append(_row(f"{chain} per core: recordio (wall images/s)", ours["images_per_s"], "images/s"))
        wide = best.get(("recordio", chain, "all"))
        if wide is not None:
            rows.append(_row(f"{chain} all {os.cpu_count()} cores: recordio", wide["images_per_s"], "images/s",
                             "recordio one core (wall)", ours["images_per_s"], ">= 1.8"))
            for name in ("mindspore", "dali", "ffcv"):
                theirs = best.get((name, chain, "all"))
                if theirs is not None:
                    rows.append(_row(f"{chain} all cores: recordio vs {name}", wide["images_per_s"], "images/s",
                                     f"{name} all cores", theirs["images_per_s"]))
        script = best.get(("recordio", chain, "scripts"))
        theirs = best.get(("mindspore", chain, "scripts"))
        if script is not None:
            row = _row(f"{chain} as scripts run it (8 workers, batch 4)", script["images_per_s"], "images/s",
                       "MindSpore 2.10, same" if theirs else None, theirs and theirs["images_per_s"], ">= 1.5")
            cores = [f"recordio {script['cores']:.2f}"] + ([f"MindSpore {theirs['cores']:.2f}"] if theirs else [])
            rows.append(dict(row, note=f"CPUs each got (CPU time / wall): {', '.join(cores)}"))
    for (name, chain, mode), why in sorted(failed.items()):
        rows.append(dict(_row(f"{chain} {mode}: {name} not measured", 0.0, ""), note=why))
    return rows


def run(args, images=None, repeats=None):
    images = images or getattr(args, "chain_images", None) or 512
    repeats = repeats or getattr(args, "repeat", 3)
    best, failed = measurements(args, images, repeats)
    return chain_rows(best, failed)


def paired(trees, chain="train", workers=1, pairs=8, images=512, workdir=None):
    """{"a", "b": per-run images/s, "ratios": B / A per pair} of recordio's script from two trees, alternating."""
    found = {"a": [], "b": [], "cpu_ratios": [], "wall_ratios": []}
    with tempfile.TemporaryDirectory(prefix="recordio-bench-paired-") as tmp:
        data = write_data(workdir or tmp, images)
        for k in range(pairs):
            order = ("a", "b") if k % 2 == 0 else ("b", "a")            # neither always goes first
            runs = {side: measure(sys.executable, "recordio", data, chain, workers, BATCH, images,
                                  trees["ab".index(side)]) for side in order}
            for side in "ab":
                found[side].append(runs[side])
            found["cpu_ratios"].append(runs["b"]["cpu_images_per_s"] / runs["a"]["cpu_images_per_s"])
            found["wall_ratios"].append(runs["b"]["images_per_s"] / runs["a"]["images_per_s"])
    return found


def add_arguments(parser):
    parser.add_argument("--paired", nargs=2, metavar=("TREE_A", "TREE_B"), required=True,
                        help="two source trees (checkouts with their C parts built in place)")
    parser.add_argument("--chain", choices=CHAINS, default="train")
    parser.add_argument("--workers", type=int, default=1, help="map workers (default 1: per core)")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--images", type=int, default=512)


def check_trees(args):
    for tree in args.paired:
        if not os.path.isdir(os.path.join(tree, "recordio")):
            raise ValueError(f"{tree}: not a source tree (no recordio/ in it)")


def paired_rows(args):
    """Rows of a paired run: the median per-pair ratios B / A, then each tree's median CPU images/s."""
    from recordio.tools._common import bench_row
    trees = [os.path.abspath(tree) for tree in args.paired]
    found = paired(trees, args.chain, args.workers, args.pairs, args.images)
    what = f"{args.chain}, {args.workers} worker(s), {args.pairs} pairs"
    rows = []
    for key, per in (("cpu_ratios", "CPU second"), ("wall_ratios", "wall second")):
        ratios = found[key]
        rows.append(bench_row(f"{what}: B / A images per {per}, median of the pairs", float(np.median(ratios)), "x",
                              note=f"min {min(ratios):.3f}, max {max(ratios):.3f}"))
    medians = {side: float(np.median([run["cpu_images_per_s"] for run in found[side]])) for side in "ab"}
    rows.append(bench_row(f"{what}: A (CPU images/s, median)", medians["a"], "images/s", note=trees[0]))
    rows.append(bench_row(f"{what}: B (CPU images/s, median)", medians["b"], "images/s", "A", medians["a"],
                          note=trees[1]))
    return rows


def main(argv=None):
    from recordio.tools._common import bench_main
    return bench_main(__doc__, add_arguments, paired_rows, argv, check=check_trees)


if __name__ == "__main__":
    main()
