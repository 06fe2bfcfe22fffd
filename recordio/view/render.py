"""Field values as the pages and the JSON API show them.

Every value becomes a small dict of plain JSON types (``kind`` says which): ``image`` (bytes whose
magic bytes are JPEG or PNG — nothing else is ever served as an image, an SVG payload is ``bytes``),
``bytes`` (length and a hex prefix), ``array`` (dtype, shape, the first values, a plot for 1-D numeric
arrays), ``text`` and ``number``. Templates escape every string they print.
"""

from __future__ import annotations

import math

import numpy as np

HEX_PREFIX = 32              # bytes shown as hex
ARRAY_PREFIX = 256           # array values in a table cell (its summary shows 8)
ARRAY_FULL = 10_000          # array values shown on a row's page (the rest: "... N more")
TEXT_CELL = 300              # characters of a string in a table cell
TEXT_FULL = 100_000          # characters of a string on a row's page
PLOT_POINTS = 200
IMAGE_TYPES = {b"\xff\xd8\xff": "image/jpeg", b"\x89PNG\r\n\x1a\n": "image/png"}


def image_type(data: bytes):
    """``image/jpeg`` or ``image/png`` from the magic bytes, else None (SVG, GIF, anything: None)."""
    for magic, mime in IMAGE_TYPES.items():
        if data[:len(magic)] == magic:
            return mime
    return None


def _number(value):
    if isinstance(value, np.float32):
        value = float(str(value))     # the shortest text of the float32 (0.37, not 0.3700000047683716)
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)             # JSON has no NaN/inf: shown as text
    return value


def cell(value, full=False) -> dict:
    """``value`` for a table cell (``full=False``) or a row's page (``full=True``)."""
    if isinstance(value, bytes):
        mime = image_type(value)
        shown = {"kind": "image" if mime else "bytes", "length": len(value), "hex": value[:HEX_PREFIX].hex(),
                 "more": len(value) > HEX_PREFIX}
        if mime:
            shown["mime"] = mime
        return shown
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return _array(value, full)
    if isinstance(value, str):
        limit = TEXT_FULL if full else TEXT_CELL
        return {"kind": "text", "text": value[:limit], "length": len(value), "more": len(value) > limit}
    return {"kind": "number", "value": _number(value)}


def _array(value, full):
    flat = value.reshape(-1)
    limit = ARRAY_FULL if full else ARRAY_PREFIX
    shown = {"kind": "array", "dtype": str(value.dtype), "shape": list(value.shape), "size": int(flat.size),
             "values": [_number(v) for v in (flat[:limit] if value.dtype == np.float32 else flat[:limit].tolist())],
             "more": int(max(0, flat.size - limit))}
    if value.ndim == 1 and value.dtype.kind in "iuf" and flat.size >= 2:
        shown["plot"] = plot_points(flat)
    return shown


def plot_points(flat, width=160, height=40) -> str:
    """An SVG polyline's ``points`` for a 1-D numeric array (at most PLOT_POINTS points)."""
    values = np.asarray(flat, dtype=np.float64)
    if values.size > PLOT_POINTS:
        values = values[np.linspace(0, values.size - 1, PLOT_POINTS).astype(np.int64)]
    finite = np.isfinite(values)
    if not finite.any():
        return ""
    low, high = values[finite].min(), values[finite].max()
    span = (high - low) or 1.0
    xs = np.linspace(0, width, values.size)
    ys = height - (np.where(finite, values, low) - low) / span * height
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))


def row(values: dict, full=False) -> dict:
    return {name: cell(v, full) for name, v in values.items()}


def image_field(schema, first_row) -> str | None:
    """The first bytes field of ``first_row`` that holds a JPEG or PNG (for the grid)."""
    for name, spec in schema.items():
        if spec["type"] == "bytes" and isinstance(first_row.get(name), bytes) and image_type(first_row[name]):
            return name
    return None
