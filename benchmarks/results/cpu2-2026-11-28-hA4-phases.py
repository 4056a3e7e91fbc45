"""jaccard/cosine phase by phase (wall, user+sys CPU) at the given thread counts."""
import os, sys, time, resource
import numpy as np
import scipy.sparse as sps
size = float(sys.argv[1]); order = sys.argv[2].split(","); skip_masked = len(sys.argv) > 3
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
from benchmarks import graph as bg
import gbdist as gb
from gbdist import graph as gr
from gbdist.algorithms._common import plus_pair, plus_times, pattern_is_symmetric, host
A, _ = bg.make_graph("power_law", size)
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
M = gb.Matrix(A)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
for T in order:
    os.environ["GBDIST_NUM_THREADS"] = T
    t = {}
    def tm(name, f):
        t0, c0 = time.perf_counter(), cpu(); r = f(); t[name] = (round(time.perf_counter() - t0, 3), round(cpu() - c0, 3)); return r
    n = M.nrows
    P = tm("applyP", lambda: gr.apply(gb.ops.second, M, right=1.0, dtype=np.float64))
    Z = tm("applyZ", lambda: gr.apply(gb.ops.second, M, right=0.0, dtype=np.float64))
    sym = tm("sym", lambda: pattern_is_symmetric(M, "auto"))
    PT = P if sym else P.T
    if skip_masked:
        shared = P
    else:
        shared = tm("masked", lambda: gr.mxm(P, PT, plus_pair, mask=P.S, dtype=np.float64))
    shared = tm("ewise_add", lambda: gr.ewise_add(shared, Z, gb.ops.plus))
    d = tm("reduce", lambda: gr.reduce_rows(P, gb.ops.plus))
    deg = np.zeros(n); deg[host(d.indices)] = host(d.values)
    every = np.arange(n + 1, dtype=np.int32)
    D = gb.Matrix(sps.csr_matrix((deg, every[:n], every), shape=(n, n)))
    d_row = tm("D.P", lambda: gr.mxm(D, P, plus_times))
    d_col = tm("P.D", lambda: gr.mxm(P, D, plus_times))
    s = tm("ew_plus", lambda: gr.ewise_mult(d_row, d_col, gb.ops.plus))
    u = tm("ew_minus", lambda: gr.ewise_mult(s, shared, gb.ops.minus))
    j = tm("ew_div", lambda: gr.ewise_mult(shared, u, gb.ops.div))
    nm = tm("ew_times", lambda: gr.ewise_mult(d_row, d_col, gb.ops.times))
    nm = tm("sqrt", lambda: gr.apply(gb.ops.sqrt, nm))
    nm = tm("max", lambda: gr.apply(gb.ops.max, nm, right=1.0))
    tot = sum(v[0] for v in t.values()); totc = sum(v[1] for v in t.values())
    print(f"T={T} load {os.getloadavg()[0]:.2f} total wall {tot:.2f} cpu {totc:.2f}", t, flush=True)
