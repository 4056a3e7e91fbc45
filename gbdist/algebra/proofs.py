"""Proof records: every identity the compiler relies on is checked here.

A check has two parts, and an identity holds only when both agree:

1. **Generic**: sympy (structural equality after simplification, then
   ``simplify(lhs - rhs) == 0`` under the op's domain assumptions), within a
   size and time budget (:data:`SYMPY_BUDGET_S`). When sympy cannot decide, a
   seeded numeric check at many random points of the domain decides instead,
   recorded as *numeric* (weaker than a proof, and shown as such).
2. **Special points, always**: both sides are evaluated *as written* with IEEE
   semantics (``ops.evaluate``: 0/0 is NaN, log 0 is −inf) on a grid of
   special values: 0, ±1, ±2, tiny and subnormal values, and every constant
   that appears in either side (``where(x == 0.3, …)`` samples 0.3 and its
   floating-point neighbours) with the roots of the conditions. sympy's
   algebra holds for generic values; this part catches the points where it
   does not (``x/x = 1`` fails at 0).

Numbers are compared exactly up to rounding: each side is evaluated in
float64 and in long double, and the difference between the two is the
rounding noise that the comparison tolerates. A constant 5e-9 is never
"close enough" to 0. NaN agrees with NaN and an infinity with the same
infinity. Boolean-domain identities are checked exhaustively on {0, 1}, which
is a proof.
"""
from __future__ import annotations

import functools
import math
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import records
from .formulas import X, Y, evaluated, off_domain, on_domain
from .evaluate import evaluate

NUMERIC_POINTS = 4000
NUMERIC_SEED = 20240

SYMPY_BUDGET_S = 6.0
"""Wall-clock seconds one symbolic step (simplify, expand, a proof) may take."""

ANALYSIS_BUDGET_S = 8.0
"""Wall-clock seconds all the symbolic steps of one product's analysis may take;
after that, remaining checks are decided numerically (special points + seeded)."""

_deadline: list = []  # monotonic deadlines of the analyses in progress (innermost last)

SYMPY_MAX_OPS = 300
"""Formulas with more operations than this skip sympy (the numeric checks decide)."""

MAX_SPECIAL_CONSTANTS = 24


class BudgetExceeded(Exception):
    """A symbolic step ran past its budget (internal: callers fall back)."""


@contextmanager
def budget(seconds: float = SYMPY_BUDGET_S):
    """Interrupt the enclosed symbolic step after ``seconds`` (raises BudgetExceeded).

    Uses a real-time interval timer, so it only acts in the main thread of a
    process with SIGALRM; elsewhere only the size limits bound sympy's work. An
    enclosing timer (a caller's own timeout) is honoured: the step gets at most
    what is left of it, and it is re-armed afterwards.
    """
    import time
    if _deadline:
        left = _deadline[-1] - time.monotonic()
        if left <= 0:
            records.note_cut_short()
            raise BudgetExceeded()
        seconds = min(seconds, left)
    if not (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()):
        yield
        return
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    mine = seconds if outer_left == 0 else min(seconds, outer_left)
    started = time.monotonic()

    def _alarm(signum, frame):
        records.note_cut_short()
        raise BudgetExceeded()

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, mine)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 1e-3))


@contextmanager
def analysis_budget(seconds: float = ANALYSIS_BUDGET_S):
    """Bound the total symbolic time of the enclosed analysis (see :func:`budget`)."""
    import time
    _deadline.append(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.pop()


def small_enough(*exprs) -> bool:
    """True when sympy may try these formulas within its budget."""
    from .formulas import formula_size
    return all(formula_size(e, 4 * SYMPY_MAX_OPS) <= 4 * SYMPY_MAX_OPS and _degree_ok(e)
               for e in exprs)


MAX_LOG_NUMBER_BITS = 64
"""A formula with a log or exp and a number wider than this (1e-310 is a 1,030-bit
rational), or of magnitude beyond 2^±30, is left to the numeric checks: sympy's
logcombine turns c·log(a) into log(a^c), seconds or minutes of big-integer arithmetic
(a^(1/5e-9)) that no time budget can interrupt, as it runs inside one C call."""


def _numbers_ok(e) -> bool:
    if not e.has(sp.log, sp.exp):
        return True
    for r in e.atoms(sp.Rational):
        if r == 0:
            continue
        if max(builtins_abs(r.p), r.q).bit_length() > MAX_LOG_NUMBER_BITS:
            return False
        if not (2.0 ** -30 <= builtins_abs(float(r)) <= 2.0 ** 30):
            return False
    return True


def _degree_ok(e) -> bool:
    """No integer power above 16 of a sum: expanding it would explode. No log or exp
    beside a very wide or very large number (see MAX_LOG_NUMBER_BITS)."""
    if not _numbers_ok(e):
        return False
    for node in sp.preorder_traversal(e):
        if isinstance(node, sp.Pow) and node.exp.is_number:
            ex = node.exp
            if ex.is_Integer and builtins_abs(int(ex)) > 16 and node.base.free_symbols:
                return False
            if ex.is_Rational and (builtins_abs(ex.p) > 64 or ex.q > 64) and node.base.free_symbols:
                return False
            if ex.is_Float and node.base.free_symbols:
                return False
    return True


def builtins_abs(v):
    return v if v >= 0 else -v


@dataclass(frozen=True)
class Proof:
    """One checked identity ``lhs == rhs`` (for all x, y in ``domain``)."""

    claim: str  # what the identity means for the plan, in words
    lhs: sp.Expr
    rhs: sp.Expr
    domain: str
    method: str  # "sympy", "exhaustive", "numeric (seeded, N points)"
    holds: bool
    detail: str = ""  # a counterexample, when refuted

    def __str__(self) -> str:
        verdict = "holds" if self.holds else "FAILS"
        where = f"x, y {'>= 0' if self.domain == 'nonnegative' else 'in {0, 1}' if self.domain == 'boolean' else 'real'}"
        from .mathtext import math
        text = f"{self.claim}: {math(self.lhs)} = {math(self.rhs)}  [{verdict}; {self.method}; {where}]"
        if self.detail:
            text += f" ({self.detail})"
        return text


def simplify(expr: sp.Expr, domain: str = "real") -> sp.Expr:
    """Simplify under the domain's assumptions; returns a formula over X, Y.

    Within the symbolic budget; a formula too large, or a simplification that
    runs out of time, comes back as it was (evaluated by sympy's constructors,
    which is generic algebra: callers check what they use against the formula
    as written).
    """
    e = sp.sympify(expr)
    if not small_enough(e):
        return e
    try:
        with budget():
            e = sp.simplify(sp.piecewise_fold(on_domain(evaluated(e), domain)))
    except Exception:  # noqa: BLE001 - sympy fails in many ways (zoo comparisons, ...);
        return sp.sympify(expr)  # the formula as it was is always a safe answer
    return off_domain(e)


def _sample(domain: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if domain == "boolean":
        return rng.integers(0, 2, n).astype(np.float64)
    parts = [
        rng.normal(0.0, 3.0, n // 4),
        rng.integers(-4, 5, n // 4).astype(np.float64),
        np.zeros(n // 8),
        rng.uniform(-1e-3, 1e-3, n // 8),
        rng.standard_cauchy(n - n // 4 - n // 4 - n // 8 - n // 8),
    ]
    v = np.concatenate(parts)
    rng.shuffle(v)
    return np.abs(v) if domain == "nonnegative" else v


_BASE_SPECIALS = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.75, -3.75, 1e-3, -1e-3, 1e-310, -1e-310,
                  7.0, 1e3)


def _constants(expr: sp.Basic) -> list[float]:
    """The finite real constants of a formula, and the roots of its conditions."""
    out: list[float] = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.logic.boolalg.Boolean) or not isinstance(node, sp.Expr):
            continue
        if node.is_number and not node.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
            try:
                v = complex(node.evalf(20))
            except Exception:  # noqa: BLE001 - not a usable constant
                continue
            if v.imag == 0 and math.isfinite(v.real):
                out.append(v.real)
        if len(out) > 4 * MAX_SPECIAL_CONSTANTS:
            break
    for rel in expr.atoms(sp.core.relational.Relational):
        out.extend(_roots(rel.lhs - rel.rhs))
    return out


def _roots(d: sp.Expr) -> list[float]:
    """Real roots of a condition's ``lhs - rhs`` when it is a low-degree polynomial in one symbol."""
    syms = d.free_symbols
    if len(syms) != 1 or not small_enough(d):
        return []
    s = next(iter(syms))
    try:
        with budget(0.5):
            poly = sp.Poly(d, s)
            if poly.degree() > 4:
                return []
            return [float(r) for r in sp.Poly(poly.as_expr(), s).nroots() if r.is_real]
    except Exception:  # noqa: BLE001 - no roots found is always safe
        return []


def special_values(domain: str, *exprs) -> np.ndarray:
    """The special values sampled for an identity over ``exprs`` (see the module doc)."""
    consts: list[float] = []
    for e in exprs:
        consts.extend(_constants(e))
    consts = list(dict.fromkeys(c for c in consts if c not in (0.0, 1.0, -1.0)))[:MAX_SPECIAL_CONSTANTS]
    vals = list(_BASE_SPECIALS)
    for c in consts:
        vals += [c, -c, float(np.nextafter(c, np.inf)), float(np.nextafter(c, -np.inf))]
    v = np.unique(np.array(vals, dtype=np.float64))
    if domain == "nonnegative":
        v = v[v >= 0]
    return v


def _special_points(lhs, rhs, domain: str) -> tuple[np.ndarray, np.ndarray]:
    if domain == "boolean":
        return np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 1.0, 0.0, 1.0])
    v = special_values(domain, lhs, rhs)
    xs, ys = np.meshgrid(v, v, indexing="ij")
    return xs.ravel(), ys.ravel()


def _values(expr, xs, ys, dt):
    env = {"x": xs.astype(dt), "y": ys.astype(dt), "__dtype__": dt}
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(evaluate(expr, env)), xs.shape)


def _magnitude(expr, env) -> np.ndarray:
    """The size of the terms an evaluation adds up: Σ|terms| for a sum, Π for a
    product; the rounding error of a float64 evaluation is at most a few ε times this."""
    if isinstance(expr, sp.Add):
        return functools.reduce(np.add, (_magnitude(a, env) for a in expr.args))
    if isinstance(expr, sp.Mul):
        out = None
        for a in expr.args:
            if isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative:
                m = 1 / np.abs(evaluate(a.base, env)) ** float(-a.exp)
            else:
                m = _magnitude(a, env)
            out = m if out is None else out * m
        return out
    if isinstance(expr, sp.Pow) and expr.exp.is_number and expr.exp.is_positive:
        return _magnitude(expr.base, env) ** float(expr.exp)
    v = np.abs(np.asarray(evaluate(expr, env), dtype=np.float64))
    if isinstance(expr, (sp.Abs, sp.Max, sp.Min, sp.Piecewise)):
        for a in expr.args:
            if isinstance(a, sp.Expr):
                v = np.maximum(v, _magnitude(a, env))
            elif isinstance(a, tuple) or hasattr(a, "expr"):
                v = np.maximum(v, _magnitude(a[0], env))
    return v


def _agree(a, b, a_ld=None, b_ld=None, mag=None) -> np.ndarray:
    """Where two float64 evaluations agree up to rounding (NaN = NaN, ±inf = ±inf).

    ``a_ld``, ``b_ld``: the same evaluations in long double; their distance to
    the float64 values measures the rounding noise that is tolerated.
    """
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        scale = np.maximum(np.abs(a), np.abs(b))
        tol = 1e-12 * scale
        if a_ld is not None:
            na = np.abs(np.asarray(a_ld, np.longdouble) - a).astype(np.float64)
            nb = np.abs(np.asarray(b_ld, np.longdouble) - b).astype(np.float64)
            noise = np.where(np.isfinite(na), na, 0.0) + np.where(np.isfinite(nb), nb, 0.0)
            tol = tol + 64.0 * noise
        if mag is not None:
            tol = tol + 256.0 * np.finfo(np.float64).eps * np.where(np.isfinite(mag), mag, 0.0)
        close = finite & (np.abs(a - b) <= tol)
    return both_nan | same_inf | close


def _compare(lhs, rhs, xs, ys) -> tuple[bool, str]:
    a, b = _values(lhs, xs, ys, np.float64), _values(rhs, xs, ys, np.float64)
    a_ld, b_ld = _values(lhs, xs, ys, np.longdouble), _values(rhs, xs, ys, np.longdouble)
    env = {"x": xs, "y": ys}
    with np.errstate(all="ignore"):
        mag = (np.broadcast_to(_magnitude(lhs, env), xs.shape)
               + np.broadcast_to(_magnitude(rhs, env), xs.shape))
    ok = _agree(a, b, a_ld, b_ld, mag)
    if ok.all():
        return True, ""
    names = {str(v) for v in (sp.sympify(lhs).free_symbols | sp.sympify(rhs).free_symbols)}
    used = [(n, v) for n, v in (("x", xs), ("y", ys)) if n in names]
    k = min(np.flatnonzero(~ok), key=lambda i: max([_plainness(float(v[i])) for _, v in used],
                                                   default=()))
    at = ", ".join(f"{n} = {plain_number(v[k], exact=True)}" for n, v in used)
    return False, (f"counterexample {at}: " if at else "counterexample: ") + \
        f"{plain_number(a[k])} vs {plain_number(b[k])}"


def plain_number(v, exact: bool = False) -> str:
    """A value as a reader writes it: 1 (not 1.0), 0.5, 0.693147, ∞, -∞, NaN, 1e-310;
    ``exact``: every digit of a value that is not an integer (a point to evaluate at)."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v) if exact else f"{v:.6g}"


def _plainness(v: float) -> tuple:
    """How plain a value reads in a counterexample (smaller: plainer). Small integers and
    halves first, then short decimals; subnormals and 1e-310 last (a reader should see
    f(1, 0) = 1, not f(1e-310, 0) = 1e-310)."""
    a = abs(v)
    tiny = 0 < a < 1e-300
    return (tiny, not float(v).is_integer(), (2 * v) % 1 != 0, len(repr(v)), a)


def _numeric(lhs: sp.Expr, rhs: sp.Expr, domain: str) -> tuple[bool, str]:
    """Compare both sides at seeded random points (or every boolean point)."""
    if domain == "boolean":
        xs = np.array([0.0, 0.0, 1.0, 1.0])
        ys = np.array([0.0, 1.0, 0.0, 1.0])
    else:
        rng = np.random.default_rng(NUMERIC_SEED)
        xs = _sample(domain, rng, NUMERIC_POINTS)
        ys = _sample(domain, rng, NUMERIC_POINTS)
        # Also the pairs the plans care about most: zeros against values.
        xs = np.concatenate([xs, np.zeros(64), ys[:64]])
        ys = np.concatenate([ys, ys[:64], np.zeros(64)])
    return _compare(lhs, rhs, xs, ys)


def _symbolic(lhs_d, rhs_d) -> bool:
    """sympy's generic verdict within the budget (True: proven; False: undecided)."""
    if lhs_d == rhs_d:
        return True
    if not small_enough(lhs_d, rhs_d):
        return False
    try:
        with budget():
            sl, sr = sp.simplify(sp.piecewise_fold(lhs_d)), sp.simplify(sp.piecewise_fold(rhs_d))
            if sl == sr:
                return True
            if not (sl.has(sp.oo, -sp.oo, sp.zoo, sp.nan) or sr.has(sp.oo, -sp.oo, sp.zoo, sp.nan)):
                if sp.simplify(sl - sr) == 0:
                    return True
    except Exception:  # noqa: BLE001 - undecided; the numeric check decides
        pass
    return False


def _symbolic_written(lhs, rhs, domain: str) -> bool:
    try:
        return _symbolic(on_domain(evaluated(lhs), domain), on_domain(evaluated(rhs), domain))
    except Exception:  # noqa: BLE001 - sympy could not even rebuild them: undecided
        return False


_CHECKED: dict = {}  # (lhs, rhs, domain) -> (_check's answer, whether a step ran out of time)


def _check(lhs: sp.Expr, rhs: sp.Expr, domain: str) -> tuple[bool, str, str]:
    """:func:`_decide`, memoised. An answer decided while a symbolic step ran out of time
    (its method, "sympy" or "numeric", depended on the load) is counted again on every use
    (:func:`gbdist.algebra.records.note_cut_short`), so nothing derived from it is stored
    on disk, while the process does not pay the time budget again."""
    key = (lhs, rhs, domain)
    hit = _CHECKED.get(key)
    if hit is not None:
        if hit[1]:
            records.note_cut_short()
        return hit[0]
    mark = records.cut_short()
    found = _decide(lhs, rhs, domain)
    if len(_CHECKED) >= 4096:
        _CHECKED.clear()
    _CHECKED[key] = (found, records.cut_short() != mark)
    return found


_check.cache_clear = _CHECKED.clear  # cleared with the other memos (gbdist.runtime)


def _decide(lhs: sp.Expr, rhs: sp.Expr, domain: str) -> tuple[bool, str, str]:
    if domain == "boolean":
        ok, detail = _numeric(lhs, rhs, domain)
        return ok, "exhaustive on {0, 1}", detail
    # Special points first: cheap, and they refute most false claims at once.
    xs, ys = _special_points(lhs, rhs, domain)
    ok, detail = _compare(lhs, rhs, xs, ys)
    if not ok:
        return False, "special-point counterexample", detail
    if lhs == rhs or (small_enough(lhs, rhs) and _symbolic_written(lhs, rhs, domain)):
        return True, "sympy", ""
    ok, detail = _numeric(lhs, rhs, domain)
    method = f"numeric (seeded, {NUMERIC_POINTS} points)" if ok else "numeric counterexample"
    return ok, method, detail


def check(claim: str, lhs, rhs, domain: str = "real") -> Proof:
    """Check ``lhs == rhs`` for all x, y in ``domain`` and return the record."""
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    holds, method, detail = _check(lhs, rhs, domain)
    return Proof(claim, lhs, rhs, domain, method, holds, detail)


def equivalent(lhs, rhs, domain: str = "real") -> bool:
    """True when ``lhs == rhs`` is proven (or numerically confirmed) on ``domain``."""
    return check("", lhs, rhs, domain).holds


def is_nonnegative(expr: sp.Expr, domain: str = "real") -> bool:
    """True only when sympy *proves* ``expr >= 0`` under the domain's assumptions
    and no special point (evaluated as written) is negative."""
    xs, ys = _special_points(expr, expr, domain)
    v = _values(expr, xs, ys, np.float64)
    if np.any(v < 0):
        return False
    try:
        e = on_domain(evaluated(expr), domain)
        if e.is_nonnegative:
            return True
        return bool(on_domain(simplify(expr, domain), domain).is_nonnegative)
    except Exception:  # noqa: BLE001 - not proven
        return False


__all__ = ["Proof", "check", "equivalent", "is_nonnegative", "simplify", "X", "Y"]
