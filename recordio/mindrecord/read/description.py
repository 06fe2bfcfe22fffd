"""``describe(path)``: what a dataset is, and ``count_where``: rows by indexed values — both from
headers and indexes only (no data page is read)."""

from __future__ import annotations

import os

from recordio.mindrecord import encryption
from recordio.mindrecord import format as fmt
from recordio.mindrecord import index
from recordio.mindrecord.storage import local_files

__all__ = ["count_where", "describe"]


def _shard_facts(path):
    fh = fmt.FileHeader.read(path)
    header, size, pages = fh.header, fh.file_size, fh.pages
    st = os.stat(path)
    db = index.db_path(path)
    facts = {"file": path, "rows": fh.rows,
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


def describe(path: str | os.PathLike | list, *, storage_options: dict | None = None,
             cache_dir: str | None = None) -> dict:
    """A dict describing the dataset ``path`` (any shard, or a list of data files, or URLs); an encrypted
    dataset is described from its plain copies when a key is set (``set_enc_key``)."""
    with local_files(path, storage_options, cache_dir) as (local, remote):
        facts = _describe_local(local)
    if remote is not None:
        for shard in facts["shards"]:
            shard.update(file=remote.rename(shard["file"]))
    return facts


def _describe_local(path):
    with encryption.dataset_files(path) as (target, encrypted):
        shards = [_shard_facts(p) for p in fmt.dataset_paths(target)]
    if encrypted:                          # name the encrypted files, not their removed plain copies
        first = path if isinstance(path, (str, os.PathLike)) else path[0]
        folder = os.path.dirname(os.path.abspath(os.fspath(first)))
        for _, facts in shards:
            facts.update(file=os.path.join(folder, os.path.basename(facts["file"])), encrypted=True)
    header = shards[0][0]
    schema = header["schema"][0]
    return {
        "version": header["version"], "header_size": header["header_size"], "page_size": header["page_size"],
        "desc": schema.get("desc", ""), "schema": schema["schema"], "blob_fields": schema.get("blob_fields"),
        "index_fields": [f["index_field"] for f in header["index_fields"] or []],
        "compression_size": header.get("compression_size", 0),
        "rows": sum(f["rows"] for _, f in shards), "shards": [f for _, f in shards],
    }

_PARSE = {"int32": int, "int64": int, "float32": float, "float64": float, "string": str}
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


def parse_value(field, kind, text):
    """``text`` as a value of the schema type ``kind`` (ints in range, strings without surrogates)."""
    try:
        value = _PARSE[kind](text)
        low, high = _INT_RANGE.get(kind, (value, value))
        if not low <= value <= high:
            raise ValueError
        if kind == "string":
            value.encode("utf-8")
    except (ValueError, UnicodeError):
        raise ValueError(f"--where {field}={text[:80]!r}: expected a {kind} value") from None
    return value


def count_where(path: str | os.PathLike | list, conditions: list[tuple[str, str]], *,
                storage_options: dict | None = None, cache_dir: str | None = None) -> int:
    """Rows whose indexed fields equal the given values; ``conditions`` = [(field, text), ...].

    Values are parsed with the field's type. This reads only the headers and ``.db`` files (at a URL,
    only those are fetched, as for ``count_rows``); note that the ``.db`` of a MindSpore-written
    dataset holds strings cut at their first NUL.
    """
    with local_files(path, storage_options, cache_dir) as (local, _):
        info = _describe_local(local)
        clauses, params = [], []
        for field, text in conditions:
            if field not in info["index_fields"]:
                raise ValueError(f"{field!r} is not an indexed field (indexed: {', '.join(info['index_fields'])})")
            params.append(parse_value(field, info["schema"][field]["type"], text))
            clauses.append(f"{index.column_name(field)} = ?")
        sql = f"SELECT COUNT(*) FROM INDEXES WHERE {' AND '.join(clauses)}"
        with encryption.dataset_files(local) as (target, _):      # an encrypted .db: its plain copy
            return sum(_count_in(index.db_path(p), sql, params) for p in fmt.dataset_paths(target))


def _count_in(db, sql, params):
    conn = index.connect_ro(db)
    try:
        return index.query_args(conn, db, sql, params)[0][0]
    finally:
        conn.close()
