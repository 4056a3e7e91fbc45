"""A copy of cpu2-2026-11-27f-graph-memory.py (helper hG2) with the R-MAT graph added
(``rmat SCALE``: kernels loaded on R-MAT scale 14 first; the scale-20 graph kept in
GRAPH_DIR like the others). Otherwise unchanged.

Peak resident-set growth of one first call in a fresh process, for any operation of
benchmarks/graph.py on the road grid or the power-law graph (benchmarks/graph_memory.py
does the same for four operations on the road grid only). The graph is built, both
sides' operands made (benchmarks.graph.cases) and the kernels loaded on a small graph of
the same kind first; then one call of the operation is measured
(benchmarks.graphs.peak_growth). 1 thread on both sides. One JSON line per run.

    python benchmarks/results/cpu2-2026-11-27i-hG2-graph-memory.py rmat 20 pagerank [--peer [VARIANT]]
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


def graph(kind, size):
    """The benchmark graph, kept in GRAPH_DIR as .npz after its first build (so that each
    fresh process loads it instead of drawing it again)."""
    import scipy.sparse as sps
    d = os.environ.get("GRAPH_DIR")
    f = d and Path(d) / f"{kind}-{size:g}.npz"
    if f and f.exists():
        return sps.load_npz(f).tocsr()
    A, _ = bg.make_graph(kind, size)
    if f and (size > 1e5 or kind == "rmat" and size > 16):
        sps.save_npz(f, A, compressed=False)
    return A


def calls(kind, size, op, peer, variant):
    A = graph(kind, size)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    c, _ = bg.cases(A, False, kind)
    ours, p = c[op][:2]
    if isinstance(p, dict):
        p = p[variant] if variant else next(iter(p.values()))
    return A, (p if peer else ours)


def main():
    kind, size, op = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    peer = "--peer" in sys.argv
    variant = sys.argv[sys.argv.index("--peer") + 1] if peer and \
        len(sys.argv) > sys.argv.index("--peer") + 1 else None
    bg.peers.grb.ss.config["nthreads"] = 1
    small = {"road": 900, "rmat": 14}.get(kind, 17_000)
    _, warm = calls(kind, small, op, peer, variant)
    warm()  # kernels compiled / loaded on the small graph
    A, fn = calls(kind, size, op, peer, variant)
    if op == "ewise_union":
        bg._second(A, kind)  # the second operand is input, built before the call
    if op == "ewise_union_vec":
        bg._half_vectors(A.shape[0])
    grow = peak_growth(fn)
    print(json.dumps(dict(graph=kind, size=size, entries=int(A.nnz), op=op, peer=peer,
                          variant=variant, load=os.getloadavg()[0], peak_mib=grow / 2**20)),
          flush=True)


if __name__ == "__main__":
    main()
