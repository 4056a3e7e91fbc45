"""The fill rule of the graph operations: structural or fill-0 semantics, from the algebra.

An operand of a graph operation has a *fill*: ``"absent"`` (a graph: only stored
entries exist, a stored 0 is an edge of weight 0) or ``0`` (data: unstored entries are
zeros). The graph kernels compute structural semantics only (stored entries take
part). This module decides, per operation, whether that computation is also right for
fill-0 operands, and says why (:class:`Decision`, whose ``explain()`` is the text
``gr.explain`` and ``result.decision`` show):

* every operand ``"absent"`` (or fully stored): structural, result fill ``"absent"``;
* a product (mxm, mxv, vxm) of fill-0 operands: structural iff the compiler's analysis
  of ``semiring(mul, add)`` at fills 0 is the *intersection* strategy (f(x, 0) and
  f(0, y) are the ⊕ identity, :func:`gbdist.compiler.analysis.analyze`) and that
  identity is 0 — then the unstored results are exactly the zeros (plus_times);
* ``ewise_add`` (union) of fill-0 operands: 0 must be the op's identity (op(x, 0) = x);
  ``ewise_mult`` (intersection): 0 must annihilate (op(x, 0) = op(0, y) = 0);
* ``apply``: op(0) (or op(0, s) / op(s, 0)) must be 0;
* ``reduce`` of fill-0 data counts the zeros; of a graph it ignores unstored entries.

Anything else would turn a sparse result dense: it raises :class:`GraphSemanticsError`
naming the failed identity and pointing to ``gb.mxm`` / ``gb.pairwise_distances``
(dense results). Operands whose unstored entries would mix the two fills are refused.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..algebra.lazy import sympy as sp
from ..algebra.semirings import UNSET, Semiring
from ..errors import AnalysisError, InputError

ABSENT = "absent"


class GraphSemanticsError(InputError):
    """An operation on fill-0 (data) operands whose sparse result would not be exact."""


@dataclass(frozen=True)
class Decision:
    """How one graph operation treats its operands' unstored entries, and why."""

    operation: str
    structural: bool
    result_fill: object  # "absent" or 0
    reason: str
    proofs: tuple = ()

    def explain(self) -> str:
        lines = [f"{self.operation}: "
                 + ("structural semantics (only stored entries take part)" if self.structural
                    else "fill semantics"),
                 f"  result fill: {self.result_fill!r}", f"  why: {self.reason}"]
        lines += [f"  proof: {p}" for p in self.proofs]
        return "\n".join(lines)

    __str__ = explain


def _fills(fills) -> set:
    """The fills that matter (None: the operand has no unstored entries)."""
    out = {f for f in fills if f is not None}
    if len(out) > 1:
        raise InputError(
            "operands with different fills: a graph (fill='absent') and data (fill=0) in one "
            "operation", expected="operands of one kind", got="fills " + ", ".join(sorted(map(repr, out))),
            hint="wrap both the same way: gb.Matrix(x, fill='absent') or gb.Matrix(x, fill=0)")
    return out


def _refuse(operation: str, why: str):
    return GraphSemanticsError(
        f"{operation} of fill=0 operands has no exact sparse result: {why}",
        expected="an algebra for which the unstored zeros stay zeros (e.g. plus_times)",
        got=why,
        hint="use fill='absent' (graph semantics: only stored entries exist), or "
             "gb.mxm / gb.pairwise_distances for a dense result")


def _structural(operation: str, declared=()) -> Decision:
    data = bool(declared) and all(d == 0 and not isinstance(d, str) for d in declared)
    return Decision(operation, True, 0 if data else ABSENT,
                    "every operand is a graph (fill='absent') or fully stored: only stored "
                    "entries take part, a stored 0 is a value"
                    + ("; the operands are data, so the result's fill is 0" if data else ""))


def product(operation: str, sr: Semiring, fills, declared=()) -> Decision:
    """mxm / mxv / vxm. ``fills``: the operands' effective fills (None: fully stored);
    ``declared``: their declared fills (all 0: the result is data, fill 0). A positional
    ⊗ (:mod:`gbdist.algebra.positional`) reads indices, not values: structural on graphs,
    refused on fill-0 data."""
    if getattr(sr.mul, "positional", False):
        return _positional(operation, sr.mul, _fills(fills))
    if _fills(fills) != {0}:
        return _structural(operation, declared)
    return _product_fill0(operation, sr.mul, sr.add)


def _positional(operation: str, mul, fills) -> Decision:
    from ..algebra.positional import lower
    if fills == {0}:
        raise _refuse(operation, f"⊗ = {mul.name} is positional (its value is an index, not a "
                                 "stored value): every unstored 0 of the data is a pair with "
                                 "indices too, so the result would be dense")
    return Decision(operation, True, ABSENT, lower(mul).reason)


@functools.lru_cache(maxsize=256)
def _product_fill0(operation, mul, add) -> Decision:
    from .analysis import analyze
    try:
        a = analyze(Semiring(mul, add, UNSET), sp.Integer(0), sp.Integer(0))
    except AnalysisError as e:
        raise _refuse(operation, f"the analysis finds no sparse strategy ({e.message})") from None
    ident = add.identity
    if a.strategy != "intersection":
        raise _refuse(operation, f"{a.reason} (strategy {a.strategy})")
    if ident != 0:
        raise _refuse(operation, f"a pair with no shared stored entry holds the ⊕ identity "
                                 f"{shown(ident)}, not the fill 0")
    return Decision(operation, True, 0,
                    f"{a.reason}; the ⊕ identity is 0, so unstored results are the zeros: "
                    "computed structurally, result fill 0", tuple(a.proofs))


def shown(value) -> str:
    """A constant or formula of a message as mathematics (∞, |x|, x²), never sympy's
    ``oo`` / ``Abs(x)`` / ``x**2``."""
    from .explain_math import text
    try:
        return text(sp.sympify(value))
    except Exception:  # noqa: BLE001 - a value sympy cannot read: as Python prints it
        return str(value)


def ewise(operation: str, op, union: bool, fills, declared=()) -> Decision:
    """ewise_add (union) / ewise_mult (intersection)."""
    if _fills(fills) != {0}:
        return _structural(operation, declared)
    return _ewise_fill0(operation, op, union)


@functools.lru_cache(maxsize=256)
def _ewise_fill0(operation, op, union) -> Decision:
    from ..algebra.formulas import X, Y
    from ..algebra.proofs import check
    f, dom = op.formula, op.domain
    if union:
        p1 = check(f"{op.name}(x, 0) = x: an entry of A alone keeps its value", f.xreplace({Y: 0}), X, dom)
        p2 = check(f"{op.name}(0, y) = y: an entry of B alone keeps its value", f.xreplace({X: 0}), Y, dom)
        why = "0 is the identity of {0}: the union of stored entries is exact"
        why_not = "0 is not the identity of {0} (an entry stored on one side only would change)"
    else:
        p1 = check(f"{op.name}(x, 0) = 0: A's entries without a partner vanish", f.xreplace({Y: 0}), 0, dom)
        p2 = check(f"{op.name}(0, y) = 0: B's entries without a partner vanish", f.xreplace({X: 0}), 0, dom)
        why = "0 annihilates {0}: the intersection of stored entries is exact"
        why_not = "0 does not annihilate {0} (an entry stored on one side only would count)"
    if not (p1.holds and p2.holds):
        failed = "; ".join(p.claim for p in (p1, p2) if not p.holds)
        raise _refuse(operation, f"{why_not.format(op.name)}; not proven: {failed}")
    return Decision(operation, True, 0, why.format(op.name), (p1, p2))


def apply_value(operation: str, at_zero: float, fills, declared=()) -> Decision:
    """apply: ``at_zero`` is the op evaluated at an unstored 0 (with the bound scalar)."""
    if _fills(fills) != {0}:
        return _structural(operation, declared)
    if at_zero != 0:
        raise _refuse(operation, f"the op maps the unstored zeros to {at_zero:g}")
    return Decision(operation, True, 0, "the op maps 0 to 0: applied to stored values only")


def reduction(operation: str, monoid, fill) -> Decision:
    """reduce_rows / reduce_cols / reduce_scalar."""
    if fill == 0:
        return Decision(operation, False, 0,
                        f"fill=0 data: every unstored entry is a 0 and takes part in {monoid.name}")
    return Decision(operation, True, ABSENT,
                    f"a graph (fill='absent'): only stored entries take part in {monoid.name}, "
                    "so the row min/max are the stored minima/maxima")


_COMMUTATIVE_NODES = ("Add", "Mul", "Max", "Min")


def _canonical(t, swap: bool):
    """A term with the arguments of its commutative nodes sorted (x*y and y*x compare
    equal), x and y exchanged first when ``swap``."""
    if not isinstance(t, tuple) or not t:
        return t
    if t[0] == "Symbol":
        return (t[0], {"x": "y", "y": "x"}.get(t[1], t[1])) + t[2:] if swap else t
    args = [_canonical(a, swap) for a in t[1:]]
    if t[0] in _COMMUTATIVE_NODES:
        args.sort(key=repr)
    return (t[0],) + tuple(args)


@functools.lru_cache(maxsize=256)
def mul_symmetry(op) -> tuple[bool, bool]:
    """(⊗ commutes, ⊗ reads its operands' values) of a product's ``op``, read from its
    formula's term (no sympy): x and y exchanged give the same term up to the order of a
    sum's or product's arguments (a sufficient test, as the compiled kernels' formula test,
    ``MUL_COMMUTES``: a False only costs a symmetry check); reads when x or y is in it
    (``pair`` reads none). An op without a term claims nothing. With a symmetric A,
    C = A ⊕.⊗ A (under a symmetric mask) is then symmetric
    (:func:`gbdist.graph.objects.square_symmetry`)."""
    from ..algebra import terms
    t = op.term
    if t is None:
        return False, True
    names = terms.symbol_names(t)
    if not names <= {"x", "y"}:  # a column or another name: claim nothing
        return False, True
    return _canonical(t, True) == _canonical(t, False), bool(names)
