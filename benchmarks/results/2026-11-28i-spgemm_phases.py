"""Where one call of the CUDA SpGEMM A·A (plus_times, float64, one pass) spends its time, one
GPU (issue 30), after 2026-11-28 (i): the larger bins on side streams beside the one launch,
the one launch's bins read on the device, the compacted copy allocated with the bounds' slots
(the output's size read last), B's row spans kept on B. cuSPARSE and gbdist timed in the same
process (``cupyx.profiler.benchmark`` medians), then one call instrumented: a CUDA event pair
around every gbdist kernel launch (on the stream it runs on) with the host clock at each launch
and at the bins' read, and the device span of the whole call; then 30 calls under cProfile.
The 2026-11-28 (g) script instruments the code before these changes.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28i-spgemm_phases.py pl:10000 pl:100000
"""
from __future__ import annotations

import json
import sys
import time

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import TimedKernel, _same_csr, host_profile, spanned
from gbdist.backends.cuda import graph as G
from gbdist.backends.cuda import graph_bins as GB
from gbdist.backends.cuda import graph_spgemm as SG

REC = None


def _Timed(name, fn):
    """A kernel whose launches are timed while REC is set (benchmarks.graph_gpu.TimedKernel)."""
    return TimedKernel(name, fn, lambda: REC)


class _Mod:
    def __init__(self, mod):
        self.mod = mod

    def get_function(self, n):
        return _Timed(n.split("<")[0], self.mod.get_function(n))


_kernels = G.CudaGraphKernels._kernels
G.CudaGraphKernels._kernels = lambda self, mul, monoid, out, names: {
    n: _Timed(n.split("<")[0][:40], f) for n, f in _kernels(self, mul, monoid, out, names).items()}
_bin_module = GB._bin_module
SG._bin_module = lambda: _Mod(_bin_module())
_bk = GB._bin_kernels
GB._bin_kernels = lambda: tuple(_Timed(n, f) for n, f in zip(("gb_bin_count", "gb_bin_scatter", "gb_bin_tails"),
                                                                _bk()))
_binned = SG.binned


def _binned_timed(*a, **kw):
    out = _binned(*a, **kw)
    if REC is not None:
        REC["reads"].append(time.perf_counter())
        REC["bins"].append(np.diff(out.offsets).tolist())
    return out


SG.binned = _binned_timed


def host_steps(fn, depth: int = 4, top: int = 45):
    """One uninstrumented call (REC unset) traced with sys.setprofile: every call at most
    ``depth`` levels below ``fn`` (fn -> CudaGraphKernels.spgemm -> spgemm -> its calls -> theirs),
    as (host ms at its return from the call's start, ms inside it, caller, callee), the
    ``top`` longest kept in call order. The tracer adds ~1 µs a call."""
    import sys as _sys
    cupy.cuda.Device().synchronize()
    events, stack = [], []
    t0 = time.perf_counter()

    def prof(frame, event, arg):
        now = time.perf_counter()
        if event in ("call", "c_call"):
            name = arg.__qualname__ if event == "c_call" else frame.f_code.co_name
            caller = frame.f_code.co_name if event == "c_call" else (frame.f_back.f_code.co_name if frame.f_back else "?")
            stack.append((name, caller, now))
        elif event in ("return", "c_return", "c_exception") and stack:
            name, caller, start = stack.pop()
            if len(stack) <= depth:  # 0: fn itself; fn -> K.spgemm -> spgemm -> its calls: 3
                events.append((round((now - t0) * 1e3, 4), round((now - start) * 1e3, 4), caller, name))
    _sys.setprofile(prof)
    fn()
    _sys.setprofile(None)
    cupy.cuda.Device().synchronize()
    keep = sorted(sorted(events, key=lambda e: -e[1])[:top])
    return keep


def main():
    global REC
    from benchmarks import stencils
    from benchmarks.graph_gpu import powerlaw_device
    K = G.CudaGraphKernels()
    for arg in sys.argv[1:]:
        kind, *a = arg.split(":")
        A = (powerlaw_device(int(a[0])) if kind == "pl" else
             stencils.as_cupyx(stencils.poisson3d(int(a[0]), xp=cupy, seed=1)) if kind == "poisson"
             else stencils.as_cupyx(stencils.fem27(int(a[0]), xp=cupy, seed=1)))
        f = lambda: K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)  # noqa: E731
        C = f()
        _same_csr(C, A @ A)
        r = {"matrix": arg, "nnz": int(A.nnz), "out": int(C.nnz)}
        del C
        reps = 30 if A.nnz < 10**7 else 10
        for _ in range(2):
            for name, g in (("gbdist", f), ("cusparse", lambda: A @ A)):
                b = benchmark(g, n_repeat=reps, n_warmup=3)
                r[name] = {"cpu_ms": float(np.median(b.cpu_times)) * 1e3,
                           "gpu_ms": float(np.median(b.gpu_times[0])) * 1e3}
        r["ratio"] = r["gbdist"]["gpu_ms"] / r["cusparse"]["gpu_ms"]
        for _ in range(2):  # the second instrumented call kept (the first builds events)
            REC = {"launches": [], "reads": [], "bins": []}
            t0, t1, s0, s1 = spanned(f)
            rec, REC = REC, None
        timeline = []
        for name, t, s, e in rec["launches"]:
            timeline.append([name, round((t - t0) * 1e3, 3),
                             round(cupy.cuda.get_elapsed_time(s0, s), 3),
                             round(cupy.cuda.get_elapsed_time(s, e), 3)])
        r["instrumented"] = {
            "host_ms": (t1 - t0) * 1e3, "device_span_ms": cupy.cuda.get_elapsed_time(s0, s1),
            "kernels_ms": sum(x[3] for x in timeline),
            "timeline [name, host launch ms, device start ms, device ms]": timeline,
            "bin_reads_host_ms": [round((t - t0) * 1e3, 3) for t in rec["reads"]],
            "bins": rec["bins"]}
        r["profile_top"] = host_profile(f, 30, 14)
        r["host_steps [ms at return, ms inside, caller, callee]"] = host_steps(f)
        print(json.dumps(r), flush=True)
        A = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
