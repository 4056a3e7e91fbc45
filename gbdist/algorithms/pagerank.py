"""PageRank by power iteration, as networkx computes it (weighted, dangling vertices).

A random surfer at i follows edge i -> j with probability A(i, j) / s(i), where
``s = reduce_rows(A, plus)`` is i's out-weight. One step moves the rank vector x to

    x'(j) = α · ( Σ_i x(i) / s(i) · A(i, j)  +  Σ_{dangling i} x(i) / n )  +  (1 - α) / n

The first sum is one product over ``plus_times``: scale x by 1/s (``ewise_mult``) and take
``mxv(Aᵀ, w)`` (the pull form: y(j) sums over the in-edges of j; Aᵀ is a descriptor whose
transpose is cached on A, so it is built once). Vertices with out-weight 0 (no stored edge,
or only weight-0 edges) are *dangling*: their rank is spread evenly over all vertices, as
networkx does with its default ``dangling=None``. The iteration stops when the L1 change is
below ``n * tol`` (networkx's rule) and raises after ``max_iter`` steps without it.

**On the GPU** (:func:`choose_method`, the planner rule): a kernel set that offers
``power_rank`` (the CUDA set) runs the same step on dense vectors as one SpMV and one fused
kernel (rank, L1 change, the next x / s and the dangling mass together), with buffers
allocated once and the change read by the host one step behind, while the next step runs:
the operations above cost about seven launches, their allocations and a host read a step.
The sums (L1 change, dangling mass) are deterministic (block partials added in order).
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, host, ids, plus_times, vector


class PowerIterationFailedConvergence(gb.InputError):
    """PageRank did not reach ``tol`` in ``max_iter`` steps (networkx raises
    ``PowerIterationFailedConvergence``)."""


METHODS = ("auto", "operations", "fused")


def pagerank(A, alpha: float = 0.85, tol: float = 1.0e-6, max_iter: int = 100, *,
             method: str = "auto", backend: str = "auto") -> np.ndarray:
    """PageRank of every vertex (float64, sums to 1), as ``networkx.pagerank(G, alpha,
    tol=tol, max_iter=max_iter, weight="weight")``. ``A[i, j]``: weight of edge i -> j
    (non-negative). ``method``: ``"auto"`` (:func:`choose_method`), ``"operations"`` or
    ``"fused"`` (a kernel set without it: a BackendError)."""
    if method not in METHODS:
        raise gb.ParameterError("unknown PageRank method",
                                expected=" | ".join(map(repr, METHODS)), got=repr(method))
    if not 0.0 <= float(alpha) <= 1.0:
        raise gb.ParameterError("alpha must be a probability", expected="0 <= alpha <= 1",
                                got=repr(alpha))
    M = as_matrix(A)
    n = M.nrows
    if n == 0:
        return np.zeros(0)
    every = ids(n)
    s = gr.reduce_rows(M, gb.ops.plus, backend=backend)  # out-weight; absent for empty rows
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    if method == "auto":
        method = choose_method(K)
    if method == "fused":
        if choose_method(K) != "fused":
            raise gb.BackendError("method='fused' needs a kernel set with a power_rank kernel",
                                  got=f"the {K.name!r} kernels",
                                  hint="device data (the CUDA kernels), or method='auto'")
        return _fused(K, M, s, float(alpha), tol, max_iter)
    s_dense = np.zeros(n)
    s_dense[host(s.indices)] = host(s.values)
    live = np.flatnonzero(s_dense != 0)
    inv_s = vector(M, live, 1.0 / s_dense[live], dtype=np.float64)  # 1/s(i), non-dangling only
    dangling = vector(M, np.flatnonzero(s_dense == 0), np.ones(int(n - live.size)),
                      dtype=np.float64)
    x = vector(M, every, np.full(n, 1.0 / n), dtype=np.float64)
    teleport = vector(M, every, np.full(n, (1.0 - alpha) / n), dtype=np.float64)
    err = float("inf")  # max_iter=0: no step taken
    for _ in range(max_iter):
        w = gr.ewise_mult(x, inv_s, gb.ops.times, backend=backend)        # x(i) / s(i)
        y = gr.mxv(M.T, w, plus_times, backend=backend)                    # Σ_i w(i) A(i, j)
        lost = gr.reduce_scalar(gr.ewise_mult(x, dangling, gb.ops.times, backend=backend),
                                gb.ops.plus, backend=backend)              # dangling mass
        y = gr.apply(gb.ops.times, y, right=float(alpha), backend=backend)
        base = gr.apply(gb.ops.plus, teleport, right=float(alpha * lost / n), backend=backend)
        new = gr.ewise_add(base, y, gb.ops.plus, backend=backend)          # every vertex stored
        err = gr.reduce_scalar(gr.apply(gb.ops.abs, gr.ewise_add(new, x, gb.ops.minus,
                                                                 backend=backend),
                                        backend=backend), gb.ops.plus, backend=backend)
        x = new
        if float(err) < n * tol:
            return host(x.to_dense(fill=0.0)).astype(np.float64)
    raise PowerIterationFailedConvergence(
        "PageRank did not converge", expected=f"an L1 change below n * tol = {n * tol:g}",
        got=f"{float(err):.3g} after max_iter={max_iter} iterations",
        hint="raise max_iter or tol")


def choose_method(K) -> str:
    """The planner rule: ``"fused"`` where the kernel set has a ``power_rank`` kernel (the
    CUDA set), else ``"operations"`` (the GraphBLAS loop above)."""
    return "fused" if callable(getattr(K, "power_rank", None)) else "operations"


def _fused(K, M, s, alpha: float, tol: float, max_iter: int) -> np.ndarray:
    """The power iteration on the kernel set's dense vectors (the device path)."""
    xp, n = M.xp, M.nrows
    s_dense = xp.zeros(n, dtype=np.float64)
    s_dense[s.indices] = s.values
    live = s_dense != 0
    inv_s = xp.where(live, 1.0 / xp.where(live, s_dense, 1.0), 0.0)  # 1/s(i); 0 when dangling
    dangling = (~live).astype(np.uint8)
    x = xp.full(n, 1.0 / n, dtype=np.float64)
    rank, steps, err = K.power_rank(M.T.csr, inv_s, dangling, x, alpha, n * tol, max_iter,
                                    plus_times)
    if rank is None:
        raise PowerIterationFailedConvergence(
            "PageRank did not converge", expected=f"an L1 change below n * tol = {n * tol:g}",
            got=f"{err:.3g} after max_iter={max_iter} iterations", hint="raise max_iter or tol")
    return host(rank).astype(np.float64, copy=False)
