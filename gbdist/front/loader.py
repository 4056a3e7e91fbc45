"""The loader: the definitions of one text, in order, into a :class:`Definitions`,
then (on :meth:`Loader.commit`) into the registry :mod:`gbdist.names`.

Each definition sees the names defined above it (so nothing is recursive),
what earlier texts registered, the built-ins and the metrics. A metric's
``build`` is a :class:`MetricBody`: the parse tree and the scope it was
defined in, built into IR when the metric is used with its parameters.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import sympy as sp
from lark import Token, Tree

from .. import names
from ..compiler import ir
from . import colparams
from ..algebra.semirings import Semiring, semiring as make_semiring
from ..errors import (
    ArityError, GbdistError, InputError, RedefinitionError, Span, TypeCheckError, UnknownNameError)
from ..names import ROLES, Metric
from ..compiler.typecheck import infer
from .expr import ExprBuilder
from .formula import FormulaBuilder, make_op
from .graph_builder import GraphBuilder
from .graph_loop import graph_defaults
from .graph_ops import index_unary_op
from .graphdef import GRAPH_FUNCTIONS, build_monoid
from .scope import RESERVED, Helper, ParamOp, describe
from .syntax import Source, parse_tree, suggest, unexpected


@dataclass
class Definitions:
    """What a text defined, by name: ``.ops``, ``.semirings``, ``.metrics``, ``.helpers``,
    ``.monoids``, ``.graphs`` (run with ``gbdist.graph.run``)."""

    source: str
    ops: dict = field(default_factory=dict)
    semirings: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    helpers: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)  # alias -> metric name
    monoids: dict = field(default_factory=dict)
    graphs: dict = field(default_factory=dict)
    spans: dict = field(default_factory=dict)  # name -> Span of its definition
    _all: dict = field(default_factory=dict, repr=False)  # every name above, in order
    _order: dict = field(default_factory=dict, repr=False)  # name -> position in _all

    def __getitem__(self, name: str):
        for table in (self.ops, self.semirings, self.metrics, self.helpers, self.monoids,
                      self.graphs):
            if name in table:
                return table[name]
        raise UnknownNameError(f"{name!r} is not defined in {self.source}",
                               hint=suggest(name, self.names()))

    def names(self) -> list[str]:
        return (list(self.ops) + list(self.semirings) + list(self.metrics) + list(self.helpers)
                + list(self.monoids) + list(self.graphs))

    @property
    def scope(self) -> dict:
        return {**self.ops, **self.semirings, **self.metrics, **self.helpers, **self.monoids,
                **self.graphs}

    def add(self, table: dict, name: str, obj) -> None:
        """Record ``obj`` under ``name`` in ``table`` (ops, semirings, ...), in definition order."""
        table[name] = obj
        self._all[name] = obj
        self._order.setdefault(name, len(self._order))

    def snapshot(self) -> "_Snapshot":
        """What is defined so far, as a read-only mapping that later definitions do
        not change (O(1): a view cut at the current count, not a copy)."""
        return _Snapshot(self._all, self._order, len(self._order))


class _Snapshot(Mapping):
    """The names defined above a definition: a prefix of the defining text's names."""

    def __init__(self, all_: dict, order: dict, n: int):
        self._all, self._order, self._n = all_, order, n

    def __getitem__(self, name):
        if self._order.get(name, self._n) < self._n:
            return self._all[name]
        raise KeyError(name)

    def __contains__(self, name):
        return self._order.get(name, self._n) < self._n

    def __iter__(self):
        return itertools.islice(iter(self._all), self._n)

    def __len__(self):
        return self._n


class Loader:
    """Processes the definitions of one text in order, into a :class:`Definitions`.

    Each definition sees the names defined above it (so nothing is recursive),
    the ops/semirings/helpers of earlier texts, the built-ins and the metric
    registry. Nothing is registered globally until :meth:`commit`.
    """

    def __init__(self, text: str, source: str = "<text>", typecheck: bool = True):
        self.src = Source(source, text)
        self.defs = Definitions(source)
        self.typecheck = typecheck

    def statements(self):
        return parse_tree(self.src.text, self.src.name).children

    def run(self) -> Definitions:
        for stmt in self.statements():
            self.statement(stmt)
        return self.defs

    def statement(self, stmt: Tree):
        """Process one definition. Every error it raises is a GbdistError with a position:
        one that has none gets the definition's name, anything untyped becomes a
        DefinitionError there."""
        first = stmt.children[0]
        span = self.src.span(first if isinstance(first, Token) else stmt)
        try:
            return getattr(self, "_" + stmt.data)(stmt)
        except GbdistError as e:
            raise e.with_span(span) from None
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - the boundary of a definition
            raise unexpected(e, span) from None

    # -- names ------------------------------------------------------------------

    def _claim(self, tok: Token, metric: bool = False) -> tuple[str, Span]:
        """Check that ``tok`` may be defined here. Metric names (used by
        ``pairwise_distances(metric=...)``) only clash with other metrics."""
        name, span = str(tok), self.src.span(tok)
        if name in self.defs.spans or name in self.defs.aliases:
            first = self.defs.spans.get(name) or self.defs.spans.get(self.defs.aliases[name])
            raise RedefinitionError(f"{name!r} is already defined", span=span,
                                    got=f"first defined at {first}", hint="choose another name")
        if name in RESERVED:
            raise RedefinitionError(f"{name!r} is a built-in function or constant", span=span,
                                    hint="choose another name")
        if names.builtin(name) is not None:
            raise RedefinitionError(f"{name!r} is a built-in {describe(names.builtin(name)).split()[1]}",
                                    span=span, hint="choose another name")
        other = None if metric else names.defined(name)
        if other is not None and other[1] != self.src.name:
            raise RedefinitionError(f"{name!r} is already defined", span=span,
                                    got=f"defined in {other[1]}", hint="choose another name")
        m = names.find_metric(name, abbreviations=False) if metric else None
        if m is not None and m.source != self.src.name:
            raise RedefinitionError(f"{name!r} is already a metric", span=span,
                                    got=f"defined in {m.source}", hint="choose another name")
        return name, span

    def _scope(self) -> dict:
        return self.defs.snapshot()  # only what is defined above

    def _doc(self, span: Span) -> str:
        return self.src.doc_above(span.line)

    @staticmethod
    def _names(tree) -> list[Token]:
        return list(tree.children) if tree is not None else []

    def _unique(self, toks: list[Token], what: str):
        seen = set()
        for t in toks:
            if str(t) in seen:
                raise RedefinitionError(f"{what} {str(t)!r} appears twice", span=self.src.span(t))
            if str(t) in RESERVED:
                raise RedefinitionError(f"{str(t)!r} is a built-in name and cannot be a {what}",
                                        span=self.src.span(t))
            seen.add(str(t))

    # -- one method per kind of definition -------------------------------------

    def _op_def(self, tree):
        name_tok, args_tree, params_tree, body = tree.children
        name, span = self._claim(name_tok)
        args, params = self._names(args_tree), self._names(params_tree)
        self._unique(args + params, "parameter")
        if len(args) == 4 and not params:  # value, row, column, thunk: an index-unary op
            op = index_unary_op(self.src, self._scope(), name, tuple(map(str, args)), body,
                                self._doc(span))
            self.defs.add(self.defs.ops, name, op)
            self.defs.spans[name] = span
            return op
        if len(args) not in (1, 2):
            raise ArityError(f"op {name!r} must take one or two arguments (x, or x and y), or "
                             "four (x, i, j, y: an index-unary op, for select and apply)",
                             got=f"{len(args)}", span=self.src.span(args_tree),
                             hint="numeric parameters go after ';': op f(x, y; p) = ...")
        args_s, params_s = tuple(map(str, args)), tuple(map(str, params))
        doc = self._doc(span)
        scope = self._scope()
        if params:
            # Build once with symbolic parameters, so unknown names fail here.
            symbolic = {p: sp.Symbol(p, positive=True) for p in params_s}
            FormulaBuilder(self.src, scope, name, args_s, symbolic).build(body)
            op = ParamOp(name, args_s, params_s, body, self.src, scope, doc)
        else:
            formula = FormulaBuilder(self.src, scope, name, args_s, {}).build(body)
            try:
                op = make_op(name, len(args), formula, doc)
            except GbdistError as e:
                raise e.with_span(self.src.span(body)) from None
        self.defs.add(self.defs.ops, name, op)
        self.defs.spans[name] = span
        return op

    def _semiring_def(self, tree):
        name_tok, body = tree.children
        name, span = self._claim(name_tok)
        v = ExprBuilder(self.src, self._scope()).build(body)
        if not isinstance(v, Semiring):
            raise TypeCheckError(f"semiring {name!r} must be a semiring", got=describe(v),
                                 span=self.src.span(body), hint="semiring(mul, add) or plus_times")
        sr = make_semiring(v.mul, v.add, v.annihilator, name)
        self.defs.add(self.defs.semirings, name, sr)
        self.defs.spans[name] = span
        return sr

    def _def_def(self, tree):
        name_tok, params_tree, body = tree.children
        name, span = self._claim(name_tok)
        params = self._names(params_tree)
        self._unique(params, "parameter")
        h = Helper(name, tuple(map(str, params)), body, self.src, self._scope(), self._doc(span))
        self.defs.add(self.defs.helpers, name, h)
        self.defs.spans[name] = span
        return h

    def _metric_def(self, tree):
        name_tok, operands_tree, params_tree, requires, body = tree.children
        name, span = self._claim(name_tok, metric=True)
        operands = self._names(operands_tree)
        if len(operands) != 2:
            raise ArityError(f"metric {name!r} must take two matrices (rows of A index the output "
                             "rows, rows of B the output columns)", got=f"{len(operands)}",
                             span=self.src.span(operands_tree),
                             hint="numeric parameters go after ';': metric m(A, B; p = 2) = ...")
        param_trees = list(params_tree.children) if params_tree is not None else []
        self._unique(operands + [p.children[0] for p in param_trees], "parameter")
        scope = self._scope()
        defaults = {}
        for p in param_trees:
            pname, default = p.children
            value = None
            stat = colparams.column_default(default, operands) if default is not None else None
            if stat is not None:
                value = ir.ColVector(str(pname), default=stat, square=stat == "invcov",
                                     signed=stat == "mean")
            elif default is not None:
                value = ExprBuilder(self.src, scope).build(default)
                if not isinstance(value, float):
                    raise TypeCheckError(f"the default of parameter {str(pname)!r} must be a number",
                                         got=describe(value), span=self.src.span(default))
            defaults[str(pname)] = value
        cond = requires.children[0] if requires is not None else None
        build = MetricBody(name, tuple(map(str, operands)), body, cond, self.src, scope)
        m = Metric(name, build, defaults, self._doc(span), self.src.name, ())
        if all(v is not None for v in defaults.values()):
            expr = m.expression()  # build once with the defaults: errors surface here
            if self.typecheck:
                try:
                    infer(expr, dict(ROLES))
                except GbdistError as e:
                    raise e.with_span(span) from None
        self.defs.add(self.defs.metrics, name, m)
        self.defs.spans[name] = span
        return m

    def _alias_def(self, tree):
        names_tree, target_tok = tree.children
        target = str(target_tok)
        if target not in self.defs.metrics:
            raise UnknownNameError(f"alias target {target!r} is not a metric defined in this text",
                                   span=self.src.span(target_tok),
                                   hint=suggest(target, self.defs.metrics) or
                                   "define the metric above the alias")
        for tok in names_tree.children:
            alias, span = self._claim(tok, metric=True)
            self.defs.aliases[alias] = target
        m = self.defs.metrics[target]
        aliases = tuple(a for a, t in self.defs.aliases.items() if t == target)
        self.defs.add(self.defs.metrics, target,
                      Metric(m.name, m.build, m.params, m.doc, m.source, aliases))

    def _monoid_def(self, tree):
        name_tok, body = tree.children
        name, span = self._claim(name_tok)
        m = build_monoid(ExprBuilder(self.src, self._scope()), body, name)
        self.defs.add(self.defs.monoids, name, m)
        self.defs.spans[name] = span
        return m

    def _graph_def(self, tree):
        name_tok, operands_tree, params_tree, body = tree.children
        name, span = self._claim(name_tok)
        if name in GRAPH_FUNCTIONS:
            raise RedefinitionError(f"{name!r} is a graph operation", span=span,
                                    hint="choose another name")
        params = list(params_tree.children) if params_tree is not None else []
        operands = self._names(operands_tree) + [p.children[0] for p in params]
        self._unique(operands, "operand")
        defaults = graph_defaults(ExprBuilder(self.src, self._scope()), params)
        for t in operands:
            if str(t) == "backend":  # gr.run(name, ..., backend=...) takes that keyword
                raise RedefinitionError("'backend' cannot be an operand of a graph",
                                        span=self.src.span(t), hint="choose another name")
        m = tree.meta
        g = GraphBuilder(self.src, self._scope(), name, tuple(map(str, operands)),
                         defaults).build_graph(
            body, self.src.text[m.start_pos:m.end_pos], self._doc(span))
        self.defs.add(self.defs.graphs, name, g)
        self.defs.spans[name] = span
        return g

    # -- registration ----------------------------------------------------------

    def commit(self, library: bool = False, metrics: bool = True) -> Definitions:
        """Register the definitions (:mod:`gbdist.names`): visible to later texts and to
        ``pairwise_distances``. The registry's generation moves on, so caches keyed
        on it (compiled metric programs) do not serve a stale definition.
        ``library``: the built-in library's text, whose ops, semirings and helpers go
        to the tier that users' names shadow; ``metrics=False``: its metrics are registered
        by :mod:`gbdist.front.library` instead (by name, read when used)."""
        for table in (self.defs.ops, self.defs.semirings, self.defs.helpers, self.defs.monoids,
                      self.defs.graphs):
            for name, obj in table.items():
                names.define(name, obj, self.src.name, library=library)
        if metrics:
            for m in self.defs.metrics.values():
                names.register_metric(m, replace=True)
        return self.defs


@dataclass(frozen=True, eq=False)
class MetricBody:
    """The ``build`` of a text-defined metric: (A, B, **params) → IR."""

    name: str
    operands: tuple[str, str]
    body: Tree
    requires: Tree | None
    src: Source
    scope: dict

    def __call__(self, A, B, **params):
        vectors = {k for k, v in params.items() if isinstance(v, ir.ColVector)}
        facts, conditions = colparams.split_requires(self.requires, vectors, self.src)
        params = {k: v if k in vectors else float(v) for k, v in params.items()}
        params = colparams.upgraded(params, facts)
        env = {self.operands[0]: A, self.operands[1]: B, **params}
        builder = ExprBuilder(self.src, self.scope)
        numbers = {k: v for k, v in params.items() if k not in vectors}
        for cond in conditions:
            rel = colparams._relative_fact(cond)
            if rel in numbers:  # mean(w) == 1 with w a number: the same weight everywhere
                if not numbers[rel] > 0:
                    raise InputError(f"metric {self.name!r} takes relative weights {rel}: a "
                                     "number must be > 0", got=f"{rel} = {numbers[rel]:g}")
                numbers[rel] = env[rel] = 1.0
                continue
            ok = builder.build(cond, dict(numbers))
            if not isinstance(ok, float):
                raise TypeCheckError(f"the requires clause of metric {self.name!r} must be a "
                                     "condition on its parameters", span=self.src.span(self.requires))
            if ok == 0:
                shown = ", ".join(f"{k} = {v:g}" for k, v in numbers.items())
                raise InputError(f"metric {self.name!r} requires {_source_text(self.src, self.requires)}",
                                 got=shown)
        return builder.build(self.body, env)


def _source_text(src: Source, tree: Tree) -> str:
    m = tree.meta
    return src.text[m.start_pos:m.end_pos]
