"""Counting rows by indexed field values through the ``.db`` files."""

import os

from recordio import index
from recordio.description import describe

__all__ = ["count_where"]

_PARSE = {"int32": int, "int64": int, "float32": float, "float64": float, "string": str}


def count_where(path, conditions):
    """Rows whose indexed fields equal the given values; ``conditions`` = [(field, text), ...].

    Values are parsed with the field's type. This reads only the ``.db`` files; note that
    the ``.db`` of a MindSpore-written dataset holds strings cut at their first NUL.
    """
    info = describe(path)
    clauses, params = [], []
    for field, text in conditions:
        if field not in info["index_fields"]:
            raise ValueError(f"{field!r} is not an indexed field (indexed: {', '.join(info['index_fields'])})")
        kind = info["schema"][field]["type"]
        try:
            params.append(_PARSE[kind](text))
        except ValueError:
            raise ValueError(f"--where {field}={text!r}: expected a {kind} value") from None
        clauses.append(f"{index.column_name(field)} = ?")
    total = 0
    for shard in info["shards"]:
        db = index.db_path(shard["file"])
        conn = index.connect_ro(db)
        try:
            total += conn.execute(f"SELECT COUNT(*) FROM INDEXES WHERE {' AND '.join(clauses)}",
                                  params).fetchone()[0]
        finally:
            conn.close()
    return total
