"""``recordio head --grid out.png``: a contact sheet of a dataset's first images, with their labels.

Each cell is one row: its image (an encoded JPEG/PNG ``bytes`` field, or an ``<H,W>`` / ``<H,W,C>``
array field) fitted into a ``CELL`` x ``CELL`` square on a white background, and under it the row
number and the label (with its class name when the dataset's description holds a label map, as
``recordio convert`` writes). An image that cannot be decoded gets a grey cell marked ``?``.
"""

import json
import math

import numpy as np

import recordio
from recordio.errors import SchemaError
from recordio.extras import requires

CELL = 128          # thumbnail side in pixels
CAPTION = 20        # caption strip under each thumbnail
MARGIN = 4          # white space around each cell
BACKGROUND = 255
UNDECODABLE = 160   # grey of a cell whose image cannot be decoded


def class_names(path, label_column):
    """``{label id: class name}`` from the dataset's description, or ``{}``."""
    try:
        desc = json.loads(recordio.describe(path)["desc"] or "{}")
    except ValueError:
        return {}
    if not isinstance(desc, dict):
        return {}
    if isinstance(desc.get("label_map"), dict):
        return {int(v): str(k) for k, v in desc["label_map"].items()}
    names = (desc.get("label_names") or {}).get(label_column)
    return dict(enumerate(map(str, names))) if isinstance(names, list) else {}


def to_rgb(value):
    """An RGB uint8 image from encoded bytes or a pixel array; None when it is neither."""
    with requires("recordio head --grid", "vision"):
        import cv2

    if isinstance(value, (bytes, bytearray)):
        bgr = cv2.imdecode(np.frombuffer(value, np.uint8), cv2.IMREAD_COLOR)
        return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    array = np.asarray(value)
    if array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3)):
        array = np.clip(array, 0, 255).astype(np.uint8)
        return np.repeat(array.reshape(*array.shape[:2], 1), 3, axis=2) if array.ndim == 2 or \
            array.shape[2] == 1 else array
    return None


def thumbnail(image):
    """``image`` scaled (aspect kept) and centred in a ``CELL`` x ``CELL`` square."""
    with requires("recordio head --grid", "vision"):
        import cv2

    cell = np.full((CELL, CELL, 3), BACKGROUND if image is not None else UNDECODABLE, np.uint8)
    if image is None:
        cv2.putText(cell, "?", (CELL // 2 - 12, CELL // 2 + 12), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (0, 0, 0), 2)
        return cell
    h, w = image.shape[:2]
    scale = CELL / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    small = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    y, x = (CELL - nh) // 2, (CELL - nw) // 2
    cell[y:y + nh, x:x + nw] = small
    return cell


def caption(i, row, label_column, names):
    if label_column not in row:
        return f"#{i}"
    label = row[label_column]
    label = label.item() if hasattr(label, "item") else label
    name = names.get(label) if isinstance(label, (int, np.integer)) else None
    return f"#{i} {label}" + (f" {name}" if name else "")


def draw_cell(sheet, k, columns, image, text):
    with requires("recordio head --grid", "vision"):
        import cv2

    top = (k // columns) * (CELL + CAPTION + 2 * MARGIN) + MARGIN
    left = (k % columns) * (CELL + 2 * MARGIN) + MARGIN
    sheet[top:top + CELL, left:left + CELL] = thumbnail(image)
    cv2.putText(sheet, text[:20], (left + 2, top + CELL + CAPTION - 6), cv2.FONT_HERSHEY_SIMPLEX,
                0.4, (0, 0, 0), 1, cv2.LINE_AA)


def sheet_shape(count):
    """``(height, width, columns)`` of the sheet for ``count`` cells: as square as possible."""
    columns = max(1, math.ceil(math.sqrt(count)))
    rows = max(1, math.ceil(count / columns))
    return rows * (CELL + CAPTION + 2 * MARGIN), columns * (CELL + 2 * MARGIN), columns


def read_rows(path, n, image_column, label_column):
    with recordio.FileReader(path) as reader:
        schema = reader.schema
        if image_column not in schema:
            raise SchemaError(f"{path}: no field {image_column!r} for the grid's images "
                              f"(fields: {', '.join(schema)}); choose one with --image-column")
        columns = [c for c in (image_column, label_column) if c in schema]
        return [{c: row[c] for c in columns} for row in reader[:n]]


def draw_sheet(rows, png, image_column="image", label_column="label", names=None):
    """Write the contact sheet of ``rows`` (dicts from a :class:`recordio.FileReader`) to ``png``.

    ``names``: ``{label: class name}`` for the captions (see :func:`class_names`).
    """
    with requires("recordio head --grid", "vision"):
        import cv2

    if not rows:
        raise ValueError("the grid needs at least one image, got no rows")
    height, width, columns = sheet_shape(len(rows))
    sheet = np.full((height, width, 3), BACKGROUND, np.uint8)
    for i, row in enumerate(rows):
        draw_cell(sheet, i, columns, to_rgb(row[image_column]), caption(i, row, label_column, names or {}))
    if not cv2.imwrite(png, cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR)):
        raise OSError(f"could not write the PNG file {png}")
    return len(rows)


def write_grid(path, png, n, image_column="image", label_column="label"):
    """Write a contact sheet of the first ``n`` rows of the dataset ``path`` to the PNG file ``png``."""
    if n < 1:
        raise ValueError(f"the grid needs at least one image, got n={n}")
    rows = read_rows(path, n, image_column, label_column)
    return draw_sheet(rows, png, image_column, label_column, class_names(path, label_column))
