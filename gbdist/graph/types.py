"""Domains (the type an op is evaluated in) and the argument checks shared by the graph
operations.

The domain D of an operation (docs/graph_api.md, "Types"): ``dtype=`` when given; else
bool when ⊕ is a bool-only monoid (``lor``, ``land``: their identity holds on bool
alone); else NumPy's ``result_type`` of the operands (and a bound scalar) when every op
keeps that type (a formula built from +, −, ×, integer powers, min, max, abs, comparisons
and integer constants keeps integers; on bool it stays bool, so ``lor``/``land``/``pair``
and GraphBLAS's ``plus`` = or on bool); otherwise float64. Operands are cast to D, the
op is evaluated in D (:mod:`gbdist.backends.graph_reference`), and the result is cast on
write into ``out=``'s dtype when that differs; an accumulator is evaluated in ``out``'s
dtype (python-graphblas types it by C).
"""
from __future__ import annotations

import functools

import numpy as np

try:  # sympy on first use: an op's term answers for the built-ins (keeps_type)
    from ..algebra.lazy import sympy as sp
except ImportError:  # pragma: no cover - an algebra without the lazy stand-in
    import sympy as sp

from ..algebra.ops import Monoid, Op, as_monoid
from ..algebra.semirings import Semiring
from ..errors import DefinitionError, TypeCheckError
from . import sparse as S

# the node types that keep integer (and bool) types, by sympy class name (a term's head)
_KEEP_NAMES = ("Add", "Max", "Min", "Abs", "Piecewise", "ITE", "Equality", "Unequality",
               "StrictLessThan", "LessThan", "StrictGreaterThan", "GreaterThan", "And", "Or",
               "Not", "Xor", "sign")


@functools.lru_cache(maxsize=1)
def _keeps() -> tuple:
    return tuple(getattr(sp, n) for n in _KEEP_NAMES)


@functools.lru_cache(maxsize=512)
def _keeps_formula(formula) -> bool:
    _KEEPS = _keeps()
    for node in sp.preorder_traversal(formula):
        if node.is_Symbol or node in (sp.true, sp.false):
            continue
        if node.is_Number:
            if not node.is_Integer:
                return False
            continue
        if isinstance(node, (sp.core.containers.Tuple,
                             sp.functions.elementary.piecewise.ExprCondPair)):
            continue
        if isinstance(node, sp.Mul):
            if any(isinstance(a, sp.Pow) and not (a.exp.is_Integer and a.exp > 0) for a in node.args):
                return False
            continue
        if isinstance(node, sp.Pow):
            if not (node.exp.is_Integer and node.exp > 0):
                return False
            continue
        if not isinstance(node, _KEEPS):
            return False
    return True


_INTEGER_LEAVES = ("Integer", "Zero", "One", "NegativeOne", "Symbol", "BooleanTrue",
                   "BooleanFalse")


def _positive_integer(term) -> bool:
    return term[0] == "One" or (term[0] == "Integer" and int(term[1]) > 0)


@functools.lru_cache(maxsize=512)
def _keeps_term(term) -> bool:
    """:func:`_keeps_formula` on the formula written as a term (gbdist.algebra.terms): the
    same rule, read without sympy (tests/graph/test_domains.py compares the two)."""
    head = term[0]
    if head in _INTEGER_LEAVES:
        return True
    if head == "Piecewise":
        return all(_keeps_term(e) and _keeps_term(c) for e, c in term[1:])
    if head == "Pow":
        return _positive_integer(term[2]) and _keeps_term(term[1])
    if head == "Mul" or head in _KEEP_NAMES:
        return all(_keeps_term(a) for a in term[1:])
    return False  # a fraction, a float, ±inf, NaN, pi, log, exp ...


def keeps_type(*ops) -> bool:
    """True when every op's formula keeps integer (and bool) types (read from the op's
    term when it has one: no sympy)."""
    for o in ops:
        term = getattr(o, "term", None)
        if not (_keeps_term(term) if term is not None else _keeps_formula(o.formula)):
            return False
    return True


def bool_only(monoid) -> bool:
    """A monoid whose op is a truth function (``lor``, ``land``): a monoid on bool only
    (on other values ``lor(x, 0) = 1 ≠ x``), so its domain is bool."""
    return getattr(monoid.op, "domain", None) == "boolean"


def domain(dtype, operand_dtypes, ops, scalars=(), monoids=()) -> np.dtype:
    """The type the operation's ops are evaluated in (module docstring); ``monoids``: the
    ⊕ of a product or the monoid of a reduction."""
    bools = [m for m in monoids if bool_only(m)]
    if dtype is not None:
        dt = S.check_dtype(dtype, "dtype=")
        if bools and dt != np.bool_:
            raise TypeCheckError(
                f"{bools[0].op.name} is a monoid on bool only: dtype={dt} is not its domain",
                got=f"{bools[0].op.name} with dtype={dt}",
                hint="drop dtype= (the result is bool; out= of another dtype casts it), or "
                     "use max / min (or / and on 0/1 values) for a result in that type")
        return dt
    if bools:
        return np.dtype(np.bool_)
    rt = np.result_type(*operand_dtypes, *scalars)
    if rt.kind == "f":
        return S.check_dtype(rt, "the result")
    if keeps_type(*ops):
        return S.check_dtype(rt, "the result")
    return np.dtype(np.float64)


_BOOL_RESULT = ("eq", "ne")  # GraphBLAS's EQ / NE: T × T → BOOL


def ewise_result(op, domain_dtype, operand_dtypes, dtype=None) -> np.dtype:
    """The result type of an element-wise operation (``ewise_add``, ``ewise_mult``,
    ``ewise_union``) whose op is evaluated in ``domain_dtype``: python-graphblas's type for
    the built-in op (the op typed on the unified operand type, as ``get_typed_op`` types
    it): ``eq`` / ``ne`` bool (GraphBLAS's EQ_T / NE_T), ``pair`` int64 (python-graphblas
    types an untyped PAIR as INT64 whatever its operands), ``power`` the operands' type
    (POW_INT32 is int32; gbdist evaluates it in float64 and casts, as SuiteSparse does);
    with ``dtype=`` (the op typed, ``pair[INT32]``) ``pair`` and ``power`` that type;
    every other op its domain. Values computed in the domain are
    cast to it; so are the entries ``ewise_add`` copies from one side."""
    name = getattr(op, "name", None)
    if name not in _BOOL_RESULT + ("pair", "power") or op != _builtin(name):  # the built-in
        return np.dtype(domain_dtype)  # (by value: the text language's ops are equal copies)
    if name in _BOOL_RESULT:
        return np.dtype(np.bool_)
    if name == "pair":
        return np.dtype(np.int64) if dtype is None else np.dtype(domain_dtype)
    if name == "power":
        return np.dtype(domain_dtype) if dtype is not None else \
            S.check_dtype(np.result_type(*operand_dtypes), "the result")
    return np.dtype(domain_dtype)


def _builtin(name):
    from ..algebra import ops
    return getattr(ops, name, None)


def literal_dtype(value) -> np.dtype:
    """The type python-graphblas gives a scalar operand that is not bound into an op
    (``Scalar.from_value``: eWiseUnion's defaults): a NumPy scalar or 0-d array its own
    dtype, a Python bool bool, int int64, float float64. Unlike :func:`domain`'s bound
    ``scalars``, which are NumPy's weak Python scalars, it counts in the rule as an
    operand of that type."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    return np.asarray(value).dtype


def result_dtype(out, dtype, operand_dtypes, ops, scalars=(), monoids=()) -> np.dtype:
    """The domain (:func:`domain`); ``out`` does not choose it (its dtype is only the
    type the result is cast to on write)."""
    return domain(dtype, operand_dtypes, ops, scalars, monoids)


def semiring_arg(sr, what: str) -> Semiring:
    if isinstance(sr, Semiring):
        return sr
    raise TypeCheckError(f"{what} needs a semiring", got=repr(sr),
                         hint="gb.semirings.plus_times, or gb.semiring(mul, add)")


def monoid_arg(m, what: str) -> Monoid:
    if isinstance(m, Monoid):
        return m
    if isinstance(m, Op) and m.arity == 2:
        try:
            return as_monoid(m)
        except DefinitionError as e:
            raise TypeCheckError(f"{what} needs a monoid: {e.message}", got=repr(m),
                                 hint="gb.monoid(op, identity=...) declares one") from None
    raise TypeCheckError(f"{what} needs a monoid", got=repr(m),
                         hint="gb.ops.plus / min / max / times / lor / land, or gb.monoid(op)")


def binary_arg(op, what: str) -> Op:
    if isinstance(op, Monoid):
        return op.op
    if isinstance(op, Semiring):
        raise TypeCheckError(f"{what} takes a binary op, not a semiring", got=repr(op),
                             hint="e.g. gb.ops.plus")
    if getattr(op, "positional", False):
        raise TypeCheckError(
            f"{what}: {op.name} is a positional op (its value is an index): it is the ⊗ of a "
            "semiring only", got=repr(op),
            hint=f"gb.semirings.min_{op.name} in a product; an entry's own index: "
                 "gr.apply('rowindex', A) / 'colindex'")
    if isinstance(op, Op) and op.arity == 2:
        return op
    raise TypeCheckError(f"{what} needs a binary op", got=repr(op), hint="e.g. gb.ops.plus, gb.ops.min")


def unary_arg(op, what: str) -> Op:
    if isinstance(op, Op) and op.arity == 1:
        return op
    raise TypeCheckError(f"{what} needs a unary op (or a binary op with left= or right=)",
                         got=repr(op), hint="e.g. gb.ops.abs, or gr.apply(gb.ops.plus, A, right=1)")


_FLIPPED: dict = {}


def flipped(sr: Semiring) -> Semiring:
    """The semiring with ⊗'s arguments swapped: ``mul'(x, y) = mul(y, x)`` (to run vxm as
    a pull over Aᵀ, or mxv as a push over Aᵀ). Kept per semiring object (by id, checked
    by identity: hashing a semiring prints its formulas), so each call of a loop finds
    the same flipped object and the kernels' caches keyed by it."""
    hit = _FLIPPED.get(id(sr))
    if hit is not None and hit[0] is sr:
        return hit[1]
    out = _flipped(sr)
    if len(_FLIPPED) > 1024:
        _FLIPPED.clear()
    _FLIPPED[id(sr)] = (sr, out)
    return out


@functools.lru_cache(maxsize=256)
def _flipped(sr: Semiring) -> Semiring:
    from ..algebra.formulas import X, Y
    mul = sr.mul
    f = mul.formula.xreplace({X: Y, Y: X})
    if f == mul.formula:
        return sr
    return Semiring(Op(f"{mul.name}_flipped", f, 2, mul.domain, mul.doc), sr.add, sr.annihilator,
                    sr.name)
