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
"""
from __future__ import annotations

import os
import socket

import numpy as np

_ALIGN = 256  # the index block starts on a fresh cache line of the one buffer
_OWN: dict = {}  # buffer id -> the producer's arrays, for a receiver in the same process


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
        self.offset = -(-d.nbytes // _ALIGN) * _ALIGN
        mem = cupy.cuda.Memory(max(self.offset + i.nbytes, 1))  # its own cudaMalloc: a base
        self._mem = mem                                         # pointer IPC can export
        ptr = cupy.cuda.MemoryPointer(mem, 0)
        self._d = cupy.ndarray(self.shape, d.dtype, ptr)
        self._i = cupy.ndarray(self.shape, i.dtype, ptr + self.offset)
        self._d[...] = d
        self._i[...] = i
        cupy.cuda.get_current_stream().synchronize()  # whole before any receiver maps it
        self.handle = cupy.cuda.runtime.ipcGetMemHandle(mem.ptr)
        self.where = _where()
        self.key = (self.where, mem.ptr)
        _OWN[self.key] = (self._d, self._i)

    def __del__(self):
        if "_d" in self.__dict__:  # the producer's object, not a received copy
            _OWN.pop(self.key, None)

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
        try:
            base = rt.ipcOpenMemHandle(self.handle)  # lazily enabling peer access
        except cupy.cuda.runtime.CUDARuntimeError as e:
            raise Unreachable(f"CUDA IPC could not map the lists: {e}") from None
        try:
            need = self.shape[1]
            out = []
            for dt, start in zip(self.dtypes, (0, self.offset)):
                dt = np.dtype(dt)
                arr = cupy.empty((z - a, need), dtype=dt)
                if arr.nbytes:
                    rt.memcpy(arr.data.ptr, base + start + a * need * dt.itemsize,
                              arr.nbytes, getattr(rt, "memcpyDefault", 4))
                out.append(arr)
            return out[0], out[1]
        finally:
            rt.ipcCloseMemHandle(base)


def same_host(addresses) -> bool:
    """Whether every worker address is on one host (what CUDA IPC needs)."""
    from distributed.comm import get_address_host
    return len({get_address_host(a) for a in addresses}) <= 1
