"""Filters on indexed fields: ``FIELD=VALUE`` (as ``recordio count --where``), ``FIELD!=VALUE``,
ranges (``FIELD<VALUE``, ``<=``, ``>``, ``>=``) and ``FIELD in V1,V2,...`` (or a JSON list), ANDed.

A condition is text so that it travels in a URL (``?where=label>=3&where=split in train,val``); each
value is parsed as its field's schema type, exactly as ``recordio count --where`` parses it, and goes
to SQLite as a bound parameter.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from recordio.view.db import column

MAX_CONDITIONS = 16
MAX_IN = 1000
_OPS = ("<=", ">=", "!=", "=", "<", ">")
_CONDITION = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(<=|>=|!=|=|<|>)(.*)$", re.S)
_IN = re.compile(r"^\s*([A-Za-z0-9_]+)\s+in\s+(.*)$", re.S | re.I)
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


class Condition(NamedTuple):
    field: str
    op: str              # one of _OPS, or "in"
    values: tuple

    @property
    def text(self) -> str:
        """The condition as it is written in a URL."""
        shown = [_show(v) for v in self.values]
        if self.op == "in":
            plain = all("," not in s and s.strip() == s and s for s in shown)
            return f"{self.field} in " + (",".join(shown) if plain else json.dumps(list(self.values)))
        return f"{self.field}{self.op}{shown[0]}"

    def sql(self) -> tuple[str, list]:
        if self.op == "in":
            return f"{column(self.field)} IN ({','.join('?' * len(self.values))})", list(self.values)
        return f"{column(self.field)} {self.op} ?", [self.values[0]]


def _show(value):
    return repr(value) if isinstance(value, float) else str(value)


def parse_value(field, kind, text):
    """``text`` as a value of the schema type ``kind`` (as ``recordio count --where`` parses it)."""
    try:
        value = {"int32": int, "int64": int, "float32": float, "float64": float, "string": str}[kind](text)
        low, high = _INT_RANGE.get(kind, (value, value))
        if not low <= value <= high:
            raise ValueError
        if kind == "string":
            value.encode("utf-8")
    except (ValueError, UnicodeError, KeyError):
        raise ValueError(f"where {field}={text[:80]!r}: expected a {kind} value") from None
    return value


def parse(text, schema, index_fields) -> Condition:
    """One condition from its text; ``ValueError`` names what is wrong."""
    found = _IN.match(text)
    if found:
        field, rest = found.groups()
        op, texts = "in", _in_values(text, rest)
    else:
        found = _CONDITION.match(text)
        if not found:
            raise ValueError(f"where {text[:80]!r}: expected FIELD=VALUE, FIELD<VALUE (<=, >, >=, !=) "
                             f"or FIELD in V1,V2,...")
        field, op, value = found.groups()
        texts = [value]
    if field not in index_fields:
        raise ValueError(f"where {text[:80]!r}: {field!r} is not an indexed field "
                         f"(indexed: {', '.join(index_fields) or 'none'})")
    kind = schema[field]["type"]             # strings compare in SQLite's text order
    return Condition(field, op, tuple(parse_value(field, kind, t) for t in texts))


def _in_values(text, rest):
    rest = rest.strip()
    if rest.startswith("["):
        try:
            values = json.loads(rest)
        except json.JSONDecodeError:
            raise ValueError(f"where {text[:80]!r}: the list after 'in' is not valid JSON") from None
        if not isinstance(values, list) or not all(isinstance(v, (str, int, float)) for v in values):
            raise ValueError(f"where {text[:80]!r}: the list after 'in' holds other than numbers and strings")
        values = [str(v) for v in values]
    else:
        values = [v.strip() for v in rest.split(",")]
    if not values or len(values) > MAX_IN:
        raise ValueError(f"where {text[:80]!r}: 'in' takes 1 to {MAX_IN} values, got {len(values)}")
    return values


def parse_all(texts, schema, index_fields) -> list[Condition]:
    texts = [t for t in texts if t.strip()]
    if len(texts) > MAX_CONDITIONS:
        raise ValueError(f"at most {MAX_CONDITIONS} conditions, got {len(texts)}")
    return [parse(t, schema, index_fields) for t in texts]


def where_sql(conditions) -> tuple[str, list]:
    """The ANDed WHERE clause (``1`` when there is none) and its parameters."""
    parts = [c.sql() for c in conditions]
    return " AND ".join(p for p, _ in parts) or "1", [v for _, vs in parts for v in vs]
