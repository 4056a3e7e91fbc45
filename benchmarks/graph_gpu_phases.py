"""Where a CUDA SpGEMM / SpMV call spends its time: every kernel launch and host step of one
call timed with CUDA events (and host time), next to cuSPARSE's total, on the power-law
graphs of graph_gpu.py. Wraps the backend's internals (profiling only; nothing here is
used by the library). Prints JSON a size at a time; writes $OUT/spgemm_prof.json.

    python benchmarks/graph_gpu_phases.py 1e5,1e7
"""
import sys, time, json, os
import numpy as np
import cupy
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_gpu import powerlaw_graph, median_ms
import gbdist as gb
import gbdist.backends.cuda.graph as G
from gbdist.backends.cuda import graph_codegen as gc

K = G.CudaGraphKernels()
sr = gb.semirings
LOG = {}
ON = [False]

class Wrapped:
    def __init__(self, name, fn):
        object.__setattr__(self, "fn", fn); object.__setattr__(self, "name", name)
    def __setattr__(self, k, v):
        setattr(self.fn, k, v)
    def __call__(self, *a, **k):
        return timed(self.name, self.fn)(*a, **k)

def timed(name, fn):
    def w(*a, **k):
        if not ON[0]:
            return fn(*a, **k)
        e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
        t0 = time.perf_counter()
        e0.record(); r = fn(*a, **k); e1.record()
        LOG.setdefault(name, []).append((e0, e1, time.perf_counter() - t0))
        return r
    return w

G._binned_rows = timed("bins", G._binned_rows)
G._sort_rows = timed("sort_rows", G._sort_rows)
orig_gc = G.CudaGraphKernels._global_chunks
G.CudaGraphKernels._global_chunks = staticmethod(timed("global_chunks", orig_gc))
orig_k = G.CudaGraphKernels._kernels
def kern(self, mul, monoid, out, names):
    d = orig_k(self, mul, monoid, out, names)
    return {n: Wrapped(n.split("<")[0] + "<" + ",".join(p.strip() for p in n.split(",")[4:]), f) for n, f in d.items()}
G.CudaGraphKernels._kernels = kern

res = {}
for edges in [int(float(e)) for e in sys.argv[1].split(",")]:
    A = powerlaw_graph(edges)
    deg = cupy.diff(A.indptr)
    flops = int(cupy.sum(deg[A.indices].astype(cupy.int64)))
    C = K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)
    R = A @ A; R.sort_indices()
    assert C.nnz == R.nnz and bool(cupy.all(C.indices == R.indices))
    # ub distribution
    degB = deg.astype(cupy.int64)
    csum = cupy.concatenate([cupy.zeros(1, cupy.int64), cupy.cumsum(degB[A.indices])])
    ub = csum[A.indptr[1:].astype(cupy.int64)] - csum[A.indptr[:-1].astype(cupy.int64)]
    ubh = ub.get(); cnt = np.diff(C.indptr.get())
    edges_b = [s for s, _, _ in gc.SHARED_BINS]
    bh = np.searchsorted(edges_b, ubh, side="left")
    occ = {int(b): (int((bh == b).sum()), int(ubh[bh == b].sum()), int(cnt[bh == b].sum())) for b in np.unique(bh)}
    cus = median_ms(lambda: A @ A, 5)
    ours = median_ms(lambda: K.spgemm(A, A, sr.plus_times, out_dtype=np.float64), 5)
    cupy.cuda.Device().synchronize()
    LOG.clear(); ON[0] = True
    t0 = time.perf_counter()
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event(); e0.record()
    K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)
    e1.record(); e1.synchronize(); wall = time.perf_counter() - t0
    ON[0] = False
    phases = {k: (sum(cupy.cuda.get_elapsed_time(a, b) for a, b, _ in v), sum(h for *_, h in v) * 1e3, len(v)) for k, v in LOG.items()}
    rec = {"edges": int(A.nnz), "n": A.shape[0], "products": flops, "out_nnz": int(C.nnz), "cusparse_ms": cus,
           "ours_ms": ours, "instr_gpu_ms": cupy.cuda.get_elapsed_time(e0, e1), "instr_wall_ms": wall * 1e3,
           "bins(rows,ub,nnz)": occ, "phases(gpu_ms,host_ms,calls)": phases}
    print(json.dumps(rec, indent=1), flush=True)
    res[edges] = rec
out = os.environ.get("OUT")
if out:
    json.dump(res, open(os.path.join(out, "spgemm_prof.json"), "w"), indent=1)

# SpMV: per-launch times
for edges in [int(float(e)) for e in sys.argv[1].split(",")]:
    A = powerlaw_graph(edges)
    x = cupy.random.default_rng(1).random(A.shape[0])
    K.spmv(A, x, None, sr.plus_times, out_dtype=np.float64)
    cus = median_ms(lambda: A @ x, 20)
    ours = median_ms(lambda: K.spmv(A, x, None, sr.plus_times, out_dtype=np.float64), 20)
    LOG.clear(); ON[0] = True
    for _ in range(5):
        K.spmv(A, x, None, sr.plus_times, out_dtype=np.float64)
    cupy.cuda.Device().synchronize(); ON[0] = False
    phases = {k: (sum(cupy.cuda.get_elapsed_time(a, b) for a, b, _ in v) / 5, sum(h for *_, h in v) * 1e3 / 5, len(v) // 5) for k, v in LOG.items()}
    t0 = time.perf_counter()
    for _ in range(50):
        K.spmv(A, x, None, sr.plus_times, out_dtype=np.float64)
    host = (time.perf_counter() - t0) / 50 * 1e3
    cupy.cuda.Device().synchronize()
    print(json.dumps({"spmv_edges": int(A.nnz), "cusparse_ms": cus, "ours_ms": ours, "host_issue_ms": host, "phases": phases}, indent=1), flush=True)
