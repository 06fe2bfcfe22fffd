"""Contiguous runs of a dataset's rows, for read tasks that cut inside shards and across them."""

__all__ = ["plan_reads"]


def plan_reads(counts, tasks):
    """``tasks`` runs of the rows of files with ``counts`` rows, each ``[(file, start, stop), ...]``.

    Global rows (file after file) are cut into ``tasks`` contiguous runs of sizes that differ by at
    most one; a run that crosses a file boundary reads a piece of each file. No run is empty.
    """
    total = sum(counts)
    tasks = max(1, min(tasks, total))
    base, extra = divmod(total, tasks)
    runs, file, offset = [], 0, 0
    for t in range(tasks if total else 0):
        want, run = base + (t < extra), []
        while want:
            while counts[file] == offset:
                file, offset = file + 1, 0
            take = min(want, counts[file] - offset)
            run.append((file, offset, offset + take))
            offset, want = offset + take, want - take
        runs.append(run)
    return runs
