"""Ops whose value depends on where an entry is, not (only) on what it holds.

Two kinds, both formulas written as terms (:mod:`gbdist.algebra.terms`), keyed by them:

* :class:`PositionalOp`, a binary op of a new kind: ⊗ of a semiring over the pair
  ``A(i, k)``, ``B(k, j)`` whose value is a formula of the indices ``i, k, j`` alone
  (``firsti`` = i, ``firstj`` = secondi = k, ``secondj`` = j; the ``…1`` forms add 1, as
  GraphBLAS's). Its value never depends on a stored value, so no value annihilates it: the
  algebra's annihilator and fill analysis does not apply, and a product over it is
  structural (only stored pairs take part) — :func:`lower` says so and gives the exact
  rewrite the operations run: a formula of ``i, k`` is ``first`` over ``A'`` with
  ``A'(i, k) = f(i, k)`` (an index-unary apply), one of ``k, j`` is ``second`` over
  ``B'(k, j) = f(k, j)``; so every backend runs it with the value kernels it has.
* :class:`IndexUnaryOp`, GraphBLAS's index-unary op: ``f(x, i, j, y)`` of an entry's
  value ``x``, its row ``i`` and column ``j`` (a vector's entries: ``i`` its index,
  ``j = 0``) and a bound scalar ``y`` (the *thunk*). Built-ins (``rowindex``, ``tril``,
  ``valuelt`` …, python-graphblas's names and meanings) and user ops
  (:func:`index_unary`). ``select`` keeps the entries where it is true; ``apply`` stores
  its value.

Imports sympy only to build a user op (:func:`index_unary`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from . import terms
from .ops import Op
from .ops import first as _first
from .ops import second as _second
from ..errors import DefinitionError

_I, _K, _J, _X, _Y = (("Symbol", n, False) for n in ("i", "k", "j", "x", "y"))
_ONE = ("One",)


def _sym_names(term) -> set:
    return terms.symbol_names(term)


class PositionalOp(Op):
    """⊗ over the pair ``A(i, k)``, ``B(k, j)`` whose value is a formula of ``i, k, j``.

    Its ``formula`` (and term) reads the index symbols, never ``x`` or ``y``; evaluated
    as a value op it fails (no value binds ``i``), so it cannot be taken for one."""

    positional = True

    @classmethod
    def make(cls, name: str, term: tuple, doc: str = "") -> "PositionalOp":
        reads = _sym_names(term)
        if not reads or not reads <= {"i", "k", "j"} or {"i", "j"} <= reads:
            raise DefinitionError(
                f"positional op {name!r} must read indices of one operand",
                got=", ".join(sorted(reads)) or "no index",
                expected="a formula of i, k (A's row and column) or of k, j (B's)")
        op = object.__new__(cls)
        for k, v in (("name", name), ("arity", 2), ("domain", "real"), ("doc", doc),
                     ("_term", term), ("_deferred", {"formula": term})):
            object.__setattr__(op, k, v)
        object.__setattr__(op, "_key", ("positional", terms.text(term)))
        return op

    def _make_key(self) -> tuple:
        return ("positional", terms.text(self.term))

    @property
    def side(self) -> str:
        """``"first"`` when the value reads A's indices (i, k), else ``"second"``."""
        return _operand_side(self)

    def __repr__(self):
        return f"positional op {self.name}(A(i,k), B(k,j)) = {terms.text(self.term)}"


def _pos(name, term, doc):
    return PositionalOp.make(name, term, doc)


firsti = _pos("firsti", _I, "i: the row of A's entry")
firsti1 = _pos("firsti1", ("Add", _I, _ONE), "i + 1")
firstj = _pos("firstj", _K, "k: the column of A's entry")
firstj1 = _pos("firstj1", ("Add", _K, _ONE), "k + 1")
secondi = _pos("secondi", _K, "k: the row of B's entry")
secondi1 = _pos("secondi1", ("Add", _K, _ONE), "k + 1")
secondj = _pos("secondj", _J, "j: the column of B's entry")
secondj1 = _pos("secondj1", ("Add", _J, _ONE), "j + 1")
POSITIONAL = {o.name: o for o in (firsti, firsti1, firstj, firstj1, secondi, secondi1,
                                  secondj, secondj1)}


def is_positional(op) -> bool:
    return isinstance(op, PositionalOp)


def _operand_side(op: PositionalOp) -> str:
    reads = _sym_names(op.term)
    if "i" in reads:
        return "first"
    if "j" in reads:
        return "second"
    return "first" if op.name.startswith("first") else "second"  # k alone: either operand


@dataclass(frozen=True)
class Lowered:
    """How a product over a positional ⊗ runs: ``side`` ("first": A, "second": B) is
    replaced by ``index_op`` applied to it (its values become the index formula), and
    ⊗ becomes ``value_mul`` (first / second) with the same ⊕."""

    side: str
    index_op: "IndexUnaryOp"
    value_mul: Op
    reason: str


@functools.lru_cache(maxsize=64)
def lower(mul: PositionalOp) -> Lowered:
    """The rewrite of a positional ⊗ into a value ⊗ over an index-valued operand."""
    side = _operand_side(mul)
    # A(i, k): row i, column k; B(k, j): row k, column j — rename to the operand's (i, j)
    rename = {"i": "i", "k": "j"} if side == "first" else {"k": "i", "j": "j"}
    term = _rename(mul.term, rename)
    iop = IndexUnaryOp(f"{mul.name}_index", term, "int64", "none",
                       f"{mul.name} as an index of the {'left' if side == 'first' else 'right'} "
                       "operand", _index_fn(term))
    value_mul = _first if side == "first" else _second
    reason = (f"⊗ = {mul.name} is positional: its value is {mul.doc or terms.text(mul.term)} (an index of "
              f"the pair A(i,k), B(k,j)), not a function of the stored values, so no value "
              f"annihilates it and the annihilator analysis does not apply: only stored pairs "
              f"take part (structural); run as ⊗ = {value_mul.name} over "
              f"{'A' if side == 'first' else 'B'}' = apply({iop.name}, "
              f"{'A' if side == 'first' else 'B'}), values int64")
    return Lowered(side, iop, value_mul, reason)


def _index_fn(term):
    """A vectorised function of the built-in forms (``i``, ``j``, ``i + 1``, ``j + 1``);
    None (the term is evaluated) for others."""
    off = 0
    if term[0] == "Add" and len(term) == 3 and term[2] == _ONE:
        term, off = term[1], 1
    if term[0] == "Symbol" and term[1] in ("i", "j"):
        if term[1] == "i":
            return lambda x, i, j, y: i + off if off else i
        return lambda x, i, j, y: j + off if off else j
    return None


def _rename(term, names: dict):
    if term[0] == "Symbol":
        return ("Symbol", names.get(term[1], term[1]), term[2])
    return (term[0],) + tuple(_rename(a, names) if isinstance(a, tuple) else a
                              for a in term[1:])


# ---------------------------------------------------------------------------
# Index-unary ops
# ---------------------------------------------------------------------------

THUNKS = ("index", "value", "none")
RESULTS = ("bool", "int64", "value")


@dataclass(frozen=True, eq=False)
class IndexUnaryOp:
    """``f(x, i, j, y)``: ``result`` "bool" (a select predicate), "int64" (an index) or
    "value" (NumPy's type of the formula on the operand); ``thunk``: what ``y`` is —
    "index" (int64), "value" (cast to the operand's type, as python-graphblas types a
    value thunk) or "none" (not read)."""

    name: str
    term: tuple
    result: str
    thunk: str
    doc: str = ""
    fn: object = field(default=None, repr=False)  # built-ins: (x, i, j, y) -> array

    def __post_init__(self):
        extra = _sym_names(self.term) - {"x", "i", "j", "y"}
        if extra:
            raise DefinitionError(f"index-unary op {self.name!r} reads names it has not",
                                  got=", ".join(sorted(extra)), expected="x, i, j, y")
        if self.result not in RESULTS or self.thunk not in THUNKS:
            raise DefinitionError(f"index-unary op {self.name!r}: bad kind",
                                  got=f"{self.result}, {self.thunk}")

    @property
    def key(self) -> tuple:
        return ("indexunary", terms.text(self.term), self.result, self.thunk)

    @property
    def reads_value(self) -> bool:
        return "x" in _sym_names(self.term)

    def __eq__(self, other):
        return isinstance(other, IndexUnaryOp) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"index-unary op {self.name}(x, i, j, y) = {terms.text(self.term)}"

    def evaluate(self, x, i, j, y, xp=np):
        """The op on arrays (``xp``: NumPy or CuPy): a built-in's vectorised function, a
        user op's term (on host copies when the arrays live on the device)."""
        if self.fn is not None:
            return self.fn(x, i, j, y)
        env = {"x": x, "i": i, "j": j, "y": y}
        if xp is not np:
            env = {k: (v.get() if hasattr(v, "get") else v) for k, v in env.items()}
        with np.errstate(all="ignore"):
            out = np.asarray(terms.evaluate(self.term, env))
        out = np.broadcast_to(out, np.shape(i)).copy()
        return out if xp is np else xp.asarray(out)


def _iu(name, term, result, thunk, fn, doc):
    return IndexUnaryOp(name, term, result, thunk, doc, fn)


def _add(a, b):
    return ("Add", a, b)


def _neg(a):
    return ("Mul", ("NegativeOne",), a)


_IPY = _add(_I, _Y)
_BUILTIN_IU = (
    _iu("rowindex", _IPY, "int64", "index", lambda x, i, j, y: i + y, "i + y"),
    _iu("colindex", _add(_J, _Y), "int64", "index", lambda x, i, j, y: j + y, "j + y"),
    _iu("diagindex", _add(_J, _neg(_IPY)), "int64", "index", lambda x, i, j, y: j - (i + y),
        "j - (i + y)"),
    _iu("tril", ("LessThan", _J, _IPY), "bool", "index", lambda x, i, j, y: j <= i + y,
        "j <= i + y"),
    _iu("triu", ("GreaterThan", _J, _IPY), "bool", "index", lambda x, i, j, y: j >= i + y,
        "j >= i + y"),
    _iu("diag", ("Equality", _J, _IPY), "bool", "index", lambda x, i, j, y: j == i + y,
        "j == i + y"),
    _iu("offdiag", ("Unequality", _J, _IPY), "bool", "index", lambda x, i, j, y: j != i + y,
        "j != i + y"),
    _iu("colle", ("LessThan", _J, _Y), "bool", "index", lambda x, i, j, y: j <= y, "j <= y"),
    _iu("colgt", ("StrictGreaterThan", _J, _Y), "bool", "index", lambda x, i, j, y: j > y,
        "j > y"),
    _iu("rowle", ("LessThan", _I, _Y), "bool", "index", lambda x, i, j, y: i <= y, "i <= y"),
    _iu("rowgt", ("StrictGreaterThan", _I, _Y), "bool", "index", lambda x, i, j, y: i > y,
        "i > y"),
    _iu("valueeq", ("Equality", _X, _Y), "bool", "value", lambda x, i, j, y: x == y, "x == y"),
    _iu("valuene", ("Unequality", _X, _Y), "bool", "value", lambda x, i, j, y: x != y, "x != y"),
    _iu("valuelt", ("StrictLessThan", _X, _Y), "bool", "value", lambda x, i, j, y: x < y,
        "x < y"),
    _iu("valuele", ("LessThan", _X, _Y), "bool", "value", lambda x, i, j, y: x <= y, "x <= y"),
    _iu("valuegt", ("StrictGreaterThan", _X, _Y), "bool", "value", lambda x, i, j, y: x > y,
        "x > y"),
    _iu("valuege", ("GreaterThan", _X, _Y), "bool", "value", lambda x, i, j, y: x >= y,
        "x >= y"),
)
INDEX_UNARY = {o.name: o for o in _BUILTIN_IU}
# python-graphblas's vector names: the index of a vector's entry is its row i
INDEX_UNARY.update({"index": INDEX_UNARY["rowindex"], "indexle": INDEX_UNARY["rowle"],
                    "indexgt": INDEX_UNARY["rowgt"]})


def index_unary(name: str, formula, result: str = "bool", thunk: str = "value") -> IndexUnaryOp:
    """A user index-unary op from ``lambda x, i, j, y: ...`` (gb.where, comparisons, + …
    as for :func:`gbdist.algebra.ops.make_op`): ``result="bool"`` for ``select``
    (kept where true), ``"value"`` for ``apply``; ``thunk``: how ``y`` is typed ("value":
    the operand's type, "index": int64)."""
    from .formulas import _expr, building, guarded
    from .lazy import sympy as sp
    from .sym import Sym
    if not callable(formula):
        raise DefinitionError("index_unary takes a function of (x, i, j, y)", got=repr(formula))
    with guarded(f"index-unary op {name!r}"):
        syms = [Sym(sp.Symbol(n, real=True)) for n in ("x", "i", "j", "y")]
        with building():
            try:
                expr = _expr(formula(*syms))
            except TypeError as e:
                raise DefinitionError(f"index-unary op {name!r} takes (x, i, j, y)",
                                      got=str(e)[:200]) from None
        try:
            term = terms.encode(expr)
        except terms.Unsupported as e:
            raise DefinitionError(f"index-unary op {name!r} uses a node gbdist cannot store",
                                  got=str(e)) from None
    return IndexUnaryOp(str(name), term, result, thunk, f"user op {name}")


def index_unary_arg(op, what: str) -> IndexUnaryOp:
    if isinstance(op, IndexUnaryOp):
        return op
    if isinstance(op, str) and op in INDEX_UNARY:
        return INDEX_UNARY[op]
    import difflib
    from ..errors import InputError
    close = difflib.get_close_matches(str(op), list(INDEX_UNARY), n=1)
    raise InputError(f"{what}: unknown selector / index-unary op", got=repr(op),
                     expected=", ".join(sorted(INDEX_UNARY)),
                     hint=(f"did you mean {close[0]!r}? " if close else "")
                     + "or gr.index_unary(name, lambda x, i, j, y: ...)")
