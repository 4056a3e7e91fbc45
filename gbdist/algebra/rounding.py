"""Forward rounding-error analysis of a formula evaluated in float32.

:func:`float_bound` proves, by structural induction over the formula as written,
that evaluating f(x, y) in IEEE float32 on float32 inputs gives

    f̂(x, y) = f(x, y)·(1 + θ),   |θ| ≤ k·u  (to first order in u = 2^-24),

for every pair of inputs whose magnitudes are 0 or within [2^-E, 2^E], and that no
intermediate value overflows or underflows there. Each rule is the textbook bound
(Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 2-3):

* x, y (float32 inputs), constants exact in float32: exact (k = 0); other constants: k = 1
  (a rational p/q only where p and q are exact in float32: it prints as p.0F/q.0F).
  Sums and products of integers that stay below 2^24 are exact (k = 0).
* a ± b of two exact operands: one rounding (k = 1), whatever the signs;
  a + b of operands of one sign: k = max(k_a, k_b) + 1 (no cancellation). A difference
  of inexact operands can cancel and is refused.
* a·b, a/b: k_a + k_b + 1, with every partial product in range; aⁿ (n = 2, 3, 4, printed as products): n·k_a + n − 1;
  √a of a ≥ 0: k_a/2 + 1 (IEEE-rounded division and square root, as CUDA compiles them
  without fast math); |a|, −a, max, min: no new rounding.
* where(c, a, b): max(k_a, k_b), when c is decided exactly in float32: zero and sign
  tests of values with a relative bound (a relative error keeps zero and sign), and
  comparisons of exact values. A branch knows that the expressions tested ``== 0`` by
  the branches before it are nonzero (so ``where(|x|+|y| == 0, 0, …/(|x|+|y|))``
  divides by a nonzero value).
* Anything else (log, exp, pow with other exponents, a division by a value that may be
  0, a comparison of rounded values) is refused: ``None``.

Magnitudes are tracked as base-2 exponent intervals of the nonzero values; a
difference of two exact inputs that is not 0 is at least one unit in the last place
of the smaller exponent (2^-23 of it). Signs are tracked too, so the bound also proves
f ≥ 0 where it says ``nonnegative``.

This is what lets a backend evaluate ⊗ in float32 under float64 accumulation
(compiler/plan.py decides where the bound suffices; docs/metrics.md, *Precision*).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .lazy import sympy as sp

EXPONENT = 32
"""Inputs covered by the bound: 0 or 2^-32 ≤ |v| ≤ 2^32 (the CUDA backend checks every
stored value once per call: backends/cuda/operands.within_exponent)."""
FLOAT_MIN_EXP, FLOAT_MAX_EXP = -126, 127  # normal float32 range: 2^-126 ≤ |v| < 2^128
MANT = 23  # float32 fraction bits


@dataclass(frozen=True)
class FloatBound:
    """f evaluated in float32 has relative error ≤ k·2^-24 for inputs 0 or in [2^-E, 2^E]."""

    k: float
    exponent: int
    nonnegative: bool

    @property
    def relative_error(self) -> float:
        return self.k * 2.0 ** -24

    def describe(self) -> str:
        return (f"relative error ≤ {self.k:g}·2⁻²⁴ = {self.relative_error:.1e} for inputs 0 or "
                f"within 2^±{self.exponent}" + (", f ≥ 0" if self.nonnegative else ""))


@dataclass(frozen=True)
class _V:
    """Abstract value of a subexpression."""

    k: float  # relative error bound in units of u
    lo: float  # log2 of the smallest nonzero |value|
    hi: float  # log2 of the largest |value|
    sign: str  # "+" (≥ 0), "-" (≤ 0) or "?"
    zero: bool  # may be 0
    integer: bool = False  # an exact integer (sums of such below 2^24 are exact)


class _Refused(Exception):
    pass


def float_bound(f: sp.Expr, domain: str = "real", exponent: int = EXPONENT) -> FloatBound | None:
    """The proven float32 relative error bound of ``f`` as written, or None."""
    if not isinstance(f, sp.Basic):
        raise TypeError(f"float_bound takes a sympy formula, not {type(f).__name__}")
    try:
        v = _Walker(domain, exponent).value(f, frozenset())
    except _Refused:
        return None
    return FloatBound(v.k, exponent, v.sign == "+")


def _exact_float32(e: sp.Number) -> bool:
    """Whether the exact value of ``e`` is a float32 value (tested on the rational itself:
    1 + 2^-60 is not, although its double rounding is)."""
    c = float(e)
    if not math.isfinite(c) or abs(c) > float(np.finfo(np.float32).max):
        return False
    return sp.Rational(float(np.float32(c))) == sp.Rational(e)


class _Walker:
    def __init__(self, domain: str, exponent: int):
        self.input_sign = "+" if domain == "nonnegative" else "?"
        self.exponent = exponent

    def value(self, e, nonzero: frozenset) -> _V:
        v = self._value(e, nonzero)
        if v.hi > FLOAT_MAX_EXP or (v.lo < FLOAT_MIN_EXP and v.lo != math.inf):
            raise _Refused  # may overflow or underflow for inputs in range
        return v

    def _value(self, e, nonzero) -> _V:
        if isinstance(e, sp.Symbol) and e.name in ("x", "y"):
            return _V(0, -self.exponent, self.exponent, self.input_sign, e not in nonzero)
        if isinstance(e, sp.Number):
            return self._constant(e)
        if isinstance(e, sp.Abs):
            a = self.value(e.args[0], nonzero)
            return _V(a.k, a.lo, a.hi, "+", a.zero)
        if isinstance(e, sp.Add):
            return self._add([self.value(t, nonzero) for t in e.args])
        if isinstance(e, sp.Mul):
            vs, dens = [], []
            for t in e.args:
                if _is_inverse(t):
                    vs.append(self._reciprocal(t.base, nonzero))
                    dens.append(self.value(t.base, nonzero))
                else:
                    vs.append(self.value(t, nonzero))
            return self._mul(vs, dens)
        if isinstance(e, sp.Pow):
            return self._pow(e, nonzero)
        if isinstance(e, (sp.Max, sp.Min)):
            vs = [self.value(t, nonzero) for t in e.args]
            return _V(max(v.k for v in vs), min(v.lo for v in vs), max(v.hi for v in vs),
                      _join_sign(vs), any(v.zero for v in vs))
        if isinstance(e, sp.Piecewise):
            return self._piecewise(e, nonzero)
        raise _Refused  # log, exp, other functions and symbols

    def _constant(self, e: sp.Number) -> _V:
        """A literal as CUDA prints it: an integer or a float literal, or p.0F/q.0F for a
        rational (rounded once where p and q are exact float32 values)."""
        if e.is_zero:
            return _V(0, math.inf, -math.inf, "+", True, True)
        c = float(e)
        if not math.isfinite(c):
            raise _Refused
        if isinstance(e, sp.Rational) and not e.is_Integer:
            if abs(e.p) >= 2 ** 24 or e.q >= 2 ** 24:
                raise _Refused  # p.0F or q.0F would itself be rounded (or overflow)
        elif isinstance(e, sp.Integer) and abs(e.p) >= 2 ** 24 and not _exact_float32(e):
            raise _Refused  # a large integer literal that float32 rounds
        m = math.log2(abs(c))
        exact = _exact_float32(e)
        return _V(0 if exact else 1, m, m, "+" if c > 0 else "-", False,
                  e.is_Integer and abs(e.p) < 2 ** 24)

    def _add(self, vs: list[_V]) -> _V:
        vs = [v for v in vs if not (v.zero and v.hi == -math.inf)]  # literal zeros
        if not vs:
            return _V(0, math.inf, -math.inf, "+", True, True)
        if len(vs) == 1:
            return vs[0]
        hi = max(v.hi for v in vs) + math.ceil(math.log2(len(vs)))
        if all(v.integer and v.k == 0 for v in vs) and hi < 24:
            # integers whose sum stays below 2^24: every partial sum is exact
            return _V(0, 0, hi, _join_sign(vs) if len({v.sign for v in vs}) == 1 else "?",
                      True, True)
        signs = {v.sign for v in vs}
        if len(signs) == 1 and signs != {"?"}:
            return _V(max(v.k for v in vs) + len(vs) - 1, min(v.lo for v in vs), hi,
                      signs.pop(), all(v.zero for v in vs))
        if len(vs) == 2 and all(v.k == 0 for v in vs):
            # exact operands: one rounding; a nonzero difference is at least one unit in
            # the last place of the smaller operand's exponent
            return _V(1, math.floor(min(v.lo for v in vs)) - MANT, hi, "?", True)
        raise _Refused  # cancellation of rounded values

    def _mul(self, vs: list[_V], dens: list[_V] = ()) -> _V:
        """A product of ``vs`` (a reciprocal 1/b among them for each b in ``dens``). C
        computes the numerator's partial products and the denominator's in some order:
        every one of them lies between the sums of the negative lo's and of the positive
        hi's of its factors, which must be in range too."""
        for group in (vs, dens):
            if any(v.zero and v.hi == -math.inf for v in group):
                continue  # a literal 0 factor: the product is 0
            lo = sum(min(v.lo, 0) for v in group if v.lo != math.inf)
            hi = sum(max(v.hi, 0) for v in group)
            if hi > FLOAT_MAX_EXP or lo < FLOAT_MIN_EXP:
                raise _Refused  # a partial product may overflow or underflow
        k = sum(v.k for v in vs) + len(vs) - 1
        consts = sum(1 for v in vs if v.k == 0 and not v.zero and v.lo == v.hi and _pow2(v.lo))
        k -= consts  # a factor ±2^n is an exact scaling
        neg = sum(1 for v in vs if v.sign == "-")
        sign = "?" if any(v.sign == "?" for v in vs) else ("-" if neg % 2 else "+")
        hi = sum(v.hi for v in vs)
        integer = all(v.integer and v.k == 0 for v in vs) and hi < 24
        return _V(0 if integer else max(k, 0), sum(v.lo for v in vs), hi, sign,
                  any(v.zero for v in vs), integer)

    def _reciprocal(self, base, nonzero) -> _V:
        b = self.value(base, nonzero)
        if b.zero and base not in nonzero:
            raise _Refused  # may divide by 0
        return _V(b.k + 1, -b.hi, -b.lo, b.sign, False)

    def _pow(self, e: sp.Pow, nonzero) -> _V:
        base, ex = e.base, e.exp
        if _is_inverse(e):
            return self._reciprocal(base, nonzero)
        b = self.value(base, nonzero)
        if ex.is_Integer and 2 <= int(ex) <= 4:
            n = int(ex)
            sign = "+" if n % 2 == 0 else b.sign
            return _V(n * b.k + n - 1, n * b.lo, n * b.hi, sign, b.zero)
        if ex == sp.Rational(1, 2) and b.sign == "+":
            return _V(b.k / 2 + 1, b.lo / 2, b.hi / 2, "+", b.zero)
        raise _Refused

    def _piecewise(self, e: sp.Piecewise, nonzero) -> _V:
        vs = []
        known = set(nonzero)
        for branch, cond in e.args:
            self._check_condition(cond, frozenset(known))
            if cond is not sp.true:
                vs.append(self.value(branch, frozenset(known)))
            else:
                vs.append(self.value(branch, frozenset(known)))
                break
            if isinstance(cond, sp.Eq) and cond.rhs == 0:
                known.add(cond.lhs)
            elif isinstance(cond, sp.Eq) and cond.lhs == 0:
                known.add(cond.rhs)
        return _V(max(v.k for v in vs), min(v.lo for v in vs), max(v.hi for v in vs),
                  _join_sign(vs), any(v.zero for v in vs), all(v.integer for v in vs))

    def _check_condition(self, cond, nonzero) -> None:
        if cond in (sp.true, sp.false):
            return
        if isinstance(cond, (sp.And, sp.Or, sp.Not)):
            for c in cond.args:
                self._check_condition(c, nonzero)
            return
        if isinstance(cond, sp.core.relational.Relational):
            lhs, rhs = self.value(cond.lhs, nonzero), self.value(cond.rhs, nonzero)
            exact = lhs.k == 0 and rhs.k == 0
            against_zero = (cond.rhs == 0 or cond.lhs == 0)
            if exact or against_zero:
                return  # decided exactly: a relative bound keeps zero and sign
        raise _Refused


def _is_inverse(e) -> bool:
    return isinstance(e, sp.Pow) and e.exp == -1


def _pow2(m: float) -> bool:
    return m == int(m)


def _join_sign(vs) -> str:
    signs = {v.sign for v in vs if not (v.zero and v.hi == -math.inf)}
    return signs.pop() if len(signs) == 1 else ("+" if not signs else "?")


__all__ = ["EXPONENT", "FloatBound", "float_bound"]
