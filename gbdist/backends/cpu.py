"""The NumPy/SciPy backend: the reference semantics of every plan.

Each primitive is vectorised (no Python loop per row pair) and chunked so that
temporaries stay within ``budget`` bytes:

* ``Intersect`` with an expansion: stacked SciPy sparse products
  Σ_r φ_r(A) · ψ_r(B)ᵀ.
* ``Intersect`` otherwise: triplet expansion over shared columns (A in CSR,
  B in CSC), then a ⊕-scatter into the output block.
* ``TwoPassUnion``: pass one gathers A's (dense, fill-valued) block at B's
  stored columns; pass two gathers B's dense block at A's stored columns;
  segment reductions by row, combined with the idempotent ⊕.
* ``RowReduce``: a segment reduction plus the fill's contribution for the
  unstored entries of each row.

All arithmetic is float64; the runtime casts the final result.

The backend implements :class:`gbdist.backends.base.Backend`: :meth:`CPUBackend.prepare`
compresses a very wide column space, :meth:`CPUBackend.run_tile` runs every step of the
plan on one output tile (steps that read only right-side operands once per column
tile), its epilogue and the proven d(a, a); :func:`select_k` / :func:`merge_k` are the
reference top-k selection the device kernels follow.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import scipy.sparse as sps

from ..compiler import exact, ir
from ..errors import BackendError, InputError
from ..algebra.evaluate import apply_binary, apply_unary
from ..compiler.typecheck import row_operand
from . import rows
from .base import Bound, Tile, has_rewrite, shape_output

DEFAULT_BUDGET = 256 * 2**20  # bytes of temporaries per chunk


class Operand:
    """A row operand bound to data: CSR rows (float64 values) and the fill value."""

    __slots__ = ("csr", "fill")

    def __init__(self, csr: sps.csr_matrix, fill: float):
        self.csr = csr
        self.fill = fill

    @property
    def shape(self):
        return self.csr.shape


def bind_operand(node: ir.Node, data: dict) -> Operand:
    """Evaluate an apply-chain operand on bound data: values transformed, fill too."""
    name, flipped, chain = row_operand(node)
    base = data[(name, flipped)]
    values = base.data
    fill = 0.0
    for op in chain:
        values = apply_unary(op, values)
        fill = float(apply_unary(op, np.array([fill]))[0])
    csr = sps.csr_matrix((np.asarray(values, dtype=np.float64), base.indices, base.indptr),
                         shape=base.shape)
    return Operand(csr, fill)


def _segment_reduce(ufunc, values: np.ndarray, indptr: np.ndarray, identity: float, axis: int):
    """⊕-reduce ``values`` along ``axis`` in the segments given by ``indptr``."""
    nseg = len(indptr) - 1
    shape = list(values.shape)
    shape[axis] = nseg
    out = np.full(shape, identity, dtype=np.float64)
    counts = np.diff(indptr)
    nonempty = np.flatnonzero(counts)
    if nonempty.size == 0:
        return out
    first = indptr[:-1][nonempty]
    red = ufunc.reduceat(values, first, axis=axis)
    idx = [slice(None)] * values.ndim
    idx[axis] = nonempty
    out[tuple(idx)] = red
    return out


# Compress the column space when it is this much wider than the stored entries.
COMPRESS_FACTOR = 4
COMPRESS_MIN_COLUMNS = 1 << 16
# Bytes of selection temporaries per distance cell: np.partition's copy (8),
# the less / equal / NaN masks (3) and np.nonzero's indices (≈ 8 when dense).
SELECT_BYTES = 24
DEFAULT_WORKING_MEMORY = 512 * 2**20


def compress_columns(data: dict, ncols: int, weighted: bool = False) -> dict:
    """The operands over only the columns some operand stores, renumbered in order.

    Unstored columns hold the fill in every row, so dropping them changes no
    product as long as the count of columns k stays ``ncols`` (the steps take it
    separately). Done when k is much larger than the number of stored entries, so
    that nothing sized by k (a CSC pointer array, a dense row) is ever allocated
    for a 3 × 10⁸ input with three nonzeros. Not for a plan with column weights
    (``weighted``: kernels read κ(w) at the column's index).
    """
    total = sum(v.nnz for v in {id(v): v for v in data.values()}.values())
    if weighted or ncols <= max(COMPRESS_FACTOR * total, COMPRESS_MIN_COLUMNS):
        return data
    cols = np.unique(np.concatenate([v.indices for v in data.values()] or [np.zeros(0, np.int64)]))
    itype = np.int32 if cols.size < 2**31 - 1 else np.int64
    out, done = {}, {}
    for key, v in data.items():
        if id(v) not in done:
            idx = np.searchsorted(cols, v.indices).astype(itype)
            done[id(v)] = sps.csr_matrix((v.data, idx, v.indptr), shape=(v.shape[0], cols.size))
        out[key] = done[id(v)]
    return out


def _host(v) -> sps.csr_matrix:
    """A bound operand on the host in float64 (a CuPy one is copied once)."""
    if hasattr(v.data, "get"):
        v = sps.csr_matrix((v.data.get(), v.indices.get(), v.indptr.get()), shape=v.shape)
    if v.dtype != np.float64:
        v = sps.csr_matrix((v.data.astype(np.float64), v.indices, v.indptr), shape=v.shape)
    return v


class CPUPrepared:
    """A bound plan on the host: operands (columns compressed), the proven d(a, a), and
    the steps that read only right-side operands, computed once per column tile."""

    def __init__(self, backend: "CPUBackend", bound: Bound, exact_pass: bool):
        self.backend = backend
        self.bound = bound
        plan = bound.plan
        self.pair = exact.operand_pair(plan) if exact_pass and plan.output_kind == "matrix" else None
        self.value = exact.self_value(plan).value if self.pair is not None else None
        self.rewrite = has_rewrite(plan)
        self._right = None  # (c0, c1, bound of the column tile, fixed step results)

    def right(self, c0: int, c1: int):
        if self._right is None or self._right[:2] != (c0, c1):
            b = self.bound
            if (c0, c1) != (0, b.n) and b.right_sliceable:
                b = dataclasses.replace(b, data={k: (v if k in b.left_keys else v[c0:c1])
                                                 for k, v in b.data.items()}, n=c1 - c0)
            fixed = {}
            for step in b.plan.steps:
                if all(side == "right" for side, _ in step.sides):
                    fixed[step.name] = self.backend.run_step(step, {}, b.data, b.ncols, b.weights)
            self._right = (c0, c1, b, fixed)
        return self._right[2], self._right[3]


class CPUBackend:
    """Executes plans with NumPy/SciPy: the reference semantics (see the module)."""

    name = "cpu"
    xp = np

    def __init__(self, budget: int | None = None):
        self.budget = int(budget or DEFAULT_BUDGET)

    # -- the protocol (gbdist.backends.base.Backend) -----------------------------

    def prepare(self, bound: Bound, strategy: str = "auto", exact: bool = True) -> CPUPrepared:
        if strategy != "auto":
            raise InputError(f"strategy={strategy!r} selects a CUDA kernel; the {self.name} backend "
                             "has none", hint="use backend='cuda', or strategy='auto'")
        data = {}
        for k, v in bound.data.items():
            data[k] = _host(v)
        data = compress_columns(data, bound.ncols, bool(bound.weights))
        return CPUPrepared(self, bound.with_data(data), exact)

    def run_tile(self, p: CPUPrepared, r0: int, r1: int, c0: int, c1: int) -> Tile:
        b, fixed = p.right(c0, c1)
        plan = b.plan
        left = {k: b.data[k][r0:r1] for k in b.left_keys}
        results = dict(fixed)
        for step in plan.steps:
            if step.name not in results:
                results[step.name] = self.run_step(step, left, b.data, b.ncols, b.weights)
        out = np.asarray(self.epilogue(plan.epilogue, results, b.ncols), dtype=np.float64)
        kind = plan.output_kind
        out = shape_output(out, kind, r1 - r0, c1 - c0)
        suspect = None
        if kind == "matrix":
            if p.pair is not None:
                lk, rk = left[p.pair[0]], b.data[p.pair[1]]
                rh = rows.operand_hashes(p.bound, p.pair[1])
                if rh.shape[0] != rk.shape[0]:  # a column tile of the right rows
                    rh = rh[c0:c1]
                out = rows.apply_self_value(p.value, out, (lk.indptr, lk.indices, lk.data),
                                            (rk.indptr, rk.indices, rk.data),
                                            hashes=(rows.operand_hashes(p.bound, p.pair[0])[r0:r1], rh))
            if p.rewrite:
                # Overflow shows in a step's result, though not always in the final value
                # (1 − ⟨a, b⟩ / (‖a‖ ‖b‖) is 1 when the norms overflow; a clamp maps −inf to 0).
                for r in (np.asarray(results[s.name]) for s in plan.steps):
                    if r.dtype.kind == "f" and not np.isfinite(r).all():
                        bad = np.broadcast_to(~np.isfinite(r), out.shape)
                        suspect = bad if suspect is None else suspect | bad
        return Tile(out, suspect)

    def select_k(self, D, k: int, offset: int = 0):
        return select_k(D, k, offset)

    def merge_k(self, d1, i1, d2, i2, k: int):
        return merge_k(d1, i1, d2, i2, k)

    select_bytes = SELECT_BYTES  # per cell of a tile a search selects from

    def cell_bytes(self, plan, dtype) -> int:
        """float64 results of each matrix step and the epilogue's temporaries (3)."""
        nmat = sum(1 for s in plan.steps if s.kind == "matrix") + 3
        return 8 * nmat

    def row_bytes(self, bound: Bound) -> int:
        """A two-pass union densifies its block of left rows over the stored columns."""
        return 8 * bound.width * sum(1 for s in bound.plan.steps if isinstance(s.node, ir.TwoPassUnion))

    def default_budget(self, result: bool = False) -> int:
        """:data:`DEFAULT_WORKING_MEMORY`, or half the free memory when that is less."""
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return DEFAULT_WORKING_MEMORY
        return int(max(64 * 2**20, min(DEFAULT_WORKING_MEMORY, free // 2)))

    def is_out_of_memory(self, e: BaseException) -> bool:
        return isinstance(e, MemoryError)

    def release(self) -> None:
        pass

    def to_host(self, x):
        return x

    # -- steps ---------------------------------------------------------------

    # -- steps ---------------------------------------------------------------

    def run_step(self, step, left_data: dict, right_data: dict, ncols: int,
                 weights: dict | None = None) -> np.ndarray:
        """Run one step; ``left_data`` holds the current row block of the left operands;
        ``weights``: κ(w) of the weighted steps (Bound.weights)."""
        node = step.node
        if isinstance(node, ir.RowReduce):
            data = left_data if step.kind == "col" else right_data
            r = self.row_reduce(bind_operand(node.arg, data), node.monoid, ncols)
            return r[:, None] if step.kind == "col" else r[None, :]
        left, right = bind_operand(node.left, left_data), bind_operand(node.right, right_data)
        if isinstance(node, ir.Intersect):
            return self.intersect(left, right, node)
        if isinstance(node, ir.TwoPassUnion):
            if node.weight is not None:
                return self.union2(left, right, node, ncols, (weights or {})[node.weight.key])
            return self.union2(left, right, node, ncols)
        raise BackendError(f"the CPU backend has no kernel for {type(node).__name__}")

    def row_reduce(self, x: Operand, monoid, ncols: int) -> np.ndarray:
        m = x.shape[0]
        ufunc, e = monoid.ufunc, monoid.identity_value
        counts = np.diff(x.csr.indptr).astype(np.int64)  # ncols may exceed int32 (wide inputs)
        out = _segment_reduce(ufunc, x.csr.data, x.csr.indptr, e, axis=0)
        missing = ncols - counts
        has = missing > 0
        if x.fill == e or not has.any() or m == 0:
            return out
        if ufunc is np.add:
            out[has] += missing[has] * x.fill
        elif ufunc is np.multiply:
            out[has] *= np.power(x.fill, missing[has])
        else:  # idempotent: the fill counts once
            out[has] = ufunc(out[has], x.fill)
        return out

    def intersect(self, a: Operand, b: Operand, node: ir.Intersect) -> np.ndarray:
        m, n = a.shape[0], b.shape[0]
        if node.expansion and node.add.ufunc is np.add:
            left = sps.hstack([_map_values(a.csr, phi) for phi, _ in node.expansion], format="csr")
            right = sps.hstack([_map_values(b.csr, psi) for _, psi in node.expansion], format="csr")
            return np.asarray((left @ right.T).toarray(), dtype=np.float64)
        ufunc, e = node.add.ufunc, node.add.identity_value
        out = np.full(m * n, e, dtype=np.float64)
        bc = b.csr.tocsc() if n else b.csr
        for i, j, va, vb in _triplets(a.csr, bc, self.budget):
            vals = apply_binary(node.mul, va, vb)
            flat = i * n + j
            if ufunc is np.add:
                out += np.bincount(flat, weights=vals, minlength=m * n)
            else:
                ufunc.at(out, flat, vals)
        return out.reshape(m, n)

    def union2(self, a: Operand, b: Operand, node: ir.TwoPassUnion, ncols: int,
               weight=None) -> np.ndarray:
        """``weight``: κ(w) over the columns, each column's term multiplied by it (a
        weighted step: ⊕ = plus, corner 0)."""
        m, n = a.shape[0], b.shape[0]
        ufunc, e = node.add.ufunc, node.add.identity_value
        out = np.full((m, n), node.corner if node.corner_absorbed else e, dtype=np.float64)
        a_dense = _dense(a)
        # Pass 1: B's stored columns against A's (dense) rows.
        for j0, j1 in _row_chunks(b.csr, per_nnz_bytes=8 * 3 * max(m, 1), budget=self.budget):
            s, t = b.csr.indptr[j0], b.csr.indptr[j1]
            vals = apply_binary(node.mul, a_dense[:, b.csr.indices[s:t]], b.csr.data[s:t][None, :])
            if weight is not None:
                vals = vals * weight[b.csr.indices[s:t]][None, :]
            ptr = b.csr.indptr[j0:j1 + 1] - s
            out[:, j0:j1] = ufunc(out[:, j0:j1], _segment_reduce(ufunc, vals, ptr, e, axis=1))
        # Pass 2: A's stored columns against B's (dense) rows; columns stored
        # in both are seen twice, which an idempotent ⊕ absorbs. A ⊕ that is not
        # idempotent (plus, when the union correction would cancel) skips them.
        direct = not node.add.idempotent
        width = b.csr.shape[1]  # the stored width (columns compressed when k is huge)
        per_row = 8 * ((2 if direct else 1) * width + 3 * max(a.csr.nnz, 1))
        for j0, j1 in _even_chunks(n, max(1, self.budget // per_row)):
            b_dense = _dense(Operand(b.csr[j0:j1], b.fill))
            vals = apply_binary(node.mul, a.csr.data[:, None], b_dense[:, a.csr.indices].T)
            if weight is not None:
                vals = vals * weight[a.csr.indices][:, None]
            if direct:
                stored = _pattern(b.csr[j0:j1]).toarray()[:, a.csr.indices].T > 0
                vals = np.where(stored, e, vals)
            out[:, j0:j1] = ufunc(out[:, j0:j1], _segment_reduce(ufunc, vals, a.csr.indptr, e, axis=0))
        if not node.corner_absorbed and node.corner != e:
            # Columns stored in neither row hold f(za, zb) = corner.
            pa, pb = _pattern(a.csr), _pattern(b.csr)
            inter = (pa @ pb.T).toarray()
            union = (np.diff(a.csr.indptr).astype(np.int64)[:, None]
                     + np.diff(b.csr.indptr).astype(np.int64)[None, :] - inter)
            if direct and ufunc is np.add:
                out += (ncols - union) * node.corner
            elif direct and ufunc is np.multiply:
                out *= np.power(node.corner, ncols - union)
            else:
                gap = union < ncols
                out[gap] = ufunc(out[gap], node.corner)
        return out

    # -- epilogue --------------------------------------------------------------

    def epilogue(self, expr: ir.Node, results: dict, ncols: int) -> np.ndarray:
        values: dict = {}
        with np.errstate(all="ignore"):
            for node in ir.walk(expr):
                values[node.key] = self._eval(node, values, results, ncols)
        return values[expr.key]

    def _eval(self, node, values, results, ncols):
        if isinstance(node, ir.Ref):
            return results[node.name]
        if isinstance(node, ir.Const):
            return np.float64(node.value)
        if isinstance(node, ir.NCols):
            return np.float64(ncols)
        if isinstance(node, ir.Pointwise):
            return POINTWISE_NUMPY[node.fn](*(values[a.key] for a in node.args))
        return None  # operands below NCols: not values


POINTWISE_NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "pow": np.power, "neg": np.negative, "sqrt": np.sqrt, "abs": np.abs, "log": np.log,
    "exp": np.exp, "asin": np.arcsin, "maximum": np.maximum, "minimum": np.minimum,
    "where": lambda c, a, b: np.where(np.asarray(c) != 0, a, b),
    "eq": lambda a, b: np.equal(a, b).astype(np.float64),
    "ne": lambda a, b: np.not_equal(a, b).astype(np.float64),
    "lt": lambda a, b: np.less(a, b).astype(np.float64),
    "le": lambda a, b: np.less_equal(a, b).astype(np.float64),
    "gt": lambda a, b: np.greater(a, b).astype(np.float64),
    "ge": lambda a, b: np.greater_equal(a, b).astype(np.float64),
}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _map_values(csr: sps.csr_matrix, op) -> sps.csr_matrix:
    return sps.csr_matrix((apply_unary(op, csr.data), csr.indices, csr.indptr), shape=csr.shape)


def _pattern(csr: sps.csr_matrix) -> sps.csr_matrix:
    return sps.csr_matrix((np.ones(csr.nnz), csr.indices, csr.indptr), shape=csr.shape)


def _dense(x: Operand) -> np.ndarray:
    """Dense copy of the rows, unstored entries holding the fill value."""
    d = np.full(x.shape, x.fill, dtype=np.float64)
    rows = np.repeat(np.arange(x.shape[0]), np.diff(x.csr.indptr))
    d[rows, x.csr.indices] = x.csr.data
    return d


def _even_chunks(n: int, size: int):
    for s in range(0, n, size):
        yield s, min(n, s + size)


def _row_chunks(csr: sps.csr_matrix, per_nnz_bytes: int, budget: int):
    """Row ranges whose stored entries, times ``per_nnz_bytes``, fit the budget."""
    n = csr.shape[0]
    limit = max(1, budget // max(per_nnz_bytes, 1))
    j = 0
    while j < n:
        start = int(csr.indptr[j])
        # the bound stays within the stored entries, so it fits indptr's dtype
        end = np.searchsorted(csr.indptr, min(start + limit, csr.nnz), side="right") - 1
        k = max(j + 1, min(n, int(end)))
        yield j, k
        j = k


def _triplets(a: sps.csr_matrix, bc: sps.csc_matrix, budget: int):
    """(i, j, a_ik, b_jk) for every column k stored in row i of A and row j of B.

    ``bc`` is B in CSC form (columns = k, row indices = j). Chunks by rows of A
    so that no chunk holds more than ``budget`` bytes of triplets.
    """
    if a.nnz == 0 or bc.nnz == 0:
        return
    per_nz = np.diff(bc.indptr)[a.indices].astype(np.int64)
    row_of = np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.indptr))
    cum = np.concatenate([[0], np.cumsum(per_nz)])
    limit = max(1, budget // 48)  # ~6 arrays of 8 bytes per triplet
    p = 0
    while p < a.nnz:
        q = int(np.searchsorted(cum, cum[p] + limit, side="right")) - 1
        q = min(a.nnz, max(q, p + 1))
        cnt = per_nz[p:q]
        total = int(cnt.sum())
        if total:
            src = np.repeat(np.arange(p, q), cnt)
            within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            bpos = np.repeat(bc.indptr[a.indices[p:q]].astype(np.int64), cnt) + within
            yield row_of[src], bc.indices[bpos].astype(np.int64), a.data[src], bc.data[bpos]
        p = q


# ---------------------------------------------------------------------------
# top-k selection and merging (the reference the device kernels follow)
# ---------------------------------------------------------------------------


def select_k(D: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries of each row of D by (distance, column), NaN last.

    Returns (distances, indices), both rows × min(k, width), sorted; indices are
    int64 columns plus ``offset``. Ties at the k-th value keep the lowest
    columns, so the choice never depends on the partition's internal order.
    """
    rows_, width = D.shape
    kk = min(k, width)
    cols = np.arange(width, dtype=np.int64)
    if kk == 0 or rows_ == 0:
        return np.empty((rows_, kk)), np.empty((rows_, kk), dtype=np.int64)
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
        cols = picked.reshape(rows_, kk).astype(np.int64)
        values = np.take_along_axis(D, cols, axis=1)
    else:
        cols = np.broadcast_to(cols, (rows_, width))
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
