"""Connected components with FastSV (Zhang, Azad & Hu, 2020): min-label hooking and
pointer jumping, written as GraphBLAS products.

Every vertex keeps a parent ``f`` (initially itself). A label only ever moves to a smaller
vertex id, so each tree's root ends up being the smallest vertex of its component. One
round, with ``gf = f[f]`` the grandparents:

    mngf = A min.second gf        mngf(i) = min over neighbours k of gf(k)   (``mxv``)
    f[f[i]] = min(f[f[i]], mngf(i))   stochastic hooking: hook i's parent to the smallest
                                      grandparent seen next door; the scatter with min is a
                                      ``reduce_rows`` (min) of the matrix with entries
                                      (f(i), i) = mngf(i)
    f = min(f, mngf)                  aggressive hooking        (``ewise_add`` with min)
    f = min(f, gf)                    shortcutting              (``ewise_add`` with min)
    gf = f[f]                         pointer jumping           (``extract``)

until ``gf`` stops changing. Rounds grow with log(diameter), not with the diameter as plain
label propagation does. A directed graph is treated as undirected (weak components): the
neighbours are taken in A and in Aᵀ.
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, host, ids, min_second, vector, pattern_is_symmetric


def connected_components(A, *, backend: str = "auto") -> np.ndarray:
    """Component label of every vertex: the smallest vertex id in its component (int64).

    Undirected graphs as ``networkx.connected_components``; a directed input gives its weakly
    connected components. Values and self loops are ignored."""
    M = as_matrix(A)
    n = M.nrows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not pattern_is_symmetric(M):
        M = gr.ewise_add(M, M.T, gb.ops.first,
                         backend=backend)  # A ∪ Aᵀ: weak components
    every = ids(n)
    f = vector(M, every, every, dtype=np.int64)
    gf = f
    while True:
        mngf = gr.mxv(M, gf, min_second, backend=backend)
        # stochastic hooking: f(f(i)) = min(f(f(i)), mngf(i)), a scatter with duplicates done
        # as a min-reduction of the rows of the matrix with entries (f(i), i) = mngf(i)
        fi = host(f.values).astype(np.int64, copy=False)
        present = host(mngf.indices)
        H = gb.Matrix.from_coo(fi[present], present,  # mngf's type is the float semiring's
                               host(mngf.values).astype(np.int64, copy=False), (n, n),
                               dtype=np.int64)
        if getattr(M, "on_device", False):
            H = H.to_device()
        hooks = gr.reduce_rows(H, gb.ops.min, backend=backend)
        f = gr.ewise_add(f, hooks, gb.ops.min, backend=backend)
        f = gr.ewise_add(f, mngf, gb.ops.min, backend=backend)       # aggressive hooking
        f = gr.ewise_add(f, gf, gb.ops.min, backend=backend)         # shortcutting
        new_gf = gr.extract(f, host(f.values).astype(np.int64, copy=False),
                            backend=backend)  # f[f]
        if new_gf.isequal(gf):
            return host(f.to_dense(fill=0)).astype(np.int64)
        gf = new_gf
