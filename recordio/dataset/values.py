"""How values look at each point of the pipeline (SPEC §2).

* ops receive numpy values, as MindSpore's Python ops do: ``bytes`` as a 1-D ``uint8`` array,
  ``str`` as a 0-d ``str`` array, scalars as 0-d arrays;
* ``batch`` stacks a column when every value is a numeric array of the same shape (bytes of one
  length as an ``(n, L)`` uint8 array), and leaves it a list otherwise (bytes or ``-1`` arrays of
  unequal lengths, strings), unless ``pad_info`` pads it;
* iterators give numpy values (``output_numpy=True``) or torch tensors with strings left as ``str``.
"""

import operator
from typing import Any
import sys

import numpy as np

from recordio.batch_slots import block_of
from recordio.config import get_bytes_form
from recordio.extras import requires
from recordio.mindrecord.read.columns import RowViews, bytes_views
from recordio.common.casting import cast

__all__ = ["collate", "to_numpy", "to_op_input", "to_torch"]


def from_pil(value):
    """A PIL image (MindSpore's Python vision path) as the numpy array a map outputs; else ``value``."""
    image = sys.modules.get("PIL.Image")          # only set when an op imported Pillow
    return np.asarray(value) if image is not None and isinstance(value, image.Image) else value


def to_op_input(value):
    """A source value as a Python op receives it."""
    if isinstance(value, (np.ndarray, list)):    # a list: a batched column that could not be stacked
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    return np.asarray(value)


def to_numpy(value):
    """A value as ``output_numpy=True`` gives it; lists (unstacked batch columns) stay lists, except
    bytes under ``config.set_bytes_form("mindspore")``: one ``S<n>`` array, as MindSpore gives."""
    if get_bytes_form() == "mindspore":
        if type(value) is bytes:
            return np.array([value])
        if isinstance(value, list) and value and all(type(v) is bytes for v in value):
            return np.array(value)
    if isinstance(value, list):
        if _one_type(value) is np.ndarray:
            return value
        if len(value) > 1 and all(type(v) is bytes for v in value):
            return bytes_views(value)
        return [np.frombuffer(v, np.uint8) if type(v) is bytes else to_op_input(v) for v in value]
    return to_op_input(value)


def _equal(sizes):
    return all(n == sizes[0] for n in sizes)


def _one_type(values):
    """The type of every value when they all have the same one, else None."""
    kinds = set(map(type, values))
    return kinds.pop() if len(kinds) == 1 else None


def _same_scalar_type(values):
    """All numpy scalars of one type (hence one dtype and shape ``()``): the common case of labels."""
    kind = _one_type(values)
    return kind is not None and issubclass(kind, np.generic) and kind is not np.str_ and kind is not np.bytes_


def _stackable(values):
    first = values[0]
    if not isinstance(first, (np.ndarray, np.generic)) or first.dtype.kind not in "biuf?c":
        return False
    shape, dtype, kinds = first.shape, first.dtype, (np.ndarray, np.generic)
    for v in values:
        if not isinstance(v, kinds) or v.shape != shape or v.dtype != dtype:
            return False
    return True


def collate(values):
    """One column of a batch: a stacked array, or a list when the values cannot be stacked (``bytes``
    as 1-D ``uint8`` arrays, views of one copy, as ops see them; ``bytes`` themselves under
    ``config.set_bytes_form("mindspore")``, which outputs them as one ``S<n>`` array)."""
    if values and type(values[0]) is bytes and _one_type(values) is bytes and get_bytes_form() != "mindspore":
        rows = bytes_views(values)
        return rows.buffer.reshape(len(values), -1) if _equal(rows.sizes) else rows
    if values and _same_scalar_type(values):
        return np.array(values, dtype=values[0].dtype)
    if values and _stackable(values):
        if not values[0].shape:
            return np.array(values, dtype=values[0].dtype)
        block = block_of(values)            # the rows were written into one batch block: it is the batch
        return block if block is not None else np.stack(values)
    return list(values)


def pad_column(name, values, shape, pad_value):
    """Pad numeric arrays to ``shape`` (``None`` or ``None`` entries: the batch's largest) and stack."""
    arrays = [to_op_input(v) for v in values]
    ndim = arrays[0].ndim
    if any(a.ndim != ndim for a in arrays):
        raise ValueError(f"pad_info: column {name!r} mixes arrays of {ndim} and other numbers of dimensions")
    largest = np.max([a.shape for a in arrays], axis=0) if ndim else ()
    target = [int(m) if shape is None or shape[i] is None else int(shape[i])
              for i, m in enumerate(largest)] if ndim else []
    dtype = arrays[0].dtype
    if dtype.kind in "US":                      # the widest string, so that none is cut
        dtype = np.result_type(*[a.dtype for a in arrays])
    out = np.full((len(arrays), *target), _pad_fill(pad_value, dtype), dtype=dtype)
    for i, a in enumerate(arrays):
        if any(s > t for s, t in zip(a.shape, target)):
            raise ValueError(f"pad_info: column {name!r} row of shape {a.shape} is larger than the pad "
                             f"shape {tuple(target)}")
        out[(i,) + tuple(slice(0, s) for s in a.shape)] = a
    return out


def _pad_fill(pad_value, dtype):
    """The pad value as an element of ``dtype``: numbers cast C-style (-1 pads 255 in uint8, as in
    MindSpore), text as given ("" by default)."""
    if dtype.kind in "US":
        return "" if pad_value is None or pad_value == 0 else pad_value
    return cast(np.asarray(0 if pad_value is None else pad_value), dtype)[()]


def _bytes_tensors(values, torch):
    """A batch's ``bytes`` values as 1-D uint8 tensors: views of one tensor, so that moving the batch
    between processes shares one storage instead of one per value."""
    whole = torch.from_numpy(np.frombuffer(bytearray().join(values), dtype=np.uint8))
    return TensorRows.of(whole, [len(v) for v in values])


class TensorRows(list):
    """A list of 1-D tensors that are consecutive views of one 1-D tensor ``buffer`` (the torch form
    of :class:`~recordio.mindrecord.read.columns.RowViews`): a plain list to its users; pickling it (a
    DataLoader worker's batch) sends the buffer once, not a storage per value."""

    __slots__ = ("buffer", "sizes", "items")
    buffer: Any
    sizes: list
    items: tuple

    @classmethod
    def of(cls, buffer, sizes):
        rows = cls(buffer.split(sizes))
        rows.buffer, rows.sizes, rows.items = buffer, sizes, tuple(rows)
        return rows

    def intact(self) -> bool:
        """Whether the list still holds the views it was made with (so ``buffer`` is its content)."""
        return len(self) == len(self.items) and all(map(operator.is_, self, self.items))

    def __copy__(self):
        rows = TensorRows(self)
        rows.buffer, rows.sizes, rows.items = self.buffer, self.sizes, self.items
        return rows

    def __reduce__(self):
        if self.intact():
            return TensorRows.of, (self.buffer, self.sizes)
        return list, (list(self),)


#: the feature a missing torch names (MissingExtraError) where an iterator converts to tensors
TORCH_OUTPUT = ("the iterators' default torch tensors (create_dict_iterator / create_tuple_iterator; pass "
                "output_numpy=True for numpy arrays instead)")


def to_torch(value):
    """A numpy value (or list of them) as a torch tensor; strings stay ``str``."""
    with requires(TORCH_OUTPUT):
        import torch

    if isinstance(value, list):
        if type(value) is TensorRows:
            return value
        if type(value) is RowViews and value.buffer.flags.writeable:
            return TensorRows.of(torch.from_numpy(value.buffer), value.sizes)
        if value and all(type(v) is bytes for v in value):
            return _bytes_tensors(value, torch)
        return [to_torch(v) for v in value]
    if isinstance(value, str):
        return value
    arr = to_op_input(value)
    if arr.dtype.kind in "US":
        return arr.item() if arr.ndim == 0 else arr.tolist()
    if arr.dtype.kind == "O":
        return value
    if not arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.array(arr, order="C")         # (np.ascontiguousarray would make a 0-d value 1-d)
    return torch.from_numpy(arr)
