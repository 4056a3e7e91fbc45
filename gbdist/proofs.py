"""Proof records: every identity the compiler relies on is checked here.

A check first asks sympy (structural equality after simplification, then
``simplify(lhs - rhs) == 0`` under the op's domain assumptions). When sympy
cannot decide, a seeded numeric check evaluates both sides at many points of
the domain; a counterexample refutes the identity, agreement everywhere is
recorded as a *numeric* verdict (weaker than a proof, and shown as such).
Boolean-domain identities are checked exhaustively on {0, 1}, which is a proof.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .ops import X, Y, evaluate, off_domain, on_domain

NUMERIC_POINTS = 4000
NUMERIC_SEED = 20240


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
        text = f"{self.claim}: {sp.sstr(self.lhs)} = {sp.sstr(self.rhs)}  [{verdict}; {self.method}; {where}]"
        if self.detail:
            text += f" ({self.detail})"
        return text


def simplify(expr: sp.Expr, domain: str = "real") -> sp.Expr:
    """Simplify under the domain's assumptions; returns a formula over X, Y."""
    e = on_domain(sp.sympify(expr), domain)
    try:
        e = sp.simplify(sp.piecewise_fold(e))
    except (TypeError, ValueError, NotImplementedError, RecursionError):
        pass
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


def _agree(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        close = finite & (np.abs(a - b) <= 1e-8 * (1.0 + np.maximum(np.abs(a), np.abs(b))))
    return both_nan | same_inf | close


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
    env = {"x": xs, "y": ys}
    with np.errstate(all="ignore"):
        a = np.broadcast_to(evaluate(lhs, env), xs.shape)
        b = np.broadcast_to(evaluate(rhs, env), xs.shape)
    ok = _agree(a, b)
    if ok.all():
        return True, ""
    k = int(np.flatnonzero(~ok)[0])
    return False, f"counterexample x={xs[k]:g}, y={ys[k]:g}: {a[k]:g} vs {b[k]:g}"


@functools.lru_cache(maxsize=4096)
def _check(lhs: sp.Expr, rhs: sp.Expr, domain: str) -> tuple[bool, str, str]:
    lhs_d, rhs_d = on_domain(lhs, domain), on_domain(rhs, domain)
    if domain == "boolean":
        ok, detail = _numeric(lhs, rhs, domain)
        return ok, "exhaustive on {0, 1}", detail
    if lhs_d == rhs_d:
        return True, "sympy", ""
    try:
        sl, sr = sp.simplify(sp.piecewise_fold(lhs_d)), sp.simplify(sp.piecewise_fold(rhs_d))
        if sl == sr:
            return True, "sympy", ""
        if not (sl.has(sp.oo, -sp.oo, sp.zoo) or sr.has(sp.oo, -sp.oo, sp.zoo)):
            if sp.simplify(sl - sr) == 0:
                return True, "sympy", ""
    except (TypeError, ValueError, NotImplementedError, RecursionError, AttributeError):
        pass
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
    """True only when sympy *proves* ``expr >= 0`` under the domain's assumptions."""
    e = on_domain(expr, domain)
    return bool(e.is_nonnegative) or bool(sp.simplify(e).is_nonnegative)


__all__ = ["Proof", "check", "equivalent", "is_nonnegative", "simplify", "X", "Y"]
