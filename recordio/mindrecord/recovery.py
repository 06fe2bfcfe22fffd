"""Finishing or undoing an interrupted append (see ``append.py`` for the protocol).

Light on purpose (no numpy): readers, ``count_rows`` and writers call :func:`recover`
before they look at a dataset.
"""

import glob
import json
import os

from recordio.mindrecord.commit import fsync_dir, lock_is_free
from recordio.errors import FormatError

__all__ = ["apply_plan", "finish_plan", "journal_paths", "recover", "remove_journal"]


def journal_paths(targets, token):
    return [os.path.join(os.path.dirname(t), f".{os.path.basename(t)}.rio-{token}.journal") for t in targets]


def apply_plan(plan):
    """Apply a phase-2 journal: spooled writes, headers, ``.db`` renames. Idempotent."""
    for shard in plan["shards"]:
        fd = os.open(shard["data"], os.O_RDWR)
        try:
            if shard["deferred"]:
                with open(shard["spool"], "rb") as spool:
                    for at, pos, n in shard["deferred"]:
                        os.pwrite(fd, os.pread(spool.fileno(), n, pos), at)
            os.pwrite(fd, bytes.fromhex(shard["header"]), 0)
            os.fsync(fd)
        finally:
            os.close(fd)
    for shard in plan["shards"]:
        if os.path.exists(shard["db_staged"]):
            os.replace(shard["db_staged"], shard["db"])
    fsync_dir(os.path.dirname(plan["shards"][0]["data"]))


def finish_plan(plan, token):
    """After :func:`apply_plan`: remove the journal (durably), then the spools.

    In this order a journal never outlives the spools it reads: a crash in between leaves spools
    without a journal, stale staging files that the next writer removes."""
    remove_journal(plan["targets"], token)
    fsync_dir(os.path.dirname(plan["shards"][0]["data"]))
    for shard in plan["shards"]:
        if os.path.exists(shard["spool"]):
            os.unlink(shard["spool"])


def remove_journal(targets, token):
    for path in journal_paths(targets, token):
        if os.path.exists(path):
            os.unlink(path)


def _lock_held(directory, token):
    return not lock_is_free(os.path.join(directory, f".rio-{token}.lock"))


def recover(path):
    """Finish or undo an append interrupted at ``path``'s dataset; returns True if one was found.

    A live writer's journal is left alone; a dead writer's phase-2 journal is applied
    (roll forward), a phase-1 journal undone (data files cut back to their old sizes).
    """
    paths = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else [os.fspath(path)]
    found = False
    for p in paths:
        real = os.path.realpath(p)
        pattern = os.path.join(glob.escape(os.path.dirname(real)), f".{glob.escape(os.path.basename(real))}.rio-*.journal")
        for journal in glob.glob(pattern):
            found |= _recover_journal(journal)
    return found


def _recover_journal(journal):
    try:
        with open(journal) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return False       # removed meanwhile, or still being written (its writer is alive)
    directory = os.path.dirname(journal)
    if _lock_held(directory, plan["token"]):
        return False
    try:
        if plan["phase"] == 2:
            apply_plan(plan)
        else:
            for target, size in zip(plan["targets"], plan["sizes"]):
                if os.path.exists(target) and os.path.getsize(target) > size:
                    os.truncate(target, size)
    except OSError as exc:
        raise FormatError(f"{journal}: an interrupted append could not be finished ({exc}); "
                          f"open the dataset once with write access to repair it") from None
    if plan["phase"] == 2:
        finish_plan(plan, plan["token"])
    else:
        remove_journal(plan["targets"], plan["token"])
    lock = os.path.join(directory, f".rio-{plan['token']}.lock")
    if os.path.exists(lock):
        os.unlink(lock)
    return True
