"""Peak resident-set growth of one first call in a fresh process (docs/benchmarks.md,
"Memory on the road grid"): the graph built and the kernels loaded on a small graph first,
then one call of the operation measured (``benchmarks.graphs.peak_growth``), 1 thread.

    python benchmarks/graph_memory.py triangle_count            # gbdist, road grid 1000 x 1000
    python benchmarks/graph_memory.py ktruss --peer              # SuiteSparse's form instead
    python benchmarks/graph_memory.py triangle_count --tree PATH # gbdist from another checkout
    python benchmarks/graph_memory.py mxm_masked                 # C<A.S> = A plus.pair A

Run it once per measurement (each run is one fresh process); prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GBDIST_NUM_THREADS", "1")
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")


def _peer_masked(P):
    """benchmarks/graph.py's peer of mxm_masked: C<P.S> = P plus.pair P, int64."""
    from benchmarks import graph_peers as peers
    C = peers.grb.Matrix(peers.INT64, P.nrows, P.ncols)
    C(P.S) << P.mxm(P, peers.semiring.plus_pair)
    return C


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("op", choices=("triangle_count", "ktruss", "connected_components",
                                      "mxm_masked"))
    p.add_argument("--side", type=int, default=1000)
    p.add_argument("--peer", action="store_true", help="SuiteSparse (graph_peers) instead")
    p.add_argument("--tree", default=None, help="import gbdist from this checkout")
    a = p.parse_args()
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    if a.tree:
        sys.path.insert(0, str(Path(a.tree).resolve()))
    import numpy as np
    import gbdist as gb
    from gbdist import algorithms as alg
    from gbdist import graph as gr
    from benchmarks.graphs import peak_growth, road_grid
    A = road_grid(a.side, seed=0)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    small = road_grid(30, seed=0)
    if a.peer:
        from benchmarks import graph_peers as peers
        peers.grb.ss.config["nthreads"] = 1
        calls = {"triangle_count": lambda P: peers.triangle_count(P, "none", "dot"),
                 "ktruss": lambda P: peers.ktruss(P, 4),
                 "connected_components": peers.connected_components,
                 "mxm_masked": _peer_masked}
        fn = calls[a.op]
        fn(peers.to_grb(small))
        P = peers.to_grb(A)
        grow = peak_growth(lambda: fn(P))
    else:
        calls = {"triangle_count": alg.triangle_count, "ktruss": lambda M: alg.ktruss(M, 4),
                 "connected_components": alg.connected_components,
                 "mxm_masked": lambda M: gr.mxm(M, M, gb.semirings.plus_pair, mask=M.S)}
        fn = calls[a.op]
        fn(gb.Matrix(small))
        M = gb.Matrix(A)
        grow = peak_growth(lambda: fn(M))
    print(json.dumps(dict(op=a.op, side=a.side, entries=int(A.nnz), peer=a.peer,
                          gbdist=gb.__file__, peak_mib=grow / 2**20)))


if __name__ == "__main__":
    main()
