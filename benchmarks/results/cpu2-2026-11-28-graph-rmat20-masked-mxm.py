import os, sys, time, json
threads = int(sys.argv[1]); which = sys.argv[2]
os.environ["GBDIST_NUM_THREADS"] = str(threads)
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
sys.path.insert(0, "/work/hS")
import numpy as np
from benchmarks.graphs import rmat_graph
from benchmarks import graph_peers as peers
peers.grb.ss.config["nthreads"] = threads
import gbdist as gb
from gbdist import graph as gr
from gbdist import algorithms as alg
t0 = time.perf_counter()
A = rmat_graph(20, seed=0)
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
G, P = gb.Matrix(A), peers.to_grb(A)
print(f"graph {A.nnz} entries, built in {time.perf_counter()-t0:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
from benchmarks.graph import _masked
if which == "mxm":
    ours = lambda: gr.mxm(G, G, gb.semirings.plus_pair, mask=G.S)
    peer = lambda: _masked(P)
else:
    ours = lambda: alg.ktruss(G, 4)
    peer = lambda: peers.ktruss(P, 4)
res = {}
for name, fn in (("gbdist", ours), ("peer", peer), ("gbdist", ours), ("peer", peer)):
    t = time.perf_counter(); r = fn(); dt = time.perf_counter() - t
    res.setdefault(name, []).append(dt)
    nv = r.nvals
    print(f"{which} {name} {dt:.2f} s nvals {nv} load {os.getloadavg()[0]:.1f}", flush=True)
    if name == "gbdist": got = r
    else: want = r
from benchmarks.graph import same_matrix
same_matrix(got, want, which)
print("answers equal", flush=True)
print(json.dumps({"op": which, "threads": threads, **res}))
