"""The offload planner: which trailing ops of which column run batched on a device (pure Python).

MindSpore's rules (``node_offload_pass``), applied to the pipeline's maps from the last to the first:

* a map is considered when ``offload=True``, or when auto-offload is on and it did not say
  ``offload=False``;
* a map whose ``output_columns`` differ from its ``input_columns``, a map with several (or unnamed)
  input columns, and any map of a zipped/concatenated pipeline are not offloaded;
* of a considered map, the ops after its last unsupported op are offloaded (the map is split there);
* a map that is not fully offloaded closes its columns: earlier maps on them stay on the host.

An explicit ``offload=True`` that cannot be honoured raises :class:`PipelineError` with the reason;
under auto-offload the map stays on the host and :meth:`OffloadPlan.explain` says why.

The host maps of the plan also get fused decoding: a ``Decode`` followed by ``Resize`` or
``RandomResizedCrop`` in the same map is deferred into that op, which decodes at reduced scale when
it can (op indices, hence op ids and draws, are unchanged).
"""

import dataclasses

from recordio.errors import PipelineError
from recordio.keys import derive_uid

__all__ = ["OFFLOADABLE", "MapSpec", "OffloadPlan", "is_offloadable", "plan_offload"]

OFFLOADABLE = frozenset({"HWC2CHW", "Normalize", "RandomColorAdjust", "RandomHorizontalFlip",
                         "RandomSharpness", "RandomVerticalFlip", "Rescale", "TypeCast"})


@dataclasses.dataclass
class MapSpec:
    """One ``map`` of the pipeline as the planner sees it; ``uid`` keys its ops' randomness."""
    uid: int
    operations: list
    input_columns: list | None
    output_columns: list | None
    offload: bool | None


@dataclasses.dataclass
class Decision:
    """What the planner did with one map (one row of :meth:`OffloadPlan.explain`)."""
    map: MapSpec
    host_ops: list
    offloaded_ops: list
    reason: str


def op_name(op):
    return type(op).__name__


def is_offloadable(op):
    """One of recordio's eight ops that have a batched device version."""
    return op_name(op) in OFFLOADABLE and type(op).__module__.startswith("recordio.")


def _names(ops):
    return ", ".join(op_name(op) for op in ops) or "-"


def _columns_of(spec):
    return [*(spec.input_columns or []), *(spec.output_columns or [])]


class OffloadPlan:
    """Maps left on the host, and per column the ops (with their op ids) to run after ``batch()``."""

    def __init__(self, host_maps, tail, decisions, auto_offload):
        self.host_maps = host_maps
        self.tail = tail
        self.decisions = decisions
        self.auto_offload = auto_offload

    def __bool__(self):
        return bool(self.tail)

    def explain(self):
        """A table: map, column, host ops, offloaded ops, and why."""
        rows = [("map", "column", "host ops", "offloaded ops", "reason")]
        for d in self.decisions:
            column = ", ".join(d.map.input_columns or ["<first column>"])
            rows.append((str(d.map.uid), column, _names(d.host_ops), _names(d.offloaded_ops), d.reason))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"Offload plan (auto_offload={self.auto_offload}): "
                 f"{sum(len(v) for v in self.tail.values())} op(s) offloaded"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows]
        return "\n".join(lines)

    __str__ = explain

    def warn_on_cpu(self, stacklevel=1):
        """A one-time slow-path warning (:func:`recordio.compiled.slow_path`) that the tail runs on the CPU,
        where no device was given for it: the same values as the ops in the map, many times slower.
        ``stacklevel`` as ``warnings.warn``'s, from the caller of this method (1: that caller's line)."""
        if not self.tail:
            return
        from recordio import compiled
        ops = dict.fromkeys(type(op).__name__ for entries in self.tail.values() for _, op in entries)
        compiled.slow_path(
            "offload-on-cpu",
            f"the ops that map(..., offload=True) moved after batch() ({', '.join(ops)}) run as batched torch ops "
            f"on the CPU, because no device was given to run them on",
            "on a CPU they give the same values many times slower than the same ops in the map "
            "(tools/bench_vision.py: the offloaded tail on the CPU at under a tenth of the host path's images/s)",
            "Without a GPU, leave them in the map: map(..., offload=False) (or config.set_auto_offload(False)); "
            "with one, give the device: create_dict_iterator(device='cuda'), DataSink(dataset, device='cuda'), "
            "train(..., device='cuda'), or run dataset.offload_module() in your model. An explicit device='cpu' "
            "runs them on the CPU without this warning", stacklevel=stacklevel + 2)

    def __repr__(self):
        return f"OffloadPlan(tail={{{', '.join(f'{c!r}: [{_names(o for _, o in v)}]' for c, v in self.tail.items())}}})"


def _refusal(spec, closed, zip_or_concat):
    """Why this map cannot be offloaded at all (None when it can)."""
    if zip_or_concat:
        return "offload does not support zipped or concatenated datasets"
    if not spec.input_columns:
        return "the map names no input_columns (name the column to offload)"
    if len(spec.input_columns) != 1:
        return f"the map has {len(spec.input_columns)} input columns; offload needs exactly one"
    if spec.output_columns is not None and list(spec.output_columns) != list(spec.input_columns):
        return f"output_columns {list(spec.output_columns)} differ from input_columns {list(spec.input_columns)}"
    if spec.input_columns[0] in closed:
        return f"a later map on column {spec.input_columns[0]!r} runs on the host"
    ops = list(spec.operations)
    if ops and not is_offloadable(ops[-1]):
        return f"its last op {op_name(ops[-1])} has no device version"
    return None


def _split(spec):
    """Index after the last op without a device version."""
    ops = list(spec.operations)
    return max((j + 1 for j, op in enumerate(ops) if not is_offloadable(op)), default=0)


def _decide(spec, closed, auto_offload, zip_or_concat):
    requested = spec.offload is True or (auto_offload and spec.offload is not False)
    ops = list(spec.operations)
    if not requested:
        why = "offload=False" if spec.offload is False else "offload not requested"
        return Decision(spec, ops, [], why)
    refusal = _refusal(spec, closed, zip_or_concat)
    if refusal is not None:
        if spec.offload is True:
            raise PipelineError(f"map #{spec.uid} on {spec.input_columns}: offload=True cannot be honoured: "
                                f"{refusal}")
        return Decision(spec, ops, [], f"kept on host: {refusal}")
    cut = _split(spec)
    why = "offload=True" if spec.offload is True else "auto_offload"
    if cut:
        why += f"; split after {op_name(ops[cut - 1])} (no device version)"
    return Decision(spec, ops[:cut], ops[cut:], why)


def plan_offload(maps, *, auto_offload, zip_or_concat):
    """Plan the offload of ``maps`` (pipeline order, source first)."""
    closed = set()
    decisions = []
    for spec in reversed(list(maps)):
        decision = _decide(spec, closed, auto_offload, zip_or_concat)
        decisions.append(decision)
        if decision.host_ops:
            closed = _AllColumns() if not spec.input_columns else closed | set(_columns_of(spec))
    decisions.reverse()
    return _build(decisions, auto_offload)


class _AllColumns(frozenset):
    """Every column is closed (a map without input_columns may touch any)."""

    def __contains__(self, item):
        return True

    def __or__(self, other):
        return self


def _fuse_host(ops):
    """Host ops with adjacent recordio vision ops fused (``recordio.vision.fusion``: a Decode deferred
    into the crop/resize after it, a Normalize writing channels-first for the HWC2CHW after it).

    Only looked up when a recordio vision op is present, so the planner itself never imports OpenCV.
    """
    if not any(type(op).__module__.startswith("recordio.vision.") for op in ops):
        return ops
    from recordio.vision.fusion import fuse_ops
    return fuse_ops(ops)


def _build(decisions, auto_offload):
    host_maps, tail = [], {}
    for d in decisions:
        if d.host_ops:
            ops = _fuse_host(d.host_ops)
            same = not d.offloaded_ops and all(a is b for a, b in zip(ops, d.map.operations))
            host_maps.append(d.map if same else dataclasses.replace(d.map, operations=ops))
        if d.offloaded_ops:
            first = len(d.host_ops)
            entries = tail.setdefault(d.map.input_columns[0], [])
            entries += [(derive_uid(d.map.uid, first + k), op) for k, op in enumerate(d.offloaded_ops)]
    return OffloadPlan(host_maps, tail, decisions, auto_offload)
