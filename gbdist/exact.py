"""Exact answers the algebra can prove: d(a, a) for identical rows.

A metric's value for two identical rows is computed, like every other pair,
as sums that cancel (``‖a‖² + ‖a‖² − 2⟨a, a⟩``), so rounding leaves ~1e-8·‖a‖
where the answer is exactly 0. This module proves, from the metric's IR, what
``d(a, a)`` is, and the runtimes write that value wherever a row of the left
operand equals a row of the right one (the diagonal of a self-join included).

**The proof** (:func:`self_value`) substitutes B := A in the source expression:

* a product ``mxm(A, B.T, ⊕/⊗)`` over identical rows becomes a row reduction
  ``⊕_k f(chainA(x_k), chainB(x_k))``: it is summarised by its element formula
  ``e(x) = f(…, …)``, its monoid and where it sums (all k columns, or only the
  stored ones for a structural product);
* a row reduction ``reduce(apply(…, A), ⊕)`` is summarised the same way;
* summaries with the same monoid and scope whose elements sympy proves equal
  are one symbol (so ``⟨a, a⟩`` and ``‖a‖²`` are the same ``S``); an element
  that is a constant c becomes ``k·c`` (⊕ = plus), ``c`` (idempotent ⊕);
* the epilogue over these symbols is simplified by sympy. When it is a
  constant c (or a ``Piecewise`` whose every defined branch is c — branches
  that are NaN or infinite are where the formula is undefined), then
  ``d(a, a) = c`` wherever the computed value is finite.

The proof is then checked numerically: the plan is run by the CPU reference
on random rows of the ops' domain and every finite diagonal entry must be
within rounding of c. A claim that fails is not used.

**Detection** (:func:`identical_pairs`): each canonical row (sorted indices,
no duplicates, no stored zeros) is hashed from its indices and value bits;
rows of the two operands with equal hashes are compared entry by entry, so a
hash collision never writes a wrong value. The work is O(nnz) plus the
verified pairs, on NumPy or CuPy arrays alike (on CuPy arrays through the fused
kernels of kernels/rows.cuh, gbdist/backends/cuda/rows.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from .compiler import ir
from .algebra.formulas import X, Y
from .algebra.ops import Op
from .compiler.typecheck import row_operand

FORMAT = 4  # of the cached records below; bump when the proofs change
MAX_OPS = 300  # larger substituted expressions are not given to sympy's simplify
_K = sp.Symbol("k", positive=True, integer=True)
_NNZ = sp.Symbol("nnz", nonnegative=True, integer=True)


@dataclass(frozen=True)
class SelfValue:
    """What the algebra proves about d(a, a)."""

    value: float | None  # the proven constant, or None
    statement: str  # the substituted epilogue and its simplification, for explain
    checked: str  # how the claim was checked numerically ("" when there is no claim)

    def __str__(self) -> str:
        if self.value is None:
            return f"d(a, a) is not a constant: {self.statement}"
        return f"d(a, a) = {self.value:g} wherever it is finite: {self.statement} [{self.checked}]"


# ---------------------------------------------------------------------------
# the proof
# ---------------------------------------------------------------------------


def _chain(chain, var):
    e = var
    for op in chain:
        e = op.formula.xreplace({X: e})
    return e


def _const(v: float) -> sp.Expr:
    if np.isnan(v):
        return sp.nan
    if np.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    return sp.Rational(float(v))


def _bool01(cond) -> sp.Expr:
    return sp.Piecewise((sp.Integer(1), cond), (sp.Integer(0), True))


_POINTWISE = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "neg": lambda a: -a,
    "sqrt": sp.sqrt, "abs": sp.Abs, "log": sp.log, "exp": sp.exp,
    "maximum": lambda a, b: sp.Max(a, b), "minimum": lambda a, b: sp.Min(a, b),
    "where": lambda c, a, b: sp.Piecewise((a, sp.Ne(c, 0)), (b, True)),
    "eq": lambda a, b: _bool01(sp.Eq(a, b)), "ne": lambda a, b: _bool01(sp.Ne(a, b)),
    "lt": lambda a, b: _bool01(a < b), "le": lambda a, b: _bool01(a <= b),
    "gt": lambda a, b: _bool01(a > b), "ge": lambda a, b: _bool01(a >= b),
}


class _Symbols:
    """Row summaries ⊕_k e(x_k) of the one row a, identified up to sympy equality."""

    def __init__(self):
        self.entries: list[tuple[sp.Expr, str, str, sp.Symbol]] = []  # (e, monoid, scope, symbol)

    def get(self, e: sp.Expr, monoid, scope: str, nonneg_x: bool) -> sp.Expr:
        x = sp.Symbol("x", nonnegative=True) if nonneg_x else sp.Symbol("x", real=True)
        e = sp.simplify(sp.piecewise_fold(e.xreplace({X: x})))
        kind = "plus" if monoid.invertible else "idempotent" if monoid.idempotent else "other"
        if scope == "stored" and sp.simplify(e.xreplace({x: 0}) - monoid.identity) == 0:
            scope = "all"  # unstored entries add the identity: the same sum
        if not e.free_symbols:
            count = _K if scope == "all" else _NNZ
            if kind == "plus":
                return count * e
            if kind == "idempotent":
                return e
        for e2, m2, s2, sym in self.entries:
            if m2 == monoid.name and s2 == scope and e2.free_symbols == e.free_symbols:
                try:
                    if sp.simplify(sp.piecewise_fold(e - e2)) == 0:
                        return sym
                except (TypeError, ValueError, NotImplementedError, RecursionError):
                    pass
        nonneg = kind == "plus" and bool(e.is_nonnegative)
        sym = sp.Symbol(f"S{len(self.entries)}", nonnegative=True) if nonneg else \
            sp.Symbol(f"S{len(self.entries)}", real=True)
        self.entries.append((e, monoid.name, scope, sym))
        return sym


def _structural(plan, node) -> bool:
    for d in plan.products:
        if d.node.key == node.key:
            return bool(d.analysis.structural)
    return False


def _substituted(plan) -> sp.Expr | None:
    """The source expression with both operands set to the same row, over row summaries."""
    syms = _Symbols()
    values: dict = {}
    for node in ir.walk(plan.expr):
        if isinstance(node, (ir.Matrix, ir.Vector, ir.Transpose, ir.Apply)):
            continue
        if isinstance(node, ir.MxM):
            _, _, cl = row_operand(node.left)
            _, _, cr = row_operand(node.right, transpose=True)
            sr = node.semiring
            nonneg = any(op.domain == "nonnegative" for op in cl + cr + (sr.mul,))
            e = sr.mul.formula.subs({X: _chain(cl, X), Y: _chain(cr, X)}, simultaneous=True)
            scope = "stored" if _structural(plan, node) else "all"
            values[node.key] = syms.get(e, sr.add, scope, nonneg)
        elif isinstance(node, ir.RowReduce):
            _, _, chain = row_operand(node.arg)
            nonneg = any(op.domain == "nonnegative" for op in chain)
            values[node.key] = syms.get(_chain(chain, X), node.monoid, "all", nonneg)
        elif isinstance(node, ir.NCols):
            values[node.key] = _K
        elif isinstance(node, ir.Const):
            values[node.key] = _const(node.value)
        elif isinstance(node, ir.Pointwise):
            fn = _POINTWISE.get(node.fn)
            if fn is None:
                return None
            values[node.key] = fn(*(values[a.key] for a in node.args))
        else:  # MxV and anything else: no claim
            return None
    return values.get(plan.expr.key)


def _undefined(e: sp.Expr) -> bool:
    return e.has(sp.nan, sp.zoo, sp.oo, -sp.oo)


def _constant_of(e: sp.Expr) -> float | None:
    """c when ``e`` is the constant c wherever it is defined, else None."""
    if e.is_number:
        return None if _undefined(e) else float(e)
    if isinstance(e, sp.Piecewise):
        # a branch whose value or condition holds NaN or ∞ is where the formula is
        # undefined (a division by zero, 0/0): it never yields a finite value exactly
        vals = {v for v, c in e.args if not _undefined(v) and not _undefined(sp.sympify(c))}
        if len(vals) == 1:
            v = vals.pop()
            if v.is_number:
                return float(v)
    return None


def _simplified(e: sp.Expr):
    """Canonical forms of ``e``, cheapest first (sympy's simplify alone misses
    Max(u, 0) / u; folding Max/Min into Piecewise branches often decides it unaided)."""
    attempts = (lambda z: z,
                lambda z: sp.piecewise_fold(z.rewrite(sp.Piecewise)),
                lambda z: sp.simplify(sp.piecewise_fold(z)),
                lambda z: sp.simplify(sp.piecewise_fold(z.rewrite(sp.Piecewise))))
    if sp.count_ops(e) > MAX_OPS:  # bounded time: a large expression gets no claim
        attempts = attempts[:2]
    for attempt in attempts:
        try:
            yield attempt(e)
        except Exception:  # noqa: BLE001 — sympy failing to decide means no claim
            continue


def _self_value_uncached(plan) -> SelfValue:
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return SelfValue(None, "not a pairwise (matrix) result over two row operands", "")
    try:
        e = _substituted(plan)
    except Exception:  # noqa: BLE001 — a part the proof cannot read means no claim
        e = None
    if e is None:
        return SelfValue(None, "the expression has a part the proof does not cover", "")
    value = None
    shown = e
    for s in _simplified(e):
        shown = s
        value = _constant_of(s)
        if value is not None:
            break
    statement = f"{sp.sstr(e)} → {sp.sstr(shown)}"
    if value is None:
        return SelfValue(None, statement, "")
    ok, how = _numeric_check(plan, value)
    if not ok:
        return SelfValue(None, statement + f" (refuted numerically: {how})", "")
    return SelfValue(value, statement, how)


_CACHE: dict = {}


def self_value(plan) -> SelfValue:
    """The proven value of d(a, a) for ``plan`` (cached by the plan's structural key, in
    the process and in the on-disk analysis cache, gbdist/cache.py)."""
    key = (plan.expr.key, tuple(sorted(plan.roles.items())))
    sv = _CACHE.get(key)
    if sv is None:
        from .compiler import cache
        disk = cache.key_of("exact.self_value", FORMAT, key)
        rec = cache.load(disk)
        try:
            v = rec["value"]
            sv = SelfValue(None if v is None else float(v), str(rec["statement"]), str(rec["checked"]))
        except (TypeError, KeyError, ValueError):
            sv = _self_value_uncached(plan)
            cache.store(disk, {"value": sv.value, "statement": sv.statement, "checked": sv.checked})
        _CACHE[key] = sv
    return sv


def _numeric_check(plan, value: float) -> tuple[bool, str]:
    """Run the plan (CPU reference, no exact post-pass) on random rows against themselves."""
    import scipy.sparse as sps
    from . import runtime
    from .backends.cpu import CPUBackend
    nonneg = any(op.domain == "nonnegative" for d in plan.products
                 for op in (d.analysis.semiring.mul,))
    rng = np.random.default_rng(12345)
    dense = rng.uniform(0.25, 2.0, size=(12, 7))
    if not nonneg:
        dense *= rng.choice([-1.0, 1.0], size=dense.shape)
    dense[rng.random(dense.shape) < 0.3] = 0.0
    Xc = sps.csr_matrix(dense)
    left, right = operand_pair(plan)
    try:
        b = runtime.bind(plan, {left[0]: Xc, right[0]: Xc}, drop_zeros=True)
        blocks = list(runtime.iter_blocks(b, CPUBackend(), exact=False))
    except Exception as e:  # noqa: BLE001 — a failed check withholds the claim
        return False, f"{type(e).__name__}: {e}"
    out = np.concatenate([blk for _, _, blk in blocks], axis=0)
    diag = np.diagonal(out)
    fin = np.isfinite(diag)
    if not fin.any():
        return False, "no finite diagonal value to check"
    err = float(np.max(np.abs(diag[fin] - value)))
    if err > 1e-6 * (1.0 + abs(value)):
        return False, f"diagonal differs by {err:.2e}"
    return True, f"checked numerically on {int(fin.sum())} random rows (max deviation {err:.1e})"


def operand_pair(plan) -> tuple[tuple, tuple] | None:
    """((left name, flipped), (right name, flipped)): the one operand indexing the output
    rows and the one indexing its columns, or None when the plan has other shapes."""
    lefts, rights = set(), set()
    for step in plan.steps:
        for side, key in step.sides:
            (lefts if side == "left" else rights).add(key)
    if len(lefts) != 1 or len(rights) != 1:
        return None
    return next(iter(lefts)), next(iter(rights))


# ---------------------------------------------------------------------------
# detection of identical rows
# ---------------------------------------------------------------------------

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _mix(z, xp):
    z = z ^ (z >> np.uint64(30))
    z = z * _M2
    z = z ^ (z >> np.uint64(27))
    z = z * _M3
    return z ^ (z >> np.uint64(31))


def _value_bits(data, xp):
    """Bit patterns of the values as uint64 (float32 and float64 alike; -0.0 as 0.0)."""
    d = data + data.dtype.type(0)  # -0.0 + 0.0 = +0.0
    if d.dtype == np.float32:
        return d.view(xp.uint32).astype(xp.uint64)
    return d.astype(xp.float64, copy=False).view(xp.uint64)


def _device(xp, values, *indices) -> bool:
    """Whether ``xp`` is CuPy and the fused kernels (gbdist/backends/cuda/rows.py) take
    these arrays' dtypes."""
    if getattr(xp, "__name__", "") != "cupy":
        return False
    from .backends.cuda import rows as dev_rows
    return dev_rows.supported(values, *indices)


def row_hashes(indptr, indices, data, xp=np):
    """A 64-bit hash of each row from its (index, value bits) entries and its length:
    ``mix(Σ_p mix(index·M1 + bits(value)) + length·M3)`` mod 2^64, ``mix`` splitmix64's
    finaliser, -0.0 hashed as +0.0 (kernels/rows.cuh computes the same on the device)."""
    if _device(xp, data, indptr, indices) and indptr.dtype == indices.dtype:
        from .backends.cuda import rows as dev_rows
        return dev_rows.row_hashes(indptr, indices, data)
    n = indptr.shape[0] - 1
    with np.errstate(over="ignore"):
        tok = _mix(indices.astype(xp.uint64) * _M1 + _value_bits(data, xp), xp)
        cs = xp.concatenate([xp.zeros(1, dtype=xp.uint64), xp.cumsum(tok, dtype=xp.uint64)])
        ip = indptr.astype(xp.int64)
        h = cs[ip[1:]] - cs[ip[:-1]]
        h = _mix(h + (ip[1:] - ip[:-1]).astype(xp.uint64) * _M3, xp)
    return h if n else xp.zeros(0, dtype=xp.uint64)


def hash_matches(ha, hb, xp=np):
    """(i, j) of every pair with ``ha[i] == hb[j]`` (candidates for equal rows): one sort,
    two searches and one transfer (the number of candidates). None when there is none."""
    if ha.shape[0] == 0 or hb.shape[0] == 0:
        return None
    order = xp.argsort(hb)
    hs = hb[order]
    lo = xp.searchsorted(hs, ha, side="left")
    hi = xp.searchsorted(hs, ha, side="right")
    counts = (hi - lo).astype(xp.int64)
    ends = xp.cumsum(counts)
    total = int(ends[-1])
    if total == 0:
        return None
    t = xp.arange(total, dtype=xp.int64)
    i = xp.searchsorted(ends, t, side="right").astype(xp.int64)
    j = order[lo[i] + (t - (ends[i] - counts[i]))].astype(xp.int64)
    return i, j


def identical_pairs(left, right, xp=np):
    """(i, j) of every row i of ``left`` equal to row j of ``right`` (verified entry by entry).

    ``left`` and ``right`` are (indptr, indices, data) of canonical CSR rows.
    """
    if _device(xp, left[2]) and _device_pair(left, right):
        from .backends.cuda import rows as dev_rows
        return dev_rows.identical_pairs(left, right)
    lp, li, ld = left
    rp, ri, rd = right
    empty = (xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=xp.int64))
    found = hash_matches(row_hashes(lp, li, ld, xp), row_hashes(rp, ri, rd, xp), xp)
    if found is None:
        return empty
    i, j = found
    # verify: same length, then every entry equal
    lp64, rp64 = lp.astype(xp.int64), rp.astype(xp.int64)
    la = lp64[i + 1] - lp64[i]
    keep = la == (rp64[j + 1] - rp64[j])
    i, j, la = i[keep], j[keep], la[keep]
    if i.shape[0] == 0:
        return empty
    n_entries = int(la.sum())
    if n_entries:
        starts = xp.cumsum(la) - la
        pair = xp.searchsorted(xp.cumsum(la), xp.arange(n_entries, dtype=xp.int64), side="right")
        within = xp.arange(n_entries, dtype=xp.int64) - starts[pair]
        pa = lp64[i][pair] + within
        pb = rp64[j][pair] + within
        bad = (li[pa].astype(xp.int64) != ri[pb].astype(xp.int64)) | \
              (_value_bits(ld[pa], xp) != _value_bits(rd[pb], xp))
        nbad = xp.zeros(i.shape[0], dtype=xp.int64)
        if bool(bad.any()):
            nbad = xp.bincount(pair[bad], minlength=i.shape[0])
        ok = nbad == 0
        i, j = i[ok], j[ok]
    return i, j


def _device_pair(left, right) -> bool:
    from .backends.cuda import rows as dev_rows
    return dev_rows.same_types(left, right)


def apply_self_value(plan, out, left, right, xp=np):
    """Write the proven d(a, a) into ``out`` (rows × cols) wherever a left row equals a
    right row and the computed value is finite. Returns ``out`` (a copy when it was a
    read-only NumPy view and something was written). On the device (CuPy, float32/64
    values in ``out``'s dtype, int32/64 indices) one kernel hashes each side's rows (once
    when both are the same arrays), one verifies each candidate pair and writes the value,
    and the only transfer is the number of candidates."""
    sv = self_value(plan)
    if sv.value is None or out.size == 0:
        return out
    if _device(xp, left[2]) and _device_pair(left, right) and out.ndim == 2 and \
            out.dtype == left[2].dtype and out.flags.c_contiguous:
        from .backends.cuda import rows as dev_rows
        dev_rows.write_self_value(out, left, right, sv.value)
        return out
    i, j = identical_pairs(left, right, xp)
    if i.shape[0] == 0:
        return out
    cur = out[i, j]
    fin = xp.isfinite(cur)
    if xp is np and not out.flags.writeable:  # a broadcast view: copy only when writing
        out = np.array(out)
    out[i[fin], j[fin]] = out.dtype.type(sv.value)
    return out


# ---------------------------------------------------------------------------
# conditioning: per-row transformations the metric is invariant under
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Invariance:
    """Per-row transformations of both operands that leave the metric's value unchanged.

    ``scale``: d(s·a, b) = d(a, t·b) = d(a, b) for s, t > 0 (cosine, correlation, the
    nonzero-pattern metrics). ``shift``: d(a + c·1, b) = d(a, b + c·1) = d(a, b) for any
    c, over all k columns (correlation). Checked numerically on random rows (seeded,
    scales from 2^-40 to 2^40 and shifts of both signs) with the CPU reference.
    """

    scale: bool
    shift: bool
    detail: str

    def __str__(self) -> str:
        what = [w for w, v in (("positive row scaling", self.scale), ("row shifts", self.shift)) if v]
        return ("invariant under " + " and ".join(what) if what else "no row invariance") + \
            f" [{self.detail}]"


def _raw_distances(plan, A, B) -> np.ndarray:
    """The plan on dense float64 rows by the CPU reference: no conditioning, no post-pass."""
    import scipy.sparse as sps
    from . import runtime
    from .backends.cpu import CPUBackend
    left, right = operand_pair(plan)
    b = runtime.bind(plan, {left[0]: sps.csr_matrix(A), right[0]: sps.csr_matrix(B)},
                     drop_zeros=True, condition=False)
    blocks = [blk for _, _, blk in runtime.iter_blocks(b, CPUBackend(), exact=False)]
    return np.concatenate(blocks, axis=0)


def _same(d0: np.ndarray, d1: np.ndarray) -> bool:
    """Equal NaN patterns and finite values within 1e-9 of the largest finite |d0| (a
    scale of the values themselves: no absolute floor, so results of size 1e-12 that
    double under scaling are told apart)."""
    if (np.isnan(d0) != np.isnan(d1)).any():
        return False
    ok = ~np.isnan(d0)
    fin = np.isfinite(d0)
    scale = float(np.max(np.abs(d0[fin]))) if fin.any() else 0.0
    return bool(np.all(np.abs(d1[fin] - d0[fin]) <= 1e-9 * scale)) and \
        bool(np.array_equal(d0[~fin & ok], d1[~fin & ok]))


def _invariance_uncached(plan) -> Invariance:
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return Invariance(False, False, "not a pairwise result over two row operands")
    (ln, lf), (rn, rf) = operand_pair(plan)
    if lf or rf:
        return Invariance(False, False, "an operand is read by columns")
    nonneg = any(op.domain == "nonnegative" for d in plan.products
                 for op in (d.analysis.semiring.mul,))
    rng = np.random.default_rng(777)
    A = rng.uniform(0.5, 2.0, size=(7, 9))
    B = rng.uniform(0.5, 2.0, size=(6, 9))
    if not nonneg:
        A *= rng.choice([-1.0, 1.0], size=A.shape)
        B *= rng.choice([-1.0, 1.0], size=B.shape)
    # unstored entries, so the fills (f(x, 0), f(0, y), the corner) take part; one row
    # of A stores every column (what a shift acts on)
    A[1:][rng.random((6, 9)) < 0.4] = 0.0
    B[rng.random((6, 9)) < 0.4] = 0.0
    B[0] = A[0]            # equal rows and equal entries: what value comparisons see
    B[1, :4] = A[1, :4]
    A[2, 5] = B[2, 5]
    try:
        d0 = _raw_distances(plan, A, B)
    except Exception:  # noqa: BLE001 — no claim without a reference value
        return Invariance(False, False, "the reference run failed")
    finite = d0[np.isfinite(d0)]
    # a (nearly) constant result shows nothing: the values must spread over at least a
    # millionth of their size, a thousand times the tolerance of the comparison below
    if np.unique(finite).size < 3 or \
            np.ptp(finite) <= 1e-6 * float(np.max(np.abs(finite))):
        return Invariance(False, False, "too little variation in the values to compare")
    s = 2.0 ** rng.choice([-40, -7, 3, 40], size=(7, 1)) * rng.uniform(0.6, 1.6, size=(7, 1))
    t = 2.0 ** rng.choice([-40, -7, 3, 40], size=(6, 1)) * rng.uniform(0.6, 1.6, size=(6, 1))
    checks = {}
    for name, (A1, B1) in {"scale": ((s * A, B), (A, t * B)),
                           "shift": ((A - A[np.arange(7), np.arange(7) % 9][:, None], B),
                                     (A, B - B[np.arange(6), (np.arange(6) + 3) % 9][:, None]))
                           }.items():
        try:
            checks[name] = all(_same(d0, _raw_distances(plan, a1, b1)) for a1, b1 in (A1, B1))
        except Exception:  # noqa: BLE001 — e.g. a domain error after a shift: not invariant
            checks[name] = False
    return Invariance(checks["scale"], checks["shift"],
                      "checked numerically: seeded random sparse rows, CPU reference, 1e-9 relative")


_INV_CACHE: dict = {}


def invariance(plan) -> Invariance:
    """The per-row invariances of ``plan`` (cached by the plan's structural key, in the
    process and on disk)."""
    key = (plan.expr.key, tuple(sorted(plan.roles.items())))
    inv = _INV_CACHE.get(key)
    if inv is None:
        from .compiler import cache
        disk = cache.key_of("exact.invariance", FORMAT, key)
        rec = cache.load(disk)
        try:
            inv = Invariance(rec["scale"] is True, rec["shift"] is True, str(rec["detail"]))
        except (TypeError, KeyError):
            inv = _invariance_uncached(plan)
            cache.store(disk, {"scale": inv.scale, "shift": inv.shift, "detail": inv.detail})
        _INV_CACHE[key] = inv
    return inv


def condition_rows(indptr, data, ncols: int, inv: Invariance, xp=np):
    """New values for CSR rows, transformed as ``inv`` allows, to avoid cancellation and
    overflow: a row that stores all k columns is shifted by its mean (when ``inv.shift``:
    the expanded sums then no longer cancel, e.g. correlation of 1e8 + rand); then each
    row is scaled by the power of two that brings its largest |value| into [0.5, 1) (when
    ``inv.scale``; exact, and skipped for a row it would push below the normal range).
    Computed in float64, returned in ``data``'s dtype. On the device (CuPy, float32/64
    values, int32/64 indptr) one kernel does it all, a warp per row, with no transfer."""
    if not (inv.scale or inv.shift) or data.shape[0] == 0:
        return data
    if _device(xp, data, indptr):
        from .backends.cuda import rows as dev_rows
        return dev_rows.condition(indptr, data, ncols, inv.shift, inv.scale)
    v = data.astype(xp.float64)
    ip = indptr.astype(xp.int64)
    counts = ip[1:] - ip[:-1]
    nrows = counts.shape[0]
    row = xp.searchsorted(ip[1:], xp.arange(v.shape[0], dtype=xp.int64), side="right")
    if inv.shift and ncols > 0:
        full = counts == ncols
        if bool(full.any()):
            sums = xp.zeros(nrows, dtype=xp.float64)
            _scatter_add(sums, row, v, xp)
            mean = xp.where(full & xp.isfinite(sums), sums / ncols, 0.0)  # inf rows stay as given
            v = v - mean[row]
    if inv.scale:
        a = xp.abs(v)
        big = xp.zeros(nrows, dtype=xp.float64)
        _scatter_max(big, row, a, xp)
        small = xp.full(nrows, xp.inf, dtype=xp.float64)
        _scatter_min(small, row, xp.where(a > 0, a, xp.inf), xp)
        _, e = xp.frexp(xp.where(big > 0, big, 1.0))
        factor = xp.ldexp(xp.ones(nrows, dtype=xp.float64), -e)
        tiny = float(np.finfo(data.dtype).tiny)
        ok = (big > 0) & (small * factor >= tiny) & (big * factor < float(np.finfo(data.dtype).max))
        factor = xp.where(ok, factor, 1.0)
        v = v * factor[row]
    return v.astype(data.dtype)


def _scatter_add(out, idx, vals, xp):
    if xp is np:
        np.add.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_add(out, idx, vals)


def _scatter_max(out, idx, vals, xp):
    if xp is np:
        np.maximum.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_max(out, idx, vals)


def _scatter_min(out, idx, vals, xp):
    if xp is np:
        np.minimum.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_min(out, idx, vals)


def conditioned_names(plan) -> tuple[Invariance, tuple[str, ...]]:
    """The invariance of ``plan`` and the operand names whose rows may be conditioned."""
    inv = invariance(plan)
    pair = operand_pair(plan)
    if pair is None or not (inv.scale or inv.shift):
        return inv, ()
    return inv, tuple(dict.fromkeys((pair[0][0], pair[1][0])))


# ---------------------------------------------------------------------------
# row normalisation: apply(normalize, A)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RowScale(Op):
    """``apply(normalize, A)``: every row of A divided by its sum (a plus-reduction of
    the row), SciPy's normalisation of probability vectors (``jensenshannon``).

    Its formula is ``x``: the division by the row's sum needs that per-row scalar, so
    it is done once when the operand is bound (:func:`normalise_rows`, on the host or
    the device), after which every formula, proof and kernel sees normalised values.
    It must be the first op applied to the data, and every use of that operand in
    one expression must be normalised (else the operand would need two bindings)."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "_key", ("row_scale", "sum", self.domain))


normalize = RowScale("normalize", X, 1, "nonnegative",
                     "each row divided by its sum (rows of nonnegative values)")
BUILTIN_OPS = {"normalize": normalize}


def normalised_names(plan) -> tuple[str, ...]:
    """Names of the operands that ``plan`` reads as ``apply(normalize, ·)``."""
    from .errors import TypeCheckError
    uses: dict = {}
    for step in plan.steps:
        node = step.node
        operands = [node.arg] if isinstance(node, ir.RowReduce) else [node.left, node.right]
        for operand in operands:
            name, flipped, chain = row_operand(operand)
            scaled = bool(chain) and isinstance(chain[0], RowScale)
            if any(isinstance(op, RowScale) for op in chain[1:]) or (scaled and flipped):
                raise TypeCheckError("normalize must be the first op applied to a matrix's rows",
                                     got=ir.to_text(operand),
                                     hint="write apply(f, apply(normalize, A)), and normalise A "
                                          "rather than A.T")
            uses.setdefault(name, set()).add(scaled)
    mixed = sorted(n for n, u in uses.items() if len(u) > 1)
    if mixed:
        raise TypeCheckError("an operand is used both normalised and as given",
                             got=", ".join(mixed),
                             hint="use apply(normalize, A) everywhere A appears, or nowhere")
    return tuple(n for n, u in uses.items() if u == {True})


def normalise_rows(indptr, data, name: str, xp=np):
    """Values of CSR rows divided by each row's sum (float64 arithmetic, ``data``'s dtype).
    A row summing to 0 (an empty row) is left as it is; negative values are refused."""
    from .errors import DomainError
    if data.shape[0] == 0:
        return data
    v = data.astype(xp.float64)
    if bool((v < 0).any()):
        raise DomainError(f"input {name}: normalize divides each row by its sum and needs "
                          "nonnegative values", got=f"a value of {float(v.min()):g}",
                          hint="rows must be nonnegative weights, e.g. counts or probabilities")
    ip = indptr.astype(xp.int64)
    row = xp.searchsorted(ip[1:], xp.arange(v.shape[0], dtype=xp.int64), side="right")
    sums = xp.zeros(ip.shape[0] - 1, dtype=xp.float64)
    _scatter_add(sums, row, v, xp)
    sums = xp.where(sums > 0, sums, 1.0)
    return (v / sums[row]).astype(data.dtype)
