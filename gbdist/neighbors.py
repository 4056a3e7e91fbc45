"""k-nearest neighbours and radius queries on top of the runtime's block iterator.

The distance matrix between queries (rows of X) and the index (rows of Y) is
never materialised. The output grid is cut into *column tiles* (slices of the
index) and, inside each tile, into *row blocks* (slices of the queries), both
sized from one ``working_memory`` budget in bytes:

    for each column tile Y[c0:c1]            (outer: the index, bounded)
        for each row block X[r0:r1]          (inner: runtime.iter_blocks)
            D = distances of the block       (rows × tile width)
            keep the k smallest of D         (np.partition, exact ties by index)
            merge with the best k so far     (lexsort by (distance, index))

Order is total and deterministic: by distance, then by the lower index; NaN
distances sort after every number (NumPy's order). So the answer does not
depend on how the grid was tiled.

Any backend plugs in: one with ``run_step`` (the CPU reference) is driven
through :func:`gbdist.runtime.bind` and :func:`gbdist.runtime.iter_blocks`;
one that runs a whole plan (``run(plan, inputs, ...)``, the CUDA backend) is
called once per (row block, column tile) on sliced inputs.
"""
from __future__ import annotations

import dataclasses
import numbers
import os
from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sps

from . import metrics, runtime
from .errors import InputError
from .inputs import check_device_operand
from .pairwise import metric_program
from .plan import Plan

__all__ = ["knn", "NearestNeighbors", "pairwise_distances_chunked"]

# Bytes of selection temporaries per distance cell: np.partition's copy (8),
# the less / equal / NaN masks (3) and np.nonzero's indices (≈ 8 when dense).
_SELECT_BYTES = 24


# ---------------------------------------------------------------------------
# budget and backend
# ---------------------------------------------------------------------------


def default_working_memory() -> int:
    """``runtime.DEFAULT_WORKING_MEMORY``, or half the free memory when that is less."""
    budget = runtime.DEFAULT_WORKING_MEMORY
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return budget
    return int(max(64 * 2**20, min(budget, free // 2)))


class _DefaultBudget(int):
    """The budget used when none was given: a device path may replace it by its own default."""


def default_device_memory() -> int:
    """The GPU's default budget: half its free memory (CuPy's cached free blocks counted),
    at most 8 GiB, at least 64 MiB."""
    import cupy
    free, _ = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    return int(max(64 * 2**20, min(8 * 2**30, free // 2)))


def _budget(working_memory) -> int:
    if working_memory is None:
        return _DefaultBudget(default_working_memory())
    if isinstance(working_memory, bool) or not isinstance(working_memory, numbers.Integral) \
            or working_memory <= 0:
        raise InputError("working_memory must be a positive number of bytes",
                         got=repr(working_memory),
                         hint="e.g. working_memory=256 * 2**20 (gbdist counts bytes, "
                              "scikit-learn's working_memory counts MiB)")
    return int(working_memory)


def _backend(backend, budget: int):
    """A backend name ("auto", "cpu", "cuda") or a backend object, resolved."""
    if isinstance(backend, str):
        return runtime.get_backend(backend, budget // 2)
    if hasattr(backend, "run") or hasattr(backend, "run_step"):
        return backend
    raise InputError("unknown backend", expected="'auto', 'cpu', 'cuda' or a backend object",
                     got=repr(backend))


def _cell_bytes(plan: Plan) -> int:
    """Bytes per output cell while a block is computed (as runtime's row sizing counts them)."""
    nmat = sum(1 for s in plan.steps if s.kind == "matrix") + 3
    return 8 * nmat + _SELECT_BYTES


def tile_width(plan: Plan, n_index: int, budget: int) -> int:
    """Columns (index rows) per tile: the whole index when one row of it fits half the budget."""
    cells = max(1, (budget // 2) // _cell_bytes(plan))
    return int(max(1, min(n_index, cells)))


# ---------------------------------------------------------------------------
# symmetry: when d(a, b) == d(b, a) is proven from the algebra
# ---------------------------------------------------------------------------

_SYMMETRY: dict = {}


def _sym_side(node, roles, transpose=False):
    """(role, op keys of the apply chain) of a row operand, or None when it is not a plain
    (untransposed) row operand of a known role."""
    from .typecheck import row_operand
    name, flipped, chain = row_operand(node, transpose)
    role = roles.get((name, False))
    if flipped or role not in ("i", "j"):
        return None
    return role, tuple(op.key for op in chain), chain


def _commutes(mul) -> bool:
    """f(x, y) == f(y, x) proven on f's domain (by sympy or exhaustively, never numerically)."""
    from . import proofs
    from .ops import X, Y
    f = mul.formula
    swapped = f.xreplace({X: Y, Y: X})
    if swapped == f:
        return True
    p = proofs.check(f"{mul.name} commutes", f, swapped, mul.domain)
    return bool(p.holds) and not p.method.startswith("numeric")


def _sym_expr(node, roles, syms: dict):
    """The metric as a sympy expression over one symbol per product, per row reduction (one
    for each side) and k; products get one symbol for both orders of (A, B), so they must
    commute. Raises ValueError for anything that cannot be shown symmetric."""
    import sympy as sp
    from . import ir

    def sym(key):
        if key not in syms:
            syms[key] = sp.Symbol(f"s{len(syms)}", real=True)
        return syms[key]

    def go(n):
        if isinstance(n, ir.MxM):
            left = _sym_side(n.left, roles)
            right = _sym_side(n.right, roles, transpose=True)
            if left is None or right is None or left[0] != "i" or right[0] != "j":
                raise ValueError("product operands")
            if left[1] != right[1]:  # different transforms of the two sides
                raise ValueError("asymmetric operand transforms")
            if not n.semiring.add.commutative or not _commutes(n.semiring.mul):
                raise ValueError(f"{n.semiring.mul.name} does not commute")
            return sym(("mxm", left[1], n.semiring.key))
        if isinstance(n, ir.RowReduce):
            side = _sym_side(n.arg, roles)
            if side is None:
                raise ValueError("reduction operand")
            return sym(("reduce", side[0], side[1], n.monoid.key))
        if isinstance(n, ir.NCols):
            return sym(("ncols",))
        if isinstance(n, ir.Const):
            v = float(n.value)
            if np.isnan(v):
                return sp.nan
            if np.isinf(v):
                return sp.oo if v > 0 else -sp.oo
            return sp.nsimplify(v) if float(sp.nsimplify(v)) == v else sp.Float(v)
        if isinstance(n, ir.Pointwise):
            a = [go(x) for x in n.args]
            fn = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
                  "div": lambda p, q: p / q, "pow": lambda p, q: p ** q, "neg": lambda p: -p,
                  "sqrt": sp.sqrt, "abs": sp.Abs, "log": sp.log, "exp": sp.exp,
                  "maximum": sp.Max, "minimum": sp.Min,
                  "where": lambda c, p, q: sp.Piecewise((p, sp.Ne(c, 0)), (q, True))}.get(n.fn)
            rel = {"eq": sp.Eq, "ne": sp.Ne, "lt": sp.Lt, "le": sp.Le, "gt": sp.Gt,
                   "ge": sp.Ge}.get(n.fn)
            if rel is not None:  # a comparison is 1 or 0 in arithmetic
                fn = lambda p, q, rel=rel: sp.Piecewise((1, rel(p, q)), (0, True))  # noqa: E731
            if fn is None:
                raise ValueError(n.fn)
            return fn(*a)
        raise ValueError(type(n).__name__)

    return go(node)


def is_symmetric(plan: Plan) -> bool:
    """True only when the metric is *proven* symmetric, d(a, b) == d(b, a) for all rows.

    The proof, from the algebra (no metric names): every product is mxm(φ(A), φ(B).T) with
    the same apply chain φ on both sides, a commutative ⊕ and a ⊗ with f(x, y) == f(y, x)
    (sympy on f's domain; a numeric verdict is not enough); swapping A and B then leaves
    every product unchanged and exchanges each row reduction of A with the same reduction
    of B. The epilogue, as a sympy expression over those symbols, must be unchanged by that
    exchange (equal after sympy's canonical ordering, or its difference simplifies to 0).
    Anything else (mxv, a transposed operand, kl_divergence's non-commuting ⊗, constructs
    sympy cannot compare) counts as not symmetric. Cached per plan key.
    """
    import sympy as sp
    key = plan.expr.key
    hit = _SYMMETRY.get(key)
    if hit is not None:
        return hit
    ok = False
    try:
        roles = plan.roles
        if sorted(roles.values()) == ["i", "j"] and all(not t for _, t in roles):
            syms: dict = {}
            e = _sym_expr(plan.expr, roles, syms)
            swap = {}
            for k, s in list(syms.items()):
                if k[0] == "reduce":
                    other = ("reduce", "j" if k[1] == "i" else "i") + k[2:]
                    if other not in syms:
                        syms[other] = sp.Symbol(f"s{len(syms)}", real=True)
                    swap[s] = syms[other]
                    swap[syms[other]] = s
            e2 = e.xreplace(swap)
            ok = bool(e2 == e) or bool(sp.simplify(e - e2) == 0)
    except (ValueError, TypeError, AttributeError, KeyError):
        ok = False
    _SYMMETRY[key] = ok
    return ok


# ---------------------------------------------------------------------------
# distance tiles: the one place that talks to backends
# ---------------------------------------------------------------------------


def _result_dtype(X, Y, dtype=None):
    return runtime.result_dtype({"A": X, "B": Y}, dtype)


def _as_grid(block: np.ndarray, kind: str, rows: int, cols: int) -> np.ndarray:
    """A block of any output kind (matrix, col, row, scalar) as rows × cols."""
    block = np.asarray(block, dtype=np.float64)
    if kind == "col":
        block = block.reshape(rows, 1)
    elif kind == "row":
        block = block.reshape(1, cols)
    return np.broadcast_to(block, (rows, cols))


def _slice_right(b: runtime.Bound, c0: int, c1: int) -> runtime.Bound:
    """The bound plan restricted to index rows c0:c1 (every right-side operand sliced)."""
    data = {key: (v if key in b.left_keys else v[c0:c1]) for key, v in b.data.items()}
    return dataclasses.replace(b, data=data, n=c1 - c0)


def _right_sliceable(b: runtime.Bound) -> bool:
    return all(v.shape[0] == b.n for key, v in b.data.items() if key not in b.left_keys)


def distance_tiles(plan: Plan, X, Y, be, budget: int, dtype=None, full_width: bool = False
                   ) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
    """Yield ``(r0, r1, c0, c1, D)``: float64 distances of queries r0:r1 to index rows c0:c1.

    Column tiles are the outer loop and run in increasing order, row blocks the
    inner loop. ``full_width`` keeps the whole index in one tile (chunked
    pairwise distances).
    """
    if hasattr(be, "run"):
        yield from _run_tiles(plan, X, Y, be, budget, dtype, full_width)
        return
    b = runtime.bind(plan, {"A": X, "B": Y}, drop_zeros=True, dtype=dtype)
    width = b.n if full_width or not _right_sliceable(b) else tile_width(plan, b.n, budget)
    for c0 in range(0, b.n, max(width, 1)):
        c1 = min(b.n, c0 + width)
        tile = b if (c0, c1) == (0, b.n) else _slice_right(b, c0, c1)
        for r0, r1, block in runtime.iter_blocks(tile, be, budget // 2):
            yield r0, r1, c0, c1, _as_grid(block, plan.output_kind, r1 - r0, c1 - c0)


def _out_of_memory(e: BaseException) -> bool:
    """CuPy's OutOfMemoryError (matched by name: CuPy is optional) or MemoryError."""
    return isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"


def _free_device_pool() -> None:
    try:
        import cupy
    except ImportError:
        return
    cupy.get_default_memory_pool().free_all_blocks()


def run_rows_shrinking(be, plan: Plan, rows_of: Callable, B, r0: int, r1: int, concat: Callable,
                       **run_kw):
    """``be.run`` on rows r0:r1 of the left operand against B.

    When the backend runs out of memory, the rows are split in two and run
    separately, recursively down to a single row: the tile shrinks instead of
    the run failing. Rows are independent, so the result is identical.
    """
    try:
        return be.run(plan, {"A": rows_of(r0, r1), "B": B}, **run_kw)
    except Exception as e:  # noqa: BLE001 — re-raised unless it is out-of-memory
        if not _out_of_memory(e) or r1 - r0 <= 1:
            raise
    _free_device_pool()  # outside the except block: the failed tile's memory is released
    mid = (r0 + r1) // 2
    return concat([run_rows_shrinking(be, plan, rows_of, B, r0, mid, concat, **run_kw),
                   run_rows_shrinking(be, plan, rows_of, B, mid, r1, concat, **run_kw)])


def _concat_rows(parts):
    if runtime.is_cupy(parts[0]):
        return _concat_device_rows(parts)
    return np.concatenate(parts, axis=0)


def _concat_device_rows(parts):
    import cupy
    return cupy.concatenate(parts, axis=0)


def _run_tiles(plan, X, Y, be, budget, dtype, full_width):
    """Tiles for a backend that runs whole plans: one call per (row block, column tile)."""
    Xc = runtime.to_csr(X, "X", drop_zeros=True)
    Yc = runtime.to_csr(Y, "Y", drop_zeros=True)
    if Xc.shape[1] != Yc.shape[1]:
        raise InputError("X and Y must have the same number of columns",
                         got=f"X: {Xc.shape[1]}, Y: {Yc.shape[1]}")
    dt = _result_dtype(X, Y, dtype)
    m, n = Xc.shape[0], Yc.shape[0]
    width = n if full_width else tile_width(plan, n, budget)
    for c0 in range(0, n, max(width, 1)):
        c1 = min(n, c0 + width)
        rows = int(max(1, (budget // 2) // (_cell_bytes(plan) * (c1 - c0))))
        for r0 in range(0, m, rows):
            r1 = min(m, r0 + rows)
            out = run_rows_shrinking(be, plan, lambda a, b: Xc[a:b], Yc[c0:c1], r0, r1,
                                     _concat_rows, working_memory=budget // 2, drop_zeros=True,
                                     dtype=dt)
            if runtime.is_cupy(out):
                out = out.get()
            yield r0, r1, c0, c1, _as_grid(out, plan.output_kind, r1 - r0, c1 - c0)


# ---------------------------------------------------------------------------
# device tiles: the CUDA backend, with every tile kept on the GPU
# ---------------------------------------------------------------------------


def _on_gpu(be) -> bool:
    """True for the CUDA backend (tiles, selection and merging then stay on the device)."""
    return getattr(be, "name", None) == "cuda" and hasattr(be, "run")


def _device_cell_bytes(plan: Plan, dtype) -> int:
    """Device bytes per cell of a tile: the output, one partial per product step (k-chunked
    or two-pass products keep them), the broadcast copy of a non-matrix output, slack."""
    nmat = sum(1 for s in plan.steps if s.kind == "matrix")
    return int(np.dtype(dtype).itemsize * (3 + nmat))


def device_tile_shape(plan: Plan, m: int, n: int, budget: int, dtype) -> tuple[int, int]:
    """(rows, columns) of a device tile. Whole index rows when at least min(m, 512) query
    rows of them fit the budget (the usual case: long rows keep the selection's warps
    busy); else a near-square tile of the budget's cells."""
    cells = max(1, int(budget) // _device_cell_bytes(plan, dtype))
    if cells >= n * min(m, 512):
        return int(max(1, min(m, cells // max(n, 1)))), int(max(n, 1))
    rows = int(max(1, min(m, int(np.sqrt(cells)))))
    return rows, int(max(1, min(n, cells // rows)))


class _DeviceCSR:
    """A canonical CuPy CSR (explicit zeros dropped) with host row pointers for slicing."""

    def __init__(self, x, name: str, dtype, ensure_all_finite=True):
        import cupy
        import cupyx.scipy.sparse as cps
        if runtime.is_cupy(x):
            if getattr(x, "ndim", 2) != 2:
                raise InputError(f"{name} must be a 2-D matrix", got=f"shape {x.shape}")
            runtime._check_real(x.dtype, name)
            # structure and finiteness on the device, before tocsr/sum_duplicates read it
            check_device_operand(x, name, ensure_all_finite)
            if cps.issparse(x):
                m = x.tocsr(copy=True).astype(dtype)  # a copy: the caller's matrix stays as it is
            else:
                m = cps.csr_matrix(cupy.asarray(x, dtype=dtype))
            m.sum_duplicates()
            m = _drop_zeros_cupy(m)
        else:
            h = runtime.to_csr(x, name, drop_zeros=True, ensure_all_finite=ensure_all_finite)
            m = cps.csr_matrix((cupy.asarray(h.data.astype(dtype)), cupy.asarray(h.indices),
                                cupy.asarray(h.indptr)), shape=h.shape)
        m.has_canonical_format = True
        self.m = m
        self.shape = m.shape
        self.ptr = cupy.asnumpy(m.indptr).astype(np.int64)

    def rows(self, r0: int, r1: int):
        """Rows r0:r1 as a CuPy CSR sharing this one's data (marked canonical)."""
        import cupyx.scipy.sparse as cps
        if (r0, r1) == (0, self.shape[0]):
            return self.m
        p0, p1 = int(self.ptr[r0]), int(self.ptr[r1])
        ip = self.m.indptr[r0:r1 + 1] - self.m.indptr.dtype.type(p0)
        s = cps.csr_matrix((self.m.data[p0:p1], self.m.indices[p0:p1], ip),
                           shape=(r1 - r0, self.shape[1]))
        s.has_canonical_format = True
        return s


def _drop_zeros_cupy(m):
    """A CuPy CSR without explicitly stored zeros (row ids by searchsorted, new indptr)."""
    import cupy
    import cupyx.scipy.sparse as cps
    keep = m.data != 0
    if bool(keep.all()):
        return m
    rows = cupy.searchsorted(m.indptr, cupy.arange(m.data.shape[0]), side="right") - 1
    kept = cupy.bincount(rows[keep], minlength=m.shape[0])
    indptr = cupy.concatenate([cupy.zeros(1, dtype=m.indptr.dtype),
                               cupy.cumsum(kept).astype(m.indptr.dtype)])
    return cps.csr_matrix((m.data[keep], m.indices[keep], indptr), shape=m.shape)


def _device_grid(D, kind: str, rows: int, cols: int):
    import cupy
    if kind == "col":
        D = D.reshape(rows, 1)
    elif kind == "row":
        D = D.reshape(1, cols)
    elif kind != "matrix":
        D = D.reshape(1, 1)
    return D if D.shape == (rows, cols) else cupy.ascontiguousarray(cupy.broadcast_to(D, (rows, cols)))


def _device_budget(budget: int) -> int:
    return default_device_memory() if isinstance(budget, _DefaultBudget) else int(budget)


def device_tiles(plan: Plan, Xd: "_DeviceCSR", Yd: "_DeviceCSR", be, budget: int, dtype):
    """Yield ``(r0, r1, c0, c1, D)`` with D a CuPy array of the tile's distances (in
    ``dtype``); one tile exists at a time. Column tiles are the outer loop."""
    m, n = Xd.shape[0], Yd.shape[0]
    if Xd.shape[1] != Yd.shape[1]:
        raise InputError("X and Y must have the same number of columns",
                         got=f"X: {Xd.shape[1]}, Y: {Yd.shape[1]}")
    rows, width = device_tile_shape(plan, m, n, budget, dtype)
    for c0 in range(0, n, width):
        c1 = min(n, c0 + width)
        Yt = Yd.rows(c0, c1)
        for r0 in range(0, m, rows):
            r1 = min(m, r0 + rows)
            D = run_rows_shrinking(be, plan, Xd.rows, Yt, r0, r1, _concat_device_rows,
                                   working_memory=budget, drop_zeros=True, dtype=dtype)
            yield r0, r1, c0, c1, _device_grid(D, plan.output_kind, r1 - r0, c1 - c0)
            del D


def _device_operands(X, Y, dt):
    Xd = _DeviceCSR(X, "X", dt)
    Yd = Xd if Y is X else _DeviceCSR(Y, "Y", dt)
    return Xd, Yd


def _knn_device(plan: Plan, X, Y, k, be, budget: int, exclude_self: bool, dtype=None,
                on_block: Callable | None = None):
    """:func:`_knn` on the GPU: distance tiles, per-tile top-k and the merge across column
    tiles all run on the device; only the (m × k) result is copied back (not at all when
    an input was a CuPy array: the result is then CuPy)."""
    import cupy
    from .backends.cuda import topk
    on_device = runtime.is_cupy(X) or runtime.is_cupy(Y)
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    kk = _check_k(k, n, exclude_self)
    dt = _result_dtype(X, Y, dtype)
    Xd, Yd = _device_operands(X, Y, dt)
    budget = _device_budget(budget)
    best_d = cupy.full((m, kk), np.nan, dtype=dt)
    best_i = cupy.full((m, kk), np.iinfo(np.int64).max, dtype=cupy.int64)
    for r0, r1, c0, c1, D in device_tiles(plan, Xd, Yd, be, budget, dt):
        d, i = topk.select_k(D, kk, c0)
        del D
        if c0 == 0 and d.shape[1] == kk:  # the first column tile: nothing to merge with
            best_d[r0:r1], best_i[r0:r1] = d, i
        else:
            md, mi = topk.merge_k(best_d[r0:r1], best_i[r0:r1], d, i, kk)
            best_d[r0:r1], best_i[r0:r1] = md, mi
        if on_block is not None:
            on_block((r1 - r0) * (c1 - c0))
    if exclude_self:
        best_d, best_i = _drop_self_device(best_d, best_i, k)
    return (best_d, best_i) if on_device else (cupy.asnumpy(best_d), cupy.asnumpy(best_i))


def symmetric_tile_side(plan: Plan, n: int, budget: int, dtype, device: bool = True) -> int:
    """Side of the square tiles of a symmetric self-join: a tile, its transposed copy and
    the backend's temporaries fit the budget (device bytes per cell as
    :func:`device_tile_shape` counts them, plus the copy; on the host half the budget at
    :func:`_cell_bytes` plus 8 per cell)."""
    if device:
        per = _device_cell_bytes(plan, dtype) + np.dtype(dtype).itemsize
        cells = max(1, int(budget) // per)
    else:
        cells = max(1, (int(budget) // 2) // (_cell_bytes(plan) + 8))
    return int(max(1, min(n, int(np.sqrt(cells)))))


def _knn_device_symmetric(plan: Plan, X, k, be, budget: int, exclude_self: bool, dtype=None,
                          on_block: Callable | None = None):
    """:func:`_knn_device` for a self-join under a proven-symmetric metric: square tiles
    (row block r, column block c) with c >= r only; a tile feeds block r's running top-k
    and, transposed, block c's. Every unordered pair is computed once (the diagonal tiles
    whole); each query still sees every candidate exactly once, so the answer (order and
    ties included) is the non-symmetric one."""
    import cupy
    from .backends.cuda import topk
    on_device = runtime.is_cupy(X)
    n = _nrows(X, "X")
    kk = _check_k(k, n, exclude_self)
    dt = _result_dtype(X, X, dtype)
    Xd = _DeviceCSR(X, "X", dt)
    budget = _device_budget(budget)
    s = symmetric_tile_side(plan, n, budget, dt)
    best_d = cupy.full((n, kk), np.nan, dtype=dt)
    best_i = cupy.full((n, kk), np.iinfo(np.int64).max, dtype=cupy.int64)
    for r0 in range(0, n, s):
        r1 = min(n, r0 + s)
        Xr = Xd.rows(r0, r1)

        def rows_of(a, b, Xr=Xr, block=(r0, r1)):  # the whole block unless a tile shrank
            return Xr if (a, b) == block else Xd.rows(a, b)

        for c0 in range(r0, n, s):
            c1 = min(n, c0 + s)
            D = run_rows_shrinking(be, plan, rows_of, Xd.rows(c0, c1), r0, r1,
                                   _concat_device_rows, working_memory=budget, drop_zeros=True,
                                   dtype=dt)
            D = _device_grid(D, plan.output_kind, r1 - r0, c1 - c0)
            d, i = topk.select_k(D, kk, c0)
            best_d[r0:r1], best_i[r0:r1] = topk.merge_k(best_d[r0:r1], best_i[r0:r1], d, i, kk)
            if c0 != r0:
                DT = cupy.ascontiguousarray(D.T)
                del D
                d, i = topk.select_k(DT, kk, r0)
                del DT
                best_d[c0:c1], best_i[c0:c1] = topk.merge_k(best_d[c0:c1], best_i[c0:c1],
                                                            d, i, kk)
            else:
                del D
            if on_block is not None:  # pairs covered: both orders off the diagonal
                on_block((r1 - r0) * (c1 - c0) * (1 if c0 == r0 else 2))
    if exclude_self:
        best_d, best_i = _drop_self_device(best_d, best_i, k)
    return (best_d, best_i) if on_device else (cupy.asnumpy(best_d), cupy.asnumpy(best_i))


def _drop_self_device(d, i, k: int):
    """:func:`_drop_self` on CuPy arrays, without a synchronisation: column j of the
    answer is candidate j, or j + 1 from the dropped position on."""
    import cupy
    rows, width = i.shape
    hit = i == cupy.arange(rows, dtype=cupy.int64)[:, None]
    drop = cupy.where(hit.any(axis=1), hit.astype(cupy.int8).argmax(axis=1), width - 1)
    j = cupy.arange(k, dtype=cupy.int64)[None, :]
    src = j + (j >= drop[:, None])
    return (cupy.ascontiguousarray(cupy.take_along_axis(d, src, axis=1)),
            cupy.ascontiguousarray(cupy.take_along_axis(i, src, axis=1)))


def _radius_device_pairs(plan: Plan, X, Y, radius, be, budget: int, dt):
    """(rows, cols, values) on the host of every pair within radius, found tile by tile on
    the device (comparisons in float64, as the host path makes them)."""
    import cupy
    Xd, Yd = _device_operands(X, Y, dt)
    budget = _device_budget(budget)
    rows, cols, vals = [], [], []
    for r0, r1, c0, c1, D in device_tiles(plan, Xd, Yd, be, budget, dt):
        r, c = cupy.nonzero(D.astype(cupy.float64, copy=False) <= radius)
        vals.append(cupy.asnumpy(D[r, c]).astype(np.float64))
        rows.append(cupy.asnumpy(r).astype(np.int64) + r0)
        cols.append(cupy.asnumpy(c).astype(np.int64) + c0)
    return rows, cols, vals


# ---------------------------------------------------------------------------
# top-k selection and merging
# ---------------------------------------------------------------------------


def select_k(D: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries of each row of D by (distance, column), NaN last.

    Returns (distances, indices), both rows × min(k, width), sorted; indices are
    int64 columns plus ``offset``. Ties at the k-th value keep the lowest
    columns, so the choice never depends on the partition's internal order.
    """
    rows, width = D.shape
    kk = min(k, width)
    cols = np.arange(width, dtype=np.int64)
    if kk == 0 or rows == 0:
        return np.empty((rows, kk)), np.empty((rows, kk), dtype=np.int64)
    if kk < width:
        kth = np.partition(D, kk - 1, axis=1)[:, kk - 1:kk]  # NaN sorts last
        kth_nan = np.isnan(kth)
        d_nan = np.isnan(D)
        less = (D < kth) | (kth_nan & ~d_nan)
        equal = (D == kth) | (kth_nan & d_nan)
        need = kk - less.sum(axis=1)
        over = np.flatnonzero(equal.sum(axis=1) > need)
        if over.size:  # more ties than places: keep the lowest columns
            equal[over] &= np.cumsum(equal[over], axis=1) <= need[over, None]
        _, picked = np.nonzero(less | equal)  # row-major: kk per row, columns ascending
        cols = picked.reshape(rows, kk).astype(np.int64)
        values = np.take_along_axis(D, cols, axis=1)
    else:
        cols = np.broadcast_to(cols, (rows, width))
        values = D
    order = np.argsort(values, axis=1, kind="stable")  # stable: equal values by column
    return (np.take_along_axis(values, order, axis=1),
            np.take_along_axis(cols, order, axis=1) + np.int64(offset))


def merge_k(d1, i1, d2, i2, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge two candidate lists per row into the k best by (distance, index), NaN last."""
    d = np.concatenate([d1, d2], axis=1)
    i = np.concatenate([i1, i2], axis=1)
    order = np.lexsort((i, d), axis=1)[:, :k]
    return np.take_along_axis(d, order, axis=1), np.take_along_axis(i, order, axis=1)


def _drop_self(d: np.ndarray, i: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """From k + 1 candidates per query, drop the query's own index (else the last one).

    As scikit-learn does: only index q is removed for query q, even when a
    duplicate of q lies at distance 0 too.
    """
    rows = d.shape[0]
    hit = i == np.arange(rows, dtype=np.int64)[:, None]
    drop = np.where(hit.any(axis=1), hit.argmax(axis=1), i.shape[1] - 1)
    keep = np.ones(i.shape, dtype=bool)
    keep[np.arange(rows), drop] = False
    return d[keep].reshape(rows, k), i[keep].reshape(rows, k)


# ---------------------------------------------------------------------------
# the searches
# ---------------------------------------------------------------------------


def _check_k(k, n_index: int, exclude_self: bool) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InputError("n_neighbors must be an integer", got=repr(k))
    if k <= 0:
        raise InputError(f"Expected n_neighbors > 0. Got {k}")
    need = k + 1 if exclude_self else k
    if need > n_index:
        limit = n_index - 1 if exclude_self else n_index
        hint = f"use n_neighbors <= {limit}" if limit >= 1 else (
            f"the index holds {n_index} sample(s), so no n_neighbors works: fit on more samples"
            + (", or pass the query X explicitly" if exclude_self and n_index else ""))
        if exclude_self:
            raise InputError(f"Expected n_neighbors < n_samples_fit when the query is the fitted "
                             f"data (each point is left out of its own neighbours), but "
                             f"n_neighbors = {k}, n_samples_fit = {n_index}", hint=hint)
        raise InputError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                         f"n_samples_fit = {n_index}", hint=hint)
    return need


def _nrows(x, name: str) -> int:
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    if len(shape) != 2:
        raise InputError(f"{name} must be a 2-D matrix", got=f"shape {tuple(shape)}",
                         hint="reshape a single sample with x.reshape(1, -1)")
    return int(shape[0])


def _use_symmetric(plan: Plan, X, Y, symmetric) -> bool:
    """Whether a search runs the symmetric self-join: ``symmetric`` None (auto) means when
    Y is X and the metric is proven symmetric (:func:`is_symmetric`); True insists (an
    error when it is not valid); False never."""
    if symmetric is None:
        return Y is X and is_symmetric(plan)
    if not isinstance(symmetric, (bool, np.bool_)):
        raise InputError("symmetric must be True, False or None", got=repr(symmetric))
    if not symmetric:
        return False
    if Y is not X:
        raise InputError("symmetric=True needs a self-join", got="an explicit index Y",
                         hint="call knn(X) (Y=None), or leave symmetric=None")
    if not is_symmetric(plan):
        raise InputError("symmetric=True needs a metric proven symmetric (d(a, b) == d(b, a))",
                         got=ir_text(plan),
                         hint="leave symmetric=None: gbdist then uses it only where it is proven")
    return True


def ir_text(plan: Plan) -> str:
    from . import ir
    return ir.to_text(plan.expr)


def _knn_host_symmetric(plan: Plan, X, k, be, budget: int, exclude_self: bool, dtype=None,
                        on_block: Callable | None = None):
    """The host path's symmetric self-join: square tiles (r, c), c >= r, each computed by
    :func:`distance_tiles` in row blocks; a block feeds its rows' top-k and, transposed,
    the column block's. Same answer as the non-symmetric path."""
    Xc = runtime.to_csr(X, "X", drop_zeros=True)
    n = Xc.shape[0]
    kk = _check_k(k, n, exclude_self)
    dt = _result_dtype(X, X, dtype)
    s = symmetric_tile_side(plan, n, budget, dt, device=False)
    best_d = np.full((n, kk), np.nan)
    best_i = np.full((n, kk), np.iinfo(np.int64).max, dtype=np.int64)
    for r0 in range(0, n, s):
        r1 = min(n, r0 + s)
        for c0 in range(r0, n, s):
            c1 = min(n, c0 + s)
            for a0, a1, _, _, D in distance_tiles(plan, Xc[r0:r1], Xc[c0:c1], be, budget, dt,
                                                  full_width=True):
                a0, a1 = r0 + a0, r0 + a1
                d, i = select_k(D, kk, c0)
                best_d[a0:a1], best_i[a0:a1] = merge_k(best_d[a0:a1], best_i[a0:a1], d, i, kk)
                if c0 != r0:
                    d, i = select_k(np.ascontiguousarray(D.T), kk, a0)
                    best_d[c0:c1], best_i[c0:c1] = merge_k(best_d[c0:c1], best_i[c0:c1],
                                                           d, i, kk)
                if on_block is not None:  # pairs covered: both orders off the diagonal
                    on_block((a1 - a0) * (c1 - c0) * (1 if c0 == r0 else 2))
    if exclude_self:
        best_d, best_i = _drop_self(best_d, best_i, k)
    return best_d.astype(dt), best_i


def _knn(plan: Plan, X, Y, k, be, budget: int, exclude_self: bool, dtype=None,
         on_block: Callable | None = None, symmetric=None) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest index rows of every query; see :func:`knn`."""
    sym = _use_symmetric(plan, X, Y, symmetric)
    if _on_gpu(be):
        if sym:
            return _knn_device_symmetric(plan, X, k, be, budget, exclude_self, dtype, on_block)
        return _knn_device(plan, X, Y, k, be, budget, exclude_self, dtype, on_block)
    if sym:
        return _knn_host_symmetric(plan, X, k, be, budget, exclude_self, dtype, on_block)
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    kk = _check_k(k, n, exclude_self)
    dt = _result_dtype(X, Y, dtype)
    # Placeholders (NaN, largest index) sort after every real candidate, NaN ones too.
    best_d = np.full((m, kk), np.nan)
    best_i = np.full((m, kk), np.iinfo(np.int64).max, dtype=np.int64)
    for r0, r1, c0, c1, D in distance_tiles(plan, X, Y, be, budget, dt):
        d, i = select_k(D, kk, c0)
        best_d[r0:r1], best_i[r0:r1] = merge_k(best_d[r0:r1], best_i[r0:r1], d, i, kk)
        if on_block is not None:
            on_block((r1 - r0) * (c1 - c0))
    if exclude_self:
        best_d, best_i = _drop_self(best_d, best_i, k)
    return best_d.astype(dt), best_i


def _radius_host_pairs(plan: Plan, X, Y, radius, be, budget: int, dt):
    for r0, r1, c0, c1, D in distance_tiles(plan, X, Y, be, budget, dt):
        r, c = np.nonzero(D <= radius)
        r = r.astype(np.int64) + r0
        c = c.astype(np.int64) + c0
        yield r, c, D[r - r0, c - c0]


def _radius(plan: Plan, X, Y, radius, be, budget: int, exclude_self: bool, sort_results: bool,
            dtype=None) -> sps.csr_matrix:
    """Every (query, index) pair at distance <= radius, as a CSR of distances.

    Column indices within a row are ascending, or sorted by (distance, index)
    with ``sort_results``. Stored entries are the pairs found (a distance of 0
    is stored too).
    """
    if isinstance(radius, bool) or not isinstance(radius, numbers.Real) or np.isnan(radius):
        raise InputError("radius must be a number", got=repr(radius))
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    dt = _result_dtype(X, Y, dtype)
    rows, cols, vals = [], [], []
    if _on_gpu(be):
        tiles = zip(*_radius_device_pairs(plan, X, Y, radius, be, budget, dt))
    else:
        tiles = _radius_host_pairs(plan, X, Y, radius, be, budget, dt)
    for r, c, v in tiles:
        if exclude_self:
            keep = r != c
            r, c, v = r[keep], c[keep], v[keep]
        rows.append(r)
        cols.append(c)
        vals.append(v)
    r = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    v = np.concatenate(vals) if vals else np.empty(0)
    order = np.lexsort((c, v, r) if sort_results else (c, r))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    out = sps.csr_matrix((v[order].astype(dt), c[order], indptr), shape=(m, n))
    out.has_sorted_indices = not sort_results
    return out


def knn(X, Y=None, k: int = 5, metric="euclidean", backend="auto", working_memory=None,
        exclude_self=None, symmetric: bool | None = None, **params
        ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of X, the k nearest rows of Y (of X when Y is None).

    Returns ``(distances, indices)``, both shaped (n_X, k), each row sorted by
    (distance, index): ties go to the lower index and NaN distances come last.
    Indices are int64. Distances are float32 when every input is float32.

    ``exclude_self`` (default: ``Y is None``) leaves index i out of query i's
    neighbours, as scikit-learn's ``kneighbors(X=None)`` does — a duplicate of
    row i at distance 0 is still returned. ``k`` larger than the index raises
    :class:`gbdist.InputError` (scikit-learn's ValueError "Expected n_neighbors
    <= n_samples_fit"). ``working_memory`` (bytes) sizes the tiles; results do
    not depend on it. ``params`` go to the metric (``p`` for minkowski).

    ``symmetric``: in a self-join (Y None or Y is X) under a metric proven symmetric
    (:func:`is_symmetric`), compute each unordered pair once (square tiles on and above
    the diagonal, each feeding both blocks' top-k). None (default) does so whenever it is
    valid; True insists (:class:`gbdist.InputError` when it is not valid); False never.
    The answer is the same either way.
    """
    if exclude_self is None:
        exclude_self = Y is None
    plan = metric_program(metric, **params).plan
    budget = _budget(working_memory)
    be = _backend(backend, budget)
    return _knn(plan, X, X if Y is None else Y, k, be, budget, bool(exclude_self),
                symmetric=symmetric)


def pairwise_distances_chunked(X, Y=None, metric="euclidean", working_memory=None,
                               reduce_func: Callable | None = None, backend="auto", dtype=None,
                               **params):
    """Yield the distance matrix in row blocks (a generator), like scikit-learn's.

    Each block holds whole rows (all of Y) and is sized so that it and its
    temporaries fit ``working_memory`` bytes. With ``reduce_func(D_chunk,
    start)`` the generator yields its results instead of the blocks.
    """
    plan = metric_program(metric, **params).plan
    budget = _budget(working_memory)
    be = _backend(backend, budget)
    Yv = X if Y is None else Y
    dt = _result_dtype(X, Yv, dtype)
    for r0, r1, c0, c1, D in distance_tiles(plan, X, Yv, be, budget, dt, full_width=True):
        block = D.astype(dt)  # a writable copy
        if reduce_func is None:
            yield block
        else:
            reduced = reduce_func(block, r0)
            if reduced is None:
                raise InputError("reduce_func returned None",
                                 hint="return the reduced chunk, e.g. a list or an array per row")
            yield reduced


# ---------------------------------------------------------------------------
# the scikit-learn shaped estimator
# ---------------------------------------------------------------------------


def _object_rows(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    out = np.empty(len(indptr) - 1, dtype=object)
    out[:] = [values[indptr[q]:indptr[q + 1]] for q in range(len(indptr) - 1)]
    return out


class NearestNeighbors:
    """Unsupervised neighbour search shaped like ``sklearn.neighbors.NearestNeighbors``.

    ``metric`` is any gbdist metric name (built-in or registered with
    ``gb.define_metric`` / the DSL), a callable ``(A, B) -> expression`` or an
    expression. ``p`` is passed to metrics that take a ``p`` (minkowski) unless
    ``metric_params`` sets it; ``metric_params`` go to the metric.
    ``working_memory`` is in bytes (scikit-learn's is in MiB).
    """

    def __init__(self, n_neighbors: int = 5, radius: float = 1.0, metric="minkowski", p=2,
                 metric_params: dict | None = None, backend="auto", working_memory=None):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.backend = backend
        self.working_memory = working_memory

    # -- fitting ---------------------------------------------------------------

    def _params(self) -> dict:
        params = dict(self.metric_params or {})
        if isinstance(self.metric, str) and "p" in metrics.get(self.metric).params \
                and "p" not in params and self.p is not None:
            params["p"] = self.p
        return params

    def fit(self, X, y=None) -> "NearestNeighbors":
        """Store the index: X as canonical CSR (explicit zeros dropped)."""
        self.effective_metric_params_ = self._params()
        self.effective_metric_ = self.metric
        self._plan = metric_program(self.metric, **self.effective_metric_params_).plan
        self._fit_dtype = _result_dtype(X, X)
        self._fit_X = runtime.to_csr(X, "X", drop_zeros=True)
        self.n_samples_fit_, self.n_features_in_ = self._fit_X.shape
        return self

    def _query(self, X):
        if not hasattr(self, "_fit_X"):
            raise InputError("this NearestNeighbors is not fitted yet", hint="call fit(X) first")
        budget = _budget(self.working_memory)
        be = _backend(self.backend, budget)
        if X is None:
            return self._fit_X, True, budget, be, self._fit_dtype
        both32 = self._fit_dtype == np.float32 and _result_dtype(X, X) == np.float32
        return X, False, budget, be, np.dtype(np.float32 if both32 else np.float64)

    # -- k nearest -------------------------------------------------------------

    def kneighbors(self, X=None, n_neighbors=None, return_distance: bool = True):
        """The n_neighbors nearest fitted rows of each row of X (of the fitted data when
        X is None, each point then left out of its own neighbours)."""
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        Q, is_train, budget, be, dt = self._query(X)
        d, i = _knn(self._plan, Q, self._fit_X, k, be, budget, is_train, dt)
        return (d, i) if return_distance else i

    def kneighbors_graph(self, X=None, n_neighbors=None, mode: str = "connectivity"):
        """CSR of shape (n_queries, n_samples_fit): 1 (connectivity) or the distance
        (distance) at each query's neighbours, in neighbour order within a row."""
        if mode not in ("connectivity", "distance"):
            raise InputError("unknown mode", expected="'connectivity' or 'distance'",
                             got=repr(mode))
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        d, i = self.kneighbors(X, k, return_distance=True)
        nq = i.shape[0]
        data = np.ones(i.size) if mode == "connectivity" else d.ravel()
        indptr = np.arange(0, nq * i.shape[1] + 1, i.shape[1], dtype=np.int64)
        return sps.csr_matrix((data, i.ravel(), indptr), shape=(nq, self.n_samples_fit_))

    # -- radius ------------------------------------------------------------------

    def _radius_csr(self, X, radius, sort_results):
        r = self.radius if radius is None else radius
        Q, is_train, budget, be, dt = self._query(X)
        return _radius(self._plan, Q, self._fit_X, r, be, budget, is_train, sort_results, dt)

    def radius_neighbors(self, X=None, radius=None, return_distance: bool = True,
                         sort_results: bool = False):
        """For each query, the fitted rows at distance <= radius, as object arrays of
        arrays (scikit-learn's shape); index order unless ``sort_results``."""
        if sort_results and not return_distance:
            raise InputError("return_distance must be True if sort_results is True")
        g = self._radius_csr(X, radius, sort_results)
        ind = _object_rows(g.indices.astype(np.int64), g.indptr)
        if not return_distance:
            return ind
        return _object_rows(g.data, g.indptr), ind

    def radius_neighbors_graph(self, X=None, radius=None, mode: str = "connectivity",
                               sort_results: bool = False):
        """CSR of shape (n_queries, n_samples_fit) of the pairs within radius."""
        if mode not in ("connectivity", "distance"):
            raise InputError("unknown mode", expected="'connectivity' or 'distance'",
                             got=repr(mode))
        g = self._radius_csr(X, radius, sort_results)
        if mode == "connectivity":
            g.data = np.ones_like(g.data, dtype=np.float64)
        return g

    def __repr__(self):
        return (f"NearestNeighbors(n_neighbors={self.n_neighbors}, radius={self.radius}, "
                f"metric={self.metric!r}, p={self.p}, backend={self.backend!r})")
