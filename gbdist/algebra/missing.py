"""Missing values in formulas: ``isnan(x)``, the condition that a value is NaN.

scikit-learn's ``nan_euclidean`` reads NaN as a *missing* value: a coordinate that is
absent from one row is left out of the pair's sum, and the sum is reweighted by the share
of coordinates present in both. In gbdist that is not a special case of one metric but one
more condition an op's formula may test, ``isnan(x)`` (the text language and
``gb.isnan`` in Python), analysed like every other: the fill 0 is not missing
(``isnan(0)`` is false, decided when a number is substituted), so the decision (fills,
annihilators, union correction) follows from the formula as for any op, and a metric
builds the *derived operands* it needs from ops that test it, such as ``known(x) =
where(isnan(x), 0, x)`` (the values, missing ones as 0) and ``missing(x) = where(isnan(x),
1, 0)`` (the indicator of missing values). Both map 0 to 0, so they keep the operand
sparse. The printers emit IEEE's test (``isnan``), so the kernels see NaN as stored.

A plan whose formulas test ``isnan`` accepts NaN in its inputs (:func:`reads_missing`);
every other plan keeps refusing them. The class is made on first use (sympy is imported
then).
"""
from __future__ import annotations

import functools

from .lazy import sympy as sp

NAME = "isnan"


@functools.lru_cache(maxsize=1)
def isnan_class():
    """The sympy condition ``isnan(a)``: true where a is NaN. A number is decided at once
    (``isnan(0)`` is false, ``isnan(nan)`` true) whatever sympy's evaluation switch says, so
    substituting the fill decides it; over a symbol it stays a condition sympy does not
    reason into (a real symbol is still allowed to be NaN at run time)."""
    from sympy.logic.boolalg import BooleanFunction

    class isnan(BooleanFunction):  # noqa: N801 - the name the language and printers use
        nargs = 1

        def __new__(cls, arg, **kwargs):
            arg = sp.sympify(arg)
            if arg in (sp.nan, sp.zoo):
                return sp.true
            if arg.is_number or arg in (sp.oo, -sp.oo):
                return sp.false
            obj = sp.Basic.__new__(cls, arg)
            return obj

        def _eval_simplify(self, **kwargs):
            return self

        def _eval_as_set(self):  # no set of reals is NaN
            return sp.EmptySet

        def _sympystr(self, printer):
            return f"isnan({printer._print(self.args[0])})"

        def _ccode(self, printer):  # C99 / CUDA: IEEE's test (never -ffast-math)
            return f"isnan({printer._print(self.args[0])})"

    return isnan


def isnan(arg):
    """``isnan(arg)`` as a sympy condition."""
    return isnan_class()(arg)


def is_isnan(node) -> bool:
    """Whether a sympy node is an ``isnan`` condition (without making the class)."""
    return type(node).__name__ == NAME and isinstance(node, sp.Basic) and \
        type(node) is isnan_class()


def reads_missing(expr) -> bool:
    """Whether a sympy formula tests ``isnan``."""
    if not isinstance(expr, sp.Basic):
        return False
    return any(type(n).__name__ == NAME and type(n) is isnan_class()
               for n in sp.preorder_traversal(expr))
