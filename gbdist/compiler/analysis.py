"""Semirings and the analysis that decides how a sparse product is iterated.

For a product ``C[i, j] = ⊕_k f(a_ik, b_jk)`` with ⊗ = f, ⊕ a monoid with
identity e, and fill values za, zb (the value of an entry that is not stored):

    L(x) = f(x, zb)     R(y) = f(za, y)     C = f(za, zb)

1. L ≡ e and R ≡ e                   → ``intersection``: only shared columns count.
2. else ⊕ invertible (plus)          → ``union-correction``: with
   g(x, y) = f(x, y) − L(x) − R(y) + C,
   Σ_{A∪B} f = Σ_{A∩B} g + Σ_A (L − C) + Σ_B (R − C) + k·C.
3. else ⊕ idempotent (max, min)      → ``two-pass-union``.
4. else                              → AnalysisError naming the op.

When ⊕ is plus, the intersection term is tried as a finite sum of separable
products g(x, y) = Σ_r φ_r(x)·ψ_r(y) (the *expansion*), which turns it into r
stacked dot products. Every step of the decision is a checked
:class:`~gbdist.algebra.proofs.Proof`.

A semiring with a declared ``annihilator`` value uses *structural* (GraphBLAS)
semantics: absent entries do not take part, and pairs with no shared stored
column hold the identity. ``annihilator=None`` forbids the intersection
shortcut.
"""
from __future__ import annotations


import functools

import sympy as sp

from . import cache
from .decision import STRATEGIES, Analysis  # noqa: F401 (the record of a decision)
from .verify import verify
from ..algebra import ops as _ops
from ..errors import AnalysisError, TypeCheckError
from ..algebra.formulas import (
    X, Y, building, domain_symbols, guarded, off_domain, on_domain, substitute)
from ..algebra.ops import Monoid
from ..algebra.proofs import (
    Proof, analysis_budget, budget, check, is_nonnegative, simplify, small_enough)
from ..algebra.semirings import UNSET, Semiring

MAX_EXPANSION_RANK = 8
"""Largest rank of a norm + dot-product expansion the plan uses."""

MAX_EXPANSION_COEFFICIENTS = 300.0
"""Largest Σ|c| over the expanded terms' coefficients: beyond it the stacked dot
products cancel too much (Minkowski p = 32 has binomials up to 6·10⁸)."""




# ---------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------


def _fmt(e) -> str:
    """A formula or constant of a reason or message as mathematics (|x|, x², ∞), the way
    ``explain`` prints it, never sympy's ``Abs(x)``, ``x**2``, ``oo``."""
    from .explain_math import text
    try:
        return _short(text(sp.sympify(e)))
    except Exception:  # noqa: BLE001 - as sympy shows it
        return _short(_ops.show(e))


def _short(text: str, limit: int = 160) -> str:
    """``text``, cut to ``limit`` characters (a formula in a message or a reason)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def separable(g: sp.Expr, domain: str) -> tuple[tuple[sp.Expr, sp.Expr], ...] | None:
    """Split g(x, y) into Σ_r φ_r(x)·ψ_r(y) with as few terms as grouping allows.

    Returns None when some term couples x and y inseparably (|x − y|, x/(x+y) ...),
    or when sympy fails on it (the split is only a candidate; it is checked).
    """
    try:
        return _separable(g, domain)
    except Exception:  # noqa: BLE001
        return None


def _separable(g: sp.Expr, domain: str):
    xd, yd = domain_symbols(domain)
    if not small_enough(g):
        return None  # an expansion of this size would not pay off (and could hang)
    try:
        e = on_domain(_ops.evaluated(g), domain)
        with budget():
            e = sp.expand(sp.piecewise_fold(e), power_base=True, force=False)
            if e.has(sp.Piecewise, sp.Abs, sp.Max, sp.Min):
                e2 = sp.expand(simplify(g, domain).xreplace({X: xd, Y: yd}), power_base=True)
                if e2.has(sp.Piecewise, sp.Abs, sp.Max, sp.Min):
                    return None
                e = e2
    except Exception:  # noqa: BLE001 - sympy failed (or ran out of budget): no expansion
        return None
    if e == 0:
        return ()
    if len(sp.Add.make_args(e)) > 4 * MAX_EXPANSION_RANK:
        return None
    table: dict[tuple[sp.Expr, sp.Expr], sp.Expr] = {}
    for term in sp.Add.make_args(e):
        coeff, xf, yf = sp.Integer(1), sp.Integer(1), sp.Integer(1)
        for factor in sp.Mul.make_args(term):
            fs = factor.free_symbols
            if not fs:
                coeff *= factor
            elif fs <= {xd}:
                xf *= factor
            elif fs <= {yd}:
                yf *= factor
            else:
                return None
        table[(xf, yf)] = table.get((xf, yf), 0) + coeff
    xs = list(dict.fromkeys(k[0] for k in table))
    ys = list(dict.fromkeys(k[1] for k in table))
    if sum(abs(complex(c)) for c in table.values() if c.is_number) > MAX_EXPANSION_COEFFICIENTS:
        return None
    if len(xs) <= len(ys):
        pairs = [(xf, sum(c * yf for (xk, yf), c in table.items() if xk == xf)) for xf in xs]
    else:
        pairs = [(sum(c * xf for (xf, yk), c in table.items() if yk == yf), yf) for yf in ys]
    pairs = [(sp.factor_terms(a), sp.factor_terms(b)) for a, b in pairs]
    return tuple((off_domain(a), off_domain(b)) for a, b in pairs
                 if a != 0 and b != 0)


def refuse_positional_data(sr: Semiring) -> None:
    """The analysis of data products (gb.mxm on NumPy/SciPy operands, metrics) reads values:
    a positional ⊗ (firsti, secondj …, whose value is an index) is refused there with a
    typed error; it is a product of graph operands (gr.mxm on gb.Matrix)."""
    mul = sr.mul
    if getattr(mul, "positional", False):
        name = getattr(sr, "name", None) or f"semiring({mul.name}, {sr.add.name})"
        raise TypeCheckError(
            f"positional semirings take graph operands (gb.Matrix): ⊗ = {mul.name} gives an "
            "entry's index, not a value, and is defined on stored entries only",
            expected=f"gr.mxm(gb.Matrix(X), gb.Matrix(Y), {name}) (or gr.mxv / gr.vxm)",
            got=f"{name} in a product of data operands (NumPy / SciPy arrays, fill 0)",
            hint="wrap the operands: gb.Matrix(X) stores X's nonzeros as a graph's edges; "
                 "gb.mxm then runs the graph product")


_CUT: set = set()  # analyze's arguments whose analysis ran a symbolic step out of time


def analyze(sr: Semiring, fill_left=sp.Integer(0), fill_right=sp.Integer(0)) -> Analysis:
    """Decide the iteration strategy for ``⊕_k mul(a_ik, b_jk)`` (cached).

    Cached in-process, and on disk by the semiring's structural key and the
    fills (``gbdist/cache.py``), so sympy runs once per product, not once per
    process. An analysis during which a symbolic step ran out of time is not stored on
    disk, and each later use in the process counts as cut short again (so what is
    derived from it is not stored either).
    """
    result = _analyze_cached(sr, fill_left, fill_right)
    if (sr, fill_left, fill_right) in _CUT:
        cache.note_cut_short()
    return result


def _clear() -> None:
    _analyze_cached.cache_clear()
    _CUT.clear()


analyze.cache_clear = _clear


@functools.lru_cache(maxsize=1024)
def _analyze_cached(sr: Semiring, fill_left=sp.Integer(0), fill_right=sp.Integer(0)) -> Analysis:
    refuse_positional_data(sr)  # a positional ⊗ has no value formula to analyse
    key = cache.key_of(sr.key, sp.srepr(sp.sympify(fill_left)), sp.srepr(sp.sympify(fill_right)),
                       cache.code_digest("algebra", "compiler"))  # other code: another key
    record = cache.load(key)  # bounded, digest-checked; None on any problem
    if record is not None:
        try:
            cached = _from_record(sr, record)
            verify(cached, sr, fill_left, fill_right)  # consistent with the op?
            return cached
        except Exception as e:  # noqa: BLE001 - a bad entry is a miss, never a crash
            cache.discard(key, e)
    mark = cache.cut_short()
    with analysis_budget(), guarded(f"the analysis of {sr!r} (⊗ = op {sr.mul.name!r})", AnalysisError):
        result = _analyze(sr, fill_left, fill_right)
    if cache.cut_short() != mark:  # a step out of time: load-dependent, not kept
        _CUT.add((sr, fill_left, fill_right))
        return result
    try:
        verify(result, sr, fill_left, fill_right)
        cache.store(key, _to_record(result))
    except cache.Unsupported:
        pass
    except Exception:  # noqa: BLE001 - not checkable at the sample points: used, not cached
        pass
    return result


def _to_record(a: "Analysis") -> dict:
    from .cache import encode
    return {
        "strategy": a.strategy, "fill_left": encode(sp.sympify(a.fill_left)),
        "fill_right": encode(sp.sympify(a.fill_right)), "L": encode(a.L), "R": encode(a.R),
        "C": encode(a.C), "g": encode(a.g),
        "expansion": None if a.expansion is None else [[encode(p), encode(q)] for p, q in a.expansion],
        "proofs": [[p.claim, encode(p.lhs), encode(p.rhs), p.domain, p.method, p.holds, p.detail]
                   for p in a.proofs],
        "structural": a.structural, "override": a.override, "nonnegative": a.nonnegative,
        "corner_absorbed": a.corner_absorbed, "reason": a.reason,
    }


def _from_record(sr: Semiring, r: dict) -> "Analysis":
    with building():  # one switch of sympy's evaluation (each clears its cache)
        return _decode_record(sr, r)


def _decode_record(sr: Semiring, r: dict) -> "Analysis":
    from .cache import decode
    if r["strategy"] not in STRATEGIES:
        raise ValueError("unknown strategy in cache entry")
    expansion = None if r["expansion"] is None else tuple(
        (decode(p), decode(q)) for p, q in r["expansion"])
    proofs = tuple(Proof(str(c), decode(lhs), decode(rhs), str(dom), str(m), bool(h), str(d))
                   for c, lhs, rhs, dom, m, h, d in r["proofs"])
    return Analysis(sr, r["strategy"], decode(r["fill_left"]), decode(r["fill_right"]),
                    decode(r["L"]), decode(r["R"]), decode(r["C"]), decode(r["g"]), expansion,
                    proofs, bool(r["structural"]), str(r["override"]), bool(r["nonnegative"]),
                    bool(r["corner_absorbed"]), str(r["reason"]))


def _analyze(sr: Semiring, fill_left=sp.Integer(0), fill_right=sp.Integer(0)) -> Analysis:
    """Decide the iteration strategy for ``⊕_k mul(a_ik, b_jk)``.

    ``fill_left``/``fill_right`` are the implicit values of entries that are not
    stored (0 for data matrices; after ``apply(op, A)`` the fill is op(0)).
    Results are cached by the semiring's structural key and the fills.
    """
    f = sr.mul.formula
    dom = sr.mul.domain
    e = sr.add.identity
    proofs: list[Proof] = []
    structural = sr.structural
    if structural:
        za = zb = sr.annihilator
    else:
        za, zb = fill_left, fill_right
    # f at the fills, substituted as written (no evaluation: log(x·0) stays log(0) = −inf,
    # 0/0 stays NaN); the simplified forms are used only where they are checked equal.
    L_w = substitute(f, {Y: sp.sympify(zb)})
    R_w = substitute(f, {X: sp.sympify(za)})
    C_w = substitute(f, {X: sp.sympify(za), Y: sp.sympify(zb)})
    L, R = _checked_simpler(L_w, dom), _checked_simpler(R_w, dom)
    C = _exact_constant(C_w)
    pl = check(f"f(x, {_fmt(zb)}) = identity of {sr.add.name}: A's entries without a partner vanish",
               L_w, e, dom)
    pr = check(f"f({_fmt(za)}, y) = identity of {sr.add.name}: B's entries without a partner vanish",
               R_w, e, dom)
    proofs += [pl, pr]
    base = dict(semiring=sr, fill_left=za, fill_right=zb, L=L, R=R, C=C, structural=structural)

    if structural:
        override = "" if (pl.holds and pr.holds) else (
            f"annihilator={sr.annihilator} was declared but f(x, {_fmt(zb)}) = {_fmt(L)} and "
            f"f({_fmt(za)}, y) = {_fmt(R)} are not both the identity {_fmt(e)}; structural semantics "
            "are used as declared: only entries stored in both operands take part")
        reason = (f"annihilator {sr.annihilator} declared: structural semantics, absent entries "
                  f"take no part and a pair with no shared entry holds the identity {_fmt(e)}")
        exp, eproofs = _expansion(f, sr, dom)
        return Analysis(strategy="intersection", g=f, expansion=exp, proofs=tuple(proofs + eproofs),
                        override=override, reason=reason, **base)

    if sr.annihilator is UNSET and pl.holds and pr.holds:
        exp, eproofs = _expansion(f, sr, dom)
        reason = (f"f(x, {_fmt(zb)}) = {_fmt(L)} and f({_fmt(za)}, y) = {_fmt(R)} are the identity "
                  f"of {sr.add.name}: columns stored on one side only contribute nothing")
        return Analysis(strategy="intersection", g=f, expansion=exp, proofs=tuple(proofs + eproofs),
                        reason=reason, **base)

    # Why the shortcut does not apply: name the side(s) that do not vanish, or the declaration.
    failing = [f"f(x, {_fmt(zb)}) = {_fmt(L)}"] if not pl.holds else []
    failing += [f"f({_fmt(za)}, y) = {_fmt(R)}"] if not pr.holds else []
    if failing:
        why_not = f"{' and '.join(failing)} {'is' if len(failing) == 1 else 'are'} not the identity {_fmt(e)}"
        if sr.annihilator is None:
            why_not += " (and annihilator=None forbids the intersection shortcut)"
    else:
        why_not = (f"f(x, {_fmt(zb)}) and f({_fmt(za)}, y) are the identity {_fmt(e)}, but "
                   "annihilator=None forbids the intersection shortcut")
    if sr.add.invertible and not _finite_constant(C):
        raise AnalysisError(
            f"{sr!r} cannot be evaluated sparsely: f({_fmt(za)}, {_fmt(zb)}) = {_fmt(C)} is not finite",
            got=f"every column stored in neither row contributes {_fmt(C)}",
            hint="write the op so that f at the fill values is finite (e.g. where(x == 0, ..., ...))")
    steep = sr.add.invertible and _steep(f)
    if steep:
        # The correction subtracts Σ L and Σ R: relative error ε·(Σ|L| + Σ|R|)/|result|,
        # which a power above MAX_CORRECTION_POWER makes arbitrarily large (Minkowski
        # p = 64: |x - y|^64 is lost next to x^64). Sum f over the union directly.
        absorbed = _corner_absorbed(f, C, sr.add, dom, proofs)
        reason = (f"{why_not}; the union correction would subtract terms that grow like "
                  f"{steep} and lose the result to cancellation, so the union is walked directly "
                  "in two passes (B's stored columns, then A's columns that B does not store)")
        return Analysis(strategy="two-pass-union", g=f, expansion=None, proofs=tuple(proofs),
                        corner_absorbed=absorbed, reason=reason, **base)
    if sr.add.invertible:
        if not _finite_constant(C):
            raise AnalysisError(
                f"{sr!r} cannot be evaluated sparsely: f({_fmt(za)}, {_fmt(zb)}) = {_fmt(C)} is not finite",
                got=f"every column stored in neither row contributes {_fmt(C)}, and the "
                    "union-by-correction rewrite (which subtracts C) does not hold",
                hint="write the op so that f at the fill values is finite (e.g. where(x == 0, ..., ...))")
        written = _ops.build(lambda: f - L - R + C)
        simpler = _smaller(simplify(f - L - R + C, dom), f - L - R + C)
        for g in dict.fromkeys((simpler, written)):
            p1 = check(f"g(x, {_fmt(zb)}) = 0: the correction term annihilates at B's fill",
                       substitute(g, {Y: sp.sympify(zb)}), 0, dom)
            p2 = check(f"g({_fmt(za)}, y) = 0: the correction term annihilates at A's fill",
                       substitute(g, {X: sp.sympify(za)}), 0, dom)
            p3 = check("f(x, y) = g(x, y) + L(x) + R(y) - C (the union-by-correction identity)",
                       f, _ops.build(lambda: g + L + R - C), dom)
            if p1.holds and p2.holds and p3.holds:
                break
        proofs += [p1, p2, p3]
        if not (p1.holds and p2.holds and p3.holds):
            # The rewrite fails in float64 somewhere (f(x, 0) overflows where f does not,
            # or is NaN where f is finite): sum f over the union directly instead, which is
            # the definition itself; the columns stored in neither row add k·C (C is finite).
            failed = next(p for p in (p1, p2, p3) if not p.holds)
            absorbed = _corner_absorbed(f, C, sr.add, dom, proofs)
            reason = (f"{why_not}; the union-by-correction rewrite does not hold in float64 "
                      f"({_short(failed.detail or failed.claim)}), so the union is walked "
                      "directly in two passes (B's stored columns, then A's columns that B "
                      "does not store)" + (f" and k·C = k·{_fmt(C)} is added for the columns "
                                          "stored in neither row" if C != 0 else ""))
            return Analysis(strategy="two-pass-union", g=f, expansion=None, proofs=tuple(proofs),
                            corner_absorbed=absorbed, reason=reason, **base)
        exp, eproofs = _expansion(g, sr, dom)
        reason = (f"{why_not}; "
                  f"{sr.add.name} is invertible, so the union is one intersection pass over "
                  f"g = {_fmt(g)} plus row reductions of L - C and R - C"
                  + (f" and k·C = k·{_fmt(C)}" if C != 0 else ""))
        nonneg = is_nonnegative(f, dom)
        return Analysis(strategy="union-correction", g=g, expansion=exp, proofs=tuple(proofs + eproofs),
                        nonnegative=nonneg, reason=reason, **base)

    if sr.add.idempotent:
        absorbed = _corner_absorbed(f, C, sr.add, dom, proofs)
        reason = (f"{why_not}; "
                  f"{sr.add.name} is idempotent, so the union is walked in two passes "
                  "(B's stored columns, then A's); a column seen twice does not change the result")
        return Analysis(strategy="two-pass-union", g=f, expansion=None, proofs=tuple(proofs),
                        corner_absorbed=absorbed, reason=reason, **base)

    raise AnalysisError(
        f"{sr!r} cannot be evaluated sparsely",
        got=f"f(x, {_fmt(zb)}) = {_fmt(L)} is not the identity {_fmt(e)} of {sr.add.name}, and "
            f"{sr.add.name} is neither invertible (plus) nor idempotent (max, min)",
        hint="declare annihilator=<fill> for structural semantics, or choose another ⊕")


MAX_CORRECTION_POWER = 8
"""Largest power of the inputs for which the union correction is used (see _steep)."""


def _steep(f: sp.Expr) -> str:
    """A description of the growth that makes the union correction inaccurate, or ''.

    A power above MAX_CORRECTION_POWER (|x - y|^p, x^p) or an exponential of the
    inputs: their values at one column dwarf the result that remains after the
    correction subtracts Σ L and Σ R.
    """
    for node in sp.preorder_traversal(f):
        if isinstance(node, sp.Pow) and node.base.free_symbols and node.exp.is_number:
            try:
                p = float(node.exp)
            except (TypeError, ValueError):
                continue
            if abs(p) > MAX_CORRECTION_POWER:
                return f"|·|^{node.exp}"
        if isinstance(node, sp.exp) and node.args[0].free_symbols:
            return "exp(·)"
    return ""


def _checked_simpler(written: sp.Expr, dom: str) -> sp.Expr:
    """A simplified form of ``written`` when it is checked equal (special points
    included), else ``written`` itself."""
    s = simplify(written, dom)
    if s == written:
        return written
    return s if check("", s, written, dom).holds else written


def _exact_constant(written: sp.Expr) -> sp.Expr:
    """The value of a closed formula, evaluated as written with IEEE semantics."""
    v = _ops.constant_value(written)
    if v != v:
        return sp.nan
    if v in (float("inf"), float("-inf")):
        return sp.oo if v > 0 else -sp.oo
    try:
        s = simplify(written)
        # the simplified form must give v when evaluated in float64 too: sqrt(p)/sqrt(q)
        # with p, q beyond 1e308 is exactly v for sympy, and inf/inf for the kernels
        if s.is_number and not s.has(sp.oo, -sp.oo, sp.zoo, sp.nan) and float(s) == v \
                and _ops.constant_value(s) == v:
            return s
    except Exception:  # noqa: BLE001 - the float value is exact anyway
        pass
    return _ops._expr(v)


def _finite_constant(c: sp.Expr) -> bool:
    return not c.has(sp.oo, -sp.oo, sp.zoo, sp.nan)


def _smaller(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """The shorter of two equal formulas (simplify can blow Piecewise up)."""
    return a if sp.count_ops(a) <= sp.count_ops(b) else b


def _corner_absorbed(f, C, add: Monoid, dom: str, proofs: list) -> bool:
    """For a two-pass union: does ⊕(C, f(x, y)) = f(x, y) hold everywhere?

    If so, starting every output at C is exact and the union size is not needed.
    """
    combined = substitute(add.op.formula, {X: C, Y: f})  # simultaneous: x -> C, y -> f(x, y)
    p = check(f"{add.name}(C, f(x, y)) = f(x, y): the corner value C = {_fmt(C)} never changes a result",
              combined, f, dom)
    proofs.append(p)
    return p.holds


def _expansion(g: sp.Expr, sr: Semiring, dom: str):
    """The separable decomposition of g, with its proof, when ⊕ is plus."""
    if not sr.add.invertible:
        return None, []
    pairs = separable(g, dom)
    if pairs is None or len(pairs) == 0 or len(pairs) > MAX_EXPANSION_RANK:
        return None, []
    rhs = sum(a * b for a, b in pairs)
    p = check(f"g(x, y) = Σ_r φ_r(x)·ψ_r(y) with rank {len(pairs)} (the norm + dot-product expansion)",
              g, rhs, dom)
    if not p.holds:
        return None, [p]
    return pairs, [p]
