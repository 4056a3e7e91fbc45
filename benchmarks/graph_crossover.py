"""Where the GPU starts to win for graph work on host data (issue 12, "auto chooses CPU or
GPU by size"): each operation on a host ``gb.Matrix`` with the compiled CPU kernels (on 2
threads, the development machine's cores, and on every core of this machine) against the
same operation on the device *including* moving the operands there and the result back,
and against the device time alone (operands already resident). Power-law graphs of
benchmarks/graphs.py at 10^4 … 10^7 stored entries; every device answer checked against the
host one first; medians of ``--reps`` wall-clock runs (the device ones synchronised).
Prints a table; writes $OUT/graph_crossover.json when OUT is set.

    python benchmarks/graph_crossover.py [--edges 1e4,1e5,1e6,1e7] [--reps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graphs import power_law_graph  # noqa: E402


def _sync():
    import cupy
    cupy.cuda.Device().synchronize()


def median_s(fn, reps: int) -> float:
    fn()
    _sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        _sync()
        out.append(time.perf_counter() - t)
    return float(np.median(out))


def _same(a, b) -> bool:
    import gbdist as gb
    if isinstance(a, gb.Matrix):
        return bool(a.to_host().isequal(b.to_host())) or np.allclose(
            a.to_host().to_dense(), b.to_host().to_dense(), rtol=1e-9)
    if isinstance(a, gb.Vector):
        return np.allclose(np.asarray(a.to_host().to_dense()), np.asarray(b.to_host().to_dense()), rtol=1e-9)
    return np.allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-12)


def operations():
    import gbdist as gb
    from gbdist import algorithms as alg
    from gbdist import graph as gr
    sr = gb.semirings
    return {
        "mxv": lambda A, x, L, be: gr.mxv(A, x, sr.plus_times, backend=be),
        "mxm": lambda A, x, L, be: gr.mxm(A, A, sr.plus_times, backend=be),
        "masked_mxm": lambda A, x, L, be: gr.mxm(L, L.T, sr.plus_pair, mask=L.S, backend=be),
        "pagerank": lambda A, x, L, be: alg.pagerank(A, backend=be),
    }


def run(edges_list, reps: int, max_mxm_edges: float):
    import gbdist as gb
    from gbdist import graph as gr
    rows = []
    ops = operations()
    cores = len(os.sched_getaffinity(0))
    for edges in edges_list:
        n = max(int(edges / 17), 64)
        S = power_law_graph(n)
        A = gb.Matrix(S)
        L = gr.select(A, "tril", -1)
        x = gb.Vector(np.random.default_rng(0).random(n))
        for name, op in ops.items():
            if name == "mxm" and S.nnz > max_mxm_edges:
                continue
            rec = {"op": name, "edges": int(S.nnz), "n": n}
            os.environ["GBDIST_NUM_THREADS"] = "2"
            ref = op(A, x, L, "cpu")
            rec["cpu2_s"] = median_s(lambda: op(A, x, L, "cpu"), reps)
            os.environ["GBDIST_NUM_THREADS"] = str(cores)
            rec["cpu_all_s"] = median_s(lambda: op(A, x, L, "cpu"), reps)
            os.environ.pop("GBDIST_NUM_THREADS")

            def moved():
                Ad, xd, Ld = A.to_device(), x.to_device(), L.to_device()
                r = op(Ad, xd, Ld, "cuda")
                return r.to_host() if hasattr(r, "to_host") else (r.get() if hasattr(r, "get") else r)

            got = moved()
            assert _same(got, ref), (name, edges)
            rec["gpu_moved_s"] = median_s(moved, reps)
            Ad, xd, Ld = A.to_device(), x.to_device(), L.to_device()
            rec["gpu_resident_s"] = median_s(lambda: op(Ad, xd, Ld, "cuda"), reps)
            rec["cores"] = cores
            rows.append(rec)
            print(f"{name:>12} {rec['edges']:>10} {rec['cpu2_s']*1e3:>10.2f} {rec['cpu_all_s']*1e3:>10.2f} "
                  f"{rec['gpu_moved_s']*1e3:>10.2f} {rec['gpu_resident_s']*1e3:>10.2f}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", default="1e4,1e5,1e6,1e7")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-mxm-edges", type=float, default=2e6, help="A·A (unmasked) only up to this size")
    args = ap.parse_args(argv)
    print(f"{'op':>12} {'edges':>10} {'cpu 2 thr':>10} {'cpu all':>10} {'gpu+move':>10} {'gpu only':>10}  (ms)")
    rows = run([int(float(e)) for e in args.edges.split(",")], args.reps, args.max_mxm_edges)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "graph_crossover.json"), "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
