"""The reference graph kernels: NumPy, structural semantics, simple and obviously right.

Implements :class:`gbdist.backends.base.GraphKernels` on host data (SciPy CSR, NumPy
vectors). Every ⊗ term is materialised as a (row, column, value) triple, vectorised
over the whole operand, then the terms of each output entry are folded with the ⊕
op in index order (:func:`fold_segments`, a pairwise tree over sorted segments).
The compiled and CUDA kernels are tested against this module.

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
import scipy.sparse as sps
try:  # sympy on first use: the built-in ops run as ufuncs (below) and never need it
    from ..algebra.lazy import sympy as sp
except ImportError:  # pragma: no cover - an algebra without the lazy stand-in
    import sympy as sp

from ..algebra.evaluate import evaluate
from ..algebra.ops import constant_value

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


def binary_walk(op, a, b, dtype, xp=np):
    """:func:`binary` by walking the op's formula (the definition; ``a``, ``b`` in D)."""
    a, b = xp.broadcast_arrays(a, b)
    out = _evaluate_in(op.formula, {"x": a, "y": b}, dtype, xp)
    # a dense array of its own: a constant formula broadcasts (stride 0), and kernels and
    # in-place writes need real storage
    out = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(out), a.shape))
    return cast(out, dtype, xp)


# --- built-in ops as NumPy ufuncs --------------------------------------------------------
# The walk above is the definition; these are the same functions for the built-in ops
# (recognised by Op.key, so a user op with the same formula is one too), one per kind of
# domain: "f" float32/float64 (min/max are C's fmin/fmax), "i" int32/int64 (wrapping, as
# NumPy's array arithmetic does), "b" bool (GraphBLAS's: plus is or, times and min are and,
# max is or, minus is xor). tests/graph/test_value_paths.py compares every entry with the
# walk on every domain, extreme values and NaN included. Each returns a new array.


_LOUD = (np.add, np.subtract, np.multiply)  # the ufuncs below that can warn (on floats)


def _kind(dtype) -> str:
    return "b" if dtype == _BOOL else "i" if dtype.kind in "iu" else "f"


def _copy_first(a, b):
    return np.array(np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)))


def _copy_second(a, b):
    return np.array(np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape)))


def _one_or_zero(fn):
    """A truth-valued op (lor, land, eq, ne) kept in the operands' type: 1 or 0."""
    return lambda a, b: fn(a, b).astype(a.dtype)


@functools.lru_cache(maxsize=1)
def _binary_table() -> dict:
    from ..algebra import ops as o
    orr, andd = np.logical_or, np.logical_and

    def pair(a, b):
        return np.ones(np.broadcast_shapes(a.shape, b.shape), dtype=a.dtype)

    def lor(a, b):
        return orr(a != 0, b != 0)

    def land(a, b):
        return andd(a != 0, b != 0)

    table = (
        (o.plus, {"f": np.add, "i": np.add, "b": orr}),
        (o.minus, {"f": np.subtract, "i": np.subtract, "b": np.logical_xor}),
        (o.times, {"f": np.multiply, "i": np.multiply, "b": andd}),
        (o.min, {"f": np.fmin, "i": np.minimum, "b": andd}),
        (o.max, {"f": np.fmax, "i": np.maximum, "b": orr}),
        (o.first, dict.fromkeys("fib", _copy_first)),
        (o.any, dict.fromkeys("fib", _copy_first)),
        (o.second, dict.fromkeys("fib", _copy_second)),
        (o.pair, dict.fromkeys("fib", pair)),
        (o.lor, dict.fromkeys("fib", _one_or_zero(lor))),
        (o.land, dict.fromkeys("fib", _one_or_zero(land))),
        (o.eq, dict.fromkeys("fib", _one_or_zero(np.equal))),
        (o.ne, dict.fromkeys("fib", _one_or_zero(np.not_equal))),
    )
    return {op.key: fns for op, fns in table}


@functools.lru_cache(maxsize=1)
def _unary_table() -> dict:
    from ..algebra import ops as o
    copy = np.array
    table = (
        (o.abs, {"f": np.abs, "i": np.abs, "b": copy}),
        (o.neg, {"f": np.negative, "i": np.negative, "b": copy}),
        (o.identity, dict.fromkeys("fib", copy)),
        (o.nonzero, dict.fromkeys("fib", lambda a: (a != 0).astype(a.dtype))),
    )
    return {op.key: fns for op, fns in table}


_FAST: dict = {}


def _fast(table, op, dtype, kinds=False):
    """The ufunc form of ``op`` in ``dtype`` or None (``kinds``: the table's entry, every
    kind), memoised by the op object (its key is a tuple of the formula: hashed once per
    op, not per call)."""
    key = (table, id(op), dtype)
    hit = _FAST.get(key)
    if hit is not None and hit[0] is op:
        return hit[1]
    fns = table().get(op.key)
    fn = fns if kinds or fns is None else fns[_kind(dtype)]
    if len(_FAST) > 4096:
        _FAST.clear()
    _FAST[key] = (op, fn)
    return fn


def _fast_binary(op, dtype):
    return _fast(_binary_table, op, dtype)


def _fast_unary(op, dtype):
    return _fast(_unary_table, op, dtype)


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
    values = cast(values, dtype, xp)
    seg = xp.asarray(seg_ids)
    out = xp.zeros(nseg, dtype=values.dtype)
    present = xp.zeros(nseg, dtype=bool)
    n = seg.size
    if n == 0:
        return out, present
    starts = xp.ones(n, dtype=bool)
    starts[1:] = seg[1:] != seg[:-1]
    start_pos = xp.nonzero(starts)[0]
    fast = _fast_fold(op, np.dtype(dtype)) if xp is np else None
    if fast is not None:
        out[seg[start_pos]] = fast(values, start_pos)
        present[seg[start_pos]] = True
        return out, present
    return _fold_tree(op, seg, values, n, starts, start_pos, out, present, dtype, xp)


def fold_tree(op, seg_ids, values, nseg, dtype, xp=np):
    """:func:`fold_segments` always by the pairwise tree (the definition)."""
    values = cast(values, dtype, xp)
    seg = xp.asarray(seg_ids)
    out = xp.zeros(nseg, dtype=values.dtype)
    present = xp.zeros(nseg, dtype=bool)
    n = seg.size
    if n == 0:
        return out, present
    starts = xp.ones(n, dtype=bool)
    starts[1:] = seg[1:] != seg[:-1]
    return _fold_tree(op, seg, values, n, starts, xp.nonzero(starts)[0], out, present, dtype, xp)


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


@functools.lru_cache(maxsize=1)
def _fold_table() -> dict:
    """op key → {domain kind: fold(values, segment starts)} for the monoids whose fold does
    not depend on the grouping of its terms (:func:`fold_segments`)."""
    from ..algebra import ops as o

    def reduceat(ufunc):
        return lambda v, at: ufunc.reduceat(v, at, dtype=v.dtype)

    def first(v, at):
        return v[at]

    orr, andd = reduceat(np.logical_or), reduceat(np.logical_and)
    table = (
        # not on floats: fmin(0.0, -0.0) is either zero, so the grouping shows in the sign
        (o.min, {"i": reduceat(np.minimum), "b": andd}),
        (o.max, {"i": reduceat(np.maximum), "b": orr}),
        (o.any, dict.fromkeys("fib", first)),
        (o.first, dict.fromkeys("fib", first)),
        (o.plus, {"i": reduceat(np.add), "b": orr}),
        (o.times, {"i": reduceat(np.multiply), "b": andd}),
        (o.lor, {"b": orr}),
        (o.land, {"b": andd}),
    )
    return {op.key: fns for op, fns in table}


def _fast_fold(op, dtype):
    fns = _fast(_fold_table, op, dtype, kinds=True)
    return None if fns is None else fns.get(_kind(dtype))


def owners(counts, xp=np):
    """``repeat(arange(len(counts)), counts)``: for every element of the concatenated
    segments, the segment it belongs to (CuPy's repeat takes no array of counts)."""
    counts = xp.asarray(counts).astype(np.int64)
    if xp is np:
        return np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if counts.size else 0
    return xp.searchsorted(ends, xp.arange(total, dtype=np.int64), side="right").astype(np.int64)


def _expand_rows(indptr, rows, xp=np):
    """Positions of the stored entries of ``rows`` (in order) and, per position, which
    element of ``rows`` it came from."""
    indptr = xp.asarray(indptr)
    rows = xp.asarray(rows, dtype=np.int64)
    starts = indptr[rows].astype(np.int64)
    lens = (indptr[rows + 1] - indptr[rows]).astype(np.int64)
    total = int(lens.sum()) if lens.size else 0
    owner = owners(lens, xp)
    if total == 0:
        return xp.zeros(0, dtype=np.int64), owner
    first = xp.cumsum(lens) - lens
    pos = xp.arange(total, dtype=np.int64) - first[owner] + starts[owner]
    return pos, owner


def _pattern_keys(mask, ncols, xp=np):
    rows = owners(xp.diff(mask.indptr), xp)
    keys = rows * ncols + mask.indices.astype(np.int64)
    return xp.sort(keys)


def _in_sorted(keys, sorted_keys, xp=np):
    if sorted_keys.size == 0:
        return xp.zeros(keys.shape, dtype=bool)
    pos = xp.searchsorted(sorted_keys, keys)
    pos = xp.minimum(pos, sorted_keys.size - 1)
    return sorted_keys[pos] == keys


class ReferenceGraphKernels:
    """The NumPy oracle for :class:`gbdist.backends.base.GraphKernels`."""

    name = "reference"
    xp = np
    BLOCK = 1 << 22  # ⊗ terms materialised at once (row blocks keep memory bounded)

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype):
        m, n = A.shape[0], B.shape[1]
        mkeys = None if mask is None else _pattern_keys(mask, n)
        blen = np.diff(B.indptr).astype(np.int64)
        a_rows = np.repeat(np.arange(m), np.diff(A.indptr).astype(np.int64))
        row_work = np.bincount(a_rows, weights=blen[A.indices], minlength=m)
        keys_out, vals_out = [], []
        r0 = 0
        while r0 < m:
            r1, acc = r0, 0
            while r1 < m and (r1 == r0 or acc + row_work[r1] <= self.BLOCK):
                acc += row_work[r1]
                r1 += 1
            k, v = self._spgemm_rows(A, B, sr, r0, r1, n, mkeys, complement, out_dtype)
            keys_out.append(k)
            vals_out.append(v)
            r0 = r1
        keys = np.concatenate(keys_out) if keys_out else np.zeros(0, np.int64)
        vals = np.concatenate(vals_out) if vals_out else np.zeros(0, out_dtype)
        return _keys_to_csr(keys, vals, (m, n), out_dtype)

    def _spgemm_rows(self, A, B, sr, r0, r1, n, mkeys, complement, out_dtype):
        a_pos = np.arange(A.indptr[r0], A.indptr[r1], dtype=np.int64)
        a_row = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(A.indptr[r0:r1 + 1]).astype(np.int64))
        k = A.indices[a_pos].astype(np.int64)
        b_pos, owner = _expand_rows(B.indptr, k)
        i = a_row[owner]
        j = B.indices[b_pos].astype(np.int64)
        keys = i * n + j
        if mkeys is not None:
            keep = _in_sorted(keys, mkeys)
            if complement:
                keep = ~keep
            keys, owner, b_pos = keys[keep], owner[keep], b_pos[keep]
        prod = binary(sr.mul, A.data[a_pos[owner]], B.data[b_pos], out_dtype)
        order = np.argsort(keys, kind="stable")  # terms of one entry in k order
        keys, prod = keys[order], prod[order]
        starts = np.ones(keys.size, dtype=bool)
        starts[1:] = keys[1:] != keys[:-1]
        seg = np.cumsum(starts) - 1
        folded, _ = fold_segments(sr.add.op, seg, prod, int(starts.sum()), out_dtype)
        return keys[starts], folded

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False):
        m = A.shape[0]
        rows = np.arange(m, dtype=np.int64)
        if mask is not None:
            allowed = np.asarray(mask, dtype=bool)
            rows = rows[~allowed if complement else allowed]
        pos, owner = _expand_rows(A.indptr, rows)
        kk = A.indices[pos]
        if x_present is not None:
            keep = np.asarray(x_present, dtype=bool)[kk]
            pos, owner, kk = pos[keep], owner[keep], kk[keep]
        prod = binary(sr.mul, A.data[pos], np.asarray(x)[kk], out_dtype)
        folded, present = fold_segments(sr.add.op, rows[owner], prod, m, out_dtype)
        if compensated and sr.add.invertible and np.dtype(out_dtype).kind == "f":
            # the oracle of compensated sums: each row's terms summed exactly (math.fsum),
            # rounded once
            import math
            seg = rows[owner]
            starts = np.searchsorted(seg, np.arange(m), side="left")
            ends = np.searchsorted(seg, np.arange(m), side="right")
            terms = prod.astype(np.float64)
            for i in np.flatnonzero(present):
                folded[i] = math.fsum(terms[starts[i]:ends[i]])
        folded[~present] = identity_value(sr.add, out_dtype)
        return folded, present

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype):
        n = A.shape[1]
        u_idx = np.asarray(u_idx, dtype=np.int64)
        pos, owner = _expand_rows(A.indptr, u_idx)
        j = A.indices[pos].astype(np.int64)
        if mask is not None:
            allowed = np.asarray(mask, dtype=bool)[j]
            keep = ~allowed if complement else allowed
            pos, owner, j = pos[keep], owner[keep], j[keep]
        prod = binary(sr.mul, np.asarray(u_val)[owner], A.data[pos], out_dtype)
        order = np.argsort(j, kind="stable")  # within a column, terms in k order
        folded, present = fold_segments(sr.add.op, j[order], prod[order], n, out_dtype)
        folded[~present] = identity_value(sr.add, out_dtype)
        return folded, present

    def segment_reduce(self, indptr, values, monoid, *, out_dtype):
        indptr = np.asarray(indptr, dtype=np.int64)
        nseg = indptr.size - 1
        seg = np.repeat(np.arange(nseg, dtype=np.int64), np.diff(indptr))
        folded, present = fold_segments(monoid.op, seg, values, nseg, out_dtype)
        folded[~present] = identity_value(monoid, out_dtype)
        return folded, present


def _keys_to_csr(keys, vals, shape, dtype) -> sps.csr_matrix:
    m, n = shape
    rows = keys // n if n else keys
    cols = keys - rows * n if n else keys
    itype = np.int32 if max(m, n, keys.size) < 2**31 - 1 else np.int64
    indptr = np.zeros(m + 1, dtype=itype)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:]) if m else None
    return sps.csr_matrix((np.asarray(vals, dtype=dtype), cols.astype(itype), indptr), shape=shape)
