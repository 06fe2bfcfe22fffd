"""Batches from DataLoader workers through one shared-memory ring per worker.

A ``DataLoader`` worker hands each batch to the main process by pickling it; torch moves every tensor
through a new shared-memory segment whose file descriptor travels over a socket (hundreds of
microseconds per tensor, and a batch of bytes is a list of 256 of them). Here a worker writes a
batch's arrays into a ring it keeps in one anonymous shared-memory file (``memfd``) and pickles a
descriptor of a few hundred bytes: where each column lies, its dtype and shape. The file descriptor
crosses to the main process once per ring. The main process maps the ring and gives tensors that
are views of it, without a copy; when the last view of a batch is freed, the batch's ``done`` flag
is set and the worker reuses its bytes.

Layout of a ring (little-endian)::

    0      SLOTS bytes   done flags, one per batch in flight (slot = sequence number % SLOTS);
                         the consumer sets 1 when a batch's views are gone, the producer sets 0
                         when it takes the bytes back
    HEAD   capacity      the batches' bytes, each batch one contiguous run, 64-byte aligned

The producer never waits: a batch that does not fit (the consumer holds earlier ones, or it is
larger than the ring) goes to a new, larger ring, and the old one is freed by both sides once
nothing refers to it. Batches are taken back in any order the consumer frees them. A list of ``bytes``
is written one value after another and copied out by the receiver. Columns that are not tensors,
lists of 1-D tensors or lists of bytes (strings, nested values) travel in the descriptor's pickle.

The main process keeps the rings it has mapped in ``_MAPPED`` (process-local: a descriptor names a
ring the receiving process maps once); a ring leaves it when its worker moves to a newer one.
"""

from __future__ import annotations

import collections
import itertools
import math
import mmap
import os
import secrets
import weakref

import numpy as np

from recordio.dataset.values import TensorRows
from recordio.extras import requires

with requires("recordio.collate"):
    import torch

__all__ = ["SharedBatch", "available"]

SLOTS = 256
ATTACHED = SLOTS              # one byte: the main process has mapped this ring
HEAD = SLOTS + 64
ALIGN = 64
FIRST_CAPACITY = 8 << 20
MAX_CAPACITY = 4 << 30

_MAPPED: dict[tuple, tuple[int, mmap.mmap]] = {}      # (pid, token) -> (ring number, mapping)


def available() -> bool:
    """Whether this platform has anonymous shared-memory files (Linux)."""
    return hasattr(os, "memfd_create")


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class _Ring:
    """The producer's side of one ring."""

    def __init__(self, capacity: int, token: str, number: int):
        self.capacity, self.token, self.number = capacity, token, number
        self.fd = os.memfd_create(f"recordio-batches-{number}", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, HEAD + capacity)
        self.map = mmap.mmap(self.fd, HEAD + capacity)
        self.flags = np.frombuffer(self.map, dtype=np.uint8, count=HEAD)
        self.held: collections.deque[tuple[int, int]] = collections.deque()   # (sequence, bytes reserved)
        self.produced = 0                         # bytes reserved so far, skips included
        self.freed = 0
        self.sequence = 0

    def _reclaim(self) -> None:
        while self.held and self.flags[self.held[0][0] % SLOTS]:
            sequence, reserved = self.held.popleft()
            self.flags[sequence % SLOTS] = 0
            self.freed += reserved

    def reserve(self, size: int):
        """(sequence, offset) of ``size`` contiguous bytes, or None when they do not fit now."""
        self._reclaim()
        if len(self.held) >= SLOTS:
            return None
        at = self.produced % self.capacity
        skip = self.capacity - at if at + size > self.capacity else 0
        if self.produced + skip + size - self.freed > self.capacity:
            return None
        sequence, self.sequence = self.sequence, self.sequence + 1
        self.held.append((sequence, skip + size))
        self.produced += skip + size
        return sequence, HEAD + (0 if skip else at)

    def fd_for_receiver(self):
        """The ring's file descriptor, to travel with a descriptor, until the receiver has mapped it."""
        if self.flags[ATTACHED]:
            return None
        from multiprocessing.reduction import DupFd
        return DupFd(self.fd)

    def close(self) -> None:
        del self.flags
        self.map.close()
        os.close(self.fd)


class _Producer:
    """A worker's rings: the current one, and the next, larger, one when a batch does not fit."""

    def __init__(self):
        self.pid = os.getpid()
        self.token = secrets.token_hex(8)
        self.ring: _Ring | None = None
        self.rings = 0

    def reserve(self, size: int):
        if self.ring is not None:
            got = self.ring.reserve(size)
            if got is not None:
                return self.ring, got
        capacity = max(FIRST_CAPACITY, 4 * size, 2 * self.ring.capacity if self.ring else 0)
        if capacity > MAX_CAPACITY:
            return None, None
        if self.ring is not None:
            self.ring.close()        # the main process keeps its own mapping while it needs one
        self.ring = _Ring(capacity, self.token, self.rings)
        self.rings += 1
        return self.ring, self.ring.reserve(size)


_PRODUCER: list[_Producer] = []          # this process's producer, made on its first batch


def _producer() -> _Producer:
    if not _PRODUCER or _PRODUCER[0].pid != os.getpid():      # a forked child makes its own
        _PRODUCER[:] = [_Producer()]
    return _PRODUCER[0]


def _layout(value):
    """How one column travels: "tensor" (one tensor), "rows" (a :class:`TensorRows` still holding
    the views of its buffer: the buffer is written once), "bytes" (a list of ``bytes``, written one
    after another: the receiver copies each out), or None (pickled as it is)."""
    if isinstance(value, torch.Tensor):
        return "tensor" if value.device.type == "cpu" and value.layout == torch.strided else None
    if type(value) is TensorRows:
        return "rows" if value.intact() and _layout(value.buffer) == "tensor" else None
    if type(value) is list and value and all(type(v) is bytes for v in value):
        return "bytes"
    return None


def _nbytes(kind, value) -> int:
    if kind == "bytes":
        return sum(map(len, value))
    t = value if kind == "tensor" else value.buffer
    return t.numel() * t.element_size()


class SharedBatch(dict):
    """A batch of tensors (a ``dict``) that a DataLoader worker sends through its ring: what the main
    process unpickles is a plain ``dict`` of tensors viewing the ring."""

    def __copy__(self):
        return SharedBatch(self)

    def __reduce__(self):
        kinds = {name: _layout(value) for name, value in self.items()}
        sizes = {name: _nbytes(kind, self[name]) for name, kind in kinds.items() if kind}
        ring, got = _producer().reserve(max(sum(map(_aligned, sizes.values())), ALIGN))
        if got is None:
            return dict, (dict(self),)
        sequence, at = got
        first, columns = at, {}
        for name, value in self.items():
            kind = kinds[name]
            if kind is None:
                columns[name] = ("value", value)
                continue
            columns[name] = (kind, _put(ring.map, at, sizes[name], kind, value))
            at += _aligned(sizes[name])
        return _rebuild, ((os.getpid(), ring.token), ring.number, ring.fd_for_receiver(), HEAD + ring.capacity,
                          sequence, first, at - first, columns)


def _put(buffer, at, nbytes, kind, value):
    """Write one column at ``at``; return (offset, dtype, shape or sizes) for the receiver."""
    if kind == "bytes":
        buffer[at:at + nbytes] = b"".join(value)
        return at, None, [len(v) for v in value]
    t = value if kind == "tensor" else value.buffer
    if nbytes:
        torch.frombuffer(buffer, dtype=torch.uint8, count=nbytes, offset=at).view(t.dtype).view(t.shape).copy_(t)
    return at, t.dtype, (tuple(t.shape) if kind == "tensor" else value.sizes)


_NUMPY_DTYPES: dict[torch.dtype, np.dtype | None] = {}


def _numpy_dtype(dtype: torch.dtype) -> np.dtype | None:
    """The numpy dtype a tensor of ``dtype`` shares its bytes with, or None (bfloat16, float8, ...)."""
    try:
        return _NUMPY_DTYPES[dtype]
    except KeyError:
        try:
            found = torch.empty(0, dtype=dtype).numpy().dtype
        except (TypeError, RuntimeError):
            found = None
        _NUMPY_DTYPES[dtype] = found
        return found


def _mapping(key, number, fd, length) -> mmap.mmap:
    held = _MAPPED.get(key)
    received = fd.detach() if fd is not None else None       # always taken: the worker holds it till then
    try:
        if held is not None and held[0] == number:
            return held[1]
        if received is None:
            raise RuntimeError(f"recordio: a DataLoader batch names shared ring {number} of worker process "
                               f"{key[0]}, which this process never received")
        mapping = mmap.mmap(received, length)
    finally:
        if received is not None:
            os.close(received)
    mapping[ATTACHED] = 1
    if key not in _MAPPED:
        _forget_exited()
    _MAPPED[key] = (number, mapping)      # an older ring of this worker is dropped: its views keep it
    return mapping


def _forget_exited() -> None:
    """Drop the rings of workers that have exited (a DataLoader without persistent workers starts new
    ones each epoch); batches still held keep their ring mapped until they are freed."""
    for key in list(_MAPPED):
        try:
            os.kill(key[0], 0)
        except ProcessLookupError:
            del _MAPPED[key]
        except OSError:
            pass


def _rebuild(key, number, fd, length, sequence, first, nbytes, columns):
    """The main process's side: the batch as a dict of tensors viewing the ring."""
    mapping = _mapping(key, number, fd, length)
    flags = np.frombuffer(mapping, dtype=np.uint8, count=SLOTS)
    if nbytes:
        whole = np.frombuffer(mapping, dtype=np.uint8, count=nbytes, offset=first)
        weakref.finalize(whole, flags.__setitem__, sequence % SLOTS, 1)     # freed with the last view
    else:                                        # only empty tensors: nothing to view, freed now
        flags[sequence % SLOTS] = 1
        whole = np.empty(0, dtype=np.uint8)
    out = {}
    for name, (kind, parts) in columns.items():
        if kind == "value":
            out[name] = parts
            continue
        at, dtype, shape = parts
        if kind == "bytes":                 # copied out: the list holds no view of the ring
            ends = list(itertools.accumulate(shape, initial=at))
            out[name] = [mapping[a:b] for a, b in zip(ends, ends[1:])]
            continue
        at -= first
        n = dtype.itemsize * (math.prod(shape) if kind == "tensor" else sum(shape))
        numpy_dtype = _numpy_dtype(dtype)
        if numpy_dtype is not None:       # numpy views, one torch call a column (a torch view costs ~6 us)
            view = whole[at:at + n].view(numpy_dtype)
            out[name] = torch.from_numpy(view.reshape(shape)) if kind == "tensor" else \
                TensorRows.of(torch.from_numpy(view), shape)
        else:
            view = torch.from_numpy(whole[at:at + n]).view(dtype)
            out[name] = view.view(shape) if kind == "tensor" else TensorRows.of(view, shape)
    return out
