"""The road grid's unmasked mxm at 1 thread, gbdist and python-graphblas interleaved in one
process (the runner's graph and calls), medians of 9 after a warm-up call each."""
import os, time
os.environ["GBDIST_NUM_THREADS"] = "1"; os.environ["GBDIST_GRAPH_AUTO_DEVICE"] = "0"
import numpy as np
from benchmarks import graph as bg
from benchmarks import graph_peers as gp
import graphblas as grb
grb.ss.config["nthreads"] = 1
import gbdist as gb, gbdist.graph as gr
A, _ = bg.make_graph("road", 1e6)
G = gb.Matrix(A); P = gp.to_grb(A)
f1 = lambda: gr.mxm(G, G, gb.semirings.plus_times)
f2 = lambda: P.mxm(P, grb.semiring.plus_times).new()
f1(); f2()
r = {"gbdist": [], "ss": []}
for _ in range(9):
    for k, f in (("gbdist", f1), ("ss", f2)):
        t = time.perf_counter(); f(); r[k].append(time.perf_counter() - t)
print({k: round(1e3 * float(np.median(v)), 1) for k, v in r.items()}, round(np.median(r["gbdist"]) / np.median(r["ss"]), 2))
print({k: [round(1e3*x) for x in v] for k, v in r.items()})
