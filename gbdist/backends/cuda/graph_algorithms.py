"""Whole-algorithm CUDA kernels (issue 30): the device strategies the algorithms' planner
rules pick when the kernel set offers them (``gbdist.algorithms``: components, PageRank,
triangle counting's L). The kernels are ``kernels/graph_algorithms.cuh`` (functor-free:
one module per process).

* :func:`components`: concurrent union-find (ECL-CC's hooking by atomicCAS of the larger
  root under the smaller, finds that halve the path): three launches, no host reads, the
  label of a vertex = the smallest vertex of its component.
* :func:`power_rank`: PageRank's power iteration as one SpMV (the kernel set's ``spmv``)
  and one fused update a step (rank, L1 change, next scaled vector, dangling mass), the
  buffers allocated once, and the convergence test read one step behind (the next step is
  already queued when the host reads the last one's change), so the GPU never waits for
  the host; the step after convergence is the only extra work, and it is skipped when the
  change's geometric decay predicts convergence.
* :func:`rank_lower_counts` / :func:`rank_lower_fill`: triangle counting's L on the device
  under an index or degree ranking, without renumbering the graph (the kernel-set protocol's
  methods of the same names, ``gbdist.backends.base``); :func:`rank_lower_sums`: the
  ordering rule's sums in one launch; :func:`count_triangles`: the
  masked product L·L<L> summed without forming it (a warp a row, a lane an entry, each
  two-hop neighbour looked up in the row by bisection).
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from . import cache

_NAMES = ("gb_rank_update", "gb_tri_intersect<int>", "gb_tri_intersect<long long>",
          "gb_tri_sums<int>", "gb_tri_sums<long long>") + tuple(
    f"{k}<{i}, {v}>" for k in ("gb_cc_init", "gb_cc_hook") for i in ("int", "long long")
    for v in ("int", "long long")) + ("gb_cc_label<int>", "gb_cc_label<long long>")
_SOURCE: list = []


TRI_LANES = None
"""Lanes a row of triangle counting's L kernels (``gb_tri_count`` / ``gb_tri_fill``: 4, 8,
16 or 32); None: :func:`tri_lanes` from the mean row length."""


def tri_lanes(mean: float) -> int:
    """The L kernels' lanes a row for rows of ``mean`` entries (:data:`TRI_LANES` where set):
    the power of two at or below half the mean, 4 to 32. Swept on one H200 (2026-11-28 (h),
    ``benchmarks/results/2026-11-28h-triangle_phases.py``, power-law graphs of mean degree
    32 at 10⁵-10⁷ vertices): L's build took 0.277 / 1.026 / 11.69 ms at 16 lanes against
    0.296 / 1.081 / 11.84 at 32, 0.354 / 1.216 / 12.07 at 8 and 0.482 / 1.560 / 13.40 at 4
    (one mean degree only: the rule's scaling with it is not measured)."""
    if TRI_LANES is not None:
        return int(TRI_LANES)
    g = 4
    while g < 32 and 2 * g <= mean / 2:
        g *= 2
    return g


def module(names=None):
    """The compiled kernels: :data:`_NAMES`, or ``names`` (a module of its own, compiled
    on first use: the L kernels' one instantiation a call needs)."""
    if not _SOURCE:
        import hashlib

        from ...resources import read
        src = read("kernels", "graph_algorithms.cuh")  # (no graph_codegen: it imports sympy)
        _SOURCE.append((src, "graph-algorithms-" + hashlib.sha256(src.encode()).hexdigest()[:24]))
    src, k = _SOURCE[0]
    return cache.module(k, src, _NAMES if names is None else tuple(names))


def _grid(n: int, per_block: int = 256) -> int:
    return int(max(1, -(-n // per_block)))


def _index(A):
    """(indptr, indices, C index type name) of a device CSR, both in one index type."""
    import cupy
    ptr, idx = A.indptr, A.indices
    it = np.promote_types(ptr.dtype, idx.dtype)
    if it not in (np.int32, np.int64):
        raise InputError("the CUDA graph kernels need int32 or int64 indices", got=str(it))
    c = cupy.ascontiguousarray
    return c(ptr.astype(it, copy=False)), c(idx.astype(it, copy=False)), \
        "int" if it == np.int32 else "long long"


def components(A, bins, *, half: bool):
    """Component label of every vertex of the graph whose edges are A's stored entries
    (directions ignored), as an int64 CuPy array: the smallest vertex of the component.
    ``bins``: A's SpMV degree bins (rows, meta, blocks; graph._spmv_bins). ``half``: A's
    pattern is symmetric, so only the entries below the diagonal are joined."""
    import cupy
    n = int(A.shape[0])
    label = cupy.empty(n, dtype=cupy.int64)
    if n == 0:
        return label
    Ap, Aj, I = _index(A)
    V = "int" if n < 2**31 - 1 else "long long"
    parent = cupy.empty(n, dtype=cupy.int32 if V == "int" else cupy.int64)
    mod = module()
    mod.get_function(f"gb_cc_init<{I}, {V}>")((_grid(n),), (256,), (Ap, Aj, np.int64(n), parent))
    rows, meta, blocks = bins
    if blocks:
        mod.get_function(f"gb_cc_hook<{I}, {V}>")((blocks,), (256,),
                                                 (rows, meta, Ap, Aj, parent, np.int32(half)))
    mod.get_function(f"gb_cc_label<{V}>")((_grid(n),), (256,), (parent, np.int64(n), label))
    return label


def power_rank(K, AT, inv_s, dangling, x, alpha: float, thresh: float, max_iter: int, plus_times):
    """PageRank's power iteration on the device (gbdist/algorithms/pagerank.py's step):
    ``AT`` the transposed adjacency (device CSR), ``inv_s`` 1/out-weight (0 where dangling),
    ``dangling`` uint8 flags, ``x`` the start (float64). Stops after the first step whose
    L1 change is below ``thresh``; ``thresh`` None: runs exactly ``max_iter`` steps (no
    host read between them) and returns their rank. Returns ``(rank, steps, last change)``;
    ``rank`` is None when ``max_iter`` steps did not converge."""
    import cupy
    n = int(x.size)
    mod = module()
    update = mod.get_function("gb_rank_update")
    blocks = min(_grid(n), 4 * 132 * 8)  # a grid-stride loop: a few waves of the SMs
    bufs = [cupy.ascontiguousarray(x, dtype=cupy.float64), cupy.empty(n, dtype=cupy.float64)]
    w = bufs[0] * inv_s
    scal = cupy.zeros(2 * max_iter + 2, dtype=cupy.float64)  # lost_t, err_t, lost_t+1, ...
    scal[0] = cupy.sum(bufs[0][dangling.view(cupy.bool_)])
    partial = cupy.empty(2 * blocks, dtype=cupy.float64)
    done = cupy.zeros(1, dtype=cupy.uint32)
    pinned = cupy.cuda.alloc_pinned_memory(8 * max(max_iter, 1))
    errs = np.frombuffer(pinned, dtype=np.float64, count=max(max_iter, 1))
    stream = cupy.cuda.get_current_stream()
    events = []
    teleport = (1.0 - alpha) / n

    def step(t):
        y, _ = K.spmv(AT, w, None, plus_times, out_dtype=np.float64)
        update((blocks,), (256,), (y, bufs[t % 2], bufs[(t + 1) % 2], inv_s, dangling, w,
                                   np.int64(n), np.float64(alpha), np.float64(teleport),
                                   np.int64(t), scal, partial, done))
        cupy.cuda.runtime.memcpyAsync(pinned.ptr + 8 * t, scal.data.ptr + 8 * (2 * t + 1), 8,
                                      cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
        e = cupy.cuda.Event(block=False, disable_timing=True)
        e.record(stream)
        events.append(e)

    def converged(t) -> bool:
        events[t].synchronize()
        return bool(errs[t] < thresh)

    def predicted(t) -> bool:
        """Whether step t (still running) will likely converge: the last two known changes'
        ratio carried one step on."""
        if t < 2 or errs[t - 2] <= 0:
            return False
        return errs[t - 1] * (errs[t - 1] / errs[t - 2]) < 1.5 * thresh

    if thresh is None:  # a fixed step count: queue every step, read the last change once
        for t in range(max_iter):
            step(t)
        if not max_iter:
            return bufs[0], 0, float("inf")
        events[-1].synchronize()
        return bufs[max_iter % 2], max_iter, float(errs[max_iter - 1])
    for t in range(max_iter):
        if t and predicted(t - 1) and converged(t - 1):
            return bufs[t % 2], t, float(errs[t - 1])
        step(t)
        if t and converged(t - 1):  # step t is queued: the host read overlaps it
            return bufs[t % 2], t, float(errs[t - 1])
    if max_iter and converged(max_iter - 1):
        return bufs[max_iter % 2], max_iter, float(errs[max_iter - 1])
    return None, max_iter, float(errs[max_iter - 1]) if max_iter else float("inf")


def _ctype(a) -> str:
    if a.dtype not in (np.int32, np.int64):
        raise InputError("the CUDA graph kernels need int32 or int64 indices", got=str(a.dtype))
    return "int" if a.dtype == np.int32 else "long long"


def _rank_parts(A, deg):
    """(Ap, Aj, their and the degrees' C types, deg as contiguous int32 where it is int32,
    else int64, n) for the L kernels: A's arrays in their own index types (L's columns keep
    Aj's)."""
    import cupy
    n = int(A.shape[0])
    Ap, Aj = cupy.ascontiguousarray(A.indptr), cupy.ascontiguousarray(A.indices)
    deg = cupy.asarray(deg)
    d = cupy.ascontiguousarray(deg, dtype=cupy.int32 if deg.dtype == np.int32 else cupy.int64)
    if d.shape != (n,):
        raise InputError("rank_lower: deg must hold one degree per row", expected=f"({n},)",
                         got=str(d.shape))
    return Ap, Aj, f"{_ctype(Ap)}, {_ctype(Aj)}, {_ctype(d)}", d, n


def rank_lower_counts(A, deg, *, only_none: bool = False):
    """(3, n) in ``deg``'s type: each row's stored entries ranked below it under mode 0
    (index order), 1 (increasing degree), 2 (decreasing degree; ties by index both),
    ``deg`` the degrees compared; ``only_none``: mode 0 only (the others 0, no degree
    read). One launch, a warp a row (``gb_tri_count``)."""
    import cupy
    Ap, Aj, T, d, n = _rank_parts(A, deg)
    counts = cupy.zeros((3, n), dtype=d.dtype)  # a row's count is at most its degree
    if n:
        G = tri_lanes(int(Aj.size) / n)
        name = f"gb_tri_count<{T}, {G}>"
        module((name,)).get_function(name)((_grid(G * n),), (256,), (
            Ap, Aj, d, np.int64(n), np.int32(1 if only_none else 3), counts))
    return counts.astype(cupy.asarray(deg).dtype, copy=False)


def rank_lower_sums(deg, counts) -> dict:
    """{"increasing" / "decreasing": (Σ col·row, Σ col², Σ row², Σ row)} of L's row counts
    under modes 1 and 2 (``counts``: :func:`rank_lower_counts`'s, col = deg - row): the
    device ordering rule's integers (``gbdist.algorithms.triangles.device_sums``) in one
    launch and one read."""
    import cupy
    d = cupy.ascontiguousarray(cupy.asarray(deg))
    c = cupy.ascontiguousarray(cupy.asarray(counts), dtype=d.dtype)
    n = int(d.shape[0])
    if d.dtype not in (np.int32, np.int64) or c.shape != (3, n):
        raise InputError("rank_lower_sums: int degrees and (3, n) counts of their type",
                         got=f"{d.dtype} {d.shape}, {c.shape}")
    out = cupy.zeros(8, dtype=cupy.uint64)
    if n:
        module().get_function(f"gb_tri_sums<{_ctype(d)}>")((min(1024, _grid(n)),), (256,),
                                                            (d, c, np.int64(n), out))
    got = [int(v) for v in out.get()]
    return {"increasing": tuple(got[:4]), "decreasing": tuple(got[4:])}


def rank_lower_fill(A, deg, mode: int, lp, *, with_values: bool, nnz=None):
    """(columns in A's index type, values or None) of L: the entries ranked below their
    row under ``mode`` (:func:`rank_lower_counts`), each row's in A's order at the row
    pointers ``lp`` (n + 1, int32 or int64, the cumulative sum of that mode's counts;
    ``nnz``: its last entry where the caller knows it, else read). One launch
    (``gb_tri_fill``); the values are A's, gathered at the positions it writes."""
    import cupy
    if mode not in (0, 1, 2):
        raise InputError("rank_lower_fill: mode is 0, 1 or 2", got=repr(mode))
    Ap, Aj, T, d, n = _rank_parts(A, deg)
    Lp = cupy.asarray(lp)
    if Lp.dtype not in (np.int32, np.int64) or not Lp.flags.c_contiguous:
        Lp = cupy.ascontiguousarray(Lp, dtype=cupy.int64)
    nnz = (int(Lp[-1]) if n else 0) if nnz is None else int(nnz)
    Lj = cupy.empty(nnz, dtype=Aj.dtype)
    pos = cupy.empty(nnz, dtype=cupy.int64) if with_values else None
    if nnz:
        G = tri_lanes(int(Aj.size) / n)
        name = f"gb_tri_fill<{T}, {_ctype(Lp)}, {G}>"
        module((name,)).get_function(name)((_grid(G * n),), (256,), (
            Ap, Aj, d, np.int64(n), np.int32(mode), Lp, Lj,
            np.uint64(0) if pos is None else pos))
    return Lj, (A.data[pos] if with_values else None)


def count_triangles(L) -> int:
    """Σ over L's stored (v, u) of |L(v,:) ∩ L(u,:)|: the triangles, each once, for an L
    holding one direction of every edge under a ranking (:func:`lower_fill`)."""
    import cupy
    n = int(L.shape[0])
    total = cupy.zeros(1, dtype=cupy.uint64)
    if n and int(L.nnz):
        Lp = cupy.ascontiguousarray(L.indptr)
        P = "int" if Lp.dtype == np.int32 else "long long"
        Lj = cupy.ascontiguousarray(L.indices.astype(cupy.int32, copy=False))
        module().get_function(f"gb_tri_intersect<{P}>")((_grid(32 * n),), (256,),
                                                        (Lp, Lj, np.int64(n), total))
    return int(total[0])
