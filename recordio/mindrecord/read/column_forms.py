"""The forms a batch's columns take (:func:`~recordio.mindrecord.read.columns.read_columns`): ``bytes``
values of differing lengths as a :class:`BytesColumn` (one buffer and offsets) or a :class:`RowViews`
list, the same columns built from row-wise values (:func:`column_of_values`, what the row-wise
decoder's batch becomes), an empty batch's columns, and a batch back as rows (:func:`rows_of`)."""

from __future__ import annotations

import numpy as np

__all__ = ["BytesColumn", "RowViews", "bytes_views", "column_of_values", "empty_column", "rows_of"]


class BytesColumn:
    """Variable-length ``bytes`` values of a batch: one ``buffer`` (``uint8`` array) and ``offsets``
    (``n + 1`` int64; value ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``)."""

    __slots__ = ("buffer", "offsets")

    def __init__(self, buffer, offsets):
        self.buffer, self.offsets = buffer, offsets

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):                     # the values of a run of rows: no copy
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("a BytesColumn is sliced by runs of rows (step 1)")
            return BytesColumn(self.buffer, self.offsets[start:max(start, stop) + 1])
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.buffer[a:b].tobytes()

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def tolist(self) -> list[bytes]:
        """The values as ``bytes`` objects (copies)."""
        data = self.buffer.tobytes()
        bounds = self.offsets.tolist()
        return [data[a:b] for a, b in zip(bounds, bounds[1:])]

    def memoryviews(self) -> list[memoryview]:
        """The values as ``memoryview`` objects of :attr:`buffer` (no copy)."""
        view = memoryview(self.buffer)
        bounds = self.offsets.tolist()
        return [view[a:b] for a, b in zip(bounds, bounds[1:])]

    def __eq__(self, other):
        if isinstance(other, BytesColumn):
            other = other.tolist()
        return isinstance(other, list) and self.tolist() == other

    def __repr__(self):
        return f"BytesColumn({len(self)} values, {self.buffer.size} bytes)"


def rows_of(columns: dict, n: int) -> list[dict]:
    """The ``n`` rows of a batch of columns (``read_columns`` with ``bytes_form="list"``) as the row-wise
    read gives them: a dict a row, scalars as numpy scalars, bytes as ``bytes``, strings as ``str``,
    arrays as arrays of their own (a copy each: a row kept, e.g. in a shuffle buffer, does not keep
    its whole batch's arrays alive)."""
    names = list(columns)
    if not names:
        return [{} for _ in range(n)]
    values = []
    for column in columns.values():
        if isinstance(column, np.ndarray):
            values.append(list(column) if column.ndim == 1 else [v.copy() for v in column])
        elif isinstance(column, BytesColumn):
            values.append(column.tolist())
        else:                                    # a list: bytes, strings, arrays of differing shapes
            values.append([v.copy() if isinstance(v, np.ndarray) else v for v in column])
    return [dict(zip(names, row)) for row in zip(*values)]

class RowViews(list):
    """A list of 1-D arrays that are consecutive views of one 1-D ``buffer``, value ``i`` holding
    ``sizes[i]`` elements: a batch's ``bytes`` values. It is a plain list to its users; code that
    moves a batch moves the buffer once (pickling it sends the buffer and the sizes)."""

    __slots__ = ("buffer", "sizes")
    buffer: np.ndarray
    sizes: list[int]

    @classmethod
    def of(cls, buffer: np.ndarray, sizes: list[int]) -> RowViews:
        if sizes and all(n == sizes[0] for n in sizes):
            rows = cls(buffer.reshape(len(sizes), sizes[0]))
        else:
            bounds = np.cumsum([0] + sizes).tolist()
            rows = cls(buffer[a:b] for a, b in zip(bounds, bounds[1:]))
        rows.buffer, rows.sizes = buffer, sizes
        return rows

    def __reduce__(self):
        return RowViews.of, (self.buffer, self.sizes)

    def __copy__(self):
        return RowViews.of(self.buffer, self.sizes)


def bytes_views(values) -> RowViews:
    """``bytes`` values as writable 1-D ``uint8`` arrays: views of one copy of them all."""
    return RowViews.of(np.frombuffer(bytearray().join(values), dtype=np.uint8), [len(v) for v in values])

def column_of_values(field, values, bytes_form):
    """A column from row-wise values, in the form the fast path gives."""
    if field.shape is None and field.type == "bytes":
        if bytes_form == "list":
            return values
        if bytes_form == "arrays":
            return bytes_views(values)
        if len({len(v) for v in values}) == 1:
            return np.frombuffer(b"".join(values), np.uint8).reshape(len(values), len(values[0]))
        sizes = np.array([len(v) for v in values], dtype=np.int64)
        return BytesColumn(np.frombuffer(b"".join(values), np.uint8),
                           np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    if field.type == "string":
        return values
    if field.shape is None:
        return np.array(values, dtype=field.dtype)
    if len({v.shape for v in values}) == 1:
        return np.stack(values)
    return values


def empty_column(field, bytes_form):
    if field.type == "string" or (field.type == "bytes" and bytes_form in ("list", "arrays")):
        return []
    if field.type == "bytes":
        return np.zeros((0, 0), np.uint8)
    if field.shape is None:
        return np.zeros(0, field.dtype)
    if -1 in field.shape:
        return []
    return np.zeros((0, *field.shape), field.dtype)
