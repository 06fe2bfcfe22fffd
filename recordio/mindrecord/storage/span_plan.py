"""Fetch spans for an epoch: few large requests planned from the order the reader will read its rows.

The sampler knows every row this reader reads this epoch, so the byte ranges they need are known
before the first read. Fetching each row on its own costs one request per row; here the needed
ranges are grouped instead:

1. the epoch's rows are cut into *windows* in reading order, each holding at most half the cache
   bound's bytes (one window, the whole epoch, without a bound): a span never mixes rows needed
   much later with rows needed now, so what it fetches is not evicted before it is read;
2. within a window and a file, the needed ranges (block-aligned) are merged where they touch, and
   across the smallest gaps (at most :data:`GAP_MAX` each, :data:`GAP_SHARE` of the needed bytes in
   all): a gap that small costs less to fetch than one more request;
3. the merged runs are cut at every :data:`SPAN` boundary of the file (block-aligned, so readers of
   one node sharing the cache cut the same spans), and each span is fetched when its first row
   comes within the prefetch depth.

A shuffled full epoch then makes about ``bytes / SPAN`` requests instead of one per row, and a
sharded reader still fetches about the bytes of its own rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GAP_MAX", "GAP_SHARE", "SPAN", "plan_spans"]

SPAN = 4 << 20           # the largest request of a plan (a larger row is fetched whole)
GAP_MAX = 256 << 10      # a gap between needed ranges fetched rather than paying one more request
GAP_SHARE = 0.02         # at most this share of the needed bytes is fetched in gaps


def _flatten(rows):
    """Arrays (file id, start, end, position) of the ranges of ``rows``, and the files' paths."""
    ids: dict = {}
    pid, a, b, pos = [], [], [], []
    for i, row in enumerate(rows):
        for path, start, end in row:
            if end > start:
                pid.append(ids.setdefault(path, len(ids)))
                a.append(start)
                b.append(end)
                pos.append(i)
    arr = [np.asarray(x, dtype=np.int64) for x in (pid, a, b, pos)]
    return (*arr, list(ids))


def _windows(nbytes, limit):
    """Each range's window: the reading order cut every ``limit / 2`` bytes of blocks (0 for all without
    a bound)."""
    if limit is None or not len(nbytes):
        return np.zeros(len(nbytes), dtype=np.int64)
    per = max(1, int(limit) // 2)
    return (np.cumsum(nbytes) - nbytes) // per


def _runs(group, lo, hi):
    """Runs ``(group, first block, end block)`` of the ranges (sorted by group then ``lo``) merged where
    they overlap or touch."""
    out = []
    g0, s, e = -1, 0, 0
    for g, x, y in zip(group.tolist(), lo.tolist(), hi.tolist()):
        if g == g0 and x <= e:
            e = max(e, y)
            continue
        if g0 >= 0:
            out.append((g0, s, e))
        g0, s, e = g, x, y
    if g0 >= 0:
        out.append((g0, s, e))
    return np.asarray(out, dtype=np.int64).reshape(-1, 3)


def _bridged(runs, block):
    """Which gaps between consecutive runs of a group to fetch: the smallest first, each at most
    ``GAP_MAX``, together at most ``GAP_SHARE`` of the needed bytes."""
    same = runs[1:, 0] == runs[:-1, 0]
    gap = runs[1:, 1] - runs[:-1, 2]
    candidates = np.flatnonzero(same & (gap * block <= GAP_MAX))
    candidates = candidates[np.argsort(gap[candidates], kind="stable")]
    budget = GAP_SHARE * float((runs[:, 2] - runs[:, 1]).sum())
    out = np.zeros(len(gap), dtype=bool)
    out[candidates[np.cumsum(gap[candidates], dtype=np.float64) <= budget]] = True
    return out


def _pieces(runs, bridged, span_blocks):
    """``(group, first block, end block)`` of the requests: runs joined across the bridged gaps, cut at
    every multiple of ``span_blocks``."""
    out = []
    for i, (g, s, e) in enumerate(runs.tolist()):
        if i and bridged[i - 1] and out[-1][0] == g and out[-1][2] == runs[i - 1, 2] \
                and s // span_blocks == (out[-1][2] - 1) // span_blocks:
            s = out.pop()[1]
        cut = s
        while cut < e:
            nxt = min(e, (cut // span_blocks + 1) * span_blocks)
            out.append((g, cut, nxt))
            cut = nxt
    return np.asarray(out, dtype=np.int64).reshape(-1, 3)


def plan_spans(rows, block, limit=None, span=SPAN, marks=None):
    """The requests of an epoch: ``rows`` is, in reading order, one list of ``(path, start, end)`` per
    row; returns ``(path, start, end, first)`` per request (bytes, block-aligned; ``first``: the
    position in ``rows`` of the first row needing it), ordered by ``first``. ``marks(path)``: the
    file's block map (a byte per block, 0: missing); ranges already present are left out."""
    pid, a, b, pos, paths = _flatten(rows)
    lo, hi = a // block, (b + block - 1) // block
    if marks is not None and len(pid):
        keep = np.zeros(len(pid), dtype=bool)
        for k, path in enumerate(paths):
            missing = np.concatenate([[0], np.cumsum(marks(path) == 0, dtype=np.int64)])
            mine = pid == k
            top = len(missing) - 1
            keep[mine] = missing[np.minimum(hi[mine], top)] > missing[np.minimum(lo[mine], top)]
        pid, a, b, pos, lo, hi = (x[keep] for x in (pid, a, b, pos, lo, hi))
    if not len(pid):
        return []
    win = _windows((hi - lo) * block, limit)
    group_of = {}
    group = np.fromiter((group_of.setdefault(k, len(group_of)) for k in zip(win.tolist(), pid.tolist())),
                        dtype=np.int64, count=len(pid))
    order = np.lexsort((lo, group))
    runs = _runs(group[order], lo[order], hi[order])
    cap = span if limit is None else max(block, min(span, int(limit) // 4))
    pieces = _pieces(runs, _bridged(runs, block), max(1, cap // block))
    first = _first_need(pieces, group, lo, hi, pos)
    path_of = {g: paths[p] for (_, p), g in group_of.items()}
    out = [(path_of[g], s * block, e * block, f) for (g, s, e), f in zip(pieces.tolist(), first.tolist())]
    out.sort(key=lambda piece: piece[3])
    return out


def _first_need(pieces, group, lo, hi, pos):
    """The first position needing each piece (a piece inside one long row takes the row's)."""
    key = pieces[:, 0] * (1 << 40) + pieces[:, 1]
    first = np.full(len(pieces), np.iinfo(np.int64).max, dtype=np.int64)
    for blocks in (lo, hi - 1):
        at = np.searchsorted(key, group * (1 << 40) + blocks, side="right") - 1
        np.minimum.at(first, at, pos)
    for i in range(1, len(first)):                 # the middle of a row longer than two pieces
        if first[i] == np.iinfo(np.int64).max and pieces[i, 0] == pieces[i - 1, 0]:
            first[i] = first[i - 1]
    return first
