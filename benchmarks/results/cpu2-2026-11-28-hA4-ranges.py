"""Per-range wall/cpu/thread of the masked product's kernel at T=2."""
import os, sys, time, threading, json
import numpy as np
size = float(sys.argv[1]); T = sys.argv[2]
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
os.environ["GBDIST_NUM_THREADS"] = T
from benchmarks import graph as bg
import gbdist as gb
from gbdist import graph as gr
from gbdist.algorithms._common import plus_pair
from gbdist.backends.compiled import graph as cg
A, _ = bg.make_graph("power_law", size)
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
G = gb.Matrix(A)
P = gr.apply(gb.ops.second, G, right=1.0, dtype=np.float64)
log = []
orig = cg._run
def run(kernel, head, ranges, tail=()):
    def k(*a):
        t0, c0 = time.perf_counter(), time.thread_time()
        kernel(*a)
        log.append((threading.get_ident() % 1000, int(a[-2]), int(a[-1]), time.perf_counter() - t0, time.thread_time() - c0, t0))
    t0 = time.perf_counter()
    orig(k, head, ranges, tail)
    log.append(("call", len(ranges), 0, time.perf_counter() - t0, 0, t0))
cg._run = run
t0, c0 = time.perf_counter(), time.process_time()
r = gr.mxm(P, P, plus_pair, mask=P.S, dtype=np.float64)
print(f"T={T} wall {time.perf_counter()-t0:.2f} cpu {time.process_time()-c0:.2f}", flush=True)
for x in log[:60]:
    print(x)
calls = [x for x in log if x[0] == "call"]
print("calls", len(calls), "sum call wall", sum(x[3] for x in calls))
rng = [x for x in log if x[0] != "call"]
print("ranges", len(rng), "sum range wall", sum(x[3] for x in rng), "sum range cpu", sum(x[4] for x in rng))
