"""Formulas as one line of Unicode mathematics, for every text a person reads: explain,
``gbdist check``, error messages. ``|x − y|``, ``√x``, ``x²``, ``∞``, cases in braces —
never sympy's ``Abs(x)``, ``x**2``, ``oo``. (:func:`gbdist.algebra.formulas.show` is the
plain-ASCII form that keys and reprs use.) It builds on :mod:`gbdist.algebra.written` only,
so :mod:`gbdist.algebra.formulas` prints its own messages with it.
"""
from __future__ import annotations

import sympy as sp
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from .written import build, structural_text

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


class _Text(StrPrinter):
    """One-line Unicode mathematics: |x − y|, √x, x², {0 if x = 0; 1 otherwise}, ∞."""

    def _print_Abs(self, e):
        return f"|{self._print(e.args[0])}|"

    def _print_Pow(self, e, rational=False):
        b, p = e.args
        if p == sp.Rational(1, 2):
            inner = self._print(b)
            return f"√{inner}" if b.is_Atom else f"√({inner})"
        if p == sp.Rational(-1, 2):
            inner = self._print(b)
            return f"1/√{inner}" if b.is_Atom else f"1/√({inner})"
        if p.is_Integer and 2 <= p <= 9:
            return self.parenthesize(b, PRECEDENCE["Pow"], strict=True) + str(int(p)).translate(_SUPERSCRIPT)
        return super()._print_Pow(e, rational)

    def _print_Infinity(self, e):
        return "∞"

    def _print_NegativeInfinity(self, e):
        return "-∞"

    def _print_ComplexInfinity(self, e):
        return "∞ (unsigned)"

    def _print_Piecewise(self, e):
        if len(e.args) == 2 and e.args[0].expr == 1 and e.args[1].expr == 0 \
                and e.args[1].cond is sp.true:  # the Iverson bracket: 1 where c holds, else 0
            return f"[{self._print(e.args[0].cond)}]"
        parts = []
        for value, cond in e.args:
            v = self._print(value)
            parts.append(f"{v} otherwise" if cond is sp.true else f"{v} if {self._print(cond)}")
        return "{" + "; ".join(parts) + "}"

    def _print_Relational(self, e):
        op = {"==": "=", "!=": "≠", "<=": "≤", ">=": "≥", "<": "<", ">": ">"}[e.rel_op]
        return f"{self._print(e.lhs)} {op} {self._print(e.rhs)}"

    _print_Equality = _print_Unequality = _print_Relational

    def _print_Or(self, e):
        return " or ".join(self.parenthesize(a, 1000) for a in e.args)

    def _print_And(self, e):
        return " and ".join(self.parenthesize(a, 1000) for a in e.args)

    def _print_Max(self, e):
        return f"max({', '.join(self._print(a) for a in e.args)})"

    def _print_Min(self, e):
        return f"min({', '.join(self._print(a) for a in e.args)})"

    def _print_Rational(self, e):
        if e.q > 64 and (e.q & (e.q - 1)) == 0:
            return repr(float(e))
        return super()._print_Rational(e)

    def _print_Float(self, e):
        return f"{float(e):g}"

    def _print_Symbol(self, e):
        return e.name


def flatten(expr):
    """Nested sums and products as written, flattened (``(a + b) + c`` → ``a + b + c``) and
    ``+ 0`` dropped: the same value, printed without the builder's parentheses."""
    if not isinstance(expr, sp.Basic) or not expr.args or isinstance(expr, sp.Symbol):
        return expr
    args = [flatten(a) for a in expr.args]
    if isinstance(expr, (sp.Add, sp.Mul)) and all(a.is_Rational for a in args):
        return expr.func(*args)  # 1·0, -1·0, 2 + 3: plain arithmetic on written numbers
    if isinstance(expr, (sp.Add, sp.Mul)):
        flat = []
        for a in args:
            flat.extend(a.args if type(a) is type(expr) else (a,))
        if isinstance(expr, sp.Add):
            flat = [a for a in flat if a != 0] or [sp.Integer(0)]
        else:
            flat = [a for a in flat if a != 1] or [sp.Integer(1)]
        return flat[0] if len(flat) == 1 else build(type(expr), *flat)
    try:
        return build(expr.func, *args)
    except Exception:  # noqa: BLE001 - keep the node as it was
        return expr


def text(expr) -> str:
    """One line of Unicode mathematics (see :class:`_Text`); anything not sympy as Python
    prints it."""
    if not isinstance(expr, sp.Basic):
        return str(expr)
    try:
        out = _Text().doprint(flatten(expr))
    except Exception:  # noqa: BLE001 - sympy's printers fail on some unevaluated trees
        return structural_text(expr)
    return out.replace("**", "^").replace("*", "·")


def math(value, limit: int | None = None) -> str:
    """A formula or constant of a message as mathematics (numbers and sympy objects
    alike); cut to ``limit`` characters when given."""
    out = text(value if isinstance(value, sp.Basic) or not isinstance(value, (int, float))
               else sp.sympify(value))
    return out if limit is None or len(out) <= limit else out[:limit - 3] + "..."
