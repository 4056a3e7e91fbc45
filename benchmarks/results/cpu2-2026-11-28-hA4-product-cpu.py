"""Masked product: user/sys CPU and minor faults, per mode: T=1, T=2, T=1 split (8 ranges/block, serial)."""
import os, sys, time, resource
import numpy as np
size = float(sys.argv[1]); modes = sys.argv[2].split(",")
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
from benchmarks import graph as bg
import gbdist as gb
from gbdist import graph as gr
from gbdist.algorithms._common import plus_pair
from gbdist.backends.compiled import graph as cg
A, _ = bg.make_graph("power_law", size)
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
G = gb.Matrix(A)
P = gr.apply(gb.ops.second, G, right=1.0, dtype=np.float64)
orig_run, orig_ranges = cg._run, cg._ranges
def serial_run(kernel, head, ranges, tail=()):
    for r0, r1 in ranges:
        kernel(*head, np.int64(r0), np.int64(r1), *tail)
for mode in modes:
    if mode == "1split":
        os.environ["GBDIST_NUM_THREADS"] = "2"; cg._run = serial_run
    else:
        os.environ["GBDIST_NUM_THREADS"] = mode; cg._run = orig_run
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter(); l0 = os.getloadavg()[0]
    r = gr.mxm(P, P, plus_pair, mask=P.S, dtype=np.float64)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{mode}: wall {time.perf_counter()-t0:.2f} user {r1.ru_utime-r0.ru_utime:.2f} sys {r1.ru_stime-r0.ru_stime:.2f} minflt {r1.ru_minflt-r0.ru_minflt} load {l0:.2f}->{os.getloadavg()[0]:.2f}", flush=True)
    del r
