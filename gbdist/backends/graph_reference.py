"""The reference graph kernels: NumPy, structural semantics, simple and obviously right.

Implements :class:`gbdist.backends.base.GraphKernels` on host data (SciPy CSR, NumPy
vectors). Every ⊗ term is materialised as a (row, column, value) triple, vectorised
over the whole operand, then the terms of each output entry are folded with the ⊕
op in index order (:func:`fold_segments`, a pairwise tree over sorted segments).
The compiled and CUDA kernels are tested against this module; the kernels themselves are
:class:`gbdist.backends.graph_reference_kernels.ReferenceGraphKernels`.

Types (docs/graph_api.md, "Types"): every kernel's ``out_dtype`` is the op's *domain*
D. Operand values are first cast to D (:func:`cast`, GraphBLAS's typecast), then the
op is evaluated in D (:func:`binary`, :func:`unary`):

* float32 / float64: the formula in that type (:func:`gbdist.algebra.evaluate.evaluate`),
  every ``Max`` / ``Min`` as C's ``fmax`` / ``fmin`` (NaN ignored: :func:`_minmax_parts`);
* int32 / int64: every *integer-valued* node (:func:`integer_valued`: +, −, ×, positive
  integer powers, min, max, abs, sign, where, integer constants, over integer values)
  in D, wrapping like C; any other node (a division, sqrt, a non-integer constant) in
  float64 on its integer-valued parts; a float result is cast to D with :func:`cast`
  (saturating), so ``x / y`` is C's integer division, ``2 / 0`` is D's maximum;
* bool: the formula on 0/1 (in float64), the result nonzero → true; so plus is or,
  minus and ≠ are xor, times and min are and, max is or, as GraphBLAS defines them.

Also home of the small value helpers the graph operations share with every backend:
:func:`cast`, :func:`binary`, :func:`unary` and :func:`identity_value` (a monoid's
identity in a dtype: ±inf is the type's max/min, for bool true/false).
"""
from __future__ import annotations

import functools

import numpy as np
try:  # sympy on first use: the built-in ops run as ufuncs (below) and never need it
    from ..algebra.lazy import sympy as sp
except ImportError:  # pragma: no cover - an algebra without the lazy stand-in
    import sympy as sp

from ..algebra.evaluate import evaluate
from ..algebra.ops import constant_value
from .graph_fast import _LOUD, _fast_binary, _fast_fold, _fast_unary, _kind, owners  # noqa: F401
from .graph_fast import union_keys

_BOOL = np.dtype(np.bool_)


@functools.lru_cache(maxsize=1)
def _truth() -> tuple:
    """The sympy classes of comparisons and logic (not Symbol); sympy imported on first use."""
    from sympy.core.relational import Relational
    from sympy.logic.boolalg import BooleanAtom, BooleanFunction
    return (Relational, BooleanFunction, BooleanAtom)


def __getattr__(name: str):
    """``_TRUTH`` (the printers import it) is :func:`_truth`'s tuple, built on first read."""
    if name == "_TRUTH":
        return _truth()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def cast(values, dtype, xp=np):
    """GraphBLAS's typecast of ``values`` to ``dtype`` (every cast on write goes through
    it): to bool, nonzero is true (NaN too); float to integer truncates toward zero and
    saturates (NaN → 0, ≥ the type's max → max, ≤ its min → min), as SuiteSparse does;
    integer to a narrower integer wraps (two's complement); otherwise ``astype``."""
    dtype = np.dtype(dtype)
    values = xp.asarray(values)
    if values.dtype == dtype:
        return values
    if dtype == _BOOL:
        return values != 0
    if dtype.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(dtype)
        v = values.astype(np.float64, copy=False)  # float32 is exact in float64
        hi = float(info.max) + 1.0  # 2^31 / 2^63: exact; max itself is not a double
        lo = float(info.min)
        with np.errstate(invalid="ignore"):
            big, small = v >= hi, v <= lo
            out = xp.where(big | small | (v != v), 0.0, v).astype(dtype)
        out = xp.where(big, dtype.type(info.max), out)
        return xp.where(small, dtype.type(info.min), out)
    with np.errstate(over="ignore", invalid="ignore"):  # float64 → float32 overflows to inf
        return values.astype(dtype)


def _neg_pow(a) -> bool:
    return (isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative
            and not a.exp.has(sp.oo, -sp.oo, sp.zoo, sp.nan))


@functools.lru_cache(maxsize=4096)
def integer_valued(e) -> bool:
    """Whether the subformula ``e`` is computed in the integer type when ops are evaluated
    in an integer domain (x and y are integers): integer constants, and +, −, ×, positive
    integer powers, min, max, abs, sign and where over integer-valued arguments (a where
    whose last branch is unconditional). Everything else (a division, sqrt, exp, log, a
    non-integer constant) is computed in float64. Comparisons and logic are truth values."""
    if e.is_Symbol or isinstance(e, _truth()):
        return True
    if e.is_Number or e.is_NumberSymbol or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return bool(e.is_Integer)
    if isinstance(e, (sp.Add, sp.Max, sp.Min)):
        return all(integer_valued(a) for a in e.args)
    if isinstance(e, sp.Mul):
        return all(not _neg_pow(a) and integer_valued(a) for a in e.args)
    if isinstance(e, sp.Pow):
        return bool(e.exp.is_Integer and e.exp > 0) and integer_valued(e.base)
    if isinstance(e, (sp.Abs, sp.sign)):
        return integer_valued(e.args[0])
    if isinstance(e, sp.Piecewise):
        return e.args[-1].cond is sp.true and all(integer_valued(p.expr) for p in e.args)
    if isinstance(e, sp.ITE):
        return integer_valued(e.args[1]) and integer_valued(e.args[2])
    return False


@functools.lru_cache(maxsize=1024)
def float_parts(e):
    """A float-valued subformula (in an integer domain) with each maximal integer-valued
    value subtree (not a constant) replaced by a placeholder symbol ``gbi<k>``, and each
    comparison of two integer-valued sides by a placeholder ``gbc<k>``:
    ``(formula, ((symbol, subtree), ...))``. A value placeholder stands for the
    subtree's integer value converted to float64, a comparison placeholder for its truth
    value compared in the integer type (as C compares two integers); every kernel set
    evaluates the subtrees in the integer type and the rest as a float formula."""
    subs: dict = {}

    def walk(n):
        if n.is_Number or n.is_NumberSymbol or n in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            return
        if isinstance(n, _truth()[0]) and all(
                not isinstance(a, _truth()) and integer_valued(a) for a in n.args):
            if n not in subs:
                subs[n] = sp.Symbol(f"gbc{len(subs)}")
            return
        if isinstance(n, _truth()):
            for a in n.args:
                walk(a)
            return
        if isinstance(n, sp.Expr) and integer_valued(n):
            if n not in subs:
                subs[n] = sp.Symbol(f"gbi{len(subs)}", real=True)
            return
        for a in n.args:
            walk(a)

    walk(e)
    with sp.evaluate(False):
        out = e.xreplace(subs)
    return out, tuple((s, n) for n, s in subs.items())


def _wrap_int(v: int, dt: np.dtype):
    bits = 8 * dt.itemsize
    return dt.type((int(v) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)))


def _int_evaluate(formula, env, dt, xp):
    """``formula`` over the integer arrays of ``env`` in the integer domain ``dt`` (see
    :func:`integer_valued`); a float64 array when the formula is float-valued."""

    def ival(e):
        if e.is_Symbol:
            return env[e.name]
        if isinstance(e, _truth()):
            return cond(e).astype(dt)
        if e.is_Number:
            return _wrap_int(int(e), dt)
        args = e.args
        if isinstance(e, sp.Add):
            return functools.reduce(xp.add, (ival(a) for a in args))
        if isinstance(e, sp.Mul):
            return functools.reduce(xp.multiply, (ival(a) for a in args))
        if isinstance(e, sp.Pow):
            return xp.power(ival(e.base), _wrap_int(int(e.exp), dt))
        if isinstance(e, sp.Abs):
            return xp.abs(ival(args[0]))
        if isinstance(e, sp.sign):
            return xp.sign(ival(args[0]))
        if isinstance(e, sp.Max):
            return functools.reduce(xp.maximum, (ival(a) for a in args))
        if isinstance(e, sp.Min):
            return functools.reduce(xp.minimum, (ival(a) for a in args))
        if isinstance(e, sp.Piecewise):
            out = ival(args[-1].expr)
            for p in reversed(args[:-1]):
                out = xp.where(cond(p.cond), ival(p.expr), out)
            return out
        if isinstance(e, sp.ITE):
            return xp.where(cond(args[0]), ival(args[1]), ival(args[2]))
        raise AssertionError(f"not integer-valued: {e}")  # pragma: no cover

    def val(e):
        if isinstance(e, sp.Expr) and integer_valued(e) and not isinstance(e, _truth()):
            return ival(e)
        if e.is_Number or e.is_NumberSymbol or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            return np.float64(constant_value(e))
        f, parts = float_parts(e)
        fenv = {"x": env["x"]} if "x" in env else {}  # its shape, for a Piecewise
        for s, sub in parts:
            if isinstance(sub, _truth()):
                fenv[s.name] = xp.asarray(cond(sub))
            else:
                fenv[s.name] = xp.asarray(ival(sub)).astype(np.float64)
        return _evaluate(f, fenv, xp)

    def cond(c):
        if c is sp.true:
            return np.True_
        if c is sp.false:
            return np.False_
        if isinstance(c, sp.Eq):
            return val(c.lhs) == val(c.rhs)
        if isinstance(c, sp.Ne):
            return val(c.lhs) != val(c.rhs)
        if isinstance(c, sp.StrictLessThan):
            return val(c.lhs) < val(c.rhs)
        if isinstance(c, sp.LessThan):
            return val(c.lhs) <= val(c.rhs)
        if isinstance(c, sp.StrictGreaterThan):
            return val(c.lhs) > val(c.rhs)
        if isinstance(c, sp.GreaterThan):
            return val(c.lhs) >= val(c.rhs)
        if isinstance(c, sp.And):
            return functools.reduce(xp.logical_and, (cond(a) for a in c.args))
        if isinstance(c, sp.Or):
            return functools.reduce(xp.logical_or, (cond(a) for a in c.args))
        if isinstance(c, sp.Xor):
            return functools.reduce(xp.logical_xor, (cond(a) for a in c.args))
        if isinstance(c, sp.Not):
            return xp.logical_not(cond(c.args[0]))
        return xp.asarray(val(c)) != 0

    with np.errstate(all="ignore"):
        return val(formula)


def _evaluate_in(formula, env, dtype, xp):
    """``formula`` on ``env``'s arrays (already cast to the domain ``dtype``), evaluated
    in that domain (module docstring); the caller casts the result to ``dtype``."""
    if dtype == _BOOL:
        return _evaluate(formula, {k: v.astype(np.float64) for k, v in env.items()}, xp)
    if dtype.kind in "iu":
        return _int_evaluate(formula, env, dtype, xp)
    return _evaluate(formula, {**env, "__dtype__": dtype.type}, xp)


def binary(op, a, b, dtype, xp=np):
    """``op(a, b)`` elementwise (broadcast) in the domain ``dtype``: inputs cast to it,
    the op evaluated in it (module docstring), the result in ``dtype``. A built-in op on
    NumPy arrays runs as its ufunc (:func:`_fast_binary`, tested equal to this walk)."""
    dtype = np.dtype(dtype)
    a = cast(a, dtype, xp)
    b = cast(b, dtype, xp)
    if xp is np:
        fast = _fast_binary(op, dtype)
        if fast is not None:
            if fast in _LOUD and dtype.kind == "f":  # IEEE's overflow/invalid: no warnings
                with np.errstate(all="ignore"):
                    out = fast(np.asarray(a), np.asarray(b))
            else:
                out = fast(np.asarray(a), np.asarray(b))
            return out if type(out) is np.ndarray else np.asarray(out)
    return binary_walk(op, a, b, dtype, xp)


def union_values(ka, kb, va, vb, op, left_default, right_default, dtype, xp=np, space=None):
    """eWiseUnion over sorted unique keys with values, the NumPy / CuPy form
    (:meth:`gbdist.backends.base.GraphKernels.union_keys`): ``op(a, right_default)`` and
    ``op(left_default, b)`` over every stored value (vectorised), the keys merged by
    :func:`gbdist.backends.graph_fast.union_keys`, ``op(a, b)`` written where both hold a
    key. Returns ``(keys, values)``."""
    xa = cast(binary(op, va, xp.asarray(right_default), dtype, xp).reshape(-1), dtype, xp)
    xb = cast(binary(op, xp.asarray(left_default), vb, dtype, xp).reshape(-1), dtype, xp)
    keys, vals, at, a_pos, b_pos = union_keys(ka, kb, xa, xb, xp, space)
    if int(at.shape[0]):
        vals[at] = binary(op, va[a_pos], vb[b_pos], dtype, xp).reshape(-1)
    return keys, vals


def binary_walk(op, a, b, dtype, xp=np):
    """:func:`binary` by walking the op's formula (the definition; ``a``, ``b`` in D)."""
    a, b = xp.broadcast_arrays(a, b)
    out = _evaluate_in(op.formula, {"x": a, "y": b}, dtype, xp)
    # a dense array of its own: a constant formula broadcasts (stride 0), and kernels and
    # in-place writes need real storage
    out = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(out), a.shape))
    return cast(out, dtype, xp)


# Built-in ops as NumPy ufuncs and order-free folds as reduceat: gbdist/backends/graph_fast.py.


@functools.lru_cache(maxsize=1024)
def _minmax_split(formula):
    """(formula with each outermost Max/Min a placeholder ``gbm<k>``, ((name, node), ...))."""
    subs: dict = {}

    def walk(n):
        if isinstance(n, (sp.Max, sp.Min)):
            return subs.setdefault(n, sp.Symbol(f"gbm{len(subs)}", real=True))
        for a in n.args:
            walk(a)

    walk(formula)
    with sp.evaluate(False):
        return formula.xreplace(subs), tuple((s.name, n) for n, s in subs.items())


def _minmax_parts(formula, env, xp):
    """(formula, env): each outermost ``Max``/``Min`` a placeholder bound (in a copy of env)
    to ``xp.fmax``/``xp.fmin`` of its arguments: a NaN argument ignored as by C's fmax/fmin
    (SuiteSparse's MAX/MIN), on every domain (``evaluate`` alone propagates NaN)."""
    formula, parts = _minmax_split(formula)
    env = dict(env)
    for name, n in parts:
        fn = xp.fmax if isinstance(n, sp.Max) else xp.fmin
        env[name] = functools.reduce(fn, (_evaluate(a, env, xp) for a in n.args))
    return formula, env


def _evaluate(formula, env, xp):
    """The formula on ``env``'s arrays (``Max``/``Min`` ignoring a NaN argument, see
    :func:`_minmax_parts`); on CuPy arrays, the few nodes the NumPy walker cannot run
    there (a Piecewise builds NumPy arrays) are evaluated on host copies."""
    with np.errstate(all="ignore"):
        if formula.has(sp.Max, sp.Min):
            formula, env = _minmax_parts(formula, env, xp)
        if xp is np:
            return evaluate(formula, env)
        try:
            return evaluate(formula, env)
        except TypeError:
            host = {k: (v.get() if hasattr(v, "get") else v) for k, v in env.items()}
            return xp.asarray(evaluate(formula, host))


def unary(op, a, dtype, xp=np):
    """``op(a)`` elementwise in the domain ``dtype`` (see :func:`binary`)."""
    dtype = np.dtype(dtype)
    a = cast(a, dtype, xp)
    if xp is np:
        fast = _fast_unary(op, dtype)
        if fast is not None:  # none of them warns
            out = fast(np.asarray(a))
            return out if type(out) is np.ndarray else np.asarray(out)
    return unary_walk(op, a, dtype, xp)


def unary_walk(op, a, dtype, xp=np):
    """:func:`unary` by walking the op's formula (the definition; ``a`` in D)."""
    out = _evaluate_in(op.formula, {"x": a}, dtype, xp)
    # a dense array of its own: a constant formula broadcasts (stride 0), and kernels and
    # in-place writes need real storage
    out = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(out), a.shape))
    return cast(out, dtype, xp)


_IDENTITIES: dict = {}


def identity_value(monoid, dtype):
    """The monoid's identity as a scalar of ``dtype``: ±inf is the integer type's max/min,
    and on bool true/false (min's identity is true, max's false, as GraphBLAS's). Kept per
    monoid object and dtype (checked by identity)."""
    dtype = np.dtype(dtype)
    hit = _IDENTITIES.get((id(monoid), dtype))
    if hit is not None and hit[0] is monoid:
        return hit[1]
    value = _identity_in(monoid, dtype)
    if len(_IDENTITIES) > 1024:
        _IDENTITIES.clear()
    _IDENTITIES[(id(monoid), dtype)] = (monoid, value)
    return value


def _identity_in(monoid, dtype):
    v = monoid.identity_value  # a float (from the stored term: no sympy for built-ins)
    if dtype == _BOOL:
        return np.bool_(v > 0) if np.isinf(v) else np.bool_(v != 0)
    if dtype.kind in "iu" and not np.isfinite(v):
        info = np.iinfo(dtype)
        return dtype.type(info.max if v > 0 else info.min)
    return dtype.type(v)


def fold_segments(op, seg_ids, values, nseg, dtype, xp=np):
    """⊕ of ``values`` per segment, in order. ``seg_ids`` sorted (non-decreasing) in
    ``[0, nseg)``. Returns ``(folded (nseg,), present (nseg,))``; absent segments hold
    garbage (callers overwrite with the identity).

    A pairwise tree in place: in the round of width w, the element of rank t (t a
    multiple of 2w within its segment) takes ``op(v[t], v[t + w])`` when the segment
    reaches that far; so the op is applied on whole arrays O(log longest segment)
    times, O(n) work in all, and associativity is all it needs (term order is kept).
    A monoid whose result does not depend on how its terms are grouped — any (the first
    term), and min, max, plus, times, lor, land on integers and bools (wrapping
    arithmetic is associative) — folds with one NumPy ``reduceat`` instead
    (:func:`_fast_fold`): the same values, tested against the tree. (Not min/max on
    floats: C's fmin of 0.0 and -0.0 may be either, so the grouping shows in the sign.)
    """
    values, seg, out, present, starts = _segments(seg_ids, values, nseg, dtype, xp)
    if starts is None:
        return out, present
    n = seg.size
    start_pos = xp.nonzero(starts)[0]
    fast = _fast_fold(op, np.dtype(dtype)) if xp is np else None
    if fast is not None:
        out[seg[start_pos]] = fast(values, start_pos)
        present[seg[start_pos]] = True
        return out, present
    return _fold_tree(op, seg, values, n, starts, start_pos, out, present, dtype, xp)


def fold_tree(op, seg_ids, values, nseg, dtype, xp=np):
    """:func:`fold_segments` always by the pairwise tree (the definition)."""
    values, seg, out, present, starts = _segments(seg_ids, values, nseg, dtype, xp)
    if starts is None:
        return out, present
    return _fold_tree(op, seg, values, seg.size, starts, xp.nonzero(starts)[0], out, present,
                      dtype, xp)


def _segments(seg_ids, values, nseg, dtype, xp):
    """(values in ``dtype``, segment ids, zeroed output, no entry present, the mask of each
    segment's first element — None when there is no element)."""
    values = cast(values, dtype, xp)
    seg = xp.asarray(seg_ids)
    out = xp.zeros(nseg, dtype=values.dtype)
    present = xp.zeros(nseg, dtype=bool)
    if seg.size == 0:
        return values, seg, out, present, None
    starts = xp.ones(seg.size, dtype=bool)
    starts[1:] = seg[1:] != seg[:-1]
    return values, seg, out, present, starts


def _fold_tree(op, seg, values, n, starts, start_pos, out, present, dtype, xp):
    if start_pos.size == 1:  # one segment (a reduction to a scalar): the same pairs, compacted
        v = values
        while v.size > 1:
            h = v.size // 2
            pairs = binary(op, v[0:2 * h:2], v[1:2 * h:2], dtype, xp)
            v = pairs if v.size == 2 * h else xp.concatenate([pairs, v[-1:]])
        out[seg[0]] = v[0]
        present[seg[0]] = True
        return out, present
    values = xp.array(values, copy=True)
    seg_index = xp.cumsum(starts) - 1
    rank = xp.arange(n) - start_pos[seg_index]
    seg_len = xp.diff(xp.concatenate([start_pos, xp.asarray([n])]))
    left = (seg_len[seg_index] - rank)  # elements from here to the segment's end
    cand = xp.arange(n)
    width = 1
    longest = int(seg_len.max())
    while width < longest:
        cand = cand[rank[cand] % (2 * width) == 0]
        sel = cand[left[cand] > width]
        if sel.size:
            values[sel] = binary(op, values[sel], values[sel + width], dtype, xp)
        width *= 2
    out[seg[start_pos]] = values[start_pos]
    present[seg[start_pos]] = True
    return out, present
