"""The intermediate representation: frozen dataclass nodes, one walk, one key.

Both front ends (the Python API and the text DSL) build these nodes. The
planner rewrites products (:class:`MxM`, :class:`MxV`) into the primitive
nodes at the bottom of this file (:class:`Intersect`, :class:`TwoPassUnion`,
:class:`RowReduce`), which the backends execute.

Each node has a structural :attr:`Node.key` (a nested tuple of the node type,
its parameters' keys and its children's keys); the same key caches analyses,
plans and compiled kernels. A node may carry a source :class:`~gbdist.errors.Span`
for error messages; spans are not part of the key.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Iterator

from ..algebra.lazy import is_sympy
from ..algebra.semirings import Semiring
from ..errors import Span
from ..algebra.ops import Monoid, Op

# Pointwise functions over the (i, j) grid, with their arity.
POINTWISE = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "pow": 2, "neg": 1,
    "sqrt": 1, "abs": 1, "log": 1, "exp": 1, "asin": 1, "where": 3, "maximum": 2, "minimum": 2,
    "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
}


class _Key(tuple):
    """A structural key whose hash is computed once (children's keys are _Keys too).

    A plain nested tuple re-hashes its whole tree on every lookup, which is
    exponential for an expression that shares subexpressions (a helper that
    calls another twice, twenty times over).
    """

    def __hash__(self):
        h = self.__dict__.get("_h")
        if h is None:
            h = tuple.__hash__(self)
            self.__dict__["_h"] = h
        return h


def _param_key(v):
    if isinstance(v, (Op, Monoid, Semiring)):
        return v.key
    if isinstance(v, Node):
        return v.key
    if isinstance(v, tuple):
        return _Key(_param_key(x) for x in v)
    if hasattr(type(v), "key"):  # a float split's bound (algebra.stable.KernelBound)
        return v.key
    if is_sympy(v):
        import sympy
        return sympy.srepr(v)
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


MAX_DEPTH = 200
"""Deepest nesting of an expression (each function call or operator is one level)."""


@dataclass(frozen=True, eq=False)
class Node:
    """Base class: children are the fields holding Nodes (or tuples of Nodes)."""

    def __post_init__(self):
        depth = 1 + max((c.__dict__.get("_depth", 1) for c in self.children), default=0)
        if depth > MAX_DEPTH:
            from ..errors import DefinitionError
            raise DefinitionError("an expression is nested too deeply",
                                  expected=f"at most {MAX_DEPTH} levels of nesting",
                                  got=f"{depth} levels", span=getattr(self, "span", None),
                                  hint="split the expression into named metrics or helpers")
        object.__setattr__(self, "_depth", depth)

    @property
    def children(self) -> tuple["Node", ...]:
        out = []
        for f in fields(self):
            if f.name == "span":
                continue
            v = getattr(self, f.name)
            if isinstance(v, Node):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if isinstance(x, Node))
        return tuple(out)

    @property
    def key(self) -> tuple:
        k = self.__dict__.get("_key")
        if k is None:
            k = _Key((type(self).__name__,) + tuple(
                _param_key(getattr(self, f.name)) for f in fields(self) if f.name != "span"))
            object.__setattr__(self, "_key", k)
        return k

    def same(self, other: "Node") -> bool:
        """Structural equality (what ``==`` would mean; ``==`` is not overloaded)."""
        return isinstance(other, Node) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Node) and self.key == other.key

    def replace(self, **changes) -> "Node":
        args = {f.name: getattr(self, f.name) for f in fields(self)}
        args.update(changes)
        return type(self)(**args)

    # Arithmetic over the (i, j) grid builds Pointwise nodes.
    def __add__(self, o): return Pointwise("add", (self, lift(o)))
    def __radd__(self, o): return Pointwise("add", (lift(o), self))
    def __sub__(self, o): return Pointwise("sub", (self, lift(o)))
    def __rsub__(self, o): return Pointwise("sub", (lift(o), self))
    def __mul__(self, o): return Pointwise("mul", (self, lift(o)))
    def __rmul__(self, o): return Pointwise("mul", (lift(o), self))
    def __truediv__(self, o): return Pointwise("div", (self, lift(o)))
    def __rtruediv__(self, o): return Pointwise("div", (lift(o), self))
    def __pow__(self, o): return Pointwise("pow", (self, lift(o)))
    def __rpow__(self, o): return Pointwise("pow", (lift(o), self))
    def __neg__(self): return Pointwise("neg", (self,))
    def __abs__(self): return Pointwise("abs", (self,))
    def __lt__(self, o): return Pointwise("lt", (self, lift(o)))
    def __le__(self, o): return Pointwise("le", (self, lift(o)))
    def __gt__(self, o): return Pointwise("gt", (self, lift(o)))
    def __ge__(self, o): return Pointwise("ge", (self, lift(o)))

    @property
    def T(self) -> "Node":
        return Transpose(self)


def lift(v) -> Node:
    """Numbers become Const nodes; nodes pass through."""
    if isinstance(v, Node):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return Const(float(v))
    try:
        import numpy as np
        if isinstance(v, (np.integer, np.floating)):
            return Const(float(v))
    except ImportError:  # pragma: no cover
        pass
    from ..errors import TypeCheckError
    raise TypeCheckError("a metric expression can only combine gbdist expressions and numbers",
                         got=f"{type(v).__name__} {v!r}")


# --- operands ---------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Matrix(Node):
    """A symbolic sparse matrix operand, bound to data when the program runs."""
    name: str
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Vector(Node):
    """A symbolic vector operand (the x of mxv)."""
    name: str
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class ColVector(Node):
    """A column operand: a vector over the k columns (weights, variances, ranges), bound by
    name when the program runs. It is what a metric parameter holding an array stands for
    while the metric is built; the ops that read it hold its symbol
    (:mod:`gbdist.algebra.columns`), so it appears in an expression only through them."""
    name: str
    positive: bool = False
    default: str | None = None  # "var", "range": computed from the data when not passed
    span: Span | None = field(default=None, repr=False)
    relative: bool = False  # relative weights: bound divided by their mean (Σ w = k)
    square: bool = False  # a k × k matrix over the columns (mahalanobis' VI), read by Mapped
    signed: bool = False  # a vector of any sign (whiten's centre μ), read by Mapped

    def __str__(self):
        return f"{self.name}[col]"

    @property
    def column(self):
        from ..algebra.columns import Column
        return Column(self.name, self.positive, self.default, self.relative)


@dataclass(frozen=True, eq=False)
class ColScaled(Matrix):
    """The matrix ``name`` with every stored value of column c multiplied by s(w_c), where
    ``scale`` is a formula over column operands only (a unary op that reads no x). The
    compiler writes a product whose ⊗ reads column operands as a column-free product over
    such operands when it proves f(x, y; w) = f₁(s(w)·x, s(w)·y)
    (:mod:`gbdist.compiler.columns`); the runtime scales the values once, when it binds the
    operand, so no kernel reads a column vector.

    ``pre``: a column-free unary op with pre(0) = 0 applied to the stored values *before*
    they are scaled (``nonzero``: the pattern, for weighted counts Σ w·[x ≠ 0]·[y ≠ 0]);
    None when the values are scaled as they are."""
    scale: Op | None = None
    pre: Op | None = None

    @property
    def columns(self) -> tuple:
        return self.scale.columns


@dataclass(frozen=True, eq=False)
class Mapped(Matrix):
    """The matrix ``name`` with each row mapped by a row transform when it is bound, so no
    kernel sees the transform: the product reads the mapped rows as a plain operand.

    ``transform`` names one of the runtime's row transforms
    (:data:`gbdist.runtime.columns.TRANSFORMS`): ``"whiten"`` maps a row a to (a − μ)·L,
    with ``param`` the k × k matrix VI = L·Lᵀ (a :class:`ColVector` with ``square``; its
    ``default`` "invcov": the inverse covariance of the rows of both operands) and
    ``centre`` μ a translation common to both operands (a :class:`ColVector` with
    ``signed``; default "mean": the stacked rows' column means), so the Euclidean
    distance of mapped rows is the Mahalanobis distance; ``"sphere"`` maps (latitude,
    longitude) in radians to the unit vector of that point (haversine's chord);
    ``"wcentre"`` maps a row u to √w·(u − Σ w·u / Σ w) with ``param`` relative weights
    (``weights``; "" for w = 1), so that cosine of mapped rows is SciPy's weighted
    correlation."""
    transform: str = ""
    param: str = ""
    default: str | None = None
    centre: str = ""  # the name of μ, a vector of any sign (default "mean"), or ""
    centre_default: str | None = None
    weights: bool = False  # param is relative weights over the columns (wcentre), not k × k


@dataclass(frozen=True, eq=False)
class Transpose(Node):
    arg: Node
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Apply(Node):
    """A unary op applied to every stored value; the fill becomes op(fill)."""
    op: Op
    arg: Node
    span: Span | None = field(default=None, repr=False)


# --- products and reductions --------------------------------------------------

@dataclass(frozen=True, eq=False)
class MxM(Node):
    """C[i, j] = ⊕_k left[i, k] ⊗ right[k, j]; right is usually B.T."""
    left: Node
    right: Node
    semiring: Semiring
    span: Span | None = field(default=None, repr=False)
    # κ(w), an op over column operands only: C[i, j] = Σ_k κ(w_k)·(left[i, k] ⊗ right[k, j])
    # (compiler/colfactor.py: f(x, y; w) = κ(w)·f₁(x, y)); None: unweighted
    weight: Op | None = None


@dataclass(frozen=True, eq=False)
class MxV(Node):
    """y[i] = ⊕_k A[i, k] ⊗ x[k]."""
    matrix: Node
    vector: Node
    semiring: Semiring
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class RowReduce(Node):
    """r[i] = ⊕_k A[i, k] over all k columns (unstored entries hold the fill)."""
    arg: Node
    monoid: Monoid
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class NCols(Node):
    """k, the number of columns of a matrix operand (a scalar)."""
    arg: Node
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Const(Node):
    value: float
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Pointwise(Node):
    """An elementwise function over the (i, j) grid; vectors and scalars broadcast."""
    fn: str
    args: tuple
    span: Span | None = field(default=None, repr=False)

    def __post_init__(self):
        super().__post_init__()
        from ..errors import ArityError, UnknownNameError
        if self.fn not in POINTWISE:
            raise UnknownNameError(f"unknown pointwise function {self.fn!r}", span=self.span)
        if len(self.args) != POINTWISE[self.fn]:
            raise ArityError(f"{self.fn}() takes {POINTWISE[self.fn]} argument(s)",
                             got=f"{len(self.args)}", span=self.span)


# --- primitives produced by the planner ---------------------------------------

@dataclass(frozen=True, eq=False)
class Intersect(Node):
    """⊕ over the columns stored in both rows of ``mul`` (or of the expansion).

    ``left`` indexes output rows, ``right`` output columns; both are row
    operands (their rows are the vectors being combined).
    """
    left: Node
    right: Node
    mul: Op
    add: Monoid
    expansion: tuple | None  # ((φ_r, ψ_r) unary Ops, ...) or None
    structural: bool
    # (f, h, bound) where mul = f + h, f is proven accurate in float32 (a FloatBound of
    # algebra/rounding.py, or a KernelBound of algebra/stable.py: f evaluated by a stable
    # kernel) and h holds the fill terms: a backend that accumulates
    # float32 data in float64 may evaluate f in float32 (compiler/plan.py says when).
    float_split: tuple | None = None


@dataclass(frozen=True, eq=False)
class TwoPassUnion(Node):
    """⊕ over the union of stored columns, for idempotent ⊕ (plus the corner value)."""
    left: Node
    right: Node
    mul: Op
    add: Monoid
    corner: float  # f(za, zb): the value of a column stored in neither row
    corner_absorbed: bool  # ⊕(corner, f) == f always: start every output at corner
    # κ(w) (⊕ = plus, corner 0): each column's term multiplied by κ(w_k), a dense vector
    # over the columns the backends receive bound (Bound.weights, by the op's key); None:
    # unweighted. Summed directly over the union: no correction, so nothing cancels
    weight: Op | None = None


@dataclass(frozen=True, eq=False)
class Ref(Node):
    """A step's result, referenced from the plan's epilogue."""
    name: str
    kind: str  # "matrix", "col", "row", "scalar"


def walk(root: Node) -> Iterator[Node]:
    """Every distinct node (by key) below ``root``, children before parents."""
    seen: set = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node.key in seen:
            continue
        if expanded:
            seen.add(node.key)
            yield node
            continue
        stack.append((node, True))
        for child in reversed(node.children):
            if child.key not in seen:
                stack.append((child, False))


def rewrite(root: Node, fn) -> Node:
    """Rebuild ``root`` bottom-up; ``fn(node)`` returns a replacement or None."""
    memo: dict = {}
    for node in walk(root):
        changes = {}
        for f in fields(node):
            v = getattr(node, f.name)
            if isinstance(v, Node):
                changes[f.name] = memo[v.key]
            elif isinstance(v, tuple) and any(isinstance(x, Node) for x in v):
                changes[f.name] = tuple(memo[x.key] if isinstance(x, Node) else x for x in v)
        new = node.replace(**changes) if any(
            changes[k] is not getattr(node, k) for k in changes) else node
        out = fn(new)
        memo[node.key] = new if out is None else out
    return memo[root.key]


_SYMBOLS: dict = {}


def symbols(root: Node) -> list[Node]:
    """The Matrix and Vector operands of an expression, in first-seen order (remembered per
    expression: every call of a compiled program asks for them)."""
    found = _SYMBOLS.get(root.key)
    if found is None:
        if len(_SYMBOLS) > 4096:
            _SYMBOLS.clear()
        found = tuple(n for n in walk(root) if isinstance(n, (Matrix, Vector)))
        found = _SYMBOLS[root.key] = found + column_operands(root)
    return list(found)


def column_operands(root: Node) -> tuple:
    """The column operands (:class:`ColVector`) an expression reads, by name: those of its
    scaled operands and of the ops of its products and applies."""
    from ..algebra.columns import merge
    cols, square = [], []
    for n in walk(root):
        if isinstance(n, Mapped) and n.param:
            square.append(ColVector(n.param, default=n.default, square=not n.weights,
                                    relative=n.weights))
        if isinstance(n, Mapped) and n.centre:
            square.append(ColVector(n.centre, default=n.centre_default, signed=True))
        if isinstance(n, ColScaled):
            cols.extend(n.scale.columns)
        elif isinstance(n, (MxM, MxV)):
            cols.extend(n.semiring.mul.columns)
        if isinstance(n, (MxM, TwoPassUnion)) and n.weight is not None:
            cols.extend(n.weight.columns)
        elif isinstance(n, Apply):
            cols.extend(n.op.columns)
    out = tuple(ColVector(c.name, c.positive, c.default, relative=c.relative)
                for c in merge(cols).values())
    names = {c.name for c in out}
    for v in square:
        if v.name not in names:
            names.add(v.name)
            out += (v,)
    return out


def base_operand(node: Node) -> Node | None:
    """The Matrix/Vector under a chain of Apply/Transpose, or None."""
    while isinstance(node, (Apply, Transpose)):
        node = node.arg
    return node if isinstance(node, (Matrix, Vector)) else None


def to_text(node: Node) -> str:
    """A readable, DSL-like rendering of an expression."""
    return _TEXT[type(node)](node)


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "^",
          "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _pw_text(n: Pointwise) -> str:
    if n.fn in _INFIX:
        return f"({to_text(n.args[0])} {_INFIX[n.fn]} {to_text(n.args[1])})"
    if n.fn == "neg":
        return f"-{to_text(n.args[0])}"
    name = {"maximum": "max", "minimum": "min"}.get(n.fn, n.fn)
    return f"{name}({', '.join(to_text(a) for a in n.args)})"


def _scale_text(op: Op) -> str:
    from ..algebra.columns import show
    from ..algebra.evaluate import formula_text
    return show(formula_text(op.term)) if op.term is not None else op.name


def _sr_text(sr: Semiring) -> str:
    return sr.name or repr(sr)


_TEXT = {
    Matrix: lambda n: n.name,
    ColScaled: lambda n: (f"scale({n.name if n.pre is None else f'apply({n.pre.name}, {n.name})'}"
                          f", {_scale_text(n.scale)})"),
    ColVector: lambda n: f"{n.name}[col]",
    Mapped: lambda n: f"{n.transform}({', '.join(x for x in (n.name, n.param, n.centre) if x)})",
    Vector: lambda n: n.name,
    Transpose: lambda n: f"{to_text(n.arg)}.T",
    Apply: lambda n: f"apply({n.op.name}, {to_text(n.arg)})",
    MxM: lambda n: f"mxm({to_text(n.left)}, {to_text(n.right)}, {_sr_text(n.semiring)}"
                   + (f", weight={n.weight.name}" if n.weight is not None else "") + ")",
    MxV: lambda n: f"mxv({to_text(n.matrix)}, {to_text(n.vector)}, {_sr_text(n.semiring)})",
    RowReduce: lambda n: f"reduce({to_text(n.arg)}, {n.monoid.name})",
    NCols: lambda n: f"ncols({to_text(n.arg)})",
    Const: lambda n: f"{n.value:g}",
    Pointwise: _pw_text,
    Intersect: lambda n: (f"intersect({to_text(n.left)}, {to_text(n.right)}, "
                          f"{n.mul.name}, {n.add.name}"
                          + (f", rank {len(n.expansion)}" if n.expansion else "") + ")"),
    TwoPassUnion: lambda n: (f"union2({to_text(n.left)}, {to_text(n.right)}, {n.mul.name}, "
                             f"{n.add.name}"
                             + (f", weight={n.weight.name}" if n.weight is not None else "") + ")"),
    Ref: lambda n: n.name,
}
