"""MindSpore 2.10's orders for sampler chains over a MindDataset (``config.set_order_mode("mindspore")``).

A chain (``add_child``, ``Dataset.add_sampler`` / ``use_sampler``) reaches MindSpore's MindRecord
reader as a list of operators, the deepest child first and the root last
(``MindDataNode::BuildMindDatasetSamplerChain``). Each operator rewrites the task list's sample
ids, the list the previous one left (``ShardReader::CreateTasks``):

* a shuffle (``RandomSampler``, or the dataset's own shuffle) shuffles the list with
  ``seed + 1 + e`` (its engine's seed is bumped on every run) and keeps ``num_samples`` of it;
* a ``DistributedSampler`` keeps a copy of the list it got in the first epoch
  (``ShardDistributedSample::PreExecute``), shuffles that copy (its own seed, bumped on every run)
  and takes its shard's positions of it;
* a sequential or subset sampler (``ShardSample``) picks positions of the list; a
  ``SubsetRandomSampler`` shuffles its picks once (its seed + 1).

The first epoch runs every operator. Later epochs run some only (``ShardReader::ShuffleTask``):
with a ``DistributedSampler`` anywhere in the chain, only the ``DistributedSampler``s run again,
each from its first-epoch copy, so the epoch is the last one's output and the samplers above it
act in the first epoch only; without one, only the shuffles run again, each on the list the
previous epoch ended with.

What MindSpore leaves undefined is refused: an operator that reads past the end of the list it got
(a ``num_samples`` larger than a shorter list: MindSpore reads freed memory or crashes), file-wise
shuffles of a list that is not the whole dataset, epochs of different lengths, padded samples,
``offset``, ``PKSampler`` and ``Shuffle.PARTIAL`` in a chain.
"""

from __future__ import annotations

import numpy as np

from recordio.dataset.order import ms_order

__all__ = ["chain_order", "chain_total"]


class _Op:
    """One MindSpore operator: ``kind`` is "shuffle", "ds", "seq" or "subset"."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.__dict__.update(kw)


def _mode(shuffle, n, what):
    mode = ms_order.shuffle_kind(shuffle, n)
    if mode == "partial":
        ms_order.refuse(what, "Shuffle.PARTIAL in a sampler chain")
    return mode


def _samplers(root):
    """The samplers of the chain from ``root``, deepest child first."""
    chain = []
    while root is not None:
        chain.append(root)
        root = root.child_sampler
    return chain[::-1]


def _operators(root, n, seed, source):
    """The chain's operators, deepest child first, with the seeds MindSpore gives them. A sampler
    class names its operator in ``_ms_operator`` (``recordio.dataset.order.samplers``; None: none)."""
    ops = []
    for sampler in _samplers(root):
        name, kind = type(sampler).__name__, sampler._ms_operator
        if kind == "distributed":
            if sampler.offset != -1:
                ms_order.refuse(name, "offset in a sampler chain")
            ops.append(_Op("ds", num=sampler.num_shards, shard=sampler.shard_id, seed=sampler.seed,
                           mode=_mode(sampler.shuffle, n, name), num_samples=sampler.num_samples,
                           by_block=sampler.by_block))
        elif kind == "default":
            if sampler.num_padded:
                ms_order.refuse(name, "padded samples in a sampler chain")
            mode = None if sampler.mode is None else _mode(sampler.mode, n, name)
            if sampler.shards is not None:
                ops.append(_Op("ds", num=sampler.shards[0], shard=sampler.shards[1], seed=sampler.seed, mode=mode,
                               num_samples=sampler.num_samples, by_block=sampler.by_block))
            elif mode is None:
                ops.append(_Op("seq", start=0, num_samples=sampler.num_samples))
            else:                      # MindSpore's RandomSampler; with num_samples, with replacement
                ops.append(_Op("shuffle", mode=mode, seed=seed, num_samples=sampler.num_samples,
                               replacement=bool(sampler.num_samples)))
        elif kind == "random":
            ops.append(_Op("shuffle", mode=_mode(sampler.shuffle, n, name), seed=seed,
                           num_samples=sampler.num_samples, replacement=sampler.replacement))
        elif kind == "sequential":
            ops.append(_Op("seq", start=sampler.start_index, num_samples=sampler.num_samples))
        elif kind in ("subset", "subset_random"):
            ops.append(_Op("subset", indices=sampler.indices, seed=seed if kind == "subset_random" else None,
                           num_samples=sampler.num_samples))
        else:
            ms_order.refuse(name, "this sampler in a sampler chain that shuffles")
    return ops


def _read_past(what, want, have):
    ms_order.refuse(what, f"a sampler chain where it reads {want} positions of a list of {have} (MindSpore reads "
                          f"past the end of its list there)")


def _shuffle(op, items, n, counts, epoch):
    """One run of a shuffle operator (``ShardShuffle::Execute``) in epoch ``epoch``."""
    seed = op.seed + 1 + epoch
    if op.replacement:
        return ms_order.draws(items, op.num_samples or len(items), seed)
    if op.mode in ("files", "infile") and len(items) != n:
        ms_order.refuse("RandomSampler", f"Shuffle.{op.mode.upper()} of a list that is not the whole dataset")
    out = ms_order.shuffled(op.mode, items, counts, seed)
    take = op.num_samples if op.num_samples and op.num_samples < n else len(out)
    if take > len(out):
        _read_past("RandomSampler", take, len(out))
    return out[:take]


def _ds_order(op, saved, n, counts, epoch):
    """A ``DistributedSampler``'s order of its first-epoch list in epoch ``epoch`` (before its shard)."""
    if op.mode is None:
        return list(saved)
    if op.mode in ("files", "infile") and len(saved) != n:
        ms_order.refuse("DistributedSampler", f"Shuffle.{op.mode.upper()} of a list that is not the whole dataset")
    return ms_order.shuffled(op.mode, list(saved), counts, op.seed + 1 + epoch)


def _shard(op, order):
    total = len(order)
    if total == 0:
        return []
    per = -(-total // op.num)
    k = np.arange(per, dtype=np.int64)
    positions = (op.shard * per + k) % total if op.by_block else (op.shard + op.num * k) % total
    if op.num_samples:
        positions = positions[:op.num_samples]
    return [order[p] for p in positions.tolist()]


def _pick(op, items, n):
    """A sequential or subset sampler (``ShardSequentialSample`` / ``ShardSample``)."""
    have = len(items)
    if op.kind == "seq":
        if op.num_samples:
            end = min(min(op.num_samples, have) + op.start, n)
        else:
            end = have
        if end > have:
            _read_past("SequentialSampler", end, have)
        return items[op.start:end]
    indices = op.indices.tolist()
    if len(indices) > have:
        raise ValueError(f"Invalid input, indices size: {len(indices)} should be less than or equal to database "
                         f"size: {have}.")
    bad = [i for i in indices if not 0 <= i < have]
    if bad:
        raise IndexError(f"SubsetSampler: index {bad[0]} is out of range for a sampler's output of {have} rows")
    out = [items[i] for i in indices]
    if op.seed is not None:
        out = ms_order.shuffle_list(out, op.seed + 1)
    return out[:op.num_samples or None]


class _Chain:
    """The epochs of one chain, as MindSpore runs them; holds the first epoch's copies and the
    latest epoch's list."""

    def __init__(self, ops, n, counts):
        self.ops, self.n, self.counts = ops, n, counts
        self.last_ds = max((k for k, op in enumerate(ops) if op.kind == "ds"), default=None)
        self.saved = {}
        self.first = self._first_epoch()
        self.epoch, self.items = 0, self.first

    def _first_epoch(self):
        items = list(range(self.n))
        for k, op in enumerate(self.ops):
            if op.kind == "shuffle":
                items = _shuffle(op, items, self.n, self.counts, 0)
            elif op.kind == "ds":
                self.saved[k] = items
                items = _shard(op, _ds_order(op, items, self.n, self.counts, 0))
            else:
                items = _pick(op, items, self.n)
        return items

    def root_order(self, epoch):
        """The root's order of epoch ``epoch``: for a root ``DistributedSampler`` its order before
        its shard (the source takes the shard), else the epoch's rows."""
        k = len(self.ops) - 1
        if self.ops[k].kind == "ds":
            return _ds_order(self.ops[k], self.saved[k], self.n, self.counts, epoch)
        if epoch == 0:
            return self.first
        if self.last_ds is not None:
            op = self.ops[self.last_ds]
            items = _shard(op, _ds_order(op, self.saved[self.last_ds], self.n, self.counts, epoch))
        else:
            items = self._cumulative(epoch)
        if len(items) != len(self.first):
            ms_order.refuse(_type_name(self.ops[-1]), "a chain whose epochs after the first have another length "
                                                     "(MindSpore runs its DistributedSamplers only, from the second "
                                                     "epoch on)")
        return items

    def _cumulative(self, epoch):
        if epoch < self.epoch:
            self.epoch, self.items = 0, self.first
        while self.epoch < epoch:
            self.epoch += 1
            for op in self.ops:
                if op.kind == "shuffle":
                    self.items = _shuffle(op, self.items, self.n, self.counts, self.epoch)
        return self.items


def _type_name(op):
    return {"shuffle": "RandomSampler", "ds": "DistributedSampler", "seq": "SequentialSampler"}.get(op.kind,
                                                                                                  "SubsetSampler")


def _chain(root, n, seed, source):
    ms_order._check_source(source, "a sampler chain")
    cache = root.__dict__.setdefault("_ms_chains", {})
    links, sampler = [], root
    while sampler is not None:                 # a chain changed by add_child later is another chain
        links.append(id(sampler))
        sampler = sampler.child_sampler
    key = (n, seed, tuple(links))
    if key not in cache:
        if len(cache) >= 4:
            cache.pop(next(iter(cache)))
        cache[key] = _Chain(_operators(root, n, seed, source), n, list(source.file_counts()))
    return cache[key]


def chain_order(root, n, seed, epoch, source):
    """The order of epoch ``epoch`` of the chain rooted at ``root``, as MindSpore 2.10 gives it."""
    return np.asarray(_chain(root, n, seed, source).root_order(epoch), dtype=np.int64)


def chain_total(root, n, source):
    """The length of :func:`chain_order` (the seed does not change it)."""
    from recordio import config
    chain = _chain(root, n, config.get_seed(), source)
    k = len(chain.ops) - 1
    return len(chain.saved[k]) if chain.ops[k].kind == "ds" else len(chain.first)
