"""Where the CUDA SpGEMM A·A (plus_times, graph_gpu's power-law graphs) spends a call, one GPU
(issue 30): cuSPARSE and gbdist timed in the same process (cupyx.profiler.benchmark medians),
then one call instrumented: a CUDA event pair around every gbdist kernel launch (graph and
bin kernels; CuPy's own cumsum/astype/gather kernels are not wrapped) and a host clock at
each launch and host read, and 30 calls under cProfile for the host's share.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28e-spgemm_phases.py 10000 100000 1000000

One JSON line per size: gpu/cpu medians, per-kernel device ms, the kernels' sum, the
instrumented call's span, its host-read count, the bins' sizes of both passes, and the top
host functions by own time.
"""
from __future__ import annotations

import json
import sys
import time

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import TimedKernel, _same_csr, host_profile, spanned, powerlaw_device
from gbdist.backends.cuda import graph as G
from gbdist.backends.cuda import graph_bins as GB

REC = None


def _Timed(name, fn):
    """A kernel whose launches are timed while REC is set (benchmarks.graph_gpu.TimedKernel)."""
    return TimedKernel(name, fn, lambda: REC)


_kernels = G.CudaGraphKernels._kernels


def _wrapped_kernels(self, mul, monoid, out_dtype, names):
    return {n: _Timed(n.split("<")[0], f) for n, f in _kernels(self, mul, monoid, out_dtype, names).items()}


G.CudaGraphKernels._kernels = _wrapped_kernels


class _Mod:
    def __init__(self, mod):
        self.mod = mod

    def get_function(self, n):
        return _Timed(n.split("<")[0], self.mod.get_function(n))


_bin_module = GB._bin_module
G._bin_module = lambda: _Mod(_bin_module())
_bk = GB._bin_kernels
GB._bin_kernels = lambda: tuple(_Timed(n, f) for n, f in zip(("gb_bin_count", "gb_bin_scatter"), _bk()))
_binned = GB._binned_rows


def _binned_rows(keys, edges, skip_zero, extra=None):
    out = _binned(keys, edges, skip_zero, extra)
    if REC is not None:
        REC["reads"].append(time.perf_counter())
        REC["bins"].append(np.diff(out[1]).tolist())
    return out


G._binned_rows = _binned_rows


def _stamped(name, fn):
    """fn, recording its host entry and exit (ms after the call's start) while instrumented."""
    def wrapped(*a, **kw):
        if REC is None:
            return fn(*a, **kw)
        t = time.perf_counter()
        out = fn(*a, **kw)
        REC["steps"].append((name, t, time.perf_counter()))
        return out
    return wrapped


G.CudaGraphKernels._global_chunks = staticmethod(_stamped("global_chunks", G.CudaGraphKernels._global_chunks))
G._sort_rows = _stamped("sort_rows", G._sort_rows)
G.make_csr = _stamped("make_csr", G.make_csr)
G._csr_parts = _stamped("csr_parts", G._csr_parts)
_wrapped_kernels = _stamped("kernels", _wrapped_kernels)
G.CudaGraphKernels._kernels = _wrapped_kernels


def main():
    global REC
    K = G.CudaGraphKernels()
    sr = gb.semirings
    for n in [int(a) for a in sys.argv[1:]]:
        A = powerlaw_device(n)
        f = lambda: K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)  # noqa: E731
        C = f()
        _same_csr(C, A @ A)
        r = {"n": n, "nnz": int(A.nnz), "out": int(C.nnz)}
        del C
        reps = 30 if n < 10**6 else 10
        for _ in range(2):
            for name, g in (("gbdist", f), ("cusparse", lambda: A @ A)):
                b = benchmark(g, n_repeat=reps, n_warmup=3)
                r[name] = {"cpu_ms": float(np.median(b.cpu_times)) * 1e3,
                           "gpu_ms": float(np.median(b.gpu_times[0])) * 1e3}
        r["ratio"] = r["gbdist"]["gpu_ms"] / r["cusparse"]["gpu_ms"]
        REC = {"launches": [], "reads": [], "bins": [], "steps": []}
        t0, t1, s0, s1 = spanned(f)
        rec, REC = REC, None
        per = {}
        for name, t, s, e in rec["launches"]:
            ms = cupy.cuda.get_elapsed_time(s, e)
            per.setdefault(name, [0, 0.0])
            per[name][0] += 1
            per[name][1] += ms
        r["instrumented"] = {
            "host_ms": (t1 - t0) * 1e3, "device_span_ms": cupy.cuda.get_elapsed_time(s0, s1),
            "kernels": {k: {"launches": c, "ms": round(ms, 4)} for k, (c, ms) in per.items()},
            "kernels_ms": sum(ms for _, ms in per.values()),
            "launch_host_ms": [round((t - t0) * 1e3, 3) for _, t, _, _ in rec["launches"]],
            "bin_reads_host_ms": [round((t - t0) * 1e3, 3) for t in rec["reads"]],
            "bins": rec["bins"],
            "steps_host_ms": [[k, round((a - t0) * 1e3, 3), round((b - t0) * 1e3, 3)]
                              for k, a, b in rec["steps"]]}
        r["profile_top"] = host_profile(f, 30, 18)
        print(json.dumps(r), flush=True)
        A = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
