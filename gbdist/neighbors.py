"""k-nearest neighbours and radius queries on top of the runtime's block iterator.

The distance matrix between queries (rows of X) and the index (rows of Y) is
never materialised. The output grid is cut into *column tiles* (slices of the
index) and, inside each tile, into *row blocks* (slices of the queries), both
sized from one ``working_memory`` budget (given in MiB, counted in bytes):

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
import warnings
from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sps

from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import validate_data

from .compiler import ir
from . import runtime
from .errors import GbdistError, InputError, NotFittedError, ParameterError
from .inputs import check_device_operand
from .pairwise import metric_program
from .compiler.plan import Plan

__all__ = ["knn", "NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
           "kneighbors_graph", "radius_neighbors_graph", "pairwise_distances_chunked"]

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
    """The byte budget of a ``working_memory`` given in MiB (scikit-learn's unit,
    :func:`gbdist.runtime.working_memory_bytes`); None: :func:`default_working_memory`."""
    return _budget_bytes(runtime.working_memory_bytes(working_memory))


def _budget_bytes(nbytes) -> int:
    """A budget given in bytes (the CLI's ``--working-memory``); None: the default."""
    if nbytes is None:
        return _DefaultBudget(default_working_memory())
    if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, numbers.Integral) \
            or nbytes <= 0:
        raise ParameterError("the working memory must be a positive number of bytes",
                             got=repr(nbytes))
    return int(nbytes)


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
    from .compiler.typecheck import row_operand
    name, flipped, chain = row_operand(node, transpose)
    role = roles.get((name, False))
    if flipped or role not in ("i", "j"):
        return None
    return role, tuple(op.key for op in chain), chain


def _commutes(mul) -> bool:
    """f(x, y) == f(y, x) proven on f's domain (by sympy or exhaustively, never numerically)."""
    from .algebra import proofs
    from .algebra.formulas import X, Y
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
    other = cupy.where(d[:, 0] == 0, 0, width - 1)
    drop = cupy.where(hit.any(axis=1), hit.astype(cupy.int8).argmax(axis=1), other)
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


def _drop_self(d: np.ndarray, i: np.ndarray, k: int, first_if_missing: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """From k + 1 candidates per query, drop the query's own index (else the first one).

    As scikit-learn does: only index q is removed for query q, even when a
    duplicate of q lies at distance 0 too. When q is not among the candidates:
    if the first lies at distance 0 (more than k duplicates of q with lower
    indices), that first one is dropped, as scikit-learn masks it; else (a
    measure under which q is not its own nearest, e.g. inner_product) every
    candidate is a true neighbour and the last is dropped. ``first_if_missing``:
    always the first (scikit-learn's rule for a precomputed graph, whose
    diagonal is implicit).
    """
    rows = d.shape[0]
    hit = i == np.arange(rows, dtype=np.int64)[:, None]
    other = np.where((d[:, 0] == 0) | first_if_missing, 0, i.shape[1] - 1)
    drop = np.where(hit.any(axis=1), hit.argmax(axis=1), other)
    keep = np.ones(i.shape, dtype=bool)
    keep[np.arange(rows), drop] = False
    return d[keep].reshape(rows, k), i[keep].reshape(rows, k)


# ---------------------------------------------------------------------------
# the searches
# ---------------------------------------------------------------------------


def _check_k(k, n_index: int, exclude_self: bool) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer value",
                             got=repr(k))
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
    <= n_samples_fit"). ``working_memory`` (MiB) sizes the tiles; results do
    not depend on it. ``params`` go to the metric (``p`` for minkowski).

    ``symmetric``: in a self-join (Y None or Y is X) under a metric proven symmetric
    (:func:`is_symmetric`), compute each unordered pair once (square tiles on and above
    the diagonal, each feeding both blocks' top-k). None (default) does so whenever it is
    valid; True insists (:class:`gbdist.InputError` when it is not valid); False never.
    The answer is the same either way.
    """
    from .pairwise import as_input
    if exclude_self is None:
        exclude_self = Y is None
    X = as_input(X, "X")
    Y = None if Y is None else as_input(Y, "Y")
    plan = metric_program(metric, **params).plan
    budget = _budget(working_memory)
    be = _backend(backend, budget)
    return _knn(plan, X, X if Y is None else Y, k, be, budget, bool(exclude_self),
                symmetric=symmetric)


def _check_chunk_size(reduced, chunk_size: int) -> None:
    """scikit-learn's checks on a ``reduce_func`` result: None, or one sequence (or a tuple
    of sequences) with one entry per row of the chunk."""
    if reduced is None:
        return
    is_tuple = isinstance(reduced, tuple)
    parts = reduced if is_tuple else (reduced,)
    if any(isinstance(r, tuple) or not hasattr(r, "__iter__") for r in parts):
        raise ParameterError(f"reduce_func returned {reduced!r}. Expected sequence(s) of length "
                             f"{chunk_size}.",
                             hint="return one value per row of the chunk, or None")
    sizes = tuple(_num_samples(r) for r in parts)
    if any(n != chunk_size for n in sizes):
        raise InputError(f"reduce_func returned object of length "
                         f"{sizes if is_tuple else sizes[0]}. Expected same length as input: "
                         f"{chunk_size}.")


def _num_samples(x) -> int:
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    return len(x)


def pairwise_distances_chunked(X, Y=None, *, reduce_func: Callable | None = None,
                               metric="euclidean", n_jobs=None, working_memory=None,
                               backend="auto", dtype=None, **kwds):
    """Yield the distance matrix in row blocks (a generator), as scikit-learn's does.

    Same arguments as ``sklearn.metrics.pairwise_distances_chunked``: each block
    holds whole rows (all of Y) and is sized so that it and gbdist's temporaries
    fit ``working_memory`` MiB (default: :func:`default_working_memory`); any
    positive number is honoured, fractions too. ``reduce_func(D_chunk, start)``
    replaces each block by its result, which must be None or a sequence (or a
    tuple of sequences) with one entry per row, as scikit-learn checks.
    ``n_jobs`` is accepted and ignored (the backend decides its threads).
    ``metric="precomputed"`` yields X itself (checked) in one block. The other
    keywords are the metric's parameters (``p=``), plus ``ensure_all_finite``
    / ``force_all_finite``, passed on to the input check.

    Arguments are checked when the function is called; the distances are
    computed as the generator is consumed.
    """
    from .pairwise import as_input, check_n_jobs, precomputed_distances, split_finite_kw
    if reduce_func is not None and not callable(reduce_func):
        raise ParameterError("The 'reduce_func' parameter of pairwise_distances_chunked must be "
                             "a callable or None.", got=repr(reduce_func))
    check_n_jobs(n_jobs)
    params, finite_kw = split_finite_kw(kwds)
    X = as_input(X, "X")
    Y = None if Y is None else as_input(Y, "Y")
    if isinstance(metric, str) and metric == "precomputed":
        D = precomputed_distances(X, Y, **finite_kw)
        return _reduced_chunks(iter([(0, D.shape[0], D)]), reduce_func)
    plan = metric_program(metric, **params).plan
    budget = _budget(working_memory)
    be = _backend(backend, budget)
    Yv = X if Y is None else Y
    dt = _result_dtype(X, Yv, dtype)
    tiles = ((r0, r1, D.astype(dt)) for r0, r1, _, _, D in
             distance_tiles(plan, X, Yv, be, budget, dt, full_width=True))
    return _reduced_chunks(tiles, reduce_func)


def _reduced_chunks(chunks, reduce_func):
    for r0, r1, block in chunks:
        if reduce_func is None:
            yield block
        else:
            reduced = reduce_func(block, r0)
            _check_chunk_size(reduced, r1 - r0)
            yield reduced


# ---------------------------------------------------------------------------
# the scikit-learn shaped estimator
# ---------------------------------------------------------------------------


def _object_rows(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    out = np.empty(len(indptr) - 1, dtype=object)
    out[:] = [values[indptr[q]:indptr[q + 1]] for q in range(len(indptr) - 1)]
    return out


def _int64_csr(data, indices, indptr, shape) -> sps.csr_matrix:
    """A CSR whose indices and indptr stay int64 (scikit-learn's graphs), whatever SciPy
    would shrink them to."""
    g = sps.csr_matrix((data, indices, indptr), shape=shape)
    g.indices = np.asarray(indices, dtype=np.int64)
    g.indptr = np.asarray(indptr, dtype=np.int64)
    return g


_MODES = ("connectivity", "distance")


def _check_mode(mode) -> None:
    if mode not in _MODES:
        raise InputError('Unsupported mode, must be one of "connectivity", or "distance" but '
                         f'got "{mode}" instead', expected="'connectivity' or 'distance'",
                         got=repr(mode))


def _precomputed_knn(D, k: int, exclude_self: bool):
    """The k smallest entries per row of a precomputed distance matrix (dense, or sparse
    with its stored entries as the candidates, as scikit-learn reads a graph)."""
    need = k + 1 if exclude_self else k
    if not sps.issparse(D):
        d, i = select_k(np.asarray(D, dtype=np.float64), need)
    else:
        g = sps.csr_matrix(D)
        g.sum_duplicates()
        counts = np.diff(g.indptr)
        if counts.size and counts.min() < need:
            raise InputError(f"{need} neighbors per samples are required, but some samples have "
                             f"only {counts.min()}.",
                             hint="store at least n_neighbors entries per row of the graph")
        rows = np.repeat(np.arange(g.shape[0]), counts)
        order = np.lexsort((g.indices, g.data, rows))
        take = (g.indptr[:-1, None] + np.arange(need)[None, :])
        sel = order[take]
        d = g.data[sel].astype(np.float64)
        i = g.indices[sel].astype(np.int64)
    if exclude_self:
        d, i = _drop_self(d, i, k, first_if_missing=True)
    return d.astype(D.dtype if D.dtype == np.float32 else np.float64), i


def _precomputed_radius(D, radius, exclude_self: bool, sort_results: bool) -> sps.csr_matrix:
    g = sps.csr_matrix(D) if sps.issparse(D) else None
    if g is None:
        r, c = np.nonzero(np.asarray(D) <= radius)
        v = np.asarray(D)[r, c]
    else:
        g.sum_duplicates()
        r = np.repeat(np.arange(g.shape[0]), np.diff(g.indptr))
        keep = g.data <= radius
        r, c, v = r[keep], g.indices[keep], g.data[keep]
    r, c = r.astype(np.int64), c.astype(np.int64)
    if exclude_self:
        keep = r != c
        r, c, v = r[keep], c[keep], v[keep]
    order = np.lexsort((c, v, r) if sort_results else (c, r))
    m = D.shape[0]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    return _int64_csr(v[order], c[order], indptr, D.shape)


def _wrap_sklearn_error(e: Exception) -> Exception:
    """scikit-learn's validation errors as gbdist errors of the same Python classes."""
    msg = str(e)
    if isinstance(e, TypeError):
        return ParameterError(msg)
    return InputError(msg)


def _fitted_data(X):
    """scikit-learn's estimators also fit on a fitted neighbours estimator or a
    BallTree/KDTree (its data is the index); gbdist reads their data."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        return X._fit_X
    from sklearn.neighbors import BallTree, KDTree
    from sklearn.neighbors._base import NeighborsBase
    if isinstance(X, NeighborsBase):
        return X._fit_X
    if isinstance(X, (BallTree, KDTree)):
        return np.asarray(X.data)
    return X


def _check_graph_params(est, metric, p, metric_params) -> None:
    """The graph functions given a fitted estimator: its parameters must be the ones asked
    for (scikit-learn's check)."""
    have = est.get_params()
    for name, value in (("metric", metric), ("p", p), ("metric_params", metric_params)):
        if have.get(name) != value:
            raise InputError(f"Got {value} for {name}, while the estimator has {have.get(name)} "
                             f"for the same parameter.",
                             hint="pass the estimator's own parameters, or pass the data")


class _NeighborsBase(BaseEstimator):
    """The neighbour searches shared by :class:`NearestNeighbors` and the transformers.

    gbdist always searches by brute force (every distance computed, tiled within
    ``working_memory``): ``algorithm`` and ``leaf_size`` are accepted and checked as
    scikit-learn checks them, and change nothing; ``n_jobs`` is accepted and ignored
    (the backend chooses its threads).
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="both"), None],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "p": [Interval(numbers.Real, 0, None, closed="right"), None],
        "metric": [str, callable, ir.Node],
        "metric_params": [dict, None],
        "n_jobs": [numbers.Integral, None],
        "backend": "no_validation",
        "working_memory": [Interval(numbers.Real, 0, None, closed="neither"), None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed()
        tags.input_tags.positive_only = tags.input_tags.pairwise
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "_fit_X")

    def _precomputed(self) -> bool:
        return isinstance(self.metric, str) and self.metric == "precomputed"

    # -- fitting ---------------------------------------------------------------

    def _check_params(self) -> None:
        try:
            self._validate_params()
        except InvalidParameterError as e:
            raise ParameterError(str(e)) from None

    def _set_effective_metric(self) -> None:
        """scikit-learn's rule: ``p`` belongs to minkowski (``metric_params`` wins, with a
        SyntaxWarning); minkowski with p = 1, 2, inf is manhattan, euclidean, chebyshev."""
        params = dict(self.metric_params or {})
        if "p" in params and self.p is not None:
            warnings.warn("Parameter p is found in metric_params. The corresponding parameter "
                          "from __init__ is ignored.", SyntaxWarning, stacklevel=3)
        metric = self.metric
        if isinstance(metric, str) and metric == "minkowski":
            p = params.pop("p", self.p)
            p = 2 if p is None else p
            w = params.pop("w", None)
            if w is None and p in (1, 2, np.inf):
                metric = {1: "manhattan", 2: "euclidean"}.get(p, "chebyshev")
            else:
                params["p"], params["w"] = p, w
        self.effective_metric_ = metric
        self.effective_metric_params_ = params

    def _validate(self, X, reset: bool):
        if runtime.is_cupy(X):  # CuPy (dense or cupyx sparse): checked on the host
            X = X.get()
        try:
            return validate_data(self, X, reset=reset, accept_sparse="csr")
        except (ValueError, TypeError) as e:
            if isinstance(e, GbdistError):
                raise
            raise _wrap_sklearn_error(e) from None

    def _validate_precomputed(self, X, reset: bool):
        from .pairwise import precomputed_distances
        D = precomputed_distances(X)
        if reset:
            self.n_features_in_ = D.shape[1]
        elif D.shape[1] != self.n_samples_fit_:
            raise InputError(f"Precomputed metric requires shape (n_queries, n_indexed). Got "
                             f"({D.shape[0]}, {D.shape[1]}) for {self.n_samples_fit_} indexed.")
        return D

    def fit(self, X, y=None):
        """Store the index (X as canonical CSR, explicit zeros dropped; with
        ``metric="precomputed"`` the square distance matrix itself). ``y`` is ignored."""
        self._check_params()
        X = _fitted_data(X)
        if self._precomputed():
            D = self._validate_precomputed(X, reset=True)
            if D.shape[0] != D.shape[1]:
                raise InputError(f"Precomputed matrix must be square. Input is a "
                                 f"{D.shape[0]}x{D.shape[1]} matrix.")
            self.effective_metric_, self.effective_metric_params_ = "precomputed", {}
            self._plan = None
            self._fit_dtype = np.dtype(np.float32 if D.dtype == np.float32 else np.float64)
            self._fit_X = D
        else:
            X = self._validate(X, reset=True)
            self._set_effective_metric()
            params = dict(self.effective_metric_params_)
            if "w" in params and params["w"] is None:  # scikit-learn's unweighted minkowski
                del params["w"]
            self._plan = metric_program(self.effective_metric_, **params).plan
            self._fit_dtype = _result_dtype(X, X)
            self._fit_X = runtime.to_csr(X, "X", drop_zeros=True)
        self.n_samples_fit_ = self._fit_X.shape[0]
        self._fit_method = "brute"
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "_fit_X"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call "
                                 f"'fit' with appropriate arguments before using this estimator.",
                                 hint="call fit(X) first")

    def _query(self, X):
        """(queries, is the fitted data, budget, backend, result dtype)."""
        self._check_fitted()
        budget = _budget(self.working_memory)
        be = None if self._precomputed() else _backend(self.backend, budget)
        if X is None:
            return self._fit_X, True, budget, be, self._fit_dtype
        if self._precomputed():
            Q = self._validate_precomputed(X, reset=False)
        else:
            Q = self._validate(X, reset=False)
        both32 = self._fit_dtype == np.float32 and _result_dtype(Q, Q) == np.float32
        return Q, False, budget, be, np.dtype(np.float32 if both32 else np.float64)

    # -- k nearest -------------------------------------------------------------

    def _check_n_neighbors(self, n_neighbors, n_queries: int, is_train: bool) -> int:
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Real):
            raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer "
                                 f"value", got=repr(k))
        if k <= 0:
            raise InputError(f"Expected n_neighbors > 0. Got {k}")
        if not isinstance(k, numbers.Integral):
            raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer "
                                 f"value", got=repr(k))
        n = self.n_samples_fit_
        if k + is_train > n:
            rel = "n_neighbors < n_samples_fit" if is_train else "n_neighbors <= n_samples_fit"
            raise InputError(f"Expected {rel}, but n_neighbors = {k}, n_samples_fit = {n}, "
                             f"n_samples = {n_queries}")
        return int(k)

    def kneighbors(self, X=None, n_neighbors=None, return_distance: bool = True):
        """The n_neighbors nearest fitted rows of each row of X, as ``(distances,
        indices)`` sorted by (distance, index); of the fitted data when X is None, each
        point then left out of its own neighbours (scikit-learn's rule). Indices are
        int64; distances float32 when the fitted data and X are float32."""
        Q, is_train, budget, be, dt = self._query(X)
        k = self._check_n_neighbors(n_neighbors, Q.shape[0], is_train)
        if self._plan is None:
            d, i = _precomputed_knn(Q, k, is_train)
            d = d.astype(dt)
        else:
            d, i = _knn(self._plan, Q, self._fit_X, k, be, budget, is_train, dt)
        return (d, i) if return_distance else i

    def kneighbors_graph(self, X=None, n_neighbors=None, mode: str = "connectivity"):
        """CSR of shape (n_queries, n_samples_fit): 1.0 (``"connectivity"``) or the
        distance (``"distance"``) at each query's neighbours, in neighbour order within
        a row; int64 indices, as scikit-learn's."""
        _check_mode(mode)
        d, i = self.kneighbors(X, n_neighbors, return_distance=True)
        nq, k = i.shape
        data = np.ones(i.size) if mode == "connectivity" else d.ravel()
        indptr = np.arange(0, nq * k + 1, max(k, 1), dtype=np.int64)[:nq + 1]
        return _int64_csr(data, i.ravel(), indptr, (nq, self.n_samples_fit_))

    # -- radius ------------------------------------------------------------------

    def _radius_csr(self, X, radius, sort_results):
        r = self.radius if radius is None else radius
        Q, is_train, budget, be, dt = self._query(X)
        if self._plan is None:
            if isinstance(r, bool) or not isinstance(r, numbers.Real) or np.isnan(r):
                raise ParameterError("radius must be a number", got=repr(r))
            g = _precomputed_radius(Q, r, is_train, sort_results)
            g.data = g.data.astype(dt)
            return g
        g = _radius(self._plan, Q, self._fit_X, r, be, budget, is_train, sort_results, dt)
        return _int64_csr(g.data, g.indices, g.indptr, g.shape)

    def radius_neighbors(self, X=None, radius=None, return_distance: bool = True,
                         sort_results: bool = False):
        """For each query, the fitted rows at distance <= radius, as object arrays of
        arrays (scikit-learn's shape); index order unless ``sort_results``."""
        if sort_results and not return_distance:
            raise InputError("return_distance must be True if sort_results is True.")
        g = self._radius_csr(X, radius, sort_results)
        ind = _object_rows(g.indices.astype(np.int64), g.indptr)
        if not return_distance:
            return ind
        return _object_rows(g.data, g.indptr), ind

    def radius_neighbors_graph(self, X=None, radius=None, mode: str = "connectivity",
                               sort_results: bool = False):
        """CSR of shape (n_queries, n_samples_fit) of the pairs within radius (1.0 or the
        distance); int64 indices."""
        _check_mode(mode)
        if sort_results and mode == "connectivity":
            sort_results = False  # scikit-learn ignores it: every value is 1
        g = self._radius_csr(X, radius, sort_results)
        if mode == "connectivity":
            g.data = np.ones_like(g.data, dtype=np.float64)
        return g


class NearestNeighbors(_NeighborsBase):
    """Unsupervised neighbour search: a scikit-learn estimator, a drop-in for
    ``sklearn.neighbors.NearestNeighbors``.

    ``metric`` is ``"precomputed"``, any gbdist metric name (built-in, an alias such
    as ``"l2"`` or ``"cityblock"``, or one registered with ``gb.define_metric`` / the
    DSL), a callable ``(A, B) -> expression`` (not scikit-learn's ``f(x, y) -> float``)
    or an expression. ``p`` is minkowski's (``metric_params`` wins, as in scikit-learn).
    ``algorithm``, ``leaf_size`` and ``n_jobs`` are accepted and change nothing: gbdist
    always searches by brute force. ``backend`` ("auto", "cpu", "cuda" or a backend
    object) and ``working_memory`` (MiB, default: :func:`default_working_memory`) are
    gbdist's.
    """

    def __init__(self, *, n_neighbors=5, radius=1.0, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory


class _GraphTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _NeighborsBase):
    _parameter_constraints: dict = {
        **_NeighborsBase._parameter_constraints,
        "mode": [StrOptions(set(_MODES))],
    }

    def fit(self, X, y=None):
        """Fit the index on X; ``y`` is ignored."""
        super().fit(X)
        self._n_features_out = self.n_samples_fit_
        return self

    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``: X's own graph (each point its own first neighbour)."""
        return self.fit(X).transform(X)


class KNeighborsTransformer(_GraphTransformer):
    """X as a sparse graph of its k nearest fitted neighbours, a drop-in for
    ``sklearn.neighbors.KNeighborsTransformer`` (e.g. before ``TSNE``, ``Isomap`` or
    ``DBSCAN(metric="precomputed")`` in a Pipeline).

    ``transform(X)`` is ``kneighbors_graph(X, mode=mode, n_neighbors=n_neighbors + 1)``
    in ``"distance"`` mode (each sample counted as its own neighbour, as in
    scikit-learn) and with ``n_neighbors`` in ``"connectivity"`` mode. Other
    parameters as :class:`NearestNeighbors`.
    """

    def __init__(self, *, mode="distance", n_neighbors=5, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.mode = mode
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory

    radius = None

    def transform(self, X):
        """The (n_queries, n_samples_fit) CSR graph of X's nearest fitted neighbours."""
        self._check_fitted()
        add_one = self.mode == "distance"
        return self.kneighbors_graph(X, mode=self.mode, n_neighbors=self.n_neighbors + add_one)


class RadiusNeighborsTransformer(_GraphTransformer):
    """X as a sparse graph of its fitted neighbours within ``radius``, a drop-in for
    ``sklearn.neighbors.RadiusNeighborsTransformer``; ``transform(X)`` is
    ``radius_neighbors_graph(X, mode=mode, sort_results=True)``."""

    def __init__(self, *, mode="distance", radius=1.0, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.mode = mode
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory

    n_neighbors = None

    def transform(self, X):
        """The (n_queries, n_samples_fit) CSR graph of X's fitted neighbours within radius."""
        self._check_fitted()
        return self.radius_neighbors_graph(X, mode=self.mode, sort_results=True)


def _query_include_self(X, include_self, mode):
    """scikit-learn's rule: the fitted data is queried as itself (each point its own
    neighbour) with include_self, else as ``X=None`` (each point left out)."""
    if include_self == "auto":
        include_self = mode == "connectivity"
    return X if include_self else None


def kneighbors_graph(X, n_neighbors, *, mode="connectivity", metric="minkowski", p=2,
                     metric_params=None, include_self=False, n_jobs=None, backend="auto",
                     working_memory=None):
    """``sklearn.neighbors.kneighbors_graph``: the (n_samples, n_samples) CSR graph of
    each row's n_neighbors nearest other rows (itself included with ``include_self``).
    X may also be a fitted gbdist neighbours estimator (its index is used)."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        _check_graph_params(X, metric, p, metric_params)
        return X.kneighbors_graph(_query_include_self(X._fit_X, include_self, mode),
                                  n_neighbors, mode=mode)
    nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, p=p,
                          metric_params=metric_params, n_jobs=n_jobs, backend=backend,
                          working_memory=working_memory).fit(X)
    return nn.kneighbors_graph(_query_include_self(nn._fit_X, include_self, mode), mode=mode)


def radius_neighbors_graph(X, radius, *, mode="connectivity", metric="minkowski", p=2,
                           metric_params=None, include_self=False, n_jobs=None, backend="auto",
                           working_memory=None):
    """``sklearn.neighbors.radius_neighbors_graph``: the (n_samples, n_samples) CSR graph
    of the pairs of rows within ``radius`` (the diagonal with ``include_self``).
    X may also be a fitted gbdist neighbours estimator (its index is used)."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        _check_graph_params(X, metric, p, metric_params)
        return X.radius_neighbors_graph(_query_include_self(X._fit_X, include_self, mode),
                                        radius, mode=mode)
    nn = NearestNeighbors(radius=radius, metric=metric, p=p, metric_params=metric_params,
                          n_jobs=n_jobs, backend=backend, working_memory=working_memory).fit(X)
    return nn.radius_neighbors_graph(_query_include_self(nn._fit_X, include_self, mode),
                                     radius, mode=mode)
