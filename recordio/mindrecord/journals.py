"""The journals of interrupted appends as readers see them: found, checked, never obeyed here.

A journal is a file in the dataset's folder, so it is as untrusted as the data (see
``docs/threat-model.md``). :func:`load_journal` checks it against the dataset: every file it touches
must be one of this dataset's own files in its own folder (names derived from the dataset's names,
never paths taken from the journal) and its sizes must fit the files. Anything else is a
:class:`FormatError`. Readers, ``count_rows`` and ``verify`` call :func:`check_journals`; writers
apply journals through ``write/recovery.py``. The writer lock's one check (:func:`lock_held`) lives
here too. Light on purpose (no numpy): ``count_rows`` uses it.
"""

import glob
import json
import os
import re

from recordio.errors import FormatError
from recordio.mindrecord import format as fmt

__all__ = ["check_journals", "dataset_files", "find_journals", "journal_paths", "load_journal", "lock_held",
           "lock_path", "staged_name"]

MAX_JOURNAL = 64 << 20
_TOKEN = re.compile(r"^[0-9a-f]{16}$")


def journal_paths(targets, token):
    return [os.path.join(os.path.dirname(t), f".{os.path.basename(t)}.rio-{token}.journal") for t in targets]


def staged_name(target, token, kind=""):
    """The staging path of ``target``'s spool (``kind`` ".spool") or staged ``.db`` (".db")."""
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}{kind}.rio-{token}.tmp")


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


def find_journals(members):
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


def lock_path(directory, token):
    """The writer lock of the writer ``token`` in ``directory`` (see ``write/commit.py``)."""
    return os.path.join(directory, f".rio-{token}.lock")


def lock_held(path):
    """True when a live process holds the writer lock file ``path``; False when none does or the file does
    not exist. Opening it never follows a link and never blocks; a lock that is not a regular file proves
    nothing and is refused (:class:`FormatError`). The one check of a writer's lock, for readers,
    recovery and the cleaning of stale staging files."""
    import fcntl
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    except OSError as exc:                  # a link (ELOOP), or a file this process may not open
        raise FormatError(f"{path}: writer lock: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FormatError(f"{path}: writer lock: not a regular file")
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
    for journal, target in find_journals(members):
        plan = load_journal(journal, target, allowed)
        if plan["phase"] == 2 and not lock_held(lock_path(os.path.dirname(target), plan["token"])):
            shown = path if isinstance(path, (str, os.PathLike)) else target
            raise FormatError(f"{target}: an append to this dataset was interrupted during its commit "
                              f"(journal {journal}); reading never writes, so finish it first with "
                              f"`recordio repair {shown}` (or recordio.mindrecord.write.recovery.repair, or "
                              f"FileWriter.open_for_append), which needs write access")
