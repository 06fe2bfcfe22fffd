"""Batch blocks: a map's image outputs written straight into the batch that stacks them.

When a ``batch`` of a fixed size directly follows a ``map`` (run in the pipeline's thread or in worker
threads), the batch hands the map a :class:`BatchSlots`: row ``k`` of an epoch (the map's ``k``-th
output) owns slot ``k % size`` of block ``k // size``, one ``np.empty((size, *shape))`` made when its
first slot is asked for. An op that writes a fresh image (the fused float32 level runs of
:mod:`recordio.vision.fusion`; the compiled uint8 resize when it is the row's last op, as in the host part of
a chain whose tail is offloaded) asks :func:`output_array` for its output and gets its row's slot, so
the batch of rows ``[n * size, (n + 1) * size)`` is that block, whole: :func:`block_of` finds it and
``batch`` returns it instead of copying the images into a new array (``np.stack``: a copy of every
image, as much memory traffic as the level run itself).

Nothing else changes: each row's value is an ordinary array (a view of its block, its own slot that
nothing else writes); where the rows of a batch are not exactly one block in order (an op that did
not write into its slot, an image of another shape, a short last batch, a later op that returns
another array) the batch stacks them as before. A slot is given once: an op that asks again for the
same row gets a fresh array. A block lives as long as any of its rows or the batch does.

A block's memory is reused (:class:`_BlockPool`): when a block and every view of it are gone (the
training loop dropped the batch), its memory goes back to the map's pool and the next block of that
size is made in it, so a long run does not pay the kernel for fresh zeroed pages on every batch
(in a one-worker train run its system time fell by about a quarter). Reused memory is uninitialised,
as ``np.empty``'s.
"""

import mmap
import sys
import threading
import weakref

import numpy as np

__all__ = ["BatchSlots", "block_of", "last_op", "output_array", "row_slot"]

_local = threading.local()
_made: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()   # id -> a block made here

# blocks older than this many blocks behind the newest one asked for are dropped from the table (rows
# that never asked for their slot). A row of a dropped block that asks later gets a new block's slot: its
# batch is then stacked, with the same values (small batches on many workers may see that)
_KEEP_BEHIND = 8


class _BlockPool:
    """The memory of blocks that are gone, kept for the next blocks of the same size.

    A block is an array over its own anonymous ``mmap`` (its ``base``). Every view of a block, a
    slot, a tensor made from it (``torch.from_numpy``) holds the block, so the block's finaliser runs
    only when nothing can reach its memory through it; the memory then goes back to the pool unless
    something else still holds the ``mmap`` itself. At most ``keep`` buffers wait in the pool (the
    others are unmapped as usual); the pool goes with its :class:`BatchSlots`, at the end of a run.
    """

    def __init__(self, keep=4):
        self.keep = keep
        self._free = {}                     # nbytes -> [mmap]
        self._lock = threading.Lock()

    def array(self, shape, dtype):
        """An uninitialised C-contiguous array of ``shape``/``dtype`` over pooled memory."""
        dtype = np.dtype(dtype)
        nbytes = max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1)
        with self._lock:
            spare = self._free.get(nbytes)
            buf = spare.pop() if spare else None
        if buf is None:
            buf = _anonymous(nbytes)
        block = np.ndarray(shape, dtype, buffer=buf)
        weakref.finalize(block, self._give_back, buf, nbytes).atexit = False
        return block

    def _give_back(self, buf, nbytes):
        # held here by the finaliser's arguments and this frame (and getrefcount's argument): anything
        # more is someone else holding the mmap (a block's .base kept alive): it is not reused
        if sys.getrefcount(buf) > _FREE_REFS:
            return
        with self._lock:
            spare = self._free.setdefault(nbytes, [])
            if sum(map(len, self._free.values())) < self.keep:
                spare.append(buf)


def _anonymous(nbytes):
    """Private anonymous memory (a shared mapping would be shmem: no transparent huge pages, a page fault
    for every 4 KiB written the first time), with huge pages asked for large blocks, as numpy does."""
    if not hasattr(mmap, "MAP_PRIVATE"):                              # Windows: a plain anonymous map
        return mmap.mmap(-1, nbytes)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    if nbytes >= 1 << 22 and hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    return buf


def _free_refs():
    """The reference count of a buffer in ``_BlockPool._give_back`` when nothing else holds it
    (measured: it differs between Python versions)."""
    seen = []

    class Probe(_BlockPool):
        def _give_back(self, buf, nbytes):
            seen.append(sys.getrefcount(buf))

    block = Probe().array((1,), np.uint8)
    del block
    return seen[0]


_FREE_REFS = _free_refs()


class BatchSlots:
    """The blocks of the batches of ``size`` rows that follow one map (see the module docstring)."""

    def __init__(self, size):
        self.size = size
        self._blocks = {}                   # (epoch, block number) -> [block, rows given, slots given]
        self._lock = threading.Lock()
        self._pool = _BlockPool()

    def take(self, epoch, seq, shape, dtype):
        """Row ``seq`` of ``epoch``'s slot for an output of ``shape``/``dtype``; None when its block
        holds another shape or dtype, or the slot was given already (a block that gave all its slots is
        forgotten: a row of it that asks again gets a new block's slot, never a given one)."""
        number, i = divmod(seq, self.size)
        key = (epoch, number)
        with self._lock:
            entry = self._blocks.get(key)
            if entry is None:
                self._drop_before((epoch, number - _KEEP_BEHIND))
                block = self._pool.array((self.size, *shape), dtype)
                _made[id(block)] = block
                entry = self._blocks[key] = [block, 0, set()]
            block, _, taken = entry
            if block.shape[1:] != tuple(shape) or block.dtype != dtype or i in taken:
                return None
            taken.add(i)
            entry[1] += 1
            if entry[1] == self.size:       # every row has its slot: the rows and the batch hold it now
                del self._blocks[key]
        return block[i]

    def _drop_before(self, key):
        for old in [k for k in self._blocks if k < key]:
            del self._blocks[old]


class row_slot:
    """``with row_slot(slots, epoch, seq):`` — :func:`output_array` calls in the block give row ``seq``'s
    slot (``slots`` None: nothing changes). Used by a map's worker for each row, which calls
    :func:`last_op` before the row's last op."""

    __slots__ = ("value", "saved")

    def __init__(self, slots, epoch, seq):
        self.value = None if slots is None else (slots, epoch, seq)

    def __enter__(self):
        self.saved = getattr(_local, "slot", None), getattr(_local, "last", False)
        _local.slot, _local.last = self.value, False

    def __exit__(self, *exc):
        _local.slot, _local.last = self.saved


def last_op(last=True):
    """Says that the op about to run is the current row's last (its output is the row's value); with
    ``last=False``, that the ops about to run are not (the members of a composite op: Compose, RandomOrder,
    whose next member reads what one gives)."""
    _local.last = last


def output_array(shape, dtype=np.float32, last_only=False):
    """A new uninitialised array for an op's output: the current row's batch slot where it has one,
    else ``np.empty``. ``last_only``: the slot only when the op is the row's last (:func:`last_op`).

    The first op of a row that asks gets the slot (and a new block takes its shape and dtype), so an op
    whose output is often an intermediate (a uint8 resize, before a float32 level run that asks too)
    asks with ``last_only``: where it is not last, the op after it keeps the slot."""
    current = getattr(_local, "slot", None)
    if current is not None and (not last_only or _local.last):
        slots, epoch, seq = current
        found = slots.take(epoch, seq, shape, np.dtype(dtype))
        if found is not None:
            _local.slot = None              # one slot a row: a second output of the row is its own array
            return found
    return np.empty(shape, dtype)


def block_of(values):
    """The block whose slots ``values`` are, all of them and in order; None when they are not."""
    if not values or type(values[0]) is not np.ndarray:
        return None
    block = values[0].base
    if (type(block) is not np.ndarray or _made.get(id(block)) is not block or len(block) != len(values)
            or block.shape[1:] != values[0].shape or not block.flags.c_contiguous):
        return None
    start, step = block.ctypes.data, block[0].nbytes
    shape, strides = block.shape[1:], block.strides[1:]
    for k, v in enumerate(values):              # each the slot itself: not a transposed or flipped view of it
        if (type(v) is not np.ndarray or v.base is not block or v.shape != shape or v.strides != strides
                or v.ctypes.data != start + k * step):
            return None
    return block
