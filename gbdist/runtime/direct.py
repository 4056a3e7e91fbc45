"""The direct form: a plan's *source* expression evaluated on chosen output entries.

The compiler's rewrites (intersection-only sums, the union correction, the
rank expansion ‖a‖² + ‖b‖² − 2⟨a, b⟩) are exact on finite data whose
intermediate values do not overflow. Two situations break that premise:

* the user allowed non-finite input (``ensure_all_finite=False`` or
  ``"allow-nan"``): inf − inf and inf·0 inside a rewrite give NaN or a finite
  number where the formula's IEEE value is +inf or NaN;
* finite input whose rewritten terms overflow (x² = inf for |x| > 1.3e154)
  although the value itself is finite.

For those entries the runtime (:class:`Repair`, after each tile) calls
:func:`evaluate_entries`: every product is
computed as written — ⊗ over the union of the stored columns of the two rows
(plus the unstored columns, counted once, holding f(fill, fill)), reduced with
⊕ — and the epilogue over these values. It costs O(|rows| · |cols| · |union|)
and is only used on the entries that need it, in chunks of the memory budget.

The direct form computes in ``np.longdouble`` (80-bit extended precision on
x86-64, exponent range to 1e4932), so (x − y)² of two values near 1e200 does
not overflow, and the result is rounded to float64 once at the end: a
distance that is finite in float64 comes back finite. (Where longdouble is
float64, as on Windows, the direct form still removes the rewrite's
cancellations but not this overflow.)
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..compiler import ir
from ..backends.base import Bound, has_rewrite
from ..backends.cpu import POINTWISE_NUMPY, CPUBackend
from ..inputs import is_cupy
from ..algebra.evaluate import evaluate
from ..compiler.typecheck import row_operand

DEFAULT_BUDGET = 64 * 2**20
WIDE = np.longdouble


def _unary(op, values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": values})
    return np.broadcast_to(np.asarray(out), np.shape(values))


def _binary(op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": a, "y": b})
    return np.broadcast_to(np.asarray(out), a.shape)


class NotDirect(Exception):
    """The expression has a shape the direct evaluator does not cover (entries kept)."""


def nonfinite_rows(csr: sps.csr_matrix) -> np.ndarray:
    """Indices of the rows that store a NaN or ±inf."""
    bad = ~np.isfinite(csr.data)
    if not bad.any():
        return np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    return np.unique(rows[bad])


def _operand(data: dict, node: ir.Node, transpose: bool):
    name, flipped, chain = row_operand(node, transpose)
    key = (name, flipped)
    if key not in data:
        raise NotDirect(key)
    fill = np.zeros(1, dtype=WIDE)
    for op in chain:
        fill = np.asarray(_unary(op, fill), dtype=WIDE)
    return key, chain, fill[0]


def _dense_rows(csr: sps.csr_matrix, rows: np.ndarray, chain, fill: float, cols: np.ndarray):
    """Rows ``rows`` of ``csr`` over the columns ``cols`` (sorted), with the chain applied;
    also the mask of stored entries."""
    sub = csr[rows]
    vals = sub.data.astype(WIDE)
    for op in chain:
        vals = _unary(op, vals)
    d = np.full((len(rows), len(cols)), fill, dtype=WIDE)
    stored = np.zeros((len(rows), len(cols)), dtype=bool)
    r = np.repeat(np.arange(len(rows)), np.diff(sub.indptr))
    c = np.searchsorted(cols, sub.indices)
    d[r, c] = vals
    stored[r, c] = True
    return d, stored


def _product(data, lnode, rnode, lrows, rrows, sr, ncols: int, budget: int) -> np.ndarray:
    """⊕_k f(l[i, k], r[j, k]) over all ncols columns for i in lrows, j in rrows."""
    lkey, lchain, lfill = _operand(data, lnode, False)
    rkey, rchain, rfill = rnode
    L, R = data[lkey], data[rkey]
    cols = np.union1d(L[lrows].indices, R[rrows].indices)
    dl, sl = _dense_rows(L, lrows, lchain, lfill, cols)
    dr, sr_ = _dense_rows(R, rrows, rchain, rfill, cols)
    add, mul = sr.add, sr.mul
    ufunc, e = add.ufunc, add.identity_value
    out = np.empty((len(lrows), len(rrows)), dtype=WIDE)
    width = max(len(cols), 1)
    per_pair = 16 * 4 * width
    rstep = max(1, min(len(rrows), budget // per_pair)) if len(rrows) else 1
    lstep = max(1, budget // (per_pair * rstep))
    with np.errstate(all="ignore"):
        for a in range(0, len(lrows), lstep):
            b = min(len(lrows), a + lstep)
            for c in range(0, len(rrows), rstep):
                d = min(len(rrows), c + rstep)
                vals = _binary(mul, dl[a:b, None, :], dr[None, c:d, :])
                if sr.structural:
                    vals = np.where(sl[a:b, None, :] & sr_[None, c:d, :], vals, e)
                out[a:b, c:d] = ufunc.reduce(vals, axis=2, initial=e) if len(cols) else e
        rest = ncols - len(cols)
        if rest > 0 and not sr.structural:
            corner = np.asarray(_binary(mul, np.array([lfill]), np.array([rfill])), dtype=WIDE)[0]
            if ufunc is np.add:
                out += rest * corner
            elif ufunc is np.multiply:
                out *= corner ** rest
            else:
                out = ufunc(out, corner)
    return out


def _reduce(data, node: ir.RowReduce, rows, ncols: int) -> np.ndarray:
    key, chain, fill = _operand(data, node.arg, False)
    M = data[key]
    cols = np.unique(M[rows].indices)
    d, _ = _dense_rows(M, rows, chain, fill, cols)
    ufunc, e = node.monoid.ufunc, node.monoid.identity_value
    with np.errstate(all="ignore"):
        out = ufunc.reduce(d, axis=1, initial=e) if len(cols) else np.full(len(rows), e, dtype=WIDE)
        rest = ncols - len(cols)
        if rest > 0:
            if ufunc is np.add:
                out = out + rest * fill
            elif ufunc is np.multiply:
                out = out * fill ** rest
            else:
                out = ufunc(out, fill)
    return out


def evaluate_entries(plan, data: dict, I: np.ndarray, J: np.ndarray, ncols: int,
                     budget: int = DEFAULT_BUDGET) -> np.ndarray:
    """The source expression at rows ``I`` (of the "i" operands) × ``J`` (of the "j"
    operands), shaped (len(I), len(J)). Raises :class:`NotDirect` for shapes it does
    not cover (the caller keeps the rewritten values).

    Rows are taken in groups whose dense copies over the union of their stored
    columns fit a fraction of ``budget``."""
    I, J = np.asarray(I, dtype=np.int64), np.asarray(J, dtype=np.int64)
    width = max((v.shape[1] for v in data.values()), default=1)
    avg = max(1.0, sum(v.nnz for v in data.values()) / max(1, sum(v.shape[0] for v in data.values())))
    g = max(len(I), len(J), 1)
    while g > 1 and g * min(width, 2 * g * avg) * 16 * 4 > budget:
        g = (g + 1) // 2
    if len(I) <= g and len(J) <= g:
        return _evaluate(plan, data, I, J, ncols, budget)
    out = np.empty((len(I), len(J)), dtype=np.float64)
    for a in range(0, len(I), g):
        for c in range(0, len(J), g):
            out[a:a + g, c:c + g] = _evaluate(plan, data, I[a:a + g], J[c:c + g], ncols, budget)
    return out


def _evaluate(plan, data: dict, I: np.ndarray, J: np.ndarray, ncols: int, budget: int) -> np.ndarray:
    roles = plan.roles
    index = {"i": np.asarray(I, dtype=np.int64), "j": np.asarray(J, dtype=np.int64)}
    values: dict = {}

    def rows_of(key):
        role = roles.get(key)
        if role not in index:
            raise NotDirect(key)
        return role, index[role]

    with np.errstate(all="ignore"):
        for node in ir.walk(plan.expr):
            if isinstance(node, ir.MxM):
                lkey = _operand(data, node.left, False)[0]
                rop = _operand(data, node.right, True)
                lrole, lrows = rows_of(lkey)
                rrole, rrows = rows_of(rop[0])
                if (lrole, rrole) == ("i", "j"):
                    v = _product(data, node.left, rop, lrows, rrows, node.semiring, ncols, budget)
                elif (lrole, rrole) == ("j", "i"):
                    v = _product(data, node.left, rop, lrows, rrows, node.semiring, ncols, budget).T
                else:
                    raise NotDirect(node)
            elif isinstance(node, ir.RowReduce):
                key = _operand(data, node.arg, False)[0]
                role, rows = rows_of(key)
                r = _reduce(data, node, rows, ncols)
                v = r[:, None] if role == "i" else r[None, :]
            elif isinstance(node, ir.NCols):
                v = WIDE(ncols)
            elif isinstance(node, ir.Const):
                v = WIDE(node.value)
            elif isinstance(node, ir.Pointwise):
                v = POINTWISE_NUMPY[node.fn](*(values[a.key] for a in node.args))
            elif isinstance(node, (ir.Matrix, ir.Vector, ir.Transpose, ir.Apply)):
                continue
            else:
                raise NotDirect(node)
            values[node.key] = v
    with np.errstate(over="ignore"):  # a value beyond float64 rounds to ±inf, as it should
        out = np.asarray(values[plan.expr.key], dtype=np.float64)
    return np.broadcast_to(out, (len(I), len(J)))


# --- repairing a computed tile ------------------------------------------------------

# |x| from which a rewritten term may overflow in the result dtype: squares of
# float64 overflow at 1.3e154, degree-8 terms at 1.3e38; float32 squares at 1.8e19.
RISK = {"float64": float(np.finfo(np.float64).max) ** 0.125,
        "float32": float(np.finfo(np.float32).max) ** 0.25}


class Repair:
    """Entries of a tile the rewritten plan cannot get right, recomputed in the direct form
    on the host (:func:`evaluate_entries`), for every backend alike:

    * rows holding NaN/±inf (only when ``ensure_all_finite`` allowed them): every entry
      of such a left row or right row;
    * overflow in a rewritten step (expansion, correction) from finite data (x² = inf for
      |x| > 1.3e154 although the distance is finite): the entries the backend reports as
      ``suspect`` (a step's value non-finite, :class:`gbdist.backends.base.Tile`); a
      backend that does not report them (fused kernels keep no step values) gets, for
      rows large enough to overflow (|x| >= :data:`RISK` of the result dtype), their
      non-finite entries and every entry of a row whose row reductions overflow on the
      host — an overflow the epilogue can hide (1 − ⟨a, b⟩ / (‖a‖ ‖b‖) is 1 when the
      norms are inf).

    Built once per run; what device validation learnt (``bound.facts``: NaN/±inf
    stored, max |x|) is used instead of reading the inputs again, and nothing is copied
    to the host unless an entry needs repair or a large input needs its row scan.
    """

    def __init__(self, bound: Bound, budget: int | None = None):
        self.b = bound
        self.budget = budget or DEFAULT_BUDGET
        plan = bound.plan
        self.rewrite = has_rewrite(plan)
        self.data_check = bound.finite is not True
        self.active = plan.output_kind == "matrix" and (self.rewrite or self.data_check)
        if not self.active:
            return
        names = list(bound.raw)
        if self.data_check and not any(self._fact(k, "nonfinite", _has_nonfinite) for k in names):
            self.data_check = False  # allowed, but there are none
        risk = RISK[np.dtype(bound.dtype).name]
        self.risk = risk
        self.large = self.rewrite and any(self._fact(k, "max_abs", _max_abs) >= risk for k in names)
        self.active = self.data_check or self.rewrite
        self._host = None
        self._flags = None

    def _fact(self, name, key, compute):
        v = (self.b.facts.get(name) or {}).get(key)
        if v is not None:
            return v
        return self.b.remember(("raw", name), key,  # kept with a prepared operand
                               lambda: compute(self.b.raw[name]))

    def host(self) -> dict:
        """The bound operands on the host (float64 SciPy CSR), copied once when needed."""
        if self._host is None:
            self._host = {k: _host_csr(v) for k, v in self.b.data.items()}
        return self._host

    def _row_flags(self):
        """Per output row / column: stores NaN/±inf; stores |x| >= risk; its reductions
        overflow (computed once, on the host)."""
        if self._flags is None:
            b, data = self.b, self.host()
            left = [v for k, v in data.items() if k in b.left_keys]
            right = [v for k, v in data.items() if k not in b.left_keys]

            def flags(mats, size, fn):
                f = np.zeros(size, dtype=bool)
                for v in mats:
                    if v.shape[0] == size:
                        f[fn(v)] = True
                return f

            def large(v):
                big = np.abs(v.data) >= self.risk
                return np.repeat(np.arange(v.shape[0]), np.diff(v.indptr))[big]

            nf = (flags(left, b.m, nonfinite_rows), flags(right, b.n, nonfinite_rows))
            lg = (flags(left, b.m, large), flags(right, b.n, large))
            over = _overflowing_reductions(b, data) if self.large else (None, None)
            self._flags = nf, lg, over
        return self._flags

    def __call__(self, tile, r0: int, r1: int, c0: int, c1: int):
        """The tile's values with the entries that need it recomputed."""
        out = tile.values
        if not self.active or getattr(out, "ndim", 0) != 2 or 0 in out.shape:
            return out
        suspect = tile.suspect
        if not self.data_check and (suspect is None and not self.large):
            # no input row holds NaN/inf (or they are refused) and none is large enough
            # to overflow a rewritten term: nothing could be marked, so the tile's own NaN
            # (cosine of an empty row, 0/0) stays as computed, with no scan
            return out
        if not self.data_check and suspect is not None and not suspect.any():
            return out
        mask = np.zeros(out.shape, dtype=bool)
        if suspect is not None:
            mask |= suspect
        if self.data_check or (suspect is None and self.large):
            (nf_l, nf_r), (lg_l, lg_r), (ov_l, ov_r) = self._row_flags()
            if self.data_check:
                mask |= nf_l[r0:r1, None] | nf_r[None, c0:c1]
            if suspect is None and self.large:
                if is_cupy(out):  # the mask of non-finite entries, one transfer of bools
                    import cupy
                    nonfinite = (~cupy.isfinite(out)).get()
                else:
                    nonfinite = ~np.isfinite(out)
                mask |= nonfinite & (lg_l[r0:r1, None] | lg_r[None, c0:c1])
                mask |= ov_l[r0:r1, None] | ov_r[None, c0:c1]
        if not mask.any():
            return out
        rows = np.flatnonzero(mask.any(axis=1))
        cols = np.flatnonzero(mask.any(axis=0))
        try:
            vals = evaluate_entries(self.b.plan, self.host(), r0 + rows, c0 + cols, self.b.ncols,
                                    self.budget)
        except NotDirect:
            return out
        sel = mask[np.ix_(rows, cols)]
        if is_cupy(out):
            import cupy
            grid = (cupy.asarray(rows)[:, None], cupy.asarray(cols)[None, :])
            sub = out[grid].get()
            sub[sel] = vals[sel]
            out[grid] = cupy.asarray(sub.astype(out.dtype))
            return out
        out = np.array(out, dtype=out.dtype, copy=True)
        grid = np.ix_(rows, cols)
        sub = out[grid]
        sub[sel] = vals[sel]
        out[grid] = sub
        return out


def _host_csr(v) -> sps.csr_matrix:
    if is_cupy(v.data):
        v = sps.csr_matrix((v.data.get(), v.indices.get(), v.indptr.get()), shape=v.shape)
    return sps.csr_matrix((v.data.astype(np.float64), v.indices, v.indptr), shape=v.shape)


def _max_abs(x) -> float:
    """max |x| over the stored values of a canonical operand; on the device for CuPy."""
    values = x.data
    if getattr(values, "size", 0) == 0:
        return 0.0
    if is_cupy(values):
        import cupy
        return float(cupy.nanmax(cupy.abs(values)))
    return float(np.nanmax(np.abs(np.asarray(values))))


def _has_nonfinite(x) -> bool:
    """Whether a canonical operand stores NaN or ±inf; on the device for CuPy."""
    values = x.data
    if is_cupy(values):
        import cupy
        return values.dtype.kind == "f" and not bool(cupy.isfinite(values).all())
    values = np.asarray(values)
    return values.dtype.kind == "f" and not bool(np.isfinite(values).all())


def _overflowing_reductions(b: Bound, data: dict) -> tuple[np.ndarray, np.ndarray]:
    """Flags of the rows (i of the output, j of the output) whose row-reduction steps
    overflow on the host from finite data."""
    cpu = CPUBackend()
    over = {"col": np.zeros(b.m, dtype=bool), "row": np.zeros(b.n, dtype=bool)}
    with np.errstate(all="ignore"):
        for step in b.plan.steps:
            if not isinstance(step.node, ir.RowReduce) or step.kind not in over:
                continue
            r = np.asarray(cpu.run_step(step, data, data, b.ncols)).ravel()
            if r.shape[0] == over[step.kind].shape[0]:
                over[step.kind] |= ~np.isfinite(r)
    return over["col"], over["row"]
