"""PageRank by power iteration, as networkx computes it (weighted, dangling vertices).

A random surfer at i follows edge i -> j with probability A(i, j) / s(i), where
``s = reduce_rows(A, plus)`` is i's out-weight. One step moves the rank vector x to

    x'(j) = α · ( Σ_i x(i) / s(i) · A(i, j)  +  Σ_{dangling i} x(i) / n )  +  (1 - α) / n

The first sum is one product over ``plus_times``: scale x by 1/s and take the pull
product with Aᵀ (y(j) sums over the in-edges of j; Aᵀ is cached on A, so it is built
once). Vertices with out-weight 0 (no stored edge, or only weight-0 edges) are *dangling*:
their rank is spread evenly over all vertices, as networkx does with its default
``dangling=None``. The iteration stops when the L1 change is below ``n * tol`` (networkx's
rule) and raises after ``max_iter`` steps without it. ``steps=N`` runs exactly N steps
instead, with no convergence test and no error (a fixed budget: the issue-30 bound is
PageRank against N × one SpMV, and graphs converge at networkx's tol in one or two steps).

Every vector here is full (every vertex has a rank), so the step is written on dense arrays
of the matrix's side (NumPy or CuPy, ``M.xp``) around the kernels' own SpMV and segmented
sum (``gr.get_kernels``, as the BFS state is): one product and five in-place passes over n
per iteration (scale, damp, teleport, difference, its L1 norm), no sparse-vector merges,
no per-step allocation but the product's output.

**On the GPU** (:func:`choose_method`, the planner rule): a kernel set that offers
``power_rank`` (the CUDA set) runs the same step on dense vectors as one SpMV and one fused
kernel (rank, L1 change, the next x / s and the dangling mass together), with buffers
allocated once and the change read by the host one step behind, while the next step runs:
the dense loop above costs about seven launches, their allocations and a host read a step.
The sums (L1 change, dangling mass) are deterministic (block partials added in order).
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, host, plus_times


class PowerIterationFailedConvergence(gb.InputError):
    """PageRank did not reach ``tol`` in ``max_iter`` steps (networkx raises
    ``PowerIterationFailedConvergence``)."""


METHODS = ("auto", "operations", "fused")


def pagerank(A, alpha: float = 0.85, tol: float = 1.0e-6, max_iter: int = 100, *,
             steps=None, method: str = "auto", backend: str = "auto") -> np.ndarray:
    """PageRank of every vertex (float64, sums to 1), as ``networkx.pagerank(G, alpha,
    tol=tol, max_iter=max_iter, weight="weight")``. ``A[i, j]``: weight of edge i -> j
    (non-negative). ``steps``: an int >= 0 runs exactly that many power steps and returns
    the rank they reach (``tol`` and ``max_iter`` unread, no convergence error); None (the
    default) iterates to ``tol``. ``method``: ``"auto"`` (:func:`choose_method`),
    ``"operations"`` or ``"fused"`` (a kernel set without it: a BackendError)."""
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, (int, np.integer))
                              or steps < 0):
        raise gb.ParameterError("steps must be None or an integer >= 0",
                                expected="None (iterate to tol) or a step count", got=repr(steps))
    fixed = steps is not None
    if fixed:
        max_iter, tol = int(steps), None
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
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    if method == "auto":
        method = choose_method(K)
    if method == "fused":
        if choose_method(K) != "fused":
            raise gb.BackendError("method='fused' needs a kernel set with a power_rank kernel",
                                  got=f"the {K.name!r} kernels",
                                  hint="device data (the CUDA kernels), or method='auto'")
        s = gr.reduce_rows(M, gb.ops.plus, backend=backend)  # out-weight
        return _fused(K, M, s, float(alpha), tol, max_iter)
    xp, alpha = M.xp, float(alpha)
    csr = M.csr
    s, _ = K.segment_reduce(csr.indptr, csr.data, plus_times.add, out_dtype=np.float64)
    live = s != 0                                   # out-weight; 0 for empty rows
    inv_s = xp.where(live, 1.0 / xp.where(live, s, 1.0), 0.0)  # 1/s(i); 0 when dangling
    dangling = xp.flatnonzero(~live)
    MT = M.T.csr                                    # cached on M: built once
    x = xp.full(n, 1.0 / n)
    w = xp.empty(n)
    err = float("inf")  # max_iter=0: no step taken
    for _ in range(max_iter):
        xp.multiply(x, inv_s, out=w)                                    # x(i) / s(i)
        y, _ = K.spmv(MT, w, None, plus_times, out_dtype=np.float64)    # Σ_i w(i) A(i, j)
        lost = float(x[dangling].sum()) if dangling.size else 0.0     # dangling mass
        y *= alpha
        y += (1.0 - alpha) / n + alpha * lost / n                       # teleport + dangling
        if not fixed:
            xp.subtract(y, x, out=w)
            err = float(xp.abs(w, out=w).sum())                         # L1 change
        x = y
        if not fixed and err < n * tol:
            return host(x).astype(np.float64, copy=False)
    if fixed:
        return host(x).astype(np.float64, copy=False)
    raise PowerIterationFailedConvergence(
        "PageRank did not converge", expected=f"an L1 change below n * tol = {n * tol:g}",
        got=f"{err:.3g} after max_iter={max_iter} iterations",
        hint="raise max_iter or tol")


def choose_method(K) -> str:
    """The planner rule: ``"fused"`` where the kernel set has a ``power_rank`` kernel (the
    CUDA set), else ``"operations"`` (the GraphBLAS loop above)."""
    return "fused" if callable(getattr(K, "power_rank", None)) else "operations"


def _fused(K, M, s, alpha: float, tol, max_iter: int) -> np.ndarray:
    """The power iteration on the kernel set's dense vectors (the device path); ``tol``
    None: exactly ``max_iter`` steps."""
    xp, n = M.xp, M.nrows
    s_dense = s.to_dense(fill=0).astype(np.float64, copy=False)  # s's form: no keys made
    live = s_dense != 0
    inv_s = xp.where(live, 1.0 / xp.where(live, s_dense, 1.0), 0.0)  # 1/s(i); 0 when dangling
    dangling = (~live).astype(np.uint8)
    x = xp.full(n, 1.0 / n, dtype=np.float64)
    rank, steps, err = K.power_rank(M.T.csr, inv_s, dangling, x, alpha,
                                    None if tol is None else n * tol, max_iter, plus_times)
    if rank is None:
        raise PowerIterationFailedConvergence(
            "PageRank did not converge", expected=f"an L1 change below n * tol = {n * tol:g}",
            got=f"{err:.3g} after max_iter={max_iter} iterations", hint="raise max_iter or tol")
    return host(rank).astype(np.float64, copy=False)
