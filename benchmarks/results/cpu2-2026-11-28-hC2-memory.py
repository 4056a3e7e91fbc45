"""Peak resident-set growth of one first call of ``mxm`` (A·A, plus_times), ``jaccard`` or
``cosine`` on the road grid (1000 × 1000, 10% of edges removed), in a fresh process, 1
thread, the RSS read every 0.2 ms (``/proc/self/statm``) while the call runs. The graph is
read from GRAPH_DIR's ``road-1e+06.npz`` (written by cpu2-2026-11-27f-graph-memory.py) and
the operation run once on a 900 × 900 corner first (kernels compiled or loaded).

    MALLOC_MMAP_THRESHOLD_=131072 python benchmarks/results/cpu2-2026-11-28-hC2-memory.py OP [--peer]

``--peer``: python-graphblas (benchmarks/graph_peers.py) instead of gbdist. Run from the
checkout whose gbdist is measured (its root first on sys.path).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
os.environ.setdefault("GBDIST_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sps  # noqa: E402

op, peer = sys.argv[1], "--peer" in sys.argv
A = sps.load_npz(os.path.join(os.environ.get("GRAPH_DIR", "/tmp/hC2/graphs"),
                              "road-1e+06.npz")).tocsr()
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
small = A[:900 * 900, :900 * 900].tocsr()
if peer:
    import graph_peers as peers  # noqa: E402
    peers.grb.ss.config["nthreads"] = 1
    wrap = peers.to_grb
    f = {"mxm": lambda G: G.mxm(G, peers.semiring.plus_times).new(),
         "jaccard": peers.jaccard, "cosine": peers.cosine}[op]
else:
    import gbdist as gb  # noqa: E402
    from gbdist import graph as gr  # noqa: E402
    from gbdist.algorithms import similarity as sim  # noqa: E402
    wrap = gb.Matrix
    f = {"mxm": lambda G: gr.mxm(G, G, gb.semirings.plus_times),
         "jaccard": sim.jaccard, "cosine": sim.cosine}[op]
G = wrap(A)
f(wrap(small))


def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


base = rss()
peak, done = [base], threading.Event()


def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.0002)


t = threading.Thread(target=sample, daemon=True)
t.start()
C = f(G)
after = rss()
done.set()
t.join()
print(op, "peer" if peer else "gbdist", "peak growth", (max(peak[0], after) - base) / 2**20,
      "MiB; after (result held)", (after - base) / 2**20)
