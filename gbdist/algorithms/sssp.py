"""Single-source shortest paths: Bellman–Ford over the ``min_plus`` semiring.

With ⊗ = + (extend a path by an edge) and ⊕ = min (keep the cheapest), one product

    t = d min.+ A        t(j) = min_k d(k) + A(k, j)

relaxes every edge leaving the vertices in ``d``. Bellman–Ford repeats ``d = min(d, t)``.
A vertex whose distance did not change cannot improve its neighbours again, so only the
vertices that changed in the last round (the *frontier*, a sparse vector) are pushed: the
same answer as relaxing every edge each round, at the cost of the edges that matter. The
frontier is the part of ``t`` that is new or shorter than ``d``, found on ``t``'s entries
only (not by comparing the whole of ``d`` before and after).

Structural semantics: only stored entries are edges, so an explicitly stored 0 is an edge of
weight 0 (it is *not* "no edge"), and an unreachable vertex never gets an entry (+inf).
After n rounds with a change in the last one, some cycle keeps lowering distances: a
negative cycle reachable from the source, reported as :class:`NegativeCycleError`.
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import NegativeCycleError, as_matrix, check_source, host, min_plus, vector


def sssp(A, source, *, backend: str = "auto") -> np.ndarray:
    """Shortest-path distance from ``source`` to every vertex (float64, +inf unreachable).

    ``A[i, j]`` is the weight of edge i -> j (stored zeros are weight-0 edges; negative
    weights are allowed). Matches ``networkx.single_source_bellman_ford_path_length`` and
    ``scipy.sparse.csgraph.shortest_path(method="BF")`` on the stored edges.
    Raises :class:`NegativeCycleError` when a negative cycle is reachable from ``source``.
    """
    M = as_matrix(A)
    s = check_source(M, source)
    n = M.nrows
    d = vector(M, [s], [0.0], dtype=np.float64)  # stored = reached, value = distance
    frontier = d
    for _ in range(n + 1):
        # relax the edges leaving the vertices that changed last round
        t = gr.vxm(frontier, M, min_plus, backend=backend)
        # no better: t(j) >= d(j) where both are stored (the sign of t - d is exact in
        # floating point); the rest of t is new or shorter, the next frontier
        no_better = gr.select(gr.ewise_mult(t, d, gb.ops.minus, backend=backend), ">=", 0,
                              backend=backend)
        frontier = gr.apply(gb.ops.identity, t, mask=~no_better.S, backend=backend)
        d = gr.ewise_add(d, frontier, gb.ops.min, backend=backend)
        if not frontier.nvals:
            break
    else:
        raise NegativeCycleError(
            "a negative-weight cycle is reachable from the source",
            expected="no cycle whose edge weights sum below 0 on a path from the source",
            got=f"distances still decreasing after {n + 1} rounds of Bellman-Ford",
            hint="shortest paths are unbounded; remove the cycle or check the edge signs")
    out = np.full(n, np.inf)
    out[host(d.indices)] = host(d.values)
    return out
