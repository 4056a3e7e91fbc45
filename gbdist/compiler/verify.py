"""Check 3 of the analysis cache: is a decoded analysis consistent with the op?

An analysis read back from disk (gbdist.compiler.cache) is checked against the op's
formula at sampled points before it is used: the decision's identities (L, R, C, the
correction g and the expansion terms) must hold numerically, or the entry is discarded
and the analysis is made again. Kept apart from the analysis so that the check reads
only the analysis's result, never its reasoning.
"""
from __future__ import annotations

import math
import random

import numpy as np
import sympy as sp

from . import cache
from .decision import STRATEGIES
from ..algebra.evaluate import evaluate


# ---------------------------------------------------------------------------
# Check 3 of the analysis cache (gbdist/cache.py): is a decoded analysis consistent
# with the op? An analysis is checked where analyses are made, against the op's formula.
# ---------------------------------------------------------------------------

_FIXED = (0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3 / 7, 1.75, -0.3, 7.25, 0.1, -4.0)
_RNG = random.SystemRandom()
_TOL = 1e-9


def _sample_values(f, fills, domain: str) -> np.ndarray:
    vals = list(_FIXED) + [_RNG.uniform(-5, 5) for _ in range(3)]
    for c in list(f.atoms(sp.Number)) + list(fills):
        try:
            v = float(c)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v) and abs(v) < 1e6:
            vals += [v, -v]
    if domain == "nonnegative":
        vals = [abs(v) for v in vals]
    elif domain == "boolean":
        vals = [0.0, 1.0]
    return np.unique(np.asarray(vals, dtype=np.float64))


def _ev(expr, x, y) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = evaluate(sp.sympify(expr), {"x": x, "y": y})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), np.shape(x))


def _same(got, want, scale, what: str) -> None:
    """Raise Invalid unless got ≈ want wherever want is not NaN (±inf must match exactly)."""
    with np.errstate(all="ignore"):
        scale = np.where(np.isfinite(scale), np.abs(scale), np.abs(want))
        close = np.isfinite(got) & (np.abs(got - want) <= _TOL * (1 + scale))
    ok = np.isnan(want) | (got == want) | (np.isfinite(want) & close)
    if not np.all(ok):
        raise cache.Invalid(f"the cached {what} does not match the op's formula")


def verify(a, sr, fill_left, fill_right) -> None:
    """Raise :class:`gbdist.compiler.cache.Invalid` unless analysis ``a`` is consistent with ``sr`` (check 3)."""
    f = sr.mul.formula
    dom = sr.mul.domain
    add = sr.add
    structural = sr.structural
    za, zb = (sr.annihilator, sr.annihilator) if structural else (fill_left, fill_right)
    if a.strategy not in STRATEGIES:
        raise cache.Invalid("unknown strategy")
    if bool(a.structural) != structural:
        raise cache.Invalid("the cached structural flag is wrong")
    if sp.sympify(a.fill_left) != sp.sympify(za) or sp.sympify(a.fill_right) != sp.sympify(zb):
        raise cache.Invalid("the cached fills are not the requested ones")
    for e in (a.L, a.R, a.C, a.g):
        if not e.free_symbols <= {sp.Symbol("x", real=True), sp.Symbol("y", real=True),
                                  sp.Symbol("x", nonnegative=True), sp.Symbol("y", nonnegative=True)}:
            raise cache.Invalid("a cached formula uses unknown symbols")
    zav, zbv = float(_ev(za, np.zeros(1), np.zeros(1))[0]), float(_ev(zb, np.zeros(1), np.zeros(1))[0])
    vals = _sample_values(f, (za, zb), dom)
    xs, ys = (v.ravel() for v in np.meshgrid(vals, vals))
    fxy = _ev(f, xs, ys)
    Lx_want = _ev(f, vals, np.full_like(vals, zbv))
    Ry_want = _ev(f, np.full_like(vals, zav), vals)
    C_want = _ev(f, np.array([zav]), np.array([zbv]))
    Lx, Ry, C = _ev(a.L, vals, vals), _ev(a.R, vals, vals), _ev(a.C, np.zeros(1), np.zeros(1))
    _same(Lx, Lx_want, Lx_want, "L = f(x, fill)")
    _same(Ry, Ry_want, Ry_want, "R = f(fill, y)")
    _same(C, C_want, C_want, "C = f(fill, fill)")
    if a.strategy == "intersection":
        if not structural:
            e = np.full_like(vals, float(_ev(add.identity, np.zeros(1), np.zeros(1))[0]))
            _same(e, Lx_want, e, "intersection strategy (f(x, fill) is not the identity)")
            _same(e, Ry_want, e, "intersection strategy (f(fill, y) is not the identity)")
        gxy = _ev(a.g, xs, ys)
        _same(gxy, fxy, fxy, "intersection term g = f")
    elif a.strategy == "union-correction":
        if not add.invertible or structural:
            raise cache.Invalid("union-correction needs ⊕ = plus")
        gxy = _ev(a.g, xs, ys)
        Lxy, Ryy = _ev(f, xs, np.full_like(xs, zbv)), _ev(f, np.full_like(ys, zav), ys)
        with np.errstate(all="ignore"):
            want = fxy - Lxy - Ryy + C_want[0]
            scale = np.abs(fxy) + np.abs(Lxy) + np.abs(Ryy) + abs(C_want[0])
        _same(gxy, np.where(np.isfinite(scale), want, np.nan), scale, "correction term g")
    else:  # two-pass-union
        if not (add.idempotent or add.invertible) or structural:
            raise cache.Invalid("two-pass-union needs an idempotent ⊕ or plus (summed directly)")
        if a.expansion is not None:
            raise cache.Invalid("two-pass-union has no expansion")
        _same(_ev(a.g, xs, ys), fxy, fxy, "term g = f")
        if a.corner_absorbed:
            got = _ev(add.op.formula, np.full_like(fxy, C_want[0]), fxy)
            _same(got, fxy, fxy, "corner_absorbed flag")
    if a.expansion is not None:
        if not add.invertible:
            raise cache.Invalid("an expansion needs ⊕ = plus")
        total = np.zeros_like(xs)
        scale = np.zeros_like(xs)
        for phi, psi in a.expansion:
            names = {s.name for s in phi.free_symbols}, {s.name for s in psi.free_symbols}
            if not (names[0] <= {"x"} and names[1] <= {"y"}):
                raise cache.Invalid("an expansion factor reads the wrong side")
            term = _ev(phi, xs, ys) * _ev(psi, xs, ys)
            total = total + term
            scale = scale + np.abs(term)
        gxy = _ev(a.g, xs, ys)
        _same(total, gxy, scale + np.abs(gxy), "expansion")
    if a.nonnegative:
        if np.any(np.isfinite(fxy) & (fxy < -_TOL * (1 + np.abs(fxy)))):
            raise cache.Invalid("the cached nonnegative flag is wrong")
