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

**Union-find** (:func:`choose_method`, the planner rule): a kernel set that offers a
``components`` kernel runs that instead — the CUDA set a concurrent union-find after ECL-CC
(hooking the larger root under the smaller with an atomic compare-and-swap, finds that
halve the path: three launches, no host round trip), the compiled CPU set the same on one
thread (4.7-5.5x faster than FastSV here, docs/graph.md). FastSV's rounds each cost several
operations and host reads; the reference kernels keep it. The roots are the smallest
vertices of their components: the same labels. Every stored entry joins its two ends, so a directed input needs no A ∪ Aᵀ;
when A's transpose is already cached and the pattern is symmetric, only the entries below
the diagonal are joined (each edge once).
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, host, ids, min_second, vector, pattern_is_symmetric


METHODS = ("auto", "fastsv", "union-find")


def connected_components(A, *, method: str = "auto", backend: str = "auto") -> np.ndarray:
    """Component label of every vertex: the smallest vertex id in its component (int64).

    Undirected graphs as ``networkx.connected_components``; a directed input gives its weakly
    connected components. Values and self loops are ignored. ``method``: ``"auto"``
    (:func:`choose_method`), ``"fastsv"`` or ``"union-find"`` (a kernel set without it: a
    BackendError)."""
    if method not in METHODS:
        raise gb.ParameterError("unknown components method",
                                expected=" | ".join(map(repr, METHODS)), got=repr(method))
    M = as_matrix(A)
    n = M.nrows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    if method == "auto":
        method = choose_method(K)
    if method == "union-find":
        if choose_method(K) != "union-find":
            raise gb.BackendError("method='union-find' needs a kernel set with a components "
                                  "kernel", got=f"the {K.name!r} kernels",
                                  hint="device data (the CUDA kernels), or method='auto'")
        half = M.has_transpose() and pattern_is_symmetric(M)  # symmetry only where it is free
        return host(K.components(M.csr, half=half)).astype(np.int64, copy=False)
    if not pattern_is_symmetric(M, backend):
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


def choose_method(K) -> str:
    """The planner rule: ``"union-find"`` where the kernel set has a components kernel (the
    CUDA and the compiled CPU sets), else ``"fastsv"`` (the GraphBLAS rounds above)."""
    return "union-find" if callable(getattr(K, "components", None)) else "fastsv"
