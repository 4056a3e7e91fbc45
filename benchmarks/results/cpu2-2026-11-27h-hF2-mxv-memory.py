"""Peak resident-set growth of one first mxv call in a fresh process (issue 28, helper hF2),
gbdist or SuiteSparse (python-graphblas), road grid or power law, 1 thread each side.

Warm-up (``--warm small`` or ``--warm same``): one call on a small graph of the same kind
(as cpu2-2026-11-27f-graph-memory.py does) or on a second graph of the measured size (a
copy of it, with other values), so the kernels are loaded on both sides before the
measured call. The graphs come from GRAPH_DIR (.npz) when present. One JSON line per run,
with the modules imported during the measured call that match sympy / mpmath / numba.

    MALLOC_MMAP_THRESHOLD_=131072 python benchmarks/results/cpu2-2026-11-27h-hF2-mxv-memory.py road 1e6 [--peer] [--warm same]
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GBDIST_NUM_THREADS", "1")
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from benchmarks import graph as bg  # noqa: E402
from benchmarks.graphs import peak_growth  # noqa: E402
import gbdist as gb  # noqa: E402
from gbdist import graph as gr  # noqa: E402


def graph(kind, size):
    import scipy.sparse as sps
    d = os.environ.get("GRAPH_DIR")
    f = d and Path(d) / f"{kind}-{size:g}.npz"
    if f and f.exists():
        A = sps.load_npz(f).tocsr()
    else:
        A, _ = bg.make_graph(kind, size)
        if f and size > 1e5:
            sps.save_npz(f, A, compressed=False)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    return A


def call(A, peer, seed):
    x = np.random.default_rng(seed).random(A.shape[0])
    if peer:
        P, xg = bg.peers.to_grb(A), bg.peers.grb.Vector.from_dense(x)
        sr = bg.peers.semiring.plus_times
        return lambda: P.mxv(xg, sr).new()
    G, xv = gb.Matrix(A), gb.Vector(x)
    return lambda: gr.mxv(G, xv, gb.semirings.plus_times)


def main():
    kind, size = sys.argv[1], float(sys.argv[2])
    peer = "--peer" in sys.argv
    warm = sys.argv[sys.argv.index("--warm") + 1] if "--warm" in sys.argv else "small"
    bg.peers.grb.ss.config["nthreads"] = 1
    A = graph(kind, size)
    if warm == "same":
        W = A.copy()
        W.data = np.random.default_rng(1).random(W.nnz)
    else:
        W = graph(kind, 900 if kind == "road" else 17_000)
    w = call(W, peer, 2)
    w()  # kernels compiled / loaded
    del w, W
    fn = call(A, peer, 0)
    before = set(sys.modules)
    grow = peak_growth(fn)
    new = sorted(m for m in set(sys.modules) - before
                 if m.split(".")[0] in ("sympy", "mpmath", "numba", "llvmlite"))
    print(json.dumps(dict(graph=kind, size=size, entries=int(A.nnz), op="mxv", peer=peer,
                          warm=warm, load=os.getloadavg()[0], peak_mib=grow / 2**20,
                          imported_during_call=sorted({m.split(".")[0] for m in new}))),
          flush=True)


if __name__ == "__main__":
    main()
