"""The formula builder: an ``op`` body → a sympy formula over the canonical x, y.

Every sympy node is built by a method named after the grammar rule it handles,
through :class:`gbdist.algebra.sym.Sym` (never ``sympify``). An op's formula sees only
its own arguments and parameters, numbers, ``inf``, ``let`` names, the scalar
functions of :data:`~gbdist.front.scope.FORMULA_FUNCTIONS` and other ops.
"""
from __future__ import annotations

import sympy as sp

from ..algebra import ops as _ops
from ..compiler import ir
from ..errors import ArityError, DefinitionError, GbdistError, TypeCheckError, UnknownNameError
from ..algebra.ops import Op
from ..algebra.formulas import building, substitute
from ..algebra.sym import Sym
from .builder import Builder, budgeted, check_size, check_substitution
from .scope import (
    BINOPS, COMPARE, FORMULA_FUNCTIONS, ParamOp, arity, bind_params, describe, lookup, number_text,
    op_names)
from .syntax import MAX_FORMULA_NODES, Source, located, suggest


def make_op(name: str, n_args: int, formula: Sym, doc: str) -> Op:
    """An Op of the declared arity (x only, or x and y)."""
    if n_args == 1:
        return _ops.make_op(name, lambda x: formula, doc=doc)
    return _ops.make_op(name, lambda x, y: formula, doc=doc)


def instantiate(op: ParamOp, values: dict) -> Op:
    """The Op of ``op`` with its numeric parameters set to ``values``."""
    formula = FormulaBuilder(op.src, op.scope, op.name, op.args, values).build(op.body)
    label = "_".join(_label(values[p]) for p in op.params)
    return make_op(f"{op.name}{label}", len(op.args), formula, op.doc)


def _label(v) -> str:
    return f"{v.name}col" if isinstance(v, ir.ColVector) else f"{v:g}"


class ColumnParam:
    """An op parameter bound to a column operand: read as ``w[col]`` in the formula."""

    def __init__(self, vector: ir.ColVector):
        self.vector = vector

    def symbol(self) -> Sym:
        from ..algebra.columns import symbol
        v = self.vector
        return Sym(symbol(v.name, v.positive, v.default, v.relative))


class FormulaBuilder(Builder):
    """An op body → a sympy formula (a :class:`Sym`) over the canonical x, y."""

    def __init__(self, src: Source, scope: dict, op_name: str, args: tuple, params: dict):
        self.src = src
        self.scope = scope
        self.op_name = op_name
        self.args = args
        self.env0 = {a: Sym(s) for a, s in zip(args, (_ops.X, _ops.Y))}
        self.env0.update({k: ColumnParam(v) if isinstance(v, ir.ColVector) else Sym(v)
                          for k, v in params.items()})
        self.params = tuple(params)

    @budgeted
    def build(self, tree, env=None):
        with building():  # one switch of sympy's evaluation for the whole formula
            out = self.visit(tree, {**self.env0, **(env or {})})
            out = out.expr if isinstance(out, Sym) else out  # a chain's node is built here
        try:
            check_size(out, f"the formula of op {self.op_name!r}")
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None
        return out if isinstance(out, Sym) else Sym(out)

    @located
    def _number(self, tree, env):
        text = number_text(tree)
        return Sym(int(text) if text.isdigit() else float(text))

    @located
    def _name(self, tree, env):
        name = str(tree.children[0])
        if name in env:
            if isinstance(env[name], ColumnParam):
                raise TypeCheckError(f"{name!r} is a column operand (a vector over the columns)",
                                     hint=f"read its value at the entry's column as {name}[col]")
            return env[name]
        if name == "inf":
            return Sym(sp.oo)
        thing = lookup(name, self.scope)
        if isinstance(thing, (Op, ParamOp)):
            raise DefinitionError(f"op {name!r} needs its arguments here",
                                  hint=f"call it, e.g. {name}(x{', y' if arity(thing) == 2 else ''})")
        params = ", ".join(self.args)
        raise DefinitionError(
            f"op {self.op_name!r} uses {name!r}, which is not one of its parameters",
            expected=f"the parameters ({params}), numbers, inf, or names bound by let",
            got=name, hint=suggest(name, env) or "an op's formula sees only its own parameters")

    def _binop_first(self, tree, env, chain=()):
        # Every operand of a chain is at least one node of the formula: a chain longer
        # than the size limit is refused before any of it is built.
        if len(chain) + 1 > MAX_FORMULA_NODES:
            raise DefinitionError(
                f"the formula of op {self.op_name!r} grows too large: a chain of "
                f"{len(chain) + 1} terms (more than {MAX_FORMULA_NODES} nodes)",
                expected=f"at most {MAX_FORMULA_NODES} nodes", span=self.src.span(chain[0]),
                hint="split the sum or product into several ops")
        return self.visit(tree, env)

    def _binop_step(self, tree, x, env):
        _, op, b = tree.children
        y = self.visit(b, env)
        fn = BINOPS[str(op)]
        return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                "div": lambda: x / y, "pow": lambda: x ** y}[fn]()

    @located
    def _compare(self, tree, env):
        a, op, b = tree.children
        x, y = self.visit(a, env), self.visit(b, env)
        return {"eq": Sym.__eq__, "ne": Sym.__ne__, "lt": Sym.__lt__, "le": Sym.__le__,
                "gt": Sym.__gt__, "ge": Sym.__ge__}[COMPARE[str(op)]](x, y)

    @located
    def _and_(self, tree, env):
        return self.visit(tree.children[0], env) & self.visit(tree.children[1], env)

    @located
    def _or_(self, tree, env):
        return self.visit(tree.children[0], env) | self.visit(tree.children[1], env)

    @located
    def _not_(self, tree, env):
        return ~self.visit(tree.children[0], env)

    @located
    def _neg(self, tree, env):
        return -self.visit(tree.children[0], env)

    @located
    def _index(self, tree, env):
        target, index = tree.children
        name = str(target.children[0]) if getattr(target, "data", None) == "name" else None
        if str(index) != "col" or name is None or name not in self.params:
            raise TypeCheckError(
                "[col] reads a column operand: a parameter of the op, as w[col]",
                got=self.src.text[tree.meta.start_pos:tree.meta.end_pos],
                hint=f"declare it after ';': op {self.op_name}({', '.join(self.args)}; w) = "
                     "w[col] * ...")
        v = env[name]
        return v.symbol() if isinstance(v, ColumnParam) else v  # a number: the same everywhere

    def _param_value(self, tree, env):
        """A parameter passed on to another op: a column operand passes as itself."""
        if getattr(tree, "data", None) == "name":
            v = env.get(str(tree.children[0]))
            if isinstance(v, ColumnParam):
                return v.vector
        return self.visit(tree, env)

    @located
    def _attr(self, tree, env):
        raise TypeCheckError(f".{tree.children[1]} applies to matrices, not to the scalars of an op",
                             hint="an op's formula works on two numbers x and y")

    @located
    def _call(self, tree, env):
        name = str(tree.children[0])
        positional, keywords, params = self._arguments(tree)
        if keywords:
            raise DefinitionError(f"{name}() takes no keyword arguments inside an op's formula",
                                  got=", ".join(keywords))
        args = [self.visit(a, env) for a in positional]
        if name in FORMULA_FUNCTIONS and name not in env:
            if params:
                raise ArityError(f"{name}() takes no parameters after ';'")
            return _formula_function(name, args)
        thing = lookup(name, self.scope)
        if isinstance(thing, ParamOp):
            if len(args) != len(thing.args):
                raise ArityError(f"op {name!r} takes {len(thing.args)} argument(s)",
                                 got=f"{len(args)} argument(s)")
            values = bind_params(thing, [self._param_value(p, env) for p in params], {})
            inner = FormulaBuilder(thing.src, thing.scope, thing.name, thing.args, values)
            formula = inner.build(thing.body).expr
            check_substitution(formula, args, f"the formula of op {self.op_name!r}")
            return Sym(substitute(formula, dict(zip((_ops.X, _ops.Y), (a.expr for a in args)))))
        if params:
            raise ArityError(f"op {name!r} has no parameters", got=f"{len(params)} after ';'")
        if isinstance(thing, Op):
            if len(args) != thing.arity:
                raise ArityError(f"op {name!r} takes {thing.arity} argument(s)",
                                 got=f"{len(args)} argument(s)")
            check_substitution(thing.formula, args, f"the formula of op {self.op_name!r}")
            return thing(*args)
        if thing is None:
            raise UnknownNameError(f"unknown function {name!r} in the formula of op {self.op_name!r}",
                                   expected="abs, sqrt, log, exp, min, max, where, isnan or an op",
                                   hint=suggest(name, list(FORMULA_FUNCTIONS) + op_names(self.scope)))
        raise DefinitionError(f"{name!r} is {describe(thing)}; an op's formula can only call "
                              "scalar functions and other ops")


def _formula_function(name: str, args: list) -> Sym:
    n = {"min": 2, "max": 2, "where": 3}.get(name, 1)
    if len(args) != n:
        raise ArityError(f"{name}() takes {n} argument(s)", got=f"{len(args)}",
                         expected=FORMULA_FUNCTIONS[name][0])
    fn = {"abs": _ops.s_abs, "sqrt": _ops.s_sqrt, "log": _ops.s_log, "exp": _ops.s_exp,
          "min": _ops.s_min, "max": _ops.s_max, "where": _ops.s_where,
          "isnan": _ops.s_isnan}[name]
    return fn(*args)
