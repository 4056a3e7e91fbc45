"""Single-source shortest paths: Bellman–Ford over the ``min_plus`` semiring.

With ⊗ = + (extend a path by an edge) and ⊕ = min (keep the cheapest), one product

    t = d min.+ A        t(j) = min_k d(k) + A(k, j)

relaxes every edge leaving the vertices in ``d``. Bellman–Ford repeats ``d = min(d, t)``.
A vertex whose distance did not change cannot improve its neighbours again, so only the
vertices that changed in the last round (the *frontier*, a sparse vector) are pushed: the
same answer as relaxing every edge each round, at the cost of the edges that matter. The
frontier is the part of ``t`` that is new or shorter than ``d``. ``d`` is kept dense (values
and a presence byte, SuiteSparse's bitmap) and updated in place by the kernels'
:meth:`~gbdist.backends.base.GraphKernels.spmspv_update`, which returns only the entries that
entered or changed: a round costs the frontier's edges, never O(n) (a sorted-key ``d``
merged every round cost O(n) a round, thousands of rounds on a road grid).

Structural semantics: only stored entries are edges, so an explicitly stored 0 is an edge of
weight 0 (it is *not* "no edge"), and an unreachable vertex never gets an entry (+inf).
After n rounds with a change in the last one, some cycle keeps lowering distances: a
negative cycle reachable from the source, reported as :class:`NegativeCycleError`.
"""
from __future__ import annotations

import numpy as np

from gbdist import graph as gr

from ._common import NegativeCycleError, as_matrix, check_source, host, min_plus


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
    xp = M.xp
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    d = xp.full(n, np.inf)  # the state's values: the distance where p is 1
    p = xp.zeros(n, dtype=np.uint8)
    d[s], p[s] = 0.0, 1
    f_idx, f_val = xp.asarray([s], dtype=np.int64), xp.zeros(1)
    csr = M.csr
    for _ in range(n + 1):
        # d = min(d, f min.+ A) over the frontier's rows; the new or shorter entries are
        # the next frontier (nothing n-wide is built: the kernels update d and p in place)
        f_idx, f_val = K.spmspv_update(csr, f_idx, f_val, min_plus, d, p, only_new=False,
                                       out_dtype=np.dtype(np.float64))
        if not f_idx.size:
            break
    else:
        raise NegativeCycleError(
            "a negative-weight cycle is reachable from the source",
            expected="no cycle whose edge weights sum below 0 on a path from the source",
            got=f"distances still decreasing after {n + 1} rounds of Bellman-Ford",
            hint="shortest paths are unbounded; remove the cycle or check the edge signs")
    return host(d)
