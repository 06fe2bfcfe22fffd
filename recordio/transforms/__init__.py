"""General transforms (MindSpore's ``dataset.transforms``): TypeCast and Compose here, the tensor ops of
:mod:`recordio.transforms.tensor_ops` and the random compositions of :mod:`recordio.transforms.random_ops`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from recordio.batch_slots import last_op
from recordio.keys import sub_op
from recordio.common.casting import INT64_RANGE, cast, to_numpy_dtype  # noqa: F401 (public here)
from recordio.transforms.random_ops import RandomApply, RandomChoice, RandomOrder
from recordio.transforms.tensor_ops import Concatenate, Fill, Mask, OneHot, PadEnd, Relational, Slice, Unique

__all__ = ["Compose", "Concatenate", "Fill", "Mask", "OneHot", "PadEnd", "RandomApply", "RandomChoice", "RandomOrder",
           "Relational", "Slice", "TypeCast", "Unique", "to_numpy_dtype"]


class TypeCast:
    """Cast to ``data_type`` (numpy dtype, torch dtype or name)."""

    uses_keys = False        # draws no randomness: the pipeline runs it without setting row keys
    elementwise = True       # a cast of stacked rows is the stack of their casts: a map of it right
    #                          before batch casts the batch's column once (map_op.ColumnMap)

    def __init__(self, data_type: Any) -> None:
        self.data_type = to_numpy_dtype(data_type)

    def __call__(self, array):
        return cast(array, self.data_type)

    def __repr__(self):
        return f"TypeCast({self.data_type.name})"


class Compose:
    """Run ops in sequence; member ``i`` draws its randomness under its own nested op id.

    An op returning a tuple passes its items as the next op's arguments. A Decode right before a
    Resize/RandomResizedCrop is fused (decoded at reduced scale), and a Normalize right before
    HWC2CHW writes channels-first directly; see ``recordio.vision.fusion``.
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        if not isinstance(transforms, (list, tuple)) or not transforms:
            raise TypeError(f"transforms must be a non-empty list of callables, got {transforms!r}")
        for i, op in enumerate(transforms):
            if not callable(op):
                raise TypeError(f"transforms[{i}] is not callable: {op!r}")
        self.transforms = list(transforms)
        self._ops = self.transforms
        if any(type(op).__module__.startswith("recordio.vision.") for op in self.transforms):
            from recordio.vision.fusion import fuse_ops
            self._ops = fuse_ops(self.transforms)

    def __call__(self, *args):
        last_op(False)                  # a member's output is not the row's (only the last's may be)
        for i, op in enumerate(self._ops):
            if getattr(op, "passes_input", False) is True:    # a slot a fused neighbour applied
                continue
            with sub_op(i):
                result = op(*args)
            args = result if isinstance(result, tuple) else (result,)
        return args[0] if len(args) == 1 else args

    def __repr__(self):
        return f"Compose({self.transforms!r})"

