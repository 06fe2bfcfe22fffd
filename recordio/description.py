"""``describe(path)``: what a dataset is, from headers and indexes only (no data page is read)."""

import os

from recordio import format as fmt
from recordio import index
from recordio.shardset import read_header

__all__ = ["describe"]


def _shard_paths(path):
    if isinstance(path, (str, os.PathLike)):
        header, _, _ = read_header(os.fspath(path))
        base = os.path.dirname(os.path.realpath(path))
        return [os.path.join(base, name) for name in header["shard_addresses"]]
    return [os.fspath(p) for p in path]


def _shard_facts(path):
    header, _, size = read_header(path)
    st = os.stat(path)
    pages = header["page"]
    db = index.db_path(path)
    facts = {"file": path, "rows": sum(p.end_row - p.start_row for p in pages if p.kind == fmt.BLOB),
             "pages": len(pages), "blob_pages": sum(p.kind == fmt.BLOB for p in pages),
             "raw_pages": sum(p.kind == fmt.RAW for p in pages), "apparent_bytes": size,
             "allocated_bytes": st.st_blocks * 512, "index_file": os.path.exists(db), "checksums": False}
    if facts["index_file"]:
        conn = index.connect_ro(db)
        try:
            facts["checksums"] = index.read_checksums(conn, db) is not None
            facts["writer"] = index.read_meta(conn, db).get("writer", "MindSpore or unknown")
        finally:
            conn.close()
    return header, facts


def describe(path):
    """A dict describing the dataset ``path`` (any shard, or a list of data files)."""
    shards = [_shard_facts(p) for p in _shard_paths(path)]
    header = shards[0][0]
    schema = header["schema"][0]
    return {
        "version": header["version"], "header_size": header["header_size"], "page_size": header["page_size"],
        "desc": schema.get("desc", ""), "schema": schema["schema"], "blob_fields": schema.get("blob_fields"),
        "index_fields": [f["index_field"] for f in header["index_fields"] or []],
        "compression_size": header.get("compression_size", 0),
        "rows": sum(f["rows"] for _, f in shards), "shards": [f for _, f in shards],
    }
