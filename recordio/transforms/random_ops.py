"""RandomChoice, RandomApply and RandomOrder of ``mindspore.dataset.transforms``, on keyed randomness.

Each draws from :func:`recordio.keys.current_keys` (draw 0: which op, whether to apply, which order),
so a row gets the same choice whatever the workers, and again after a resume. Member ``i`` runs under
its own nested op id (``sub_op(i)``), as in :class:`~recordio.transforms.Compose`. An op returning a
tuple passes its items as the next op's arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from recordio.batch_slots import last_op
from recordio.errors import check_range, type_check
from recordio.keys import current_keys, sub_op

__all__ = ["RandomApply", "RandomChoice", "RandomOrder"]


def check_transforms(transforms: Sequence[Callable]) -> list[Callable]:
    """MindSpore's ``check_random_transform_ops`` on the list of ops."""
    type_check(transforms, (list,), "transforms list")
    if not transforms:
        raise ValueError("transforms list can not be empty.")
    for i, op in enumerate(transforms):
        if not callable(op):
            raise TypeError(f"transforms[{i}] is neither a transforms op (TensorOperation) nor a callable pyfunc.")
        if isinstance(op, type):
            raise ValueError(f"op_list[{i}] should be a dataset processing operation instance, but got: {op}. "
                             f"It may be missing parentheses for instantiation.")
    return list(transforms)


def _run(ops: Sequence[Callable], indices: Sequence[int], args: tuple):
    if len(indices) > 1:
        last_op(False)                  # a member's output is not the row's (only the last's may be)
    for i in indices:
        with sub_op(int(i)):
            result = ops[i](*args)
        args = result if isinstance(result, tuple) else (result,)
    return args[0] if len(args) == 1 else args


class RandomChoice:
    """Apply one op of ``transforms``, chosen uniformly per row."""

    def __init__(self, transforms: list[Callable]) -> None:
        self.transforms = check_transforms(transforms)

    def __call__(self, *args):
        choice = int(current_keys().integers(0, 0, len(self.transforms))[0])
        return _run(self.transforms, [choice], args)

    def __repr__(self):
        return f"RandomChoice({self.transforms!r})"


class RandomApply:
    """Apply all of ``transforms`` in sequence with probability ``prob``, else none of them."""

    def __init__(self, transforms: list[Callable], prob: float = 0.5) -> None:
        self.transforms = check_transforms(transforms)
        type_check(prob, (float, int), "prob")
        check_range(prob, 0, 1, "prob")
        self.prob = prob

    def __call__(self, *args):
        if not bool(current_keys().bernoulli(0, self.prob)[0]):
            return args[0] if len(args) == 1 else args
        return _run(self.transforms, range(len(self.transforms)), args)

    def __repr__(self):
        return f"RandomApply({self.transforms!r}, prob={self.prob})"


class RandomOrder:
    """Apply all of ``transforms``, in an order drawn per row."""

    def __init__(self, transforms: list[Callable]) -> None:
        self.transforms = check_transforms(transforms)

    def __call__(self, *args):
        order = current_keys().permutation(0, len(self.transforms))[0]
        return _run(self.transforms, order, args)

    def __repr__(self):
        return f"RandomOrder({self.transforms!r})"
