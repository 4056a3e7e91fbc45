"""The iterative algorithms written in the text language (gbdist/front/graph.gbd) against
the hand-written Python loops of gbdist.algorithms, on the same graphs in the same run.

    python benchmarks/text_loops.py [--repeat 5] [--only connected_components]

Graphs: a power-law graph of 10⁵ vertices and about 10⁶ entries (benchmarks/graphs.py) and
a road-like grid (200 × 200, 10% of its edges removed). Each algorithm is run once to
warm up (compiled kernels), then ``repeat`` times interleaved (Python, text, Python, ...);
the medians are printed as a Markdown table with the text's iteration count. The answers
are compared (equal labels, levels, parents; distances and ranks to 1e-9) before timing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gbdist import algorithms as alg  # noqa: E402
from gbdist import graph as gr  # noqa: E402
from gbdist.graph.program import _execute, _graph  # noqa: E402
from benchmarks.graphs import power_law_graph  # noqa: E402


def road_grid(side: int = 200, drop: float = 0.1, seed: int = 0) -> sps.csr_matrix:
    """A side × side grid graph with a fraction ``drop`` of its edges removed, symmetric."""
    rng = np.random.default_rng(seed)
    v = np.arange(side * side).reshape(side, side)
    r = np.r_[v[:, :-1].ravel(), v[:-1, :].ravel()]
    c = np.r_[v[:, 1:].ravel(), v[1:, :].ravel()]
    keep = rng.random(r.size) >= drop
    r, c = r[keep], c[keep]
    n = side * side
    A = sps.coo_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
    A.sort_indices()
    return A


def _dense(v, fill):
    return v.to_dense(fill=fill) if hasattr(v, "to_dense") else np.asarray(v)


ALGORITHMS = {  # name -> (Python call, operands after A, fill of the text's unstored entries)
    "bfs_levels": (lambda A: alg.bfs_levels(A, 0, direction="push"), (0,), -1),
    "bfs_parents": (lambda A: alg.bfs_parents(A, 0, direction="push"), (0,), -1),
    "sssp": (lambda A: alg.sssp(A, 0), (0,), np.inf),
    "pagerank": (alg.pagerank, (), 0.0),
    "connected_components": (alg.connected_components, (), 0),
}


def text_run(name, A, rest):
    """(the text definition's result, its loop's iteration count)."""
    result, values, _ = _execute(_graph(name), (A, *rest), {}, "auto")
    runs = [v for v in values if hasattr(v, "iterations")]
    return result, (runs[0].iterations if runs else 0)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--only", nargs="*", default=list(ALGORITHMS))
    args = p.parse_args(argv)
    graphs = {"power law, 10⁵ vertices, 10⁶ entries": power_law_graph(100_000, avg_degree=10),
              "road-like grid 200 × 200 (10% of edges removed)": road_grid()}
    print("| graph | algorithm | Python (ms) | text (ms) | text / Python | iterations |")
    print("| --- | --- | --- | --- | --- | --- |")
    for gname, A in graphs.items():
        for k, name in enumerate(args.only):
            py, rest, fill = ALGORITHMS[name]
            want, (res, its) = py(A), text_run(name, A, rest)  # warm-up; answers compared
            got = _dense(res, fill)
            assert np.allclose(got, want, rtol=1e-9, atol=1e-12), name
            tp, tt = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                py(A)
                tp.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                gr.run(name, A, *rest)
                tt.append(time.perf_counter() - t0)
            mp, mt = statistics.median(tp) * 1e3, statistics.median(tt) * 1e3
            label = gname if k == 0 else ""
            print(f"| {label} | {name} | {mp:.0f} | {mt:.0f} | {mt / mp:.2f} | {its} |",
                  flush=True)


if __name__ == "__main__":
    main()
