"""Finishing or undoing an interrupted append (see ``append.py`` for the protocol).

A journal is a file in the dataset's folder, so it is as untrusted as the data (see
``docs/threat-model.md``). It is obeyed only after :func:`load_journal` has checked it against the
dataset: every file it touches must be one of this dataset's own files in its own folder (names
derived from the dataset's names, never paths taken from the journal), its writer must be provably
dead, and its sizes must fit the files. Anything else is a :class:`FormatError`, and nothing is done.

* Readers, ``count_rows`` and ``verify`` never write: they call :func:`check_journals`
  (``recordio/mindrecord/journals.py``), which
  lets them read when the old dataset is intact (no journal, a live writer's journal, or a
  *phase 1* journal: the commit never started) and raises when a dead writer's *phase 2* journal
  must be applied first.
* Writers (``open_for_append``, a ``FileWriter`` replacing a dataset) and :func:`repair`
  (``recordio repair PATH``) call :func:`recover`, which applies such journals.

Light on purpose (no numpy): ``count_rows`` uses it.
"""

import os

from recordio.errors import FormatError
from recordio.mindrecord import format as fmt
from recordio.mindrecord.fileio import pwrite_all
from recordio.mindrecord.journals import (check_journals, dataset_files, find_journals, journal_paths, load_journal,
                                          lock_held, lock_path)
from recordio.mindrecord.write.commit import clean_stale, fsync_dir

__all__ = ["apply_plan", "check_journals", "finish_plan", "journal_paths", "recover", "remove_journal",
           "repair"]


def apply_plan(plan):
    """Apply a phase-2 journal: spooled writes, headers, ``.db`` renames. Idempotent."""
    for shard in plan["shards"]:
        fd = os.open(shard["data"], os.O_RDWR)
        try:
            if shard["deferred"]:
                with open(shard["spool"], "rb") as spool:
                    for at, pos, n in shard["deferred"]:
                        pwrite_all(fd, os.pread(spool.fileno(), n, pos), at, shard["data"])
            pwrite_all(fd, bytes.fromhex(shard["header"]), 0, shard["data"])
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


# --- what readers and writers do with them --------------------------------------------------------

def writer_files(targets):
    """``(members, allowed)`` for a FileWriter's ``targets``: a journal beside them may name files of
    its folder named like them up to trailing digits (MindSpore's shard names ``x``, ``x0``, ``x00``)."""
    members = [os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(t))), os.path.basename(t))
               for t in targets]

    def stem(path):
        return os.path.dirname(path), os.path.basename(path).rstrip("0123456789")
    stems = {stem(m) for m in members}
    return members, lambda path: stem(path) in stems


def recover(members, allowed=None):
    """For writers: finish (phase 2) or undo (phase 1) the interrupted appends of dead writers
    beside the data files ``members`` (real paths); ``allowed``: the files a journal may name
    (a set or a predicate; default: ``members``). Returns True if one was found."""
    allowed = set(members) if allowed is None else allowed
    found = False
    for journal, target in find_journals(members):
        if not os.path.exists(journal):
            continue                                   # finished with an earlier shard's journal
        plan = load_journal(journal, target, allowed)
        directory = os.path.dirname(target)
        if lock_held(lock_path(directory, plan["token"])):
            continue
        for t in plan["targets"]:
            fmt.check_inside(t, journal)
            fmt.check_inside(t + ".db", journal)
        _roll(plan, journal)
        lock = lock_path(directory, plan["token"])
        if os.path.lexists(lock):
            os.unlink(lock)
        found = True
    return found


def _roll(plan, journal):
    try:
        if plan["phase"] == 2:
            apply_plan(plan)
            finish_plan(plan, plan["token"])
            return
        for target, size in zip(plan["targets"], plan["sizes"]):
            if os.path.isfile(target) and os.path.getsize(target) > size:
                os.truncate(target, size)
        remove_journal(plan["targets"], plan["token"])
    except OSError as exc:
        raise FormatError(f"{journal}: an interrupted append could not be finished ({exc}); "
                          f"open the dataset once with write access to repair it") from None


def repair(path):
    """Finish or undo an interrupted append of the dataset ``path`` (any shard); True if one was found.

    What ``recordio repair PATH`` does; readers refuse such a dataset until it is repaired."""
    members, allowed = dataset_files(path)
    found = recover(members, allowed)
    for folder in sorted({os.path.dirname(m) for m in members}):
        clean_stale(folder)                  # the spools and staging files the dead writer left
    return found
