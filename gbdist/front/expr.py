"""The expression builder: a ``metric``/``def``/``semiring`` body → IR nodes.

The nodes are those of :mod:`gbdist.ir`, the same the Python API builds.
Numbers stay Python floats until they meet an IR node (constant folding), as
``1 - gb.mxm(...)`` or ``math.sqrt(2)`` do in Python. Helpers are inlined
(memoised, so a helper calling another twice builds a DAG), ops with
parameters instantiated, metrics used inside a metric called with the
operands given.
"""
from __future__ import annotations

import math

from ..compiler import ir
from ..algebra import ops as _ops
from ..algebra.semirings import UNSET, Semiring, semiring as make_semiring
from ..errors import ArityError, GbdistError, TypeCheckError, UnknownNameError
from ..names import Metric
from ..algebra.ops import Monoid, Op
from .builder import Builder, check_size
from .formula import instantiate
from .scope import (
    BINOPS, COMPARE, EXPR_FUNCTIONS, Helper, ParamOp, bind_params, describe, fold, known_names,
    lookup, number_of, number_text)
from .syntax import Source, located, suggest

_HELPER_MEMO: dict = {}  # (id(helper), argument keys) -> (helper, expression)


class ExprBuilder(Builder):
    """A metric/def/semiring body → IR nodes, numbers, ops and semirings.

    Numbers stay Python floats until they meet an IR node (constant folding),
    exactly as ``1 - gb.mxm(...)`` or ``math.sqrt(2)`` do in the Python API, so
    both front ends build the same IR.
    """

    def __init__(self, src: Source, scope: dict, free_operands: bool = False):
        self.src = src
        self.scope = scope
        self.free_operands = free_operands  # expression mode: A, B ... are matrices, x, v vectors

    # -- leaves ---------------------------------------------------------------

    @located
    def _number(self, tree, env):
        return float(number_text(tree))

    @located
    def _name(self, tree, env):
        name = str(tree.children[0])
        span = self.src.span(tree)
        if name in env:
            v = env[name]
            return v.replace(span=span) if isinstance(v, (ir.Matrix, ir.Vector)) else v
        if name == "inf":
            return math.inf
        if name == "None":
            return None
        thing = lookup(name, self.scope)
        if self.free_operands and len(name) == 1 and name.isalpha() and (
                thing is None or isinstance(thing, Metric)):  # SciPy's alias e is not operand e
            return ir.Matrix(name, span) if name.isupper() else ir.Vector(name, span)
        if thing is not None:
            return thing
        raise UnknownNameError(f"unknown name {name!r}",
                               hint=suggest(name, list(env) + known_names(self.scope)))

    # -- arithmetic over the output grid ---------------------------------------

    def _value(self, v, tree, what: str):
        """A value (number or IR node) for pointwise arithmetic."""
        if isinstance(v, float):
            return v
        if isinstance(v, ir.Node):
            return v
        raise TypeCheckError(f"{what} needs a value (a number or a matrix expression)",
                             got=describe(v), span=self.src.span(tree))

    def _node(self, v, tree) -> ir.Node:
        return ir.Const(v, span=self.src.span(tree)) if isinstance(v, float) else v

    def _pointwise(self, fn: str, trees: list, env, tree, values=()):
        """``fn`` over the values of ``trees`` (the first ``len(values)`` already computed)."""
        values = [self._value(values[i] if i < len(values) else self.visit(t, env), t, f"{fn}()")
                  for i, t in enumerate(trees)]
        if all(isinstance(v, float) for v in values):
            return fold(fn, *values)
        return ir.Pointwise(fn, tuple(self._node(v, t) for v, t in zip(values, trees)),
                            span=self.src.span(tree))

    def _binop_step(self, tree, x, env):
        a, op, b = tree.children
        return self._pointwise(BINOPS[str(op)], [a, b], env, tree, values=[x])

    @located
    def _compare(self, tree, env):
        a, op, b = tree.children
        return self._pointwise(COMPARE[str(op)], [a, b], env, tree)

    @located
    def _neg(self, tree, env):
        return self._pointwise("neg", [tree.children[0]], env, tree)

    def _logic(self, tree, env, fn):
        values = [self.visit(t, env) for t in tree.children]
        if not all(isinstance(v, float) for v in values):
            raise TypeCheckError("and, or, not combine conditions on numbers (parameters) only",
                                 hint="over the output grid use where(...) and min/max")
        return 1.0 if fn(*(v != 0 for v in values)) else 0.0

    @located
    def _and_(self, tree, env):
        return self._logic(tree, env, lambda a, b: a and b)

    @located
    def _or_(self, tree, env):
        return self._logic(tree, env, lambda a, b: a or b)

    @located
    def _not_(self, tree, env):
        return self._logic(tree, env, lambda a: not a)

    @located
    def _index(self, tree, env):
        raise TypeCheckError("[col] reads a column operand inside an op's formula only",
                             hint="op w_sq(x, y; w) = w[col] * (x - y)^2, then pass the vector: "
                                  "semiring(w_sq(w), plus) in a metric with a parameter w")

    @located
    def _attr(self, tree, env):
        target, attr = tree.children
        if str(attr) != "T":
            raise UnknownNameError(f"unknown attribute .{attr}", expected=".T (the transpose)")
        v = self.visit(target, env)
        if not isinstance(v, ir.Node):
            raise TypeCheckError(".T needs a matrix", got=describe(v))
        return ir.Transpose(v, span=self.src.span(tree))

    # -- calls ------------------------------------------------------------------

    @located
    def _call(self, tree, env):
        name = str(tree.children[0])
        positional, keywords, params = self._arguments(tree)
        if name in EXPR_FUNCTIONS and name not in env:
            if params:
                raise ArityError(f"{name}() takes no parameters after ';'")
            return getattr(self, "_fn_" + name)(tree, positional, keywords, env)
        thing = env[name] if name in env else lookup(name, self.scope)
        if thing is None:
            raise UnknownNameError(f"unknown function {name!r}",
                                   hint=suggest(name, list(EXPR_FUNCTIONS) + known_names(self.scope)))
        args = [self.visit(a, env) for a in positional]
        kw = {k: self.visit(v, env) for k, v in keywords.items()}
        extra = [self.visit(p, env) for p in params]
        if isinstance(thing, ParamOp):
            values = bind_params(thing, [number_of(v, thing) for v in args + extra],
                                  {k: number_of(v, thing) for k, v in kw.items()})
            return instantiate(thing, values)
        if isinstance(thing, Op):
            raise TypeCheckError(
                f"the op {name!r} works on stored values, not on whole expressions",
                hint=f"use it inside a product or an apply: apply({name}, A), "
                     f"semiring({name}, plus), reduce(A, {name})")
        if isinstance(thing, Helper):
            if kw or extra:
                raise ArityError(f"helper {name!r} takes only positional arguments")
            if len(args) != len(thing.params):
                raise ArityError(f"helper {name!r} takes {len(thing.params)} argument(s)",
                                 expected=f"{name}({', '.join(thing.params)})", got=f"{len(args)}")
            # Memoised by (helper, argument keys): a helper calling another twice builds a
            # DAG, not 2^depth copies (20 doublings would otherwise never finish).
            memo_key = (id(thing), tuple(a.key if isinstance(a, ir.Node) else repr(a) for a in args))
            hit = _HELPER_MEMO.get(memo_key)
            if hit is not None and hit[0] is thing:
                return hit[1]
            out = ExprBuilder(thing.src, thing.scope).build(thing.body, dict(zip(thing.params, args)))
            out = check_size(out, f"the expression (after inlining helper {name!r})")
            if len(_HELPER_MEMO) > 4096:
                _HELPER_MEMO.clear()
            _HELPER_MEMO[memo_key] = (thing, out)
            return out
        if isinstance(thing, Metric):
            if len(args) < 2:
                raise ArityError(f"metric {name!r} takes two matrices", got=f"{len(args)} argument(s)",
                                 expected=f"{name}(A, B)")
            values = bind_params(thing, [number_of(v, thing) for v in args[2:] + extra],
                                  {k: number_of(v, thing) for k, v in kw.items()}, thing.params)
            for k, t in zip(("first", "second"), positional[:2]):
                if not isinstance(args[0 if k == "first" else 1], ir.Node):
                    raise TypeCheckError(f"the {k} argument of metric {name!r} must be a matrix",
                                         got=describe(args[0 if k == "first" else 1]),
                                         span=self.src.span(t))
            return check_size(thing.call(args[0], args[1], **values),
                               f"the expression (after inlining metric {name!r})")
        raise TypeCheckError(f"{describe(thing)} cannot be called",
                             hint="functions, ops with parameters, helpers and metrics can be called")

    def _args(self, name, tree, positional, keywords, arity, allowed_kw=()):
        bad = sorted(set(keywords) - set(allowed_kw))
        if bad:
            raise UnknownNameError(f"{name}() has no argument {bad[0]!r}",
                                   expected=", ".join(allowed_kw) or "no keyword arguments")
        if len(positional) != arity:
            raise ArityError(f"{name}() takes {arity} argument(s)", got=f"{len(positional)}",
                             expected=EXPR_FUNCTIONS[name][0])

    def _matrix(self, t, env, what: str) -> ir.Node:
        v = self.visit(t, env)
        if isinstance(v, float):
            raise TypeCheckError(f"{what} needs a matrix operand, not a scalar",
                                 got=f"the number {v:g}", span=self.src.span(t),
                                 hint="e.g. A, B.T or apply(square, A)")
        if not isinstance(v, ir.Node):
            raise TypeCheckError(f"{what} needs a matrix", got=describe(v), span=self.src.span(t),
                                 hint="e.g. A, B.T or apply(square, A)")
        return v

    def _op(self, t, env, what: str, arity: int | None = None) -> Op:
        v = self.visit(t, env)
        span = self.src.span(t)
        if isinstance(v, ParamOp):
            raise ArityError(f"op {v.name!r} needs its parameters here", span=span,
                             expected=f"{v.name}({', '.join(v.params)})")
        if not isinstance(v, Op):
            raise TypeCheckError(f"{what} needs an op", got=describe(v), span=span,
                                 hint="a name defined with `op`, or a built-in such as plus, times, absdiff")
        if arity is not None and v.arity != arity:
            kind = "unary" if arity == 1 else "binary"
            raise TypeCheckError(f"{what} needs a {kind} op; {v.name!r} takes {v.arity} argument(s)",
                                 span=span)
        return v

    def _monoid(self, t, env, what: str) -> Monoid:
        v = self.visit(t, env)
        if isinstance(v, Monoid):
            return v
        if isinstance(v, Op):
            try:
                return _ops.as_monoid(v)
            except GbdistError as e:
                raise e.with_span(self.src.span(t)) from None
        self._op(t, env, what, 2)  # raises the right error
        raise AssertionError  # pragma: no cover

    def _semiring(self, t, env) -> Semiring:
        v = self.visit(t, env)
        if not isinstance(v, Semiring):
            raise TypeCheckError("expected a semiring", got=describe(v), span=self.src.span(t),
                                 hint="a name such as plus_times, or semiring(mul, add)")
        return v

    def _fn_mxm(self, tree, pos, kw, env):
        self._args("mxm", tree, pos, kw, 3)
        return ir.MxM(self._matrix(pos[0], env, "mxm"), self._matrix(pos[1], env, "mxm"),
                      self._semiring(pos[2], env), span=self.src.span(tree))

    def _fn_mxv(self, tree, pos, kw, env):
        self._args("mxv", tree, pos, kw, 3)
        return ir.MxV(self._matrix(pos[0], env, "mxv"), self._matrix(pos[1], env, "mxv"),
                      self._semiring(pos[2], env), span=self.src.span(tree))

    def _fn_reduce(self, tree, pos, kw, env):
        self._args("reduce", tree, pos, kw, 2)
        return ir.RowReduce(self._matrix(pos[0], env, "reduce"), self._monoid(pos[1], env, "reduce"),
                            span=self.src.span(tree))

    def _fn_apply(self, tree, pos, kw, env):
        self._args("apply", tree, pos, kw, 2)
        return ir.Apply(self._op(pos[0], env, "apply", 1), self._matrix(pos[1], env, "apply"),
                        span=self.src.span(tree))

    def _fn_ncols(self, tree, pos, kw, env):
        self._args("ncols", tree, pos, kw, 1)
        return ir.NCols(self._matrix(pos[0], env, "ncols"), span=self.src.span(tree))

    def _fn_semiring(self, tree, pos, kw, env):
        self._args("semiring", tree, pos, kw, 2, ("annihilator",))
        mul = self._op(pos[0], env, "a semiring's mul (⊗)", 2)
        add = self._monoid(pos[1], env, "a semiring's add (⊕)")
        ann = UNSET
        if "annihilator" in kw:
            ann = self.visit(kw["annihilator"], env)
            if ann is not None and not isinstance(ann, float):
                raise TypeCheckError("annihilator must be a number, inf or None", got=describe(ann),
                                     span=self.src.span(kw["annihilator"]))
        return make_semiring(mul, add, ann)

    def _fn_where(self, tree, pos, kw, env):
        self._args("where", tree, pos, kw, 3)
        cond = self._value(self.visit(pos[0], env), pos[0], "where()")
        if isinstance(cond, float):  # decided now: only the chosen branch is built
            return self.visit(pos[1] if cond != 0 else pos[2], env)
        values = [cond] + [self._value(self.visit(t, env), t, "where()") for t in pos[1:]]
        return ir.Pointwise("where", tuple(self._node(v, t) for v, t in zip(values, pos)),
                            span=self.src.span(tree))

    def _fn_whiten(self, tree, pos, kw, env):
        """whiten(A, VI, mu): A's rows a mapped to (a − μ)·L, VI = L·Lᵀ a k × k parameter
        and μ a vector parameter, when the operand is bound (ir.Mapped); euclidean over
        them is the Mahalanobis distance."""
        self._args("whiten", tree, pos, kw, 3)
        m = self._plain(pos[0], env, "whiten")
        vi, mu = self.visit(pos[1], env), self.visit(pos[2], env)
        for v, t, what in ((vi, pos[1], "a matrix parameter (VI, k × k)"),
                           (mu, pos[2], "a vector parameter (mu, the common centre)")):
            if not isinstance(v, ir.ColVector):
                raise TypeCheckError(f"whiten() needs {what} of the metric", got=describe(v),
                                     span=self.src.span(t),
                                     hint="metric m(A, B; VI = invcov(A, B), mu = mean(A, B)) "
                                          "= euclidean(whiten(A, VI, mu), whiten(B, VI, mu))")
        return ir.Mapped(m.name, self.src.span(tree), "whiten", vi.name, vi.default, mu.name,
                         mu.default)

    def _fn_sphere(self, tree, pos, kw, env):
        """sphere(A): rows (latitude, longitude) in radians mapped to the unit vectors of
        those points, when the operand is bound (ir.Mapped)."""
        self._args("sphere", tree, pos, kw, 1)
        m = self._plain(pos[0], env, "sphere")
        return ir.Mapped(m.name, self.src.span(tree), "sphere")

    def _fn_wcentre(self, tree, pos, kw, env):
        """wcentre(A, w): A's rows u mapped to √w·(u − Σ w·u / Σ w), w relative weights over
        the columns (a vector parameter, or 1), when the operand is bound (ir.Mapped);
        cosine over them is SciPy's weighted correlation."""
        self._args("wcentre", tree, pos, kw, 2)
        m = self._plain(pos[0], env, "wcentre")
        w = self.visit(pos[1], env)
        if isinstance(w, float) and w == 1.0:
            return ir.Mapped(m.name, self.src.span(tree), "wcentre", weights=True)
        if not isinstance(w, ir.ColVector) or w.default is not None:
            raise TypeCheckError("wcentre() needs weights: a vector parameter of the metric, or 1",
                                 got=describe(w), span=self.src.span(pos[1]),
                                 hint="metric m(A, B; w = 1) = cosine(wcentre(A, w), wcentre(B, w))")
        return ir.Mapped(m.name, self.src.span(tree), "wcentre", w.name, weights=True)

    def _plain(self, t, env, what: str) -> ir.Matrix:
        m = self._matrix(t, env, what)
        if type(m) is not ir.Matrix:
            raise TypeCheckError(f"{what}() maps the rows of an operand as given",
                                 got=ir.to_text(m), span=self.src.span(t),
                                 hint=f"write {what}(A, ...) with A an operand of the metric")
        return m

    def _unary_fn(fn):
        def method(self, tree, pos, kw, env):
            self._args(fn, tree, pos, kw, 1)
            return self._pointwise(fn, pos, env, tree)
        return method

    _fn_sqrt = _unary_fn("sqrt")
    _fn_abs = _unary_fn("abs")
    _fn_log = _unary_fn("log")
    _fn_exp = _unary_fn("exp")
    _fn_asin = _unary_fn("asin")

    def _fn_min(self, tree, pos, kw, env):
        self._args("min", tree, pos, kw, 2)
        return self._pointwise("minimum", pos, env, tree)

    def _fn_max(self, tree, pos, kw, env):
        self._args("max", tree, pos, kw, 2)
        return self._pointwise("maximum", pos, env, tree)
