"""The proof that a metric is symmetric, d(a, b) == d(b, a), from the algebra alone.

Compiler level: imports no runtime and no backend (the searches use it to compute each
unordered pair of a self-join once)."""
from __future__ import annotations

import numpy as np

from . import cache, ir
from .plan import Plan
from .typecheck import row_operand

_SYMMETRY: dict = {}
FORMAT = 1  # of the stored verdicts



def _sym_side(node, roles, transpose=False):
    """(role, op keys of the apply chain) of a row operand, or None when it is not a plain
    (untransposed) row operand of a known role."""
    name, flipped, chain = row_operand(node, transpose)
    role = roles.get((name, False))
    if flipped or role not in ("i", "j"):
        return None
    return role, tuple(op.key for op in chain), chain


def _commutes(mul) -> bool:
    """f(x, y) == f(y, x) proven on f's domain (by sympy or exhaustively, never numerically)."""
    from ..algebra import proofs
    from ..algebra.formulas import X, Y
    f = mul.formula
    swapped = f.xreplace({X: Y, Y: X})
    if swapped == f:
        return True
    p = proofs.check(f"{mul.name} commutes", f, swapped, mul.domain)
    return bool(p.holds) and not p.method.startswith("numeric")


def _sym_expr(node, roles, syms: dict):
    """The metric as a sympy expression over one symbol per product, per row reduction (one
    for each side) and k; products get one symbol for both orders of (A, B), so they must
    commute. Raises ValueError for anything that cannot be shown symmetric."""
    import sympy as sp

    def sym(key):
        if key not in syms:
            syms[key] = sp.Symbol(f"s{len(syms)}", real=True)
        return syms[key]

    def go(n):
        if isinstance(n, ir.MxM):
            left = _sym_side(n.left, roles)
            right = _sym_side(n.right, roles, transpose=True)
            if left is None or right is None or left[0] != "i" or right[0] != "j":
                raise ValueError("product operands")
            if left[1] != right[1]:  # different transforms of the two sides
                raise ValueError("asymmetric operand transforms")
            if not n.semiring.add.commutative or not _commutes(n.semiring.mul):
                raise ValueError(f"{n.semiring.mul.name} does not commute")
            return sym(("mxm", left[1], n.semiring.key))
        if isinstance(n, ir.RowReduce):
            side = _sym_side(n.arg, roles)
            if side is None:
                raise ValueError("reduction operand")
            return sym(("reduce", side[0], side[1], n.monoid.key))
        if isinstance(n, ir.NCols):
            return sym(("ncols",))
        if isinstance(n, ir.Const):
            v = float(n.value)
            if np.isnan(v):
                return sp.nan
            if np.isinf(v):
                return sp.oo if v > 0 else -sp.oo
            return sp.nsimplify(v) if float(sp.nsimplify(v)) == v else sp.Float(v)
        if isinstance(n, ir.Pointwise):
            a = [go(x) for x in n.args]
            fn = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
                  "div": lambda p, q: p / q, "pow": lambda p, q: p ** q, "neg": lambda p: -p,
                  "sqrt": sp.sqrt, "abs": sp.Abs, "log": sp.log, "exp": sp.exp, "asin": sp.asin,
                  "maximum": sp.Max, "minimum": sp.Min,
                  "where": lambda c, p, q: sp.Piecewise((p, sp.Ne(c, 0)), (q, True))}.get(n.fn)
            rel = {"eq": sp.Eq, "ne": sp.Ne, "lt": sp.Lt, "le": sp.Le, "gt": sp.Gt,
                   "ge": sp.Ge}.get(n.fn)
            if rel is not None:  # a comparison is 1 or 0 in arithmetic
                fn = lambda p, q, rel=rel: sp.Piecewise((1, rel(p, q)), (0, True))  # noqa: E731
            if fn is None:
                raise ValueError(n.fn)
            return fn(*a)
        raise ValueError(type(n).__name__)

    return go(node)


def is_symmetric(plan: Plan) -> bool:
    """True only when the metric is *proven* symmetric, d(a, b) == d(b, a) for all rows.

    The proof, from the algebra (no metric names): every product is mxm(φ(A), φ(B).T) with
    the same apply chain φ on both sides, a commutative ⊕ and a ⊗ with f(x, y) == f(y, x)
    (sympy on f's domain; a numeric verdict is not enough); swapping A and B then leaves
    every product unchanged and exchanges each row reduction of A with the same reduction
    of B. The epilogue, as a sympy expression over those symbols, must be unchanged by that
    exchange (equal after sympy's canonical ordering, or its difference simplifies to 0).
    Anything else (mxv, a transposed operand, kl_divergence's non-commuting ⊗, constructs
    sympy cannot compare) counts as not symmetric. Cached per plan key, in the process and
    on disk (so a search in a new process needs no sympy for a metric proven before).
    """
    return cache.remembered(
        _SYMMETRY, "symmetry.is_symmetric", FORMAT,
        (plan.expr.key, tuple(sorted(plan.roles.items())), cache.code_digest("algebra", "compiler")),
        lambda r: _verdict(r["symmetric"]), lambda: _is_symmetric(plan),
        lambda ok: {"symmetric": ok})


def _verdict(value) -> bool:
    if not isinstance(value, bool):
        raise TypeError("a stored verdict is True or False")
    return value


def _is_symmetric(plan: Plan) -> bool:
    import sympy as sp
    ok = False
    try:
        roles = plan.roles
        if sorted(roles.values()) == ["i", "j"] and all(not t for _, t in roles):
            syms: dict = {}
            e = _sym_expr(plan.expr, roles, syms)
            swap = {}
            for k, s in list(syms.items()):
                if k[0] == "reduce":
                    other = ("reduce", "j" if k[1] == "i" else "i") + k[2:]
                    if other not in syms:
                        syms[other] = sp.Symbol(f"s{len(syms)}", real=True)
                    swap[s] = syms[other]
                    swap[syms[other]] = s
            e2 = e.xreplace(swap)
            ok = bool(e2 == e) or bool(sp.simplify(e - e2) == 0)
    except (ValueError, TypeError, AttributeError, KeyError):
        ok = False
    return ok
