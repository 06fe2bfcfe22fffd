"""Finishing or undoing an interrupted append (see ``append.py`` for the protocol).

A journal is a file in the dataset's folder, so it is as untrusted as the data (see
``docs/threat-model.md``). It is obeyed only after :func:`load_journal` has checked it against the
dataset: every file it touches must be one of this dataset's own files in its own folder (names
derived from the dataset's names, never paths taken from the journal), its writer must be provably
dead, and its sizes must fit the files. Anything else is a :class:`FormatError`, and nothing is done.

* Readers, ``count_rows`` and ``verify`` never write: they call :func:`check_journals`, which
  lets them read when the old dataset is intact (no journal, a live writer's journal, or a
  *phase 1* journal: the commit never started) and raises when a dead writer's *phase 2* journal
  must be applied first.
* Writers (``open_for_append``, a ``FileWriter`` replacing a dataset) and :func:`repair`
  (``recordio repair PATH``) call :func:`recover`, which applies such journals.

Light on purpose (no numpy): ``count_rows`` uses it.
"""

import glob
import json
import os
import re

from recordio.errors import FormatError
from recordio.mindrecord import format as fmt
from recordio.mindrecord.fileio import pwrite_all
from recordio.mindrecord.write.commit import clean_stale, fsync_dir

__all__ = ["apply_plan", "check_journals", "finish_plan", "journal_paths", "recover", "remove_journal",
           "repair"]

MAX_JOURNAL = 64 << 20
_TOKEN = re.compile(r"^[0-9a-f]{16}$")


def journal_paths(targets, token):
    return [os.path.join(os.path.dirname(t), f".{os.path.basename(t)}.rio-{token}.journal") for t in targets]


def staged_name(target, token, kind=""):
    """The staging path of ``target``'s spool (``kind`` ".spool") or staged ``.db`` (".db")."""
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}{kind}.rio-{token}.tmp")


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


# --- finding and checking journals ---------------------------------------------------------------

def dataset_files(path):
    """``(members, allowed)``: real paths of the data files ``path`` names (one shard: the whole
    dataset; a list: those files), and every file their headers name (what a journal may touch)."""
    if isinstance(path, (str, os.PathLike)):
        siblings = fmt.FileHeader.read(path).siblings
        return siblings, set(siblings)
    members, allowed = [], set()
    for p in path:
        members.append(os.path.realpath(p))
        allowed.update(fmt.FileHeader.read(p).siblings)
    return members, allowed


def _journals(members):
    """``[(journal path, target)]`` of every journal beside the data files ``members``."""
    found = []
    for target in members:
        pattern = os.path.join(glob.escape(os.path.dirname(target)),
                               f".{glob.escape(os.path.basename(target))}.rio-*.journal")
        found += [(j, target) for j in sorted(glob.glob(pattern))]
    return found


def load_journal(journal, target, allowed):
    """The plan of ``journal`` (found beside ``target``), its paths derived from the dataset's own
    names, or :class:`FormatError` when it names anything else. ``allowed``: this dataset's data
    files (a set of real paths, or a predicate on a path)."""
    allowed = allowed if callable(allowed) else allowed.__contains__
    token = os.path.basename(journal)[len(os.path.basename(target)) + 6:-len(".journal")]
    where = f"{journal}: append journal"
    if not _TOKEN.match(token):
        raise FormatError(f"{where}: token {token[:40]!r} is not 16 hex digits; not a journal recordio wrote")
    plan = _read_json(journal, where)
    if not isinstance(plan, dict) or plan.get("token") != token or plan.get("phase") not in (1, 2):
        raise FormatError(f"{where}: expected an object with token {token!r} and phase 1 or 2")
    targets = plan.get("targets")
    if (not isinstance(targets, list) or not targets or len(set(map(str, targets))) != len(targets)
            or target not in targets or not all(isinstance(t, str) and allowed(t) for t in targets)):
        raise FormatError(f"{where}: refused, not obeyed: it names files {_names(targets)}, expected files "
                          f"of this dataset ({os.path.basename(target)} among them) in {os.path.dirname(target)}")
    sizes = plan.get("sizes")
    if not isinstance(sizes, list) or len(sizes) != len(targets) or not all(_count(s) for s in sizes):
        raise FormatError(f"{where}: sizes {str(sizes)[:80]} do not give one size per file")
    derived = {"phase": plan["phase"], "token": token, "targets": list(targets), "sizes": sizes}
    if plan["phase"] == 2:
        derived["shards"] = [_check_shard(s, t, token, where) for s, t in _pairs(plan, targets, where)]
    return derived


def _read_json(journal, where):
    try:
        fd = fmt.open_regular(journal)
    except (FormatError, OSError) as exc:
        raise FormatError(f"{where}: {exc}") from None
    try:
        size = os.fstat(fd).st_size
        if size > MAX_JOURNAL:
            raise FormatError(f"{where}: {size} bytes exceed the {MAX_JOURNAL >> 20} MiB a journal may have")
        return json.loads(os.pread(fd, size, 0))
    except (UnicodeError, ValueError):
        raise FormatError(f"{where}: not valid JSON") from None
    finally:
        os.close(fd)


def _names(paths):
    names = [os.path.basename(str(p)) if isinstance(p, str) else repr(p) for p in (paths or [])[:4]]
    return "[" + ", ".join(names) + (", ..." if len(paths or []) > 4 else "") + "]"


def _count(value):
    return type(value) is int and 0 <= value < fmt.MAX_INT


def _pairs(plan, targets, where):
    shards = plan.get("shards")
    if not isinstance(shards, list) or len(shards) != len(targets) or not all(isinstance(s, dict) for s in shards):
        raise FormatError(f"{where}: phase 2 needs one shard entry per file")
    return zip(shards, targets)


def _check_shard(shard, target, token, where):
    """One shard entry of a phase-2 plan, rebuilt from ``target`` (paths) and checked values."""
    expected = {"data": target, "spool": staged_name(target, token, ".spool"),
                "db_staged": staged_name(target, token, ".db"), "db": target + ".db"}
    wrong = [k for k, v in expected.items() if shard.get(k) != v]
    if wrong:
        raise FormatError(f"{where}: refused, not obeyed: its {wrong[0]} path {str(shard.get(wrong[0]))[:200]!r} "
                          f"is not {expected[wrong[0]]!r}")
    header = shard.get("header")
    if not isinstance(header, str) or len(header) > 2 * (fmt.MAX_HEADER_LENGTH + fmt.HEADER_PREFIX):
        raise FormatError(f"{where}: the new header of {os.path.basename(target)} is not a hex string")
    try:
        blob = bytes.fromhex(header)
        length = fmt.header_length(blob, where, len(blob))
        new = fmt.decode_header(blob[fmt.HEADER_PREFIX:fmt.HEADER_PREFIX + length], where)
    except ValueError as exc:
        raise FormatError(f"{where}: the new header of {os.path.basename(target)} is invalid: {exc}") from None
    limit = fmt.page_offset(new["header_size"], new["page_size"], len(new["page"]))
    expected["deferred"] = _check_deferred(shard.get("deferred"), limit, where)
    expected["header"] = header
    return expected


def _check_deferred(deferred, limit, where):
    """Spooled writes ``[at, pos, n]``: read back to back from the spool, landing inside the new pages."""
    if not isinstance(deferred, list):
        raise FormatError(f"{where}: deferred writes must be a list")
    pos = 0
    for item in deferred:
        if (not isinstance(item, list) or len(item) != 3 or not all(map(_count, item))
                or item[1] != pos or item[0] + item[2] > limit):
            raise FormatError(f"{where}: deferred write {str(item)[:80]} does not follow the spool or "
                              f"lands past the new pages (byte {limit})")
        pos += item[2]
    return [list(item) for item in deferred]


# --- what readers and writers do with them --------------------------------------------------------

def _writer_alive(directory, token):
    """True when the writer of ``token`` holds its lock. Opening the lock never follows a link and
    never blocks; a lock that is not a regular file proves nothing and is refused."""
    import fcntl

    path = os.path.join(directory, f".rio-{token}.lock")
    try:
        fd = fmt.open_regular(path)
    except FileNotFoundError:
        return False
    except FormatError as exc:
        raise FormatError(f"{path}: writer lock: {exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def check_journals(path):
    """For readers (which never write): raise :class:`FormatError` when the dataset ``path`` has a
    journal that is not this dataset's, or a dead writer's commit that must be finished first."""
    members, allowed = dataset_files(path)
    for journal, target in _journals(members):
        plan = load_journal(journal, target, allowed)
        if plan["phase"] == 2 and not _writer_alive(os.path.dirname(target), plan["token"]):
            shown = path if isinstance(path, (str, os.PathLike)) else target
            raise FormatError(f"{target}: an append to this dataset was interrupted during its commit "
                              f"(journal {journal}); reading never writes, so finish it first with "
                              f"`recordio repair {shown}` (or recordio.mindrecord.write.recovery.repair, or "
                              f"FileWriter.open_for_append), which needs write access")


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
    for journal, target in _journals(members):
        if not os.path.exists(journal):
            continue                                   # finished with an earlier shard's journal
        plan = load_journal(journal, target, allowed)
        directory = os.path.dirname(target)
        if _writer_alive(directory, plan["token"]):
            continue
        for t in plan["targets"]:
            fmt.check_inside(t, journal)
            fmt.check_inside(t + ".db", journal)
        _roll(plan, journal)
        lock = os.path.join(directory, f".rio-{plan['token']}.lock")
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
