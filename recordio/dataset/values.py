"""How values look at each point of the pipeline (SPEC §2).

* ops receive numpy values, as MindSpore's Python ops do: ``bytes`` as a 1-D ``uint8`` array,
  ``str`` as a 0-d ``str`` array, scalars as 0-d arrays;
* ``batch`` stacks a column when every value is a numeric array of the same shape, and leaves it
  a list otherwise (bytes, strings, ``-1`` shapes), unless ``pad_info`` pads it;
* iterators give numpy values (``output_numpy=True``) or torch tensors with strings left as ``str``.
"""

import sys

import numpy as np

from recordio.config import get_bytes_form
from recordio.transforms.casting import cast

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
        if len(value) > 1 and all(type(v) is bytes for v in value):
            return _bytes_arrays(value)
        return [np.frombuffer(v, np.uint8) if type(v) is bytes else to_op_input(v) for v in value]
    return to_op_input(value)


def _bytes_arrays(values):
    """A batch's ``bytes`` as read-only 1-D ``uint8`` arrays: views of one copy of them all."""
    whole = np.frombuffer(b"".join(values), dtype=np.uint8)
    size = len(values[0])
    if all(len(v) == size for v in values):
        return list(whole.reshape(len(values), size))
    bounds = np.cumsum([0] + [len(v) for v in values]).tolist()
    return [whole[a:b] for a, b in zip(bounds, bounds[1:])]


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
    """One column of a batch: a stacked array, or a list when the values cannot be stacked."""
    if values and _same_scalar_type(values):
        return np.array(values, dtype=values[0].dtype)
    if values and _stackable(values):
        if not values[0].shape:
            return np.array(values, dtype=values[0].dtype)
        return np.stack(values)
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
    whole = torch.from_numpy(np.frombuffer(b"".join(values), dtype=np.uint8).copy())
    return list(torch.split(whole, [len(v) for v in values]))


def to_torch(value):
    """A numpy value (or list of them) as a torch tensor; strings stay ``str``."""
    import torch

    if isinstance(value, list):
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
