"""A copy of cpu2-2026-11-27i-hG2-pairs.py (helper hD5) with one option: SIDES=gbdist in the
environment times gbdist's first call alone (no peer call and no check: the code before a
change, whose peer is timed beside the changed code). Otherwise unchanged.

Lean interleaved timing for the graph rows too slow for the runner's full protocol
(benchmarks/run.py graph: check every peer variant, pick the fastest with two calls each,
a warm-up pair, ``--repeat`` pairs, then two peak-memory calls). Here, for one operation of
benchmarks.graph.cases on one graph, in one process: gbdist's first call (its kernels load;
its answer kept), the peer's first call (its answer checked against gbdist's with the
runner's own check), then PAIRS interleaved timed pairs (ours, peer / peer, ours / ...); with PAIRS = 0 the two
first calls are the row (gbdist's then includes loading its kernels: a bias against it).
Same graphs, same calls and same checks as the runner; fewer calls. One JSON line per pair
and a summary line; the load average is read before and after each call.

    python benchmarks/results/cpu2-2026-11-27j-hD5-pairs.py power_law 1.7e7 jaccard 2 1 [variant]
    (graph, size, operation, threads, pairs)
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path

T = sys.argv[4]
os.environ["GBDIST_NUM_THREADS"] = T
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from benchmarks import graph as bg  # noqa: E402


def main():
    kind, size, op, pairs = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[5])
    variant = sys.argv[6] if len(sys.argv) > 6 else None
    bg.peers.grb.ss.config["nthreads"] = int(T)
    t0 = time.perf_counter()
    A, what = bg.make_graph(kind, size)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    c, refs = bg.cases(A, False, kind)
    ours, peer, _, check = c[op]
    if isinstance(peer, dict):
        peer = peer[variant] if variant else next(iter(peer.values()))
    print(json.dumps(dict(what=what, entries=int(A.nnz), n=A.shape[0], op=op, threads=int(T),
                          build_s=time.perf_counter() - t0)), flush=True)

    def timed(fn):
        l0 = os.getloadavg()[0]
        t = time.perf_counter()
        r = fn()
        return r, time.perf_counter() - t, l0, os.getloadavg()[0]

    r_ours, t_first, l0, l1 = timed(ours)
    print(json.dumps(dict(op=op, first_call_gbdist_s=t_first, load_before=l0, load_after=l1,
                          nvals=int(r_ours.nvals) if hasattr(r_ours, "nvals") else None)),
          flush=True)
    if os.environ.get("SIDES") == "gbdist":
        return
    r_peer, t_pfirst, l0, l1 = timed(peer)
    print(json.dumps(dict(op=op, first_call_peer_s=t_pfirst, load_before=l0, load_after=l1)),
          flush=True)
    check(r_ours, r_peer)
    if op in refs:
        refs[op](r_ours)
    del r_ours, r_peer
    print(json.dumps(dict(op=op, first_call_gbdist_s=t_first, first_call_peer_s=t_pfirst,
                          checked=True)), flush=True)
    t_o, t_p = [], []
    for k in range(pairs):
        order = ((ours, t_o, "gbdist"), (peer, t_p, "peer"))
        for fn, acc, side in (order if k % 2 == 0 else order[::-1]):
            _, t, l0, l1 = timed(fn)
            acc.append(t)
            print(json.dumps(dict(op=op, pair=k, side=side, s=t, load_before=l0,
                                  load_after=l1)), flush=True)
    if not pairs:  # PAIRS = 0: the first calls are the row (gbdist's includes its kernel load)
        t_o, t_p = [t_first], [t_pfirst]
    row = dict(graph=kind, edges=int(A.nnz), n=A.shape[0], op=op, threads=int(T),
               gbdist_s=statistics.median(t_o), suitesparse_s=statistics.median(t_p),
               pairs=pairs, peer_variant=variant)
    row["ratio"] = row["gbdist_s"] / row["suitesparse_s"]
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
