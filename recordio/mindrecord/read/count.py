"""Row counts from the index alone: no data page is read and numpy is not imported."""

from __future__ import annotations

import os

from recordio.mindrecord import format as fmt
from recordio.mindrecord import index
from recordio.errors import IndexFileError
from recordio.mindrecord import encryption
from recordio.mindrecord.journals import check_journals
from recordio.mindrecord.storage import local_files

__all__ = ["count_rows"]


def _shard_count(path):
    """Rows of one shard from its ``.db``, checked against the header's page table."""
    expected = fmt.FileHeader.read(path).rows
    db = index.db_path(path)
    conn = index.connect_ro(db)
    try:
        found = index.row_id_span(conn, db)
    finally:
        conn.close()
    if found != expected:
        raise IndexFileError(f"{db}: index lists {found} rows but the data file's header has {expected}")
    return found


def count_rows(path: str | os.PathLike | list, *, storage_options: dict | None = None,
               cache_dir: str | None = None) -> int:
    """Number of rows of the dataset that ``path`` (any shard, or a list of data files) belongs to.
    At a URL, only the headers and ``.db`` files are fetched (docs/howto-remote.md)."""
    with local_files(path, storage_options, cache_dir) as (local, _):
        return _count_local(local)


def _count_local(path):
    with encryption.dataset_files(path) as (target, encrypted):
        if not encrypted:                  # an encrypted dataset is never appended to: no journals
            check_journals(path)
        return sum(_shard_count(p) for p in fmt.dataset_paths(target))
