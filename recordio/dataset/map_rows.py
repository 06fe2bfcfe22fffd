"""A map's ops on rows, as a worker runs them: each row's ops in order under the row's keys, into its batch
slot where a batch of a fixed size follows; an op's error names the map, the op and the row.

Op ``j`` of map ``uid`` runs under ``row_scope(seed, epoch, row)`` and ``op_scope(derive_uid(uid, j))``
(see :mod:`recordio.keys`), so a row draws the same values in any worker, thread or process.
"""

import sys

from recordio.batch_slots import last_op, row_slot
from recordio.dataset.values import from_pil
from recordio.keys import derive_uid, op_scope, row_scope

__all__ = ["Numbered", "apply_keyless", "apply_ops", "live_ops", "note_failure", "op_name", "run_chunk"]


def op_name(op):
    return getattr(op, "__name__", type(op).__name__)


def live_ops(ops, uid, keyed=True):
    """``[(j, op, op id)]`` of the ops a row runs: an op's index in the map, the op, and its id
    ``derive_uid(uid, j)`` (None unless ``keyed``). A slot that declares ``passes_input = True`` (an op
    that a fused neighbour applied: it returns its input and draws nothing) is left out, so a row pays no
    call or key scope for it; every other op keeps its index, hence its id and its draws."""
    return [(j, op, derive_uid(uid, j) if keyed else None) for j, op in enumerate(ops)
            if getattr(op, "passes_input", False) is not True]


def apply_ops(steps, uid, seed, values, row, epoch, last=-1):
    """Run ``steps`` (:func:`live_ops`) in sequence on one row's input values under the row's keys;
    before the op of index ``last`` (the row's last, where it writes into a batch slot), :func:`last_op`."""
    first_row = int(row) if not hasattr(row, "__len__") else int(row[0])
    with row_scope(seed, epoch, first_row):
        for j, op, op_uid in steps:
            if j == last:
                last_op()
            with op_scope(op_uid):
                try:
                    out = op(*values)
                except Exception as e:
                    e.add_note(f"recordio: in map #{uid}, operation {j} ({op_name(op)}), row {first_row}, "
                               f"epoch {epoch}")
                    e.recordio_row = first_row
                    raise
            values = out if isinstance(out, tuple) else (out,)
    if "PIL.Image" in sys.modules:               # PIL images (MindSpore's Python vision path) as arrays
        return tuple(map(from_pil, values))
    return values


def run_chunk(ops, uid, seed, chunk, slots=None):
    """A worker's job: a list of ``(input values, row, epoch)``. Ops that declare ``uses_keys = False``
    (they draw no randomness) run without the row's key scopes; slots that pass their input on are
    skipped (:func:`live_ops`). With ``slots`` (a batch of a fixed size follows the map; ``chunk`` a
    :class:`Numbered`), each row's ops are given its batch slot (:mod:`recordio.batch_slots`), the last
    live op marked as such."""
    steps = live_ops(ops, uid, keyed=False)
    keyless = all(getattr(op, "uses_keys", True) is False for _, op, _ in steps)
    if not keyless:
        steps = live_ops(ops, uid)
    if slots is not None:
        outs, last = [], steps[-1][0] if steps else -1
        for k, (values, row, epoch) in enumerate(chunk):
            with row_slot(slots, epoch, chunk.start + k):
                outs.append(apply_keyless(steps, uid, values, row, epoch, last) if keyless
                            else apply_ops(steps, uid, seed, values, row, epoch, last))
        return outs
    if keyless:
        if len(steps) == 1:             # apply_keyless of one op, inlined (a map per column: TypeCast)
            j, op, _ = steps[0]
            outs = []
            for values, row, epoch in chunk:
                try:
                    out = op(*values)
                except Exception as e:
                    note_failure(e, uid, j, op, row, epoch)
                    raise
                outs.append(out if isinstance(out, tuple) else (out,))
            return outs
        return [apply_keyless(steps, uid, values, row, epoch) for values, row, epoch in chunk]
    return [apply_ops(steps, uid, seed, values, row, epoch) for values, row, epoch in chunk]


class Numbered(list):
    """A chunk of ``(input values, row, epoch)`` whose first row is the map's ``start``-th of the epoch."""

    start = 0


def apply_keyless(steps, uid, values, row, epoch, last=-1):
    for j, op, _ in steps:
        if j == last:
            last_op()
        try:
            out = op(*values)
        except Exception as e:
            note_failure(e, uid, j, op, row, epoch)
            raise
        values = out if isinstance(out, tuple) else (out,)
    return values


def note_failure(e, uid, j, op, row, epoch):
    """Where ``e`` was raised: map ``uid``'s operation ``j`` on ``row`` of ``epoch``."""
    first_row = int(row) if not hasattr(row, "__len__") else int(row[0])
    e.add_note(f"recordio: in map #{uid}, operation {j} ({op_name(op)}), row {first_row}, epoch {epoch}")
    e.recordio_row = first_row
