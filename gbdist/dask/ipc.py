"""Candidate lists handed from GPU to GPU between the worker processes of one host.

A replicated search's share is n × need (distance, index) lists on its worker's GPU, and
every other worker merges a slice of its rows. Sent the ordinary way, a slice goes
device → host → TCP → host → device (dask-cuda without UCX), 80–100 ms for a 283K-row
share on two H200s. :class:`Lists` sends a CUDA IPC handle instead (64 bytes): the
receiver maps the producer's buffer into its own address space and copies only its
rows, GPU to GPU (NVLink or PCIe peer to peer), then unmaps it.

Lifetime: the producer's object owns the buffer; Dask holds it (a task's result) until
every task that reads it has finished, and the receiver unmaps before its task returns,
so the buffer outlives every mapping. Where mapping is impossible (another host, a
producer that died, no peer access) :meth:`Lists.rows` raises :class:`Unreachable` and
the caller recomputes the rows it needs (:func:`gbdist.dask.tasks.merge_lists`).

Reuse (on by default; ``GBDIST_DASK_IPC_REUSE=0`` in the workers' environment turns it
off): mapping a buffer costs 5.35 ms and unmapping 1.1 ms on an H200
(benchmarks/results/h200x4-2026-11-27h-ipc-probe.py), most of a merge's time on 4 workers:
on four H200s a merge task's worker time went from 84-90 to 32-33 ms on the 283K-row
shape, and the search to the client's GPU from 295 to 281 ms (cosine; docs/distributed.md,
"Four GPUs again"; no measurable change on two). With reuse each process keeps up to
:data:`REUSE_SLOTS` exported buffers and lends them to its next lists once a previous
owner is gone (Dask released it: every reader has finished), and each receiver keeps its
mappings. A buffer starts with the stamp of its current lists (unique in its process);
a receiver reads it after copying its rows and, if another owner has taken the buffer
meanwhile (a released object whose handle still travelled: a spilled or resent result),
raises :class:`Unreachable`, so the rows are recomputed, never read stale. Buffers are
never freed while their process lives (a mapping elsewhere must not outlive them).
"""
from __future__ import annotations

import itertools
import os
import socket
import threading

import numpy as np

_ALIGN = 256  # the index block starts on a fresh cache line of the one buffer
_OWN: dict = {}  # buffer id -> the producer's arrays, for a receiver in the same process
REUSE_SLOTS = 4  # exported buffers a process keeps for reuse (unless GBDIST_DASK_IPC_REUSE=0)
_SLOTS: list = []
_MAPPED: dict = {}  # (producer, handle, device) -> this process's mapping, kept (reuse)
_LOCK = threading.Lock()
_STAMPS = itertools.count(1)


class _Slot:
    """One exported buffer of this process, lent to one :class:`Lists` at a time."""

    def __init__(self, nbytes: int):
        import cupy
        self.mem = cupy.cuda.Memory(nbytes)
        self.handle = cupy.cuda.runtime.ipcGetMemHandle(self.mem.ptr)
        self.busy = False


def _reuse() -> bool:
    return os.environ.get("GBDIST_DASK_IPC_REUSE", "1") != "0"


def _take(nbytes: int):
    """A free pooled buffer of at least ``nbytes`` (the smallest), a new one while the pool
    has room, else None (the lists then get a buffer of their own, mapped once)."""
    with _LOCK:
        free = [s for s in _SLOTS if not s.busy and s.mem.size >= nbytes]
        if free:
            slot = min(free, key=lambda s: s.mem.size)
        elif len(_SLOTS) < REUSE_SLOTS:
            slot = _Slot(nbytes)
            _SLOTS.append(slot)
        else:
            return None
        slot.busy = True
        return slot


class Unreachable(RuntimeError):
    """The producer's buffer cannot be mapped here."""


def _where() -> tuple:
    return socket.gethostname(), os.getpid()


class Lists:
    """(distances, indices), each C-contiguous (n, need), in one device buffer exportable
    to the other processes of this host."""

    def __init__(self, d, i):
        import cupy
        d = cupy.ascontiguousarray(d)
        i = cupy.ascontiguousarray(i)
        self.shape = tuple(d.shape)
        self.dtypes = (d.dtype.str, i.dtype.str)
        body = -(-d.nbytes // _ALIGN) * _ALIGN + i.nbytes
        # pooled: the stamp's cache line, then the distances, then the indices
        self._slot = _take(_ALIGN + body) if _reuse() else None
        self.pooled = self._slot is not None
        self.head = _ALIGN if self.pooled else 0
        self.offset = self.head + -(-d.nbytes // _ALIGN) * _ALIGN
        self.stamp = next(_STAMPS)
        if self.pooled:
            mem, self.handle = self._slot.mem, self._slot.handle
        else:  # its own cudaMalloc: a base pointer IPC can export
            mem = cupy.cuda.Memory(max(body, 1))
            self.handle = cupy.cuda.runtime.ipcGetMemHandle(mem.ptr)
        self._mem = mem
        ptr = cupy.cuda.MemoryPointer(mem, 0)
        if self.pooled:  # written before the rows (stream order)
            cupy.ndarray((1,), np.int64, ptr)[...] = self.stamp
        self._d = cupy.ndarray(self.shape, d.dtype, ptr + self.head)
        self._i = cupy.ndarray(self.shape, i.dtype, ptr + self.offset)
        self._d[...] = d
        self._i[...] = i
        cupy.cuda.get_current_stream().synchronize()  # whole before any receiver maps it
        self.where = _where()
        self.key = (self.where, mem.ptr, self.stamp)
        _OWN[self.key] = (self._d, self._i)

    def __del__(self):
        if "_d" in self.__dict__:  # the producer's object, not a received copy
            _OWN.pop(self.key, None)
            slot = self.__dict__.get("_slot")
            if slot is not None:
                with _LOCK:
                    slot.busy = False

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def rows(self, a: int, z: int):
        """Rows a:z of both arrays, as fresh arrays on this process's current GPU."""
        import cupy
        own = (self._d, self._i) if "_d" in self.__dict__ else _OWN.get(self.key)
        if own is not None:  # the producer's process: its own arrays
            return own[0][a:z].copy(), own[1][a:z].copy()
        if self.where[0] != _where()[0]:
            raise Unreachable(f"the lists are on host {self.where[0]}")
        rt = cupy.cuda.runtime
        kept = (self.where, bytes(self.handle), cupy.cuda.Device().id)
        base = _MAPPED.get(kept) if self.pooled else None
        if base is None:
            try:
                base = rt.ipcOpenMemHandle(self.handle)  # lazily enabling peer access
            except cupy.cuda.runtime.CUDARuntimeError as e:
                raise Unreachable(f"CUDA IPC could not map the lists: {e}") from None
            if self.pooled:
                _MAPPED[kept] = base
        try:
            need = self.shape[1]
            out = []
            copy = getattr(rt, "memcpyDefault", 4)
            for dt, start in zip(self.dtypes, (self.head, self.offset)):
                dt = np.dtype(dt)
                arr = cupy.empty((z - a, need), dtype=dt)
                if arr.nbytes:
                    rt.memcpy(arr.data.ptr, base + start + a * need * dt.itemsize,
                              arr.nbytes, copy)
                out.append(arr)
            if self.pooled:  # the stamp read after the rows: still these lists?
                stamp = np.zeros(1, dtype=np.int64)
                rt.memcpy(stamp.ctypes.data, base, 8, copy)
                if int(stamp[0]) != self.stamp:
                    raise Unreachable("the lists' buffer was lent to newer lists meanwhile")
            return out[0], out[1]
        finally:
            if not self.pooled:
                rt.ipcCloseMemHandle(base)


def same_host(addresses) -> bool:
    """Whether every worker address is on one host (what CUDA IPC needs)."""
    from distributed.comm import get_address_host
    return len({get_address_host(a) for a in addresses}) <= 1
