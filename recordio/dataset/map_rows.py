"""A map's ops on rows, as a worker runs them: each row's ops in order under the row's keys, into its batch
slot where a batch of a fixed size follows; an op's error names the map, the op and the row.

Op ``j`` of map ``uid`` runs under ``row_scope(seed, epoch, row)`` and ``op_scope(derive_uid(uid, j))``
(see :mod:`recordio.keys`), so a row draws the same values in any worker, thread or process.
"""

import sys

from recordio.batch_slots import row_slot
from recordio.dataset.values import from_pil
from recordio.keys import derive_uid, op_scope, row_scope

__all__ = ["Numbered", "apply_keyless", "apply_ops", "note_failure", "op_name", "run_chunk"]


def op_name(op):
    return getattr(op, "__name__", type(op).__name__)


def apply_ops(ops, uid, seed, values, row, epoch, uids=None):
    """Run ``ops`` in sequence on one row's input values under the row's keys (``uids``: the ops'
    ids, ``derive_uid(uid, j)``, when the caller has them)."""
    first_row = int(row) if not hasattr(row, "__len__") else int(row[0])
    if uids is None:
        uids = [derive_uid(uid, j) for j in range(len(ops))]
    with row_scope(seed, epoch, first_row):
        for j, op in enumerate(ops):
            with op_scope(uids[j]):
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
    (they draw no randomness) run without the row's key scopes. With ``slots`` (a batch of a fixed size
    follows the map; ``chunk`` a :class:`Numbered`), each row's ops are given its batch slot
    (:mod:`recordio.batch_slots`)."""
    keyless = all(getattr(op, "uses_keys", True) is False for op in ops)
    uids = None if keyless else [derive_uid(uid, j) for j in range(len(ops))]
    if slots is not None:
        outs = []
        for k, (values, row, epoch) in enumerate(chunk):
            with row_slot(slots, epoch, chunk.start + k):
                outs.append(apply_keyless(ops, uid, values, row, epoch) if keyless
                            else apply_ops(ops, uid, seed, values, row, epoch, uids))
        return outs
    if keyless:
        if len(ops) == 1:               # apply_keyless of one op, inlined (a map per column: TypeCast)
            op, outs = ops[0], []
            for values, row, epoch in chunk:
                try:
                    out = op(*values)
                except Exception as e:
                    note_failure(e, uid, 0, op, row, epoch)
                    raise
                outs.append(out if isinstance(out, tuple) else (out,))
            return outs
        return [apply_keyless(ops, uid, values, row, epoch) for values, row, epoch in chunk]
    return [apply_ops(ops, uid, seed, values, row, epoch, uids) for values, row, epoch in chunk]


class Numbered(list):
    """A chunk of ``(input values, row, epoch)`` whose first row is the map's ``start``-th of the epoch."""

    start = 0


def apply_keyless(ops, uid, values, row, epoch):
    for j, op in enumerate(ops):
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
