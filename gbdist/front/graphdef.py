"""Graph definitions in the text language: ``graph NAME(A, u, ...) = ...`` → a checked program.

    graph triangle_count(A) =
        let L = select(A, tril, -1) in
        reduce_scalar(mxm(L, L.T, plus_pair, mask=L.S), plus)

The body composes the GraphBLAS operations of :mod:`gbdist.graph` under the same names
(``mxm mxv vxm ewise_add ewise_mult apply select reduce_rows reduce_cols reduce_scalar
extract assign``, docs/language.md "Graph definitions"). :class:`GraphBuilder` turns the
parse tree into a :class:`GraphDef` (:mod:`.graph_builder`): a list of :class:`Step` s in the order they run, each
naming its inputs (:class:`Ref`: an operand or an earlier step, maybe transposed), its
algebra (a Semiring, Monoid or Op resolved through the one registry), its mask
(:class:`MaskRef`) and its write-back keywords. Identical sub-expressions and ``let``
bindings become one step (computed once). Every name, arity and kind is checked here, at
definition time, with the language's typed errors and spans; nothing runs. The
interpreter is :func:`gbdist.graph.program.run`; the explanation before running is
:mod:`.graph_explain`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..algebra.ops import Monoid, Op
from ..errors import ArityError, GbdistError, Span, TypeCheckError
from .scope import describe

# name -> (signature, what it computes). The keywords each one takes are in KEYWORDS.
GRAPH_FUNCTIONS = {
    "mxm": ("mxm(A, B, semiring)", "C(i,j) = ⊕_k A(i,k) ⊗ B(k,j), stored entries only"),
    "mxv": ("mxv(A, u, semiring)", "w(i) = ⊕_k A(i,k) ⊗ u(k)"),
    "vxm": ("vxm(u, A, semiring)", "w(j) = ⊕_k u(k) ⊗ A(k,j)"),
    "ewise_add": ("ewise_add(A, B, op)", "union: op where both are stored, else the stored one"),
    "ewise_mult": ("ewise_mult(A, B, op)", "intersection: op where both are stored"),
    "apply": ("apply(op, A)", "a unary op on stored values (a binary op with left= or right=)"),
    "select": ("select(A, selector, k)", "the stored entries that pass the selector"),
    "reduce_rows": ("reduce_rows(A, monoid)", "w(i) = ⊕_j A(i,j)"),
    "reduce_cols": ("reduce_cols(A, monoid)", "w(j) = ⊕_i A(i,j)"),
    "reduce_scalar": ("reduce_scalar(A, monoid)", "⊕ of every stored value: a scalar"),
    "extract": ("extract(A, rows=r, cols=c)", "A(r, c), renumbered"),
    "assign": ("assign(C, value, rows=r, cols=c)", "a copy of C with C(r, c) = value"),
    "subassign": ("subassign(C, value, rows=r, cols=c)",
                  "a copy of C with C(r, c)<mask> = value, the mask of the region's shape"),
    "vector": ("vector(A, value, at=i)", "a vector of A's rows: every entry value (or one, at i)"),
    "ids": ("ids(A)", "the vector of A's rows whose entry i is i (int64)"),
    "ewise_union": ("ewise_union(A, B, op, a, b)",
                    "union: op everywhere, a missing A value taken as a, a missing B value as b"),
    "count": ("count(A, axis=rows)", "the stored entries of each row (or column): int64"),
    "argmin": ("argmin(A, axis=rows)", "per row (column), the column (row) of the smallest value"),
    "argmax": ("argmax(A, axis=rows)", "per row (column), the column (row) of the largest value"),
    "kronecker": ("kronecker(A, B, op)", "C(iA·mB + iB, jA·nB + jB) = op(A(iA, jA), B(iB, jB))"),
    "diag": ("diag(x, k)", "a vector on the k-th diagonal of a matrix, or a matrix's k-th diagonal"),
    "concat": ("concat(A, B, ..., axis=rows)", "matrices stacked (axis=cols: side by side), "
               "vectors joined"),
    "resize": ("resize(A, m, n)", "A cut or grown to m × n (a vector: resize(v, n))"),
}
_WRITE = ("mask", "accum", "out", "replace", "dtype")
KEYWORDS = {
    **{n: _WRITE for n in ("mxm", "ewise_add", "ewise_mult", "reduce_rows", "reduce_cols")},
    **{n: _WRITE + ("compensated",) for n in ("mxv", "vxm")},
    "apply": _WRITE + ("left", "right"),
    "select": _WRITE + ("k",),
    "reduce_scalar": ("dtype",),
    "extract": _WRITE + ("rows", "cols"),
    **{n: ("mask", "accum", "replace", "rows", "cols") for n in ("assign", "subassign")},
    "vector": ("at", "dtype"),
    "ids": ("dtype",),
    "ewise_union": _WRITE,
    **{n: ("axis",) for n in ("count", "argmin", "argmax", "concat")},
    "kronecker": ("dtype",),
    "diag": (),
    "resize": (),
}
# Selector names in the text -> the selector of gbdist.graph.select.
SELECTORS = {"tril": "tril", "triu": "triu", "diag": "diag", "offdiag": "offdiag",
             "nonzero": "nonzero", "eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<",
             "le": "<=", "rowle": "rowle", "rowgt": "rowgt", "colle": "colle", "colgt": "colgt"}
POSITIONAL_SELECTORS = ("tril", "triu", "diag", "offdiag", "rowle", "rowgt", "colle", "colgt")
DTYPES = ("bool", "int32", "int64", "float32", "float64")
KINDS = ("matrix", "vector", "scalar", "index")


@dataclass(frozen=True)
class Ref:
    """An input of a step: an operand (by name) or an earlier step's result (by index)."""

    source: str | int
    transpose: bool = False


@dataclass(frozen=True)
class MaskRef:
    """``mask=`` of a step: ``X.S`` (structural), ``X.V`` or ``X`` (by value), ``not ...``."""

    ref: Ref
    structural: bool
    complement: bool = False


@dataclass(frozen=True)
class Step:
    """One graph operation of a definition, with everything checked."""

    index: int
    operation: str
    inputs: tuple  # Refs, in the Python API's order (apply: the operand only)
    algebra: object = None  # Semiring (products), Op (ewise, apply), Monoid (reductions)
    selector: str | None = None  # select: the gbdist.graph selector ("tril", ">" ...);
    # extract: "row" (rows is one index: A[i, :]) or "col" (cols is one: A[:, j])
    k: object = None  # select: a number or a Ref to a scalar step
    bound: tuple | None = None  # apply: ("left" | "right", number or Ref)
    rows: Ref | None = None  # extract / assign
    cols: Ref | None = None
    mask: MaskRef | None = None
    accum: Op | None = None
    out: Ref | None = None
    replace: bool = False
    dtype: str | None = None
    compensated: bool = False  # mxv / vxm: compensated sums
    kind: str = "matrix"  # of the result: matrix, vector, scalar, or "any" (as the input)
    span: Span | None = field(default=None, compare=False)
    loop: "Loop | None" = None  # operation "loop": the loop (inputs: the initial values)
    at: object = None  # vector(..., at=i): a number or a Ref to a scalar


@dataclass(frozen=True, eq=False)
class Stop:
    """When a loop stops, tested after each iteration (``repeat``: after ``count`` ones).

    ``kind``: "unchanged" (``args``: the carried variable's index), "empty" (a body Ref),
    "compare" (left, operator, right: numbers or body Refs to scalars), "or" / "and"
    (two Stops), "repeat" (the count: a number or an outer Ref to a scalar)."""

    kind: str
    args: tuple
    text: str  # as written


@dataclass(frozen=True, eq=False)
class Loop:
    """``loop x = x0, ... do x = ..., ... until COND [limit N] in result``, checked.

    The body is a list of steps in its own numbering, run once per iteration. Its string
    Refs name the carried variables and the outer values it reads (``captures``: body name
    -> outer Ref; an outer step j is named ``%L.j``, L the loop's depth, an operand by its
    name). ``next[k]`` is carried variable k's value after an iteration."""

    carried: tuple[str, ...]
    body: tuple[Step, ...]
    next: tuple[Ref, ...]
    captures: tuple  # ((body name, outer Ref), ...)
    kinds: dict  # body name -> kind
    names: dict  # body step index -> let names
    labels: dict  # body name -> how it reads (an outer let name for %L.j)
    stop: Stop
    limit: object = None  # a number or an outer Ref; None: the largest dimension + 1

    def graph(self, name: str) -> "GraphDef":
        """The body as a GraphDef (for labels and explanations)."""
        operands = tuple(n for n, _ in self.captures) + self.carried
        return GraphDef(name, operands, dict(self.kinds), self.body, self.next[0], self.names,
                        labels=self.labels)


@dataclass(frozen=True, eq=False)
class GraphDef:
    """A checked graph definition: run by :func:`gbdist.graph.run`, shown by ``gb.explain``."""

    name: str
    operands: tuple[str, ...]
    kinds: dict  # operand -> matrix / vector / index / "any" (used where either fits)
    steps: tuple[Step, ...]
    result: Ref
    names: dict  # step index -> the let names bound to it
    text: str = ""  # the definition as written
    doc: str = ""
    source: str = "<text>"
    defaults: dict = field(default_factory=dict)  # parameter (after ';') -> its default
    labels: dict = field(default_factory=dict)  # a string source -> how it reads

    def __repr__(self):
        return f"graph {self.name}({', '.join(self.operands)})"

    def label(self, ref) -> str:
        """How a Ref reads in explanations: the operand, the let name, or %i."""
        if isinstance(ref, MaskRef):
            kind = "S" if ref.structural else "V"
            return ("not " if ref.complement else "") + f"{self.label(ref.ref)}.{kind}"
        if not isinstance(ref, Ref):
            return f"{ref:g}" if isinstance(ref, float) else str(ref)
        base = self.labels.get(ref.source, ref.source) if isinstance(ref.source, str) else (
            self.names.get(ref.source, (f"%{ref.source + 1}",))[0])
        return base + (".T" if ref.transpose else "")

    def step_text(self, s: Step) -> str:
        """The step written in the language, its inputs by name."""
        L = self.label
        name = lambda a: getattr(a, "name", None) or repr(a)  # noqa: E731
        if s.operation == "extract" and s.selector in ("row", "col"):  # A[i, :], A[:, j]
            sub = [":" if x is None else L(x) for x in (s.rows, s.cols)]
            return f"{L(s.inputs[0])}[{', '.join(sub)}]"
        if s.operation == "apply":
            args = [name(s.algebra), L(s.inputs[0])]
        elif s.operation == "select":
            sel = next((k for k, v in SELECTORS.items() if v == s.selector), s.selector)
            args = [L(s.inputs[0]), sel] + ([L(s.k)] if s.k is not None else [])
        elif s.operation in ("extract", "assign", "subassign", "vector", "ids", "concat",
                             "resize", "count", "argmin", "argmax"):
            args = [L(r) for r in s.inputs]
            if s.selector not in (None, "rows"):
                args.append(f"axis={s.selector}")
        elif s.operation == "diag":
            args = [L(s.inputs[0])] + ([] if s.k in (None, 0.0) else [L(s.k)])
        elif s.operation == "ewise_union":
            args = [L(r) for r in s.inputs[:2]] + [name(s.algebra)] + [L(r) for r in s.inputs[2:]]
        elif s.operation == "loop":
            return "loop " + ", ".join(f"{c} = {L(r)}" for c, r in zip(s.loop.carried, s.inputs))
        elif s.operation == "loop_value":
            return f"the final {s.loop.carried[s.k]} of the loop ({L(s.inputs[0])})"
        else:
            args = [L(r) for r in s.inputs] + [name(s.algebra)]
        kw = [] if s.at is None else [f"at={L(s.at)}"]
        if s.bound is not None:
            kw.append(f"{s.bound[0]}={L(s.bound[1])}")
        for key in ("rows", "cols"):
            if getattr(s, key) is not None:
                kw.append(f"{key}={L(getattr(s, key))}")
        if s.mask is not None:
            kw.append(f"mask={L(s.mask)}")
        if s.accum is not None:
            kw.append(f"accum={s.accum.name}")
        if s.out is not None:
            kw.append(f"out={L(s.out)}")
        if s.replace:
            kw.append("replace=true")
        if s.compensated:
            kw.append("compensated=true")
        if s.dtype is not None:
            kw.append(f"dtype={s.dtype}")
        return f"{s.operation}({', '.join(args + kw)})"


def build_monoid(builder, body, name: str) -> Monoid:
    """The body of ``monoid NAME = monoid(op [, identity=...])`` (or a monoid's or op's name),
    built with ``builder`` (an :class:`~.expr.ExprBuilder` over the scope)."""
    from ..algebra.ops import monoid as make_monoid
    from lark import Tree
    if isinstance(body, Tree) and body.data == "call" and str(body.children[0]) == "monoid":
        positional, keywords, params = builder._arguments(body)
        if params or len(positional) != 1 or set(keywords) - {"identity"}:
            raise ArityError("monoid() takes one binary op and an optional identity=",
                             expected="monoid(op) or monoid(op, identity=0)",
                             span=builder.src.span(body))
        op = builder._op(positional[0], {}, "monoid()", 2)
        identity = None
        if "identity" in keywords:
            identity = builder.visit(keywords["identity"], {})
            if not isinstance(identity, float):
                raise TypeCheckError("a monoid's identity is a number (or inf, -inf)",
                                     got=describe(identity), span=builder.src.span(keywords["identity"]))
        try:
            m = make_monoid(op, identity)
        except GbdistError as e:
            raise e.with_span(builder.src.span(body)) from None
    else:
        m = builder._monoid(body, {}, f"monoid {name!r}")
    return m


__all__ = ["GRAPH_FUNCTIONS", "KEYWORDS", "SELECTORS", "POSITIONAL_SELECTORS", "DTYPES",
           "Ref", "MaskRef", "Step", "Stop", "Loop", "GraphDef", "build_monoid"]
