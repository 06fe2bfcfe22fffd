"""Row counts from the index alone: no data page is read and numpy is not imported."""

import os

from recordio import format as fmt
from recordio import index
from recordio.errors import IndexFileError
from recordio.recovery import recover

__all__ = ["count_rows"]


def _header(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: MindRecord file does not exist") from None
    try:
        size = os.fstat(fd).st_size
        prefix = os.pread(fd, fmt.HEADER_PREFIX, 0)
        length = fmt.header_length(prefix, path, size)
        return fmt.decode_header(os.pread(fd, length, fmt.HEADER_PREFIX), path)
    finally:
        os.close(fd)


def _shard_count(path, header):
    """Rows of one shard from its ``.db``, checked against the header's page table."""
    expected = sum(p.end_row - p.start_row for p in header["page"] if p.kind == fmt.BLOB)
    db = index.db_path(path)
    conn = index.connect_ro(db)
    try:
        found = index.row_id_span(conn, db)
    finally:
        conn.close()
    if found != expected:
        raise IndexFileError(f"{db}: index lists {found} rows but the data file's header has {expected}")
    return found


def count_rows(path):
    """Number of rows of the dataset that ``path`` (any shard, or a list of data files) belongs to."""
    recover(path)
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        header = _header(path)
        base = os.path.dirname(os.path.realpath(path))
        paths = [os.path.join(base, name) for name in header["shard_addresses"]]
    else:
        paths = [os.fspath(p) for p in path]
    return sum(_shard_count(p, _header(p)) for p in paths)
