"""Plans as stored records: a compiled plan written as JSON data and read back, in a later
process, without sympy and without the analysis.

A plan is a DAG of IR nodes whose parameters are ops, monoids, semirings and float32
bounds. :func:`plan_record` writes it as flat tables (each object once, referred to by its
index; an op's formula as its term, :mod:`gbdist.algebra.terms`) plus, for each product,
what the runtime reads of its analysis (semiring, strategy and flags, the expansion's rank)
and the fills it was analysed with. :func:`read_plan` rebuilds the same objects: stored
ops, monoids and semirings (:meth:`gbdist.algebra.ops.Op.stored`: their sympy formulas are
rebuilt only when something reads them), the nodes by their own constructors, the typing
by :func:`gbdist.compiler.typecheck.infer`, the steps and epilogue by
:func:`gbdist.compiler.plan.split` (the code that made them), and stored analyses whose
formulas and proofs are the analysis itself, made again only when read (``explain``).

What is checked on reading (the record already passed the store's bounded read and digest,
:mod:`gbdist.algebra.records`): every table entry's shape and types, every term
(:func:`gbdist.algebra.terms.from_json`), references only to entries already read (no
cycles), and finally the rebuilt expression's and lowered form's structural keys against
the digests stored with them, and the number of steps and the output kind: a record that
does not rebuild exactly the plan it was written from is a miss. What a record claims
about an op (its formula) is not re-proved: a stored plan is, like a compiled kernel in
the kernel cache, trusted once its digest matches (docs/cpu.md, "Start-up").
"""
from __future__ import annotations

import hashlib
from dataclasses import fields

from . import ir
from .decision import SYMBOLIC, STRATEGIES, Analysis
from .plan import Plan, ProductDecision, split
from .typecheck import infer, row_operand
from ..algebra import terms
from ..algebra.ops import Monoid, Op, RowScale
from ..algebra.rounding import FloatBound
from ..algebra.semirings import UNSET, Semiring
from ..algebra.stable import KernelBound, StableKernel
from ..errors import Span

FORMAT = 1

NODES = {cls.__name__: cls for cls in (
    ir.Matrix, ir.Vector, ir.Transpose, ir.Apply, ir.MxM, ir.MxV, ir.RowReduce, ir.NCols,
    ir.Const, ir.Pointwise, ir.Intersect, ir.TwoPassUnion, ir.Ref, ir.ColScaled, ir.Mapped)}
OPS = {"Op": Op, "RowScale": RowScale}
Invalid = terms.Invalid
Unsupported = terms.Unsupported


class StoredAnalysis(Analysis):
    """The analysis of a stored plan: what a run reads is stored; the formulas and proofs
    (``SYMBOLIC``) come from analysing the product again, with the fills it was analysed
    with (:func:`gbdist.compiler.analysis.analyze`, served by the on-disk analysis cache when
    it holds them), when one of them is first read."""

    @classmethod
    def stored(cls, semiring, strategy: str, structural: bool, override: str, nonnegative: bool,
               corner_absorbed: bool, reason: str, expansion_rank: int | None,
               fills: tuple) -> "StoredAnalysis":
        if strategy not in STRATEGIES:
            raise Invalid(f"unknown strategy {strategy!r} in a stored plan")
        a = object.__new__(cls)
        for k, v in (("semiring", semiring), ("strategy", strategy), ("structural", structural),
                     ("override", override), ("nonnegative", nonnegative),
                     ("corner_absorbed", corner_absorbed), ("reason", reason),
                     ("_expansion_rank", expansion_rank),
                     ("_deferred", dict.fromkeys(SYMBOLIC, fills))):
            object.__setattr__(a, k, v)
        return a

    def _rebuild(self, name: str, fills):
        from .analysis import analyze
        full = analyze(self.semiring, terms.decode(fills[0]), terms.decode(fills[1]))
        for field in SYMBOLIC:
            if field not in self.__dict__:
                object.__setattr__(self, field, getattr(full, field))
        return getattr(full, name)


def _key_digest(node: ir.Node) -> str:
    return hashlib.sha256(repr(node.key).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def plan_record(plan: Plan, default_roles: dict) -> dict:
    """The record of ``plan`` (compiled with ``default_roles``). Raises
    :class:`~gbdist.algebra.terms.Unsupported` when a part has no stored form (an op whose
    formula a term does not represent): such a plan is not stored."""
    w = _Writer()
    expr, lowered = w.node(plan.expr), w.node(plan.lowered)
    products = [w.product(d) for d in plan.products]
    return {
        "format": FORMAT, "ops": w.ops, "monoids": w.monoids, "semirings": w.semirings,
        "bounds": w.bounds, "nodes": w.nodes, "expr": expr, "lowered": lowered,
        "roles": sorted([str(k), str(v)] for k, v in default_roles.items()),
        "products": products,
        "float32": None if plan.float32 is None else w.bound(plan.float32),
        "check": [_key_digest(plan.expr), _key_digest(plan.lowered), len(plan.steps),
                  plan.output_kind],
    }


class _Writer:
    def __init__(self):
        self.ops, self.monoids, self.semirings, self.bounds, self.nodes = [], [], [], [], []
        self._index: dict = {}
        self._alive: list = []  # what the indices' ids refer to stays alive while writing

    def _entry(self, table: list, obj, make) -> int:
        k = (id(table), id(obj))
        i = self._index.get(k)
        if i is None:
            row = make(obj)
            i = self._index[k] = len(table)
            table.append(row)
            self._alive.append(obj)
        return i

    def op(self, op: Op) -> int:
        def make(o):
            if o.term is None or type(o).__name__ not in OPS:
                raise Unsupported(f"op {o.name!r} has no stored form")
            return [type(o).__name__, o.name, o.term, o.arity, o.domain, o.doc]
        return self._entry(self.ops, op, make)

    def monoid(self, m: Monoid) -> int:
        def make(m):
            if m.identity_term is None:
                raise Unsupported(f"the identity of monoid {m.name!r} has no stored form")
            return [self.op(m.op), m.identity_term, m.idempotent, m.invertible, m.commutative,
                    m.identity_declared, m.ufunc_name()]
        return self._entry(self.monoids, m, make)

    def semiring(self, sr: Semiring) -> int:
        def make(sr):
            if sr.structural:
                ann = sr.annihilator_term
                if ann is None:
                    raise Unsupported(f"the annihilator of {sr!r} has no stored form")
            else:
                ann = "unset" if sr.annihilator is UNSET else "none"
            return [self.op(sr.mul), self.monoid(sr.add), ann, sr.name]
        return self._entry(self.semirings, sr, make)

    def bound(self, b) -> int:
        def make(b):
            if type(b) is FloatBound:  # k as it is (an int or a float: the key tells them apart)
                return ["float", self.value(b.k), int(b.exponent), bool(b.nonnegative)]
            if type(b) is KernelBound:
                k, p = b.kernel, b.proof
                return ["kernel", k.name, terms.encode(k.formula), k.domain, self.value(k.k), k.text,
                        b.swapped, [p.claim, terms.encode(p.lhs), terms.encode(p.rhs), p.domain,
                                    p.method, bool(p.holds), p.detail]]
            raise Unsupported(f"a bound of type {type(b).__name__}")
        return self._entry(self.bounds, b, make)

    def value(self, v):
        if isinstance(v, ir.Node):
            return {"n": self.node(v)}
        if isinstance(v, Op):
            return {"op": self.op(v)}
        if isinstance(v, Monoid):
            return {"m": self.monoid(v)}
        if isinstance(v, Semiring):
            return {"s": self.semiring(v)}
        if isinstance(v, (FloatBound, KernelBound)):
            return {"b": self.bound(v)}
        if isinstance(v, tuple):
            return {"t": [self.value(x) for x in v]}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, float):
            return {"f": repr(v)}
        if isinstance(v, int):
            return {"i": str(v)}
        raise Unsupported(f"a node parameter of type {type(v).__name__}")

    def node(self, n: ir.Node) -> int:
        def make(n):
            if type(n).__name__ not in NODES:
                raise Unsupported(f"node type {type(n).__name__}")
            values = [self.value(getattr(n, f.name)) for f in fields(n) if f.name != "span"]
            span = getattr(n, "span", None)
            return [type(n).__name__, values, None if span is None else
                    [span.source, span.line, span.column, span.end_column]]
        return self._entry(self.nodes, n, make)

    def product(self, d: ProductDecision) -> list:
        from .plan import _canonical, operand_fill
        node, a = d.node, d.analysis
        if isinstance(node, ir.MxM):
            fills = operand_fill(node.left), operand_fill(_canonical(node.right, transpose=True))
        else:
            fills = operand_fill(node.matrix), operand_fill(node.vector)
        return [self.node(node), self.semiring(a.semiring), a.strategy, a.structural, a.override,
                a.nonnegative, a.corner_absorbed, a.reason, a.expansion_rank,
                [terms.encode(f) for f in fills]]


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def read_plan(record: dict, texts: dict | None = None) -> Plan:
    """The plan of a record written by :func:`plan_record`; raises (KeyError, TypeError,
    ValueError ...) on anything malformed, which callers treat as a miss. ``texts``: source
    name -> text, for the spans that point into them (the built-in library's files)."""
    if record.get("format") != FORMAT:
        raise Invalid("a stored plan of another format")
    r = _Reader(texts or {})
    r.read_tables(record)
    for row in _list(record["nodes"]):
        r.nodes.append(r.node(row))
    expr, lowered = r.ref(r.nodes, record["expr"]), r.ref(r.nodes, record["lowered"])
    roles = {}
    for name, role in _list(record["roles"]):
        roles[_str(name)] = _str(role)
    typing = infer(expr, roles or None)
    products = tuple(r.product(p) for p in _list(record["products"]))
    f32 = record["float32"]
    float32 = None if f32 is None else r.ref(r.bounds, f32)
    steps, epilogue = split(lowered, typing)
    plan = Plan(expr, typing, lowered, steps, epilogue, products, float32)
    if list(record["check"]) != [_key_digest(expr), _key_digest(lowered), len(steps),
                                 plan.output_kind]:
        raise Invalid("the stored plan does not rebuild the plan it was written from")
    return plan


def _list(v) -> list:
    if not isinstance(v, list):
        raise Invalid("a malformed stored plan")
    return v


def _str(v) -> str:
    if not isinstance(v, str):
        raise Invalid("a malformed stored plan")
    return v


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise Invalid("a malformed stored plan")
    return v


class _Reader:
    def __init__(self, texts: dict):
        self.texts = texts
        self.ops, self.monoids, self.semirings, self.bounds, self.nodes = [], [], [], [], []

    @staticmethod
    def ref(table: list, i):
        """An entry read before (indices only point back: no cycles)."""
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(table):
            raise Invalid("a reference to an entry that is not there")
        return table[i]

    def read_tables(self, rec: dict) -> None:
        for cls, name, term, arity, domain, doc in _list(rec["ops"]):
            if isinstance(arity, bool) or not isinstance(arity, int):
                raise Invalid("a malformed stored op")
            self.ops.append(OPS[cls].stored(_str(name), terms.from_json(term), arity,
                                            _str(domain), _str(doc)))
        for op, identity, idem, inv, comm, declared, ufunc in _list(rec["monoids"]):
            self.monoids.append(Monoid.stored(
                self.ref(self.ops, op), terms.from_json(identity), _bool(idem), _bool(inv),
                _bool(comm), _bool(declared), None if ufunc is None else _str(ufunc)))
        for mul, add, ann, name in _list(rec["semirings"]):
            if ann == "unset" or ann == "none":
                annihilator = UNSET if ann == "unset" else None
            else:
                annihilator = terms.from_json(ann)
            self.semirings.append(Semiring.stored(self.ref(self.ops, mul), self.ref(self.monoids, add),
                                                  annihilator, _str(name)))
        for row in _list(rec["bounds"]):
            self.bounds.append(self.bound(_list(row)))

    def bound(self, row: list):
        if row[0] == "float":
            _, k, exponent, nonneg = row
            if isinstance(exponent, bool) or not isinstance(exponent, int):
                raise Invalid("a malformed stored bound")
            return FloatBound(self.number(k), exponent, _bool(nonneg))
        if row[0] == "kernel":
            _, name, formula, domain, k, text, swapped, proof = row
            claim, lhs, rhs, pdomain, method, holds, detail = _list(proof)
            kernel = StableKernel.stored(_str(name), terms.from_json(formula), _str(domain),
                                         self.number(k), _str(text))
            return KernelBound.stored(kernel, (_str(claim), terms.from_json(lhs), terms.from_json(rhs),
                                               _str(pdomain), _str(method), _bool(holds),
                                               _str(detail)), _bool(swapped))
        raise Invalid("an unknown kind of stored bound")

    def number(self, v):
        value = self.value(v)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid("a malformed number in a stored plan")
        return value

    def value(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, dict) and len(v) == 1:
            (kind, x), = v.items()
            if kind == "n":
                return self.ref(self.nodes, x)
            if kind == "op":
                return self.ref(self.ops, x)
            if kind == "m":
                return self.ref(self.monoids, x)
            if kind == "s":
                return self.ref(self.semirings, x)
            if kind == "b":
                return self.ref(self.bounds, x)
            if kind == "t":
                return tuple(self.value(i) for i in _list(x))
            if kind == "f":
                value = float(_str(x))
                if repr(value) != x:
                    raise Invalid("a float not written as repr() writes it")
                return value
            if kind == "i":
                if str(int(_str(x))) != x or len(x) > 40:
                    raise Invalid("a malformed integer")
                return int(x)
        raise Invalid("a malformed node parameter")

    def node(self, row) -> ir.Node:
        kind, values, span = _list(row)
        cls = NODES[_str(kind)]
        names = [f.name for f in fields(cls) if f.name != "span"]
        if len(_list(values)) != len(names):
            raise Invalid(f"a stored {kind} node with the wrong number of fields")
        args = {n: self.value(v) for n, v in zip(names, values)}
        if span is not None and any(f.name == "span" for f in fields(cls)):
            args["span"] = self.span(_list(span))
        return cls(**args)

    def span(self, row: list) -> Span | None:
        source, line, column, end = row
        text = self.texts.get(source)
        if text is None or not all(isinstance(v, int) and not isinstance(v, bool)
                                   for v in (line, column)):
            return None
        return Span(source, text, line, column, end if isinstance(end, int) else None)

    def product(self, row) -> ProductDecision:
        (node, sr, strategy, structural, override, nonneg, corner, reason, rank,
         fills) = _list(row)
        node = self.ref(self.nodes, node)
        if not isinstance(node, (ir.MxM, ir.MxV)):
            raise Invalid("a stored product that is not a product")
        semiring = self.ref(self.semirings, sr)
        if semiring.key != node.semiring.key:
            raise Invalid("a stored product's semiring is not its node's")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
            raise Invalid("a malformed expansion rank")
        left, right = (terms.from_json(f) for f in _list(fills))
        if terms.has_symbols(left) or terms.has_symbols(right):
            raise Invalid("a fill is a number")
        row_operand(node.left if isinstance(node, ir.MxM) else node.matrix)  # an operand
        return ProductDecision(node, StoredAnalysis.stored(
            semiring, _str(strategy), _bool(structural), _str(override), _bool(nonneg),
            _bool(corner), _str(reason), rank, (left, right)))


# ---------------------------------------------------------------------------
# explanations: the rendered text, stored
# ---------------------------------------------------------------------------

RENDERINGS = ("text", "markdown", "latex", "html")


def read_renderings(record: dict) -> dict:
    """The renderings of a stored explanation's record (format name -> text), checked."""
    found = record["renderings"]
    if not isinstance(found, dict) or not set(found) <= set(RENDERINGS) \
            or not all(isinstance(v, str) for v in found.values()):
        raise Invalid("a malformed stored explanation")
    return dict(found)


class StoredExplanation:
    """An explanation (:class:`gbdist.compiler.explain.Explanation`) answered from its stored
    renderings: ``str()`` (the text ``gbdist explain`` prints), ``to_markdown()``,
    ``_repr_latex_()`` and ``_repr_html_()`` are the texts an earlier process rendered, with
    their proofs, so they need neither sympy nor the analysis. Anything else (the products,
    the proofs as formulas, the plan, ``figure()``, ``with_cuda()`` ...) is read from the
    full explanation, made on first need by ``compute``; a rendering not stored yet is
    rendered from it and stored by ``store(renderings)``."""

    def __init__(self, renderings: dict, compute, store, real=None):
        self._renderings = dict(renderings)
        self._compute = compute
        self._store = store
        self._real = real

    def explanation(self):
        """The full :class:`~gbdist.compiler.explain.Explanation` (sympy), made once."""
        if self._real is None:
            self._real = self._compute()
        return self._real

    def _rendered(self, name: str, render) -> str:
        text = self._renderings.get(name)
        if text is None:
            text = self._renderings[name] = render(self.explanation())
            self._store(dict(self._renderings))
        return text

    def __str__(self) -> str:
        return self._rendered("text", str)

    def to_markdown(self, heading: str = "##") -> str:
        if heading != "##":
            return self.explanation().to_markdown(heading)
        return self._rendered("markdown", lambda e: e.to_markdown())

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return self._rendered("latex", lambda e: e._repr_latex_())

    def _repr_html_(self) -> str:
        return self._rendered("html", lambda e: e._repr_html_())

    def _repr_pretty_(self, p, cycle):  # IPython's terminal
        p.text(str(self))

    def save(self, path, fmt: str | None = None) -> None:
        """Write the explanation as text, md, html, svg or png (by ``fmt`` or the suffix)."""
        from .explain_figures import save
        save(self, path, fmt)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("_renderings", "_compute", "_store", "_real"):
            raise AttributeError(name)
        return getattr(self.explanation(), name)

    def __repr__(self) -> str:
        title = str(self).split("\n", 1)[0].removeprefix("== ")
        return f"<explanation of {title} (stored renderings; .explanation() for the record)>"
