"""What a conversion leaves beside its target until it is published, so that a rerun can resume.

``.<name>.rio-convert/`` holds ``job.json`` (a fingerprint of the source, the options and
the shard count) and, per written shard, ``shard-NNNNN.json`` with the source files
that shard skipped. Complete shards themselves are known to :func:`recordio.missing_shards`.
A rerun with the same fingerprint writes only the missing shards; a rerun of a different
conversion discards the leftover parts first. The folder goes when the dataset is published.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil

from recordio.mindrecord.write.shard_writer import parts_dir

__all__ = ["fingerprint", "load_skipped", "opening", "prepare", "remove", "save_skipped"]


def _folder(destination):
    destination = os.path.abspath(os.fspath(destination))
    return os.path.join(os.path.dirname(destination), f".{os.path.basename(destination)}.rio-convert")


def fingerprint(facts):
    """A stable digest of JSON-able ``facts`` (source, options, shard count)."""
    text = json.dumps(facts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def prepare(destination, digest):
    """Start or resume the conversion ``digest``; returns True when leftovers of another were discarded."""
    folder = _folder(destination)
    job = os.path.join(folder, "job.json")
    try:
        with open(job) as f:
            if json.load(f).get("fingerprint") == digest:
                return False
    except (FileNotFoundError, ValueError):
        pass
    discarded = os.path.isdir(parts_dir(destination)) or os.path.isdir(folder)
    remove(destination)
    os.makedirs(folder)
    _write_json(job, {"fingerprint": digest})
    return discarded


def save_skipped(destination, shard_id, skipped):
    _write_json(os.path.join(_folder(destination), f"shard-{shard_id:05d}.json"), {"skipped": skipped})


def load_skipped(destination, shard_id):
    try:
        with open(os.path.join(_folder(destination), f"shard-{shard_id:05d}.json")) as f:
            return [tuple(s) for s in json.load(f)["skipped"]]
    except (FileNotFoundError, ValueError, KeyError):
        return []


@contextlib.contextmanager
def opening(destination):
    """Hold the conversion's ``open.lock`` (one shard task at a time opens its part).

    A writer's first write removes stale staging files of dead writers in its folder, and a
    writer that is creating its own lock file at that moment can lose it. Opening the parts
    one at a time closes that window; the writing itself runs in parallel.
    """
    fd = os.open(os.path.join(_folder(destination), "open.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove(destination):
    """Drop the conversion state and any unpublished parts."""
    shutil.rmtree(_folder(destination), ignore_errors=True)
    shutil.rmtree(parts_dir(destination), ignore_errors=True)


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)
