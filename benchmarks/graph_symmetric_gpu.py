"""The fourth seed's experiment on its own matrices (issue 30): symmetric SpMV on 7-point
Poisson 3D, a 27-point FEM-like stencil and a band (``benchmarks/stencils.py``, built on the
GPU), float64, against cuSPARSE (cupyx ``A @ x``) on the full matrix, in one process,
interleaved (variant after variant within each repetition; CUDA-event medians after a
checked warm-up).

Variants: cuSPARSE full CSR; the seed's plain kernel (a thread a row over U, row sum in a
register, every term an atomic; y zeroed in the timing); gbdist ``spmv_symmetric`` (rows in
order, with and without the shared-memory tile; the offsets kernel without atomics, plain
and compensated; the same on U by diagonals, whose one-time build is timed too, and whose
results must be the offsets kernel's bits); its reproducible fixed-point variant (with and
without the tile); ``gr.mxv(symmetric="upper")`` plain and compensated (the user's path);
gbdist's full-CSR ``spmv`` (the planner rule's kernel), the row-tile kernel and the in-order
kernel at 2 … 32 lanes a row by name, and ``gr.mxv`` through the front end; a plain in-order
full-CSR kernel written here (no bins) as the reference for gbdist's. Every result is
checked against cuSPARSE first; the reproducible one is run twice (bit-equal) and compared
on sampled rows with an exact host sum (math.fsum). Bytes: the matrix read once, x read
once, y written once; GB/s against a device copy measured in the same run.

Then the CPU-vs-GPU crossover on Poisson grids 8³ … 128³ and power-law graphs of 10³ … 10⁷
vertices: gbdist's compiled CPU SpMV and SciPy against gbdist's GPU SpMV and cuSPARSE with x
and y on the device, and with x moved there and y back, and ``gr.mxv`` on either side.

    python benchmarks/graph_symmetric_gpu.py [--grids 256,384,512] [--reps 20] [--json out.json]
        [--cross 8,...,128] [--cross-graphs 1e3,...,1e7]   (--grids "" --fem "": the crossover only)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from benchmarks.graph_gpu import interleaved  # CUDA-event medians, peers round-robin

SEED_SRC = r"""
extern "C" __global__ void seed_sym(int n, const int* __restrict__ Up, const int* __restrict__ Uj,
    const double* __restrict__ Ux, const double* __restrict__ x, double* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double xi = x[i];
  double s = 0.0;
  for (int p = Up[i]; p < Up[i + 1]; ++p) {
    const int j = Uj[p];
    const double a = Ux[p];
    s += a * x[j];
    if (j != i) atomicAdd(&y[j], a * xi);
  }
  atomicAdd(&y[i], s);
}
template <int G>
__global__ void inorder_full(long long n, const int* __restrict__ Ap, const int* __restrict__ Aj,
    const double* __restrict__ Ax, const double* __restrict__ x, double* __restrict__ y) {
  const long long t = (long long)blockIdx.x * 256 + threadIdx.x;
  const long long row = t / G;
  const int lane = (int)(t % G);
  double s = 0.0;
  if (row < n)
    for (long long p = Ap[row] + lane; p < Ap[row + 1]; p += G) s += Ax[p] * x[Aj[p]];
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off, G);
  if (lane == 0 && row < n) y[row] = s;
}
"""


def _events(fn):
    import cupy
    a, b = cupy.cuda.Event(), cupy.cuda.Event()
    a.record()
    fn()
    b.record()
    b.synchronize()
    return cupy.cuda.get_elapsed_time(a, b)


def copy_bandwidth() -> float:
    """GB/s of a 2 GiB device-to-device copy (bytes read + written)."""
    import cupy
    a = cupy.ones(2**28, dtype=cupy.float64)
    b = cupy.empty_like(a)
    t = interleaved({"c": lambda: b.__setitem__(Ellipsis, a)}, 10)["c"]
    return 2 * a.nbytes / t / 1e6


def one(kind: str, size, reps: int, bw: float) -> dict:
    import cupy

    import gbdist as gb
    from gbdist import graph as gr
    from gbdist.backends.cuda import graph_symmetric as gs
    from gbdist.backends.cuda.graph import CudaGraphKernels

    from benchmarks import stencils as st
    gen = {"poisson7": st.poisson3d, "fem27": st.fem27}.get(kind)
    t0 = time.perf_counter()
    if kind == "band":
        n_, b_ = size
        A = st.as_cupyx(st.band(n_, b_, xp=cupy))
        U = st.as_cupyx(st.band(n_, b_, upper=True, xp=cupy))
    else:
        A = st.as_cupyx(gen(size, xp=cupy))
        U = st.as_cupyx(gen(size, upper=True, xp=cupy))
    cupy.cuda.Device().synchronize()
    n = A.shape[0]
    rec = {"matrix": kind, "size": size, "n": n, "nnz": int(A.nnz), "nnz_upper": int(U.nnz),
           "build_s": time.perf_counter() - t0}
    K = CudaGraphKernels()
    sr = gb.semirings.plus_times
    x = cupy.random.default_rng(7).random(n) - 0.5
    mod = cupy.RawModule(code=SEED_SRC, options=("-std=c++17",),
                         name_expressions=[f"inorder_full<{g}>" for g in (1, 2, 4, 8)])
    seed_k = mod.get_function("seed_sym")
    inorder = {g: mod.get_function(f"inorder_full<{g}>") for g in (1, 2, 4, 8)}
    ys = cupy.zeros(n)
    yo = cupy.empty(n)

    def seed():
        ys.fill(0)
        seed_k(((n + 255) // 256,), (256,), (np.int32(n), U.indptr, U.indices, U.data, x, ys))

    G_full = 4 if kind == "poisson7" else 8

    def inord():
        inorder[G_full](((n * G_full + 255) // 256,), (256,), (np.int64(n), A.indptr, A.indices, A.data, x, yo))

    def sym(tile, comp=False, method=None):
        method = method or ("fixed" if comp else "atomic")
        return lambda: gs.spmv_rows(K, U, U.indptr, U.indices, U.data, x, sr, np.dtype(np.float64),
                                    np.dtype(np.float64), tile=tile, compensated=comp, method=method)[0]

    ref = A @ x
    nrm = float(cupy.linalg.norm(ref))
    # U by diagonals: its one-time build (the first product pays it; cached on U)
    info = gs.structure(U, U.indptr, U.indices, U.data)
    gs.diagonals(K, U, U.indptr, U.indices, U.data, sr, np.dtype(np.float64))
    builds = []
    for _ in range(3):
        info.pop("dia", None)
        builds.append(_events(lambda: gs.diagonals(K, U, U.indptr, U.indices, U.data, sr,
                                                   np.dtype(np.float64))))
    rec["dia_build_ms"] = sorted(builds)[1]
    rec["dia_bytes"] = int(info["dia"].nbytes) if info["dia"] is not None else None
    fns = {"cusparse": lambda: A @ x, "seed": seed, "sym_tile": sym(True), "sym_plain": sym(False),
           "sym_offsets": sym(False, False, "offsets"), "sym_offsets_comp": sym(False, True, "offsets"),
           "sym_exact_tile": sym(True, True), "sym_exact_plain": sym(False, True),
           "sym_dia": sym(False, False, "dia"), "sym_dia_comp": sym(False, True, "dia"),
           "spmv_full": lambda: K.spmv(A, x, None, sr, out_dtype=np.float64),
           "inorder_full": inord}
    # gbdist's full-CSR kernels by name: the row tiles, and the in-order kernel at each lane
    # count (the planner rule's pick is "spmv_full"; spmv_choice.choose_full)
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda.graph_tiles import full_choice
    choice, _ = full_choice(A, A.indptr)
    rec["rule"] = f"{choice.kernel} {choice.group}"
    forced = {}
    for kind, group in [("stream", None)] + [("rows", g) for g in getattr(gc, "SPMV_GROUPS", ())]:
        Kf = forced[f"spmv_{kind}{group or ''}"] = CudaGraphKernels()
        Kf.spmv_kernel, Kf.spmv_group = kind, group
    for k, Kf in forced.items():
        fns[k] = (lambda Kf=Kf: Kf.spmv(A, x, None, sr, out_dtype=np.float64))
    errs = {}
    outs = {}
    for k, f in fns.items():
        r = f()
        if k == "seed":
            r = ys
        elif k == "inorder_full":
            r = yo
        elif k.startswith("spmv_"):
            r = r[0]
        r = r.copy()
        outs[k] = r
        errs[k] = float(cupy.linalg.norm(r - ref)) / nrm
        assert errs[k] < 1e-12, (k, errs[k])
    # reproducibility: bit-equal across runs (a different x in between moves the atomics' order)
    for k in ("sym_exact_tile", "sym_exact_plain", "sym_offsets_comp", "sym_offsets", "sym_dia_comp"):
        again = fns[k]().copy()
        rec[f"{k}_bitwise_equal"] = bool(cupy.all(again.view(cupy.int64) == outs[k].view(cupy.int64)))
    rec["exact_tile_vs_plain_bitwise_equal"] = bool(
        cupy.all(outs["sym_exact_tile"].view(cupy.int64) == outs["sym_exact_plain"].view(cupy.int64)))
    for a_, b_ in (("sym_dia_comp", "sym_offsets_comp"), ("sym_dia", "sym_offsets")):
        rec[f"{a_}_vs_{b_}_bitwise_equal"] = bool(cupy.all(outs[a_].view(cupy.int64) == outs[b_].view(cupy.int64)))
    rec["plain_runs_bitwise_equal"] = bool(cupy.all(fns["sym_tile"]().view(cupy.int64)
                                                    == outs["sym_tile"].view(cupy.int64)))
    # exact host sums of sampled rows (fsum over the full matrix row)
    rows = np.random.default_rng(3).choice(n, 500, replace=False)
    Ap, Aj, Ax = A.indptr, A.indices, A.data
    xh = x.get()
    worst = {"cusparse": 0.0, "sym_exact_tile": 0.0, "sym_tile": 0.0, "sym_offsets_comp": 0.0,
             "sym_dia_comp": 0.0}
    for i in rows:
        lo, hi = int(Ap[int(i)]), int(Ap[int(i) + 1])
        a, j = Ax[lo:hi].get(), Aj[lo:hi].get()
        prods = [float(p) for p in a * xh[j]]  # each product rounded once, as the kernels do
        ex = math.fsum(prods)
        for k in worst:
            v = float(outs[k][int(i)])
            worst[k] = max(worst[k], abs(v - ex) / max(abs(ex), 1e-300) if ex else abs(v))
    rec["worst_rel_err_vs_fsum"] = worst
    rec["rel_err_vs_cusparse"] = errs
    t = interleaved(fns, reps)
    rec["ms"] = t
    ub = U.data.nbytes + U.indices.nbytes + U.indptr.nbytes + 2 * x.nbytes
    fb = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes + 2 * x.nbytes
    rec["bytes_upper"], rec["bytes_full"] = ub, fb
    rec["bound_ms_upper"], rec["bound_ms_full"] = ub / bw / 1e6, fb / bw / 1e6
    try:
        M = gb.Matrix(A)
        u = gb.Vector(x)
        y0 = gr.mxv(M, u, sr)
        got = y0.to_dense() if hasattr(y0, "to_dense") else None
        if got is not None:
            assert float(cupy.linalg.norm(cupy.asarray(got) - ref)) / nrm < 1e-12
        rec["ms"]["gr_mxv"] = interleaved({"m": lambda: gr.mxv(M, u, sr)}, max(3, reps // 2))["m"]
        # the user who holds the upper triangle: gr.mxv(symmetric="upper"), plain and compensated
        MU = gb.Matrix(U)
        for tag, comp in (("gr_mxv_upper", False), ("gr_mxv_upper_comp", True)):
            yu = gr.mxv(MU, u, sr, symmetric="upper", compensated=comp)
            rec[f"{tag}_kernel"] = yu.spmv_choice.kernel
            err = float(cupy.linalg.norm(cupy.asarray(yu.dense_parts()[0]) - ref)) / nrm
            assert err < 1e-12, (tag, err)
            rec["ms"][tag] = interleaved({"m": lambda c=comp: gr.mxv(MU, u, sr, symmetric="upper", compensated=c)},
                                         max(3, reps // 2))["m"]
        del M, u, MU
    except Exception as e:  # noqa: BLE001 - report, do not lose the run
        rec["gr_mxv_error"] = f"{type(e).__name__}: {e}"[:300]
    del A, U
    cupy.get_default_memory_pool().free_all_blocks()
    return rec


def _cross_one(label, Ah, Ad, reps: int, Ud=None) -> dict:
    """One matrix of the crossover: y = A x by gbdist's compiled CPU kernels and SciPy on
    the host, by gbdist's CUDA kernel and cuSPARSE (cupyx ``A @ x``) with x and y on the
    device, and the two GPU products again with x moved there and y back; ``gr.mxv`` on
    the host and on the device. Host wall-clock medians (the GPU synchronised after each
    call: a crossover is about what a caller waits for, launches included), every result
    checked against SciPy first."""
    import cupy

    import gbdist as gb
    from gbdist import graph as gr
    from gbdist.backends.cuda.graph import CudaGraphKernels
    from gbdist.graph.dispatch import get_kernels
    K = CudaGraphKernels()
    C = get_kernels("compiled")
    sr = gb.semirings.plus_times
    sync = cupy.cuda.Device().synchronize
    xh = np.random.default_rng(1).random(Ah.shape[0])
    xd = cupy.asarray(xh)
    ref = Ah @ xh
    Gh, Gd = gb.Matrix(Ah), gb.Matrix(Ad)
    uh, ud = gb.Vector(xh), gb.Vector(xd)

    def dense(v):
        return np.asarray(v.to_host().to_dense())

    checks = {"cpu_compiled": C.spmv(Ah, xh, None, sr, out_dtype=np.float64)[0],
              "gpu_gbdist": K.spmv(Ad, xd, None, sr, out_dtype=np.float64)[0].get(),
              "gpu_cusparse": (Ad @ xd).get(),
              "gr_mxv_cpu": dense(gr.mxv(Gh, uh, sr)), "gr_mxv_gpu": dense(gr.mxv(Gd, ud, sr))}
    for k, y in checks.items():
        assert np.allclose(y, ref, rtol=1e-12, atol=1e-12), k

    def host(fn):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts))

    def moved(fn):
        return lambda: fn(cupy.asarray(xh)).get()

    rec = {"matrix": label, "n": int(Ah.shape[0]), "nnz": int(Ah.nnz),
           "cpu_compiled_ms": host(lambda: C.spmv(Ah, xh, None, sr, out_dtype=np.float64)),
           "cpu_scipy_ms": host(lambda: Ah @ xh),
           "gpu_gbdist_ms": host(lambda: (K.spmv(Ad, xd, None, sr, out_dtype=np.float64), sync())),
           "gpu_cusparse_ms": host(lambda: (Ad @ xd, sync())),
           "gpu_gbdist_hostx_ms": host(moved(lambda v: K.spmv(Ad, v, None, sr, out_dtype=np.float64)[0])),
           "gpu_cusparse_hostx_ms": host(moved(lambda v: Ad @ v)),
           "gr_mxv_cpu_ms": host(lambda: gr.mxv(Gh, uh, sr)),
           "gr_mxv_gpu_ms": host(lambda: (gr.mxv(Gd, ud, sr), sync()))}
    if Ud is not None:
        rec["gpu_sym_hostx_ms"] = host(moved(lambda v: K.spmv_symmetric(Ud, v, None, sr, out_dtype=np.float64)[0]))
    return rec


def crossover(grids, vertices, reps: int) -> list:
    """CPU (gbdist compiled, SciPy) vs GPU (gbdist, cuSPARSE) SpMV (:func:`_cross_one`) on
    7-point Poisson grids (``grids``: g for g³ points; the symmetric kernel too) and on
    power-law graphs of ``vertices`` vertices (``benchmarks/graph_gpu.powerlaw_device``,
    average degree 16, brought to the host for the CPU side)."""
    import cupy

    from benchmarks import stencils as st
    from benchmarks.graph_gpu import powerlaw_device
    try:
        import numba
        threads = int(numba.get_num_threads())
    except ImportError:
        threads = None
    out = []
    jobs = [("poisson7", g) for g in grids] + [("powerlaw", v) for v in vertices]
    for kind, size in jobs:
        if kind == "poisson7":
            parts = st.poisson3d(size)  # NumPy arrays: as_cupyx copies them to the device
            Ah, Ad = st.as_scipy(parts), st.as_cupyx(parts)
            rec = _cross_one(f"poisson7 {size}^3", Ah, Ad, reps,
                             Ud=st.as_cupyx(st.poisson3d(size, upper=True)))
        else:
            Ad = powerlaw_device(size)
            Ah = Ad.get()
            Ah.sort_indices()
            rec = _cross_one(f"powerlaw {size:.0e}", Ah, Ad, reps)
        rec["cpu_threads"] = threads
        out.append(rec)
        print(json.dumps(rec), flush=True)
        del Ah, Ad
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--grids", default="256,384,512")
    ap.add_argument("--fem", default="128,192")
    ap.add_argument("--band", default="")
    ap.add_argument("--cross", default="8,12,16,24,32,48,64,96,128")
    ap.add_argument("--cross-graphs", default="1e3,1e4,1e5,1e6,1e7")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    bw = copy_bandwidth()
    res = {"copy_GBps": bw, "rows": [], "crossover": []}
    print(f"device copy {bw:.0f} GB/s", flush=True)
    jobs = [("poisson7", int(g)) for g in a.grids.split(",") if g]
    jobs += [("fem27", int(g)) for g in a.fem.split(",") if g]
    jobs += [("band", tuple(int(v) for v in b.split("x"))) for b in a.band.split(",") if b]
    for kind, size in jobs:
        try:
            rec = one(kind, size, a.reps, bw)
        except Exception as e:  # noqa: BLE001
            rec = {"matrix": kind, "size": size, "error": f"{type(e).__name__}: {e}"[:500]}
        res["rows"].append(rec)
        print(json.dumps(rec), flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    if a.cross or a.cross_graphs:
        try:
            res["crossover"] = crossover([int(g) for g in a.cross.split(",") if g],
                                         [int(float(v)) for v in a.cross_graphs.split(",") if v],
                                         max(5, a.reps // 2))
        except Exception as e:  # noqa: BLE001
            res["crossover_error"] = f"{type(e).__name__}: {e}"[:500]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("\nmatrix size nnz cuSP | seed tile atomic offsets offsets+comp fixedT fixedP spmv inorder grmxv"
          " dia dia+comp grmxv_upper grmxv_upper+comp"
          " (ms (ratio to cuSPARSE))")
    for r in res["rows"]:
        if "ms" not in r:
            print(r.get("matrix"), r.get("size"), r.get("error"))
            continue
        t = r["ms"]
        c = t["cusparse"]
        cells = [f"{t[k]:.3f}({t[k] / c:.2f})" if k in t else "-" for k in
                 ("seed", "sym_tile", "sym_plain", "sym_offsets", "sym_offsets_comp", "sym_exact_tile",
                  "sym_exact_plain", "spmv_full",
                  "inorder_full", "gr_mxv", "sym_dia", "sym_dia_comp", "gr_mxv_upper", "gr_mxv_upper_comp")]
        rows_best = min((k for k in t if k.startswith("spmv_rows")), key=t.get, default=None)
        if rows_best:
            cells.append(f"rule={r.get('rule')} stream={t['spmv_stream'] / c:.2f} "
                         f"best_rows={rows_best}:{t[rows_best] / c:.2f}")
        print(r["matrix"], r["size"], r["nnz"], f"{c:.3f}", " ".join(cells),
              "repro", r["sym_exact_tile_bitwise_equal"], r["sym_exact_plain_bitwise_equal"],
              r["sym_offsets_comp_bitwise_equal"], r.get("sym_dia_comp_bitwise_equal"),
              "dia=offsets", r.get("sym_dia_comp_vs_sym_offsets_comp_bitwise_equal"),
              f"dia_build {r.get('dia_build_ms', float('nan')):.2f}ms",
              "bound_up/full", f"{r['bound_ms_upper']:.3f}/{r['bound_ms_full']:.3f}")
    print("\n| matrix | entries | CPU compiled | SciPy | GPU gbdist | cuSPARSE | GPU gbdist, x moved "
          "| cuSPARSE, x moved | gr.mxv CPU | gr.mxv GPU |  (ms, host wall-clock medians)")
    print("|" + " --- |" * 10)
    keys = ("cpu_compiled_ms", "cpu_scipy_ms", "gpu_gbdist_ms", "gpu_cusparse_ms", "gpu_gbdist_hostx_ms",
            "gpu_cusparse_hostx_ms", "gr_mxv_cpu_ms", "gr_mxv_gpu_ms")
    for r in res["crossover"]:
        print(f"| {r['matrix']} | {r['nnz']:.3g} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")


if __name__ == "__main__":
    sys.exit(main())
