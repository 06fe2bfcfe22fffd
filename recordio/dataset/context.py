"""What one run of a pipeline shares: the plan (map ids, offload split), the seed, the shard
split imposed from outside (DataLoader workers), the resume point and the worker pools.

Map ids: the maps of a pipeline are numbered 0, 1, 2, ... in definition order (sources first,
children before parents). Op ``j`` of map ``m`` draws its randomness under
``op_scope(derive_uid(m, j))``; the numbering only depends on how the pipeline is written.
"""

import dataclasses
import sys

from recordio import config
from recordio.batch_slots import BatchSlots
from recordio.dataset.callback import MapHooks
from recordio.dataset.workers import make_runner

__all__ = ["Plan", "RunContext", "build_plan", "torch_world"]


@dataclasses.dataclass
class Plan:
    map_uids: dict        # id(map node) -> map uid
    node_uids: dict       # id(node) -> position of the node in the pipeline
    host: dict            # map uid -> the map as the host runs it (offloaded ops removed)
    offload: object       # OffloadPlan


def build_plan(root):
    """Check the pipeline is a tree, number its maps and split off the offloaded tail.

    Nodes say what they are: ``_map_spec(uid)`` (a map), ``_mixes_sources()`` (zip, concat).
    """
    from recordio.offload.plan import plan_offload      # it loads the vision ops: only when iterated

    root._check_tree()
    nodes = root._nodes()
    maps = [n for n in nodes if n._map_spec(0) is not None]
    specs = [m._map_spec(uid) for uid, m in enumerate(maps)]
    offload = plan_offload(specs, auto_offload=config.get_auto_offload(),
                           zip_or_concat=any(n._mixes_sources() for n in nodes))
    host = {s.uid: dataclasses.replace(s, operations=[]) for s in specs}
    for spec in offload.host_maps:
        host[spec.uid] = spec
    return Plan({id(m): i for i, m in enumerate(maps)}, {id(n): i for i, n in enumerate(nodes)},
                host, offload)


def torch_world():
    """``(world_size, rank)`` when torch.distributed is imported and initialised, else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist.get_world_size(), dist.get_rank()


class RunContext:
    """The state one iteration of a pipeline carries down to its nodes."""

    def __init__(self, plan, seed, shards=None, resume=None, world=None, block=1):
        self.plan = plan
        self.world = world if world is not None else torch_world()   # (size, rank) of torch.distributed
        self.seed = seed
        self.shards = shards          # (DataLoader workers, worker id) splitting each source's shard, or None
        self.block = block            # source rows per worker block (rows per output of the pipeline)
        self.resume = resume          # (data epoch, consumed) for a positional resume, or None
        self.same_split = False       # the resume state was saved under this run's shard split
        self.fast_restart = False     # set_init_step under fast recovery: MindSpore's pipeline starts afresh
        self._runners = {}
        self._hooks = {}
        self._slots = {}              # id(node) -> BatchSlots that a batch right after it offered

    @classmethod
    def for_sizes(cls, root, shards=None):
        return cls(None, config.get_seed(), shards)

    def node_uid(self, node):
        return self.plan.node_uids[id(node)]

    def host_map(self, node):
        return self.plan.host[self.plan.map_uids[id(node)]]

    def start_of(self, epoch):
        """Rows of data epoch ``epoch`` already consumed (across shards); None: skip the epoch."""
        if self.resume is None:
            return 0
        r_epoch, consumed = self.resume
        if epoch < r_epoch:
            return None
        return consumed if epoch == r_epoch else 0

    def map_hooks(self, node):
        """The callbacks of map ``node`` in this run (``ds_begin`` is called on first use)."""
        if id(node) not in self._hooks:
            self._hooks[id(node)] = MapHooks(node.callbacks)
        return self._hooks[id(node)]

    def offer_batch_slots(self, node, size):
        """A ``batch`` of ``size`` rows reads ``node`` directly: its ops may write into the batch's
        blocks (:mod:`recordio.batch_slots`; one table per node for the whole run)."""
        if id(node) not in self._slots:
            self._slots[id(node)] = BatchSlots(size)

    def batch_slots(self, node):
        """The :class:`~recordio.batch_slots.BatchSlots` offered to ``node``, or None."""
        return self._slots.get(id(node))

    def has_runner(self, node):
        """Whether ``node`` started its workers in this run (an earlier epoch found them worth it)."""
        return id(node) in self._runners

    def runner(self, node, fn, workers, processes, window):
        key = id(node)
        if key not in self._runners:
            self._runners[key] = make_runner(fn, workers, processes, window, type(node).__name__)
        return self._runners[key]

    def close(self):
        runners, self._runners = self._runners, {}
        for runner in runners.values():
            runner.close()
