"""The text front end: metric files → ops, semirings and metric IR.

The grammar is ``grammar/gbdist.lark``; lark turns a text into a parse tree,
and the two builders below walk that tree:

* :class:`FormulaBuilder` turns an ``op`` body into a sympy formula over the
  canonical ``x``/``y`` symbols (through :class:`gbdist.algebra.formulas.Sym`);
* :class:`ExprBuilder` turns a ``metric``/``def``/``semiring`` body into IR
  nodes (:mod:`gbdist.ir`), the same nodes the Python API builds.

No text ever reaches ``eval``, ``exec`` or ``sympify``: every sympy node and IR
node is constructed by a method named after the grammar rule it handles, and a
name can only resolve to a definition, a parameter or a built-in. Every error
is a :class:`~gbdist.errors.GbdistError` carrying the :class:`Span` of the text
that caused it (file, line, column, caret).

Public entry points: :func:`define` (a text), :func:`load` (a file),
:func:`parse_expression` (one expression, for ``gbdist explain``) and
:func:`check` (report per definition, for ``gbdist check``).
"""
from __future__ import annotations

import contextvars
import difflib
import functools
import itertools
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .compiler import ir
from . import metrics
from .algebra import ops as _ops
from .algebra.semirings import (
    UNSET, Semiring, semiring as make_semiring, semirings as _builtin_semirings)
from .errors import (
    ArityError, DefinitionError, DSLSyntaxError, GbdistError, InputError, RedefinitionError, Span,
    TypeCheckError, UnknownNameError)
from .algebra.ops import Monoid, Op
from .algebra.formulas import Sym
from .resources import read

# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------


@functools.cache
def parser() -> Lark:
    """The lark LALR parser for ``grammar/gbdist.lark``, built on first use."""
    return Lark(read("grammar", "gbdist.lark"), parser="lalr", start=["start", "expression"],
                propagate_positions=True, maybe_placeholders=True)


# Readable names for the grammar's terminals in "Expected: ..." lines.
_OPERATORS = {"ADD_OP", "MUL_OP", "POW_OP", "COMPARE", "AND", "OR", "DOT", "MINUS", "PLUS"}
_STARTS = {"OP", "SEMIRING", "DEF", "METRIC", "ALIAS"}
_TERMINAL_WORDS = {"NAME": "a name", "NUMBER": "a number", "$END": "the end of the text"}


def _expected_text(terminals) -> str:
    terminals = set(terminals or ())
    words = []
    if terminals & _STARTS:
        words.append("a definition (op, semiring, def, metric or alias)")
    named = []
    for t in terminals - _OPERATORS - _STARTS:
        if t in _TERMINAL_WORDS:
            named.append(_TERMINAL_WORDS[t])
            continue
        try:
            named.append(repr(parser().get_terminal(t).pattern.value))
        except KeyError:
            named.append(t)
    words += sorted(named)
    if terminals & _OPERATORS:
        words.append("an operator")
    return ", ".join(words) if len(words) < 2 else "one of " + ", ".join(words)


def _syntax_error(e: UnexpectedInput, text: str, source: str) -> DSLSyntaxError:
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        hint = ("the language has no strings, imports or attribute calls: only numbers, names, "
                "operators and the functions listed in docs/language.md") if char in "\"'`[]{}@$!\\" else None
        return DSLSyntaxError(f"unexpected character {char!r}", expected=_expected_text(e.allowed),
                              hint=hint, span=Span(source, text, e.line, e.column))
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        lines = text.splitlines() or [""]
        line = len(lines)
        col = len(lines[-1]) + 1
        return DSLSyntaxError("the text ends in the middle of a definition",
                              expected=_expected_text(getattr(e, "expected", ())),
                              span=Span(source, text, line, col))
    tok = e.token
    end = tok.end_column if tok.end_line == tok.line else None
    hint = None
    if tok.type in ("NAME", "NUMBER") and e.expected & {"ADD_OP", "MUL_OP"}:
        hint = "two expressions side by side need an operator or a comma between them"
    return DSLSyntaxError(f"unexpected {_token_word(tok)}", expected=_expected_text(e.expected),
                          hint=hint, span=Span(source, text, tok.line, tok.column, end))


def _token_word(tok: Token) -> str:
    if tok.type == "NAME":
        return f"name {str(tok)!r}"
    if tok.type == "NUMBER":
        return f"number {str(tok)}"
    return repr(str(tok))


# Limits that keep every text bounded in time and memory (docs/language.md, "Limits").
MAX_DEPTH = 128  # nesting levels of one expression (a chain a + b + c ... counts once)
MAX_NUMBER_CHARS = 400  # characters of one number literal
MAX_BUILD_STEPS = 50_000  # parse-tree nodes visited to build one definition, helpers inlined
MAX_FORMULA_NODES = 5_000  # nodes of one formula or expression, written out as a tree
MAX_FORMULA_DEPTH = 100  # nesting of one formula or expression, helpers and ops inlined


def parse_tree(text: str, source: str = "<text>", start: str = "start") -> Tree:
    """The lark parse tree of ``text``; syntax errors become DSLSyntaxError.

    Trees that nest deeper than :data:`MAX_DEPTH` are refused here, so the
    (recursive) builders never meet one.
    """
    try:
        tree = parser().parse(text, start=start)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, source) from None
    except RecursionError:  # pragma: no cover (lark's LALR parser is iterative)
        raise DSLSyntaxError("the text nests too deeply to parse",
                             expected=f"at most {MAX_DEPTH} levels of nesting") from None
    _check_depth(tree, Source(source, text))
    return tree


def _check_depth(tree: Tree, src: "Source") -> None:
    """Refuse a tree deeper than MAX_DEPTH (walked iteratively). The left operand
    of a binary operator chain stays at its parent's level: ``x + x + ... + x``
    is built as a loop, not by recursion."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise DSLSyntaxError(f"the expression nests too deeply (more than {MAX_DEPTH} levels)",
                                 expected=f"at most {MAX_DEPTH} nested calls, brackets or operators",
                                 hint="name parts with let bindings, helper defs or ops",
                                 span=src.span(node))
        for i, child in enumerate(node.children):
            if isinstance(child, Tree):
                chained = i == 0 and node.data == "binop" and child.data == "binop"
                stack.append((child, depth if chained else depth + 1))


# ---------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    name: str  # file name or "<text>"
    text: str

    def span(self, item) -> Span | None:
        """The Span of a parse-tree node or token."""
        if isinstance(item, Token):
            line, col, end_line, end_col = item.line, item.column, item.end_line, item.end_column
        elif isinstance(item, Tree) and not item.meta.empty:
            m = item.meta
            line, col, end_line, end_col = m.line, m.column, m.end_line, m.end_column
        else:
            return None
        if line is None:
            return None
        return Span(self.name, self.text, line, col, end_col if end_line == line else None)

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def doc_above(self, line: int) -> str:
        """The comment lines directly above ``line`` (1-based): a definition's doc string."""
        lines = self.lines  # split once per text, not once per definition
        out = []
        i = line - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            out.append(lines[i].strip().lstrip("#").strip())
            i -= 1
        return "\n".join(reversed(out))


def _located(fn):
    """Re-raise gbdist errors from ``fn(self, tree)`` at the tree's position."""
    @functools.wraps(fn)
    def wrapper(self, tree, *args):
        try:
            return fn(self, tree, *args)
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None
    return wrapper


def _suggest(name: str, candidates) -> str | None:
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    return f"did you mean {close[0]!r}?" if close else None


# ---------------------------------------------------------------------------
# Definitions that live only in the text front end
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ParamOp:
    """An op with numeric parameters: ``op absdiff_pow(x, y; p) = abs(x - y)^p``.

    ``absdiff_pow(3)`` (where an op is expected) builds the Op with p = 3.
    """

    name: str
    args: tuple[str, ...]
    params: tuple[str, ...]
    body: Tree = field(repr=False)
    src: Source = field(repr=False)
    scope: dict = field(repr=False)
    doc: str = ""

    def instantiate(self, values: dict) -> Op:
        formula = FormulaBuilder(self.src, self.scope, self.name, self.args, values).build(self.body)
        label = "_".join(f"{values[p]:g}" for p in self.params)
        return _make_op(f"{self.name}{label}", len(self.args), formula, self.doc)

    def __repr__(self):
        return f"op {self.name}({', '.join(self.args)}; {', '.join(self.params)})"


_HELPER_MEMO: dict = {}  # (id(helper), argument keys) -> (helper, expression)


@dataclass(frozen=True, eq=False)
class Helper:
    """``def name(M, ...) = expression``: inlined wherever it is called."""

    name: str
    params: tuple[str, ...]
    body: Tree = field(repr=False)
    src: Source = field(repr=False)
    scope: dict = field(repr=False)
    doc: str = ""

    def __repr__(self):
        return f"def {self.name}({', '.join(self.params)})"


def _make_op(name: str, arity: int, formula: Sym, doc: str) -> Op:
    """An Op of the declared arity (x only, or x and y)."""
    if arity == 1:
        return _ops.make_op(name, lambda x: formula, doc=doc)
    return _ops.make_op(name, lambda x, y: formula, doc=doc)


# Built-in functions, by the level they work at: (signature, what it does).
FORMULA_FUNCTIONS = {
    "abs": ("abs(a)", "absolute value"),
    "sqrt": ("sqrt(a)", "square root (makes the op's domain nonnegative)"),
    "log": ("log(a)", "natural logarithm (makes the op's domain nonnegative)"),
    "exp": ("exp(a)", "e to the power a"),
    "min": ("min(a, b)", "the smaller of a and b"),
    "max": ("max(a, b)", "the larger of a and b"),
    "where": ("where(cond, a, b)", "a where cond holds, else b"),
}
EXPR_FUNCTIONS = {
    "mxm": ("mxm(L, R, semiring)", "C[i, j] = ⊕_k L[i, k] ⊗ R[k, j]"),
    "mxv": ("mxv(M, v, semiring)", "y[i] = ⊕_k M[i, k] ⊗ v[k]"),
    "reduce": ("reduce(M, monoid)", "⊕ over each row of M (unstored entries hold the fill)"),
    "apply": ("apply(op, M)", "a unary op on every entry of M (the fill becomes op(0))"),
    "ncols": ("ncols(M)", "k, the number of columns of M"),
    "semiring": ("semiring(mul, add, annihilator=...)", "a semiring: ⊗ = mul, ⊕ = add (a monoid)"),
    "sqrt": ("sqrt(a)", "square root over the output grid"),
    "abs": ("abs(a)", "absolute value over the output grid"),
    "log": ("log(a)", "natural logarithm over the output grid"),
    "exp": ("exp(a)", "e^a over the output grid"),
    "min": ("min(a, b)", "elementwise minimum (broadcasting)"),
    "max": ("max(a, b)", "elementwise maximum (broadcasting)"),
    "where": ("where(cond, a, b)", "a where cond is nonzero, else b"),
}
CONSTANTS = ("inf", "None")
RESERVED = set(FORMULA_FUNCTIONS) | set(EXPR_FUNCTIONS) | set(CONSTANTS)

_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "**": "pow"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "pow": np.power, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
          "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
          "sqrt": np.sqrt, "abs": np.abs, "log": np.log, "exp": np.exp,
          "maximum": np.maximum, "minimum": np.minimum, "neg": np.negative}


def _number_text(tree) -> str:
    """The text of a number literal, refused if it is too long or not a finite float64."""
    text = str(tree.children[0])
    if len(text) > MAX_NUMBER_CHARS:
        raise DSLSyntaxError(f"the number literal is too long ({len(text)} characters)",
                             expected=f"at most {MAX_NUMBER_CHARS} characters",
                             hint="write large or small numbers with an exponent, e.g. 1.5e300")
    if not math.isfinite(float(text)):
        raise DSLSyntaxError(f"the number {text[:40]}{'...' if len(text) > 40 else ''} is beyond "
                             "the float64 range (about 1.8e308)", hint="write inf for infinity")
    return text


def _fold(fn: str, *args: float) -> float:
    """A pointwise function on plain numbers (constant folding, as Python would do it)."""
    with np.errstate(all="ignore"):
        return float(_NUMPY[fn](*(np.float64(a) for a in args)))


# ---------------------------------------------------------------------------
# Name lookup
# ---------------------------------------------------------------------------

# Ops, semirings and helpers defined by texts (the library file included):
# name -> (object, source). Metrics live in the metric registry.
_GLOBAL: dict[str, tuple[object, str]] = {}


def _builtin(name: str):
    if name in _ops.BY_NAME:
        return _ops.BY_NAME[name]
    from .exact import BUILTIN_OPS  # normalize: an op bound per row (gbdist/exact.py)
    if name in BUILTIN_OPS:
        return BUILTIN_OPS[name]
    if name in _builtin_semirings:
        return _builtin_semirings[name]
    return None


def lookup(name: str, scope: dict):
    """What ``name`` means outside any parameter list, or None."""
    if name in scope:
        return scope[name]
    if name in _GLOBAL:
        return _GLOBAL[name][0]
    b = _builtin(name)
    if b is not None:
        return b
    return metrics.find(name)


def _known_names(scope: dict) -> list[str]:
    return (list(scope) + list(_GLOBAL) + list(_ops.BY_NAME) + list(_builtin_semirings.__dict__)
            + metrics.all_names())


# ---------------------------------------------------------------------------
# Builders: one method per grammar rule
# ---------------------------------------------------------------------------


# The work budget of the definition being built. Helpers, ops and metrics used
# inside it are built by nested builders, which share the outermost budget.
_BUDGET: contextvars.ContextVar = contextvars.ContextVar("gbdist_build_budget", default=None)


class _Budget:
    def __init__(self):
        self.steps = 0


def _budgeted(fn):
    """Run ``fn`` under the current build budget, opening one if there is none."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _BUDGET.get() is not None:
            return fn(*args, **kwargs)
        token = _BUDGET.set(_Budget())
        try:
            return fn(*args, **kwargs)
        finally:
            _BUDGET.reset(token)
    return wrapper


def _tree_stats(root, children, leaves=()) -> tuple:
    """(size, depth, occurrences of each of ``leaves``) of ``root`` written out as
    a tree (a shared subtree counts each time it appears). Linear in the shared
    graph; every count is capped at MAX_FORMULA_NODES + 1."""
    cap = MAX_FORMULA_NODES + 1
    memo: dict[int, tuple] = {}
    keep = []  # keeps visited objects alive, so ids stay unique
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        k = id(node)
        if k in memo:
            continue
        kids = children(node)
        if done:
            sub = [memo[id(c)] for c in kids]
            size = min(cap, 1 + sum(t[0] for t in sub))
            depth = min(cap, 1 + max((t[1] for t in sub), default=0))
            occ = tuple(min(cap, (node == leaf) + sum(t[2][i] for t in sub))
                        for i, leaf in enumerate(leaves))
            memo[k] = (size, depth, occ)
            keep.append(node)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
    return memo[id(root)]


def _stats(value, leaves=()) -> tuple:
    if isinstance(value, Sym):
        value = value.expr
    if isinstance(value, sp.Basic):
        return _tree_stats(value, lambda e: e.args, leaves)
    if isinstance(value, ir.Node):
        return _tree_stats(value, lambda n: n.children, leaves)
    return 1, 1, tuple(0 for _ in leaves)


_TOO_LARGE_HINT = ("a helper or op that uses another one twice doubles the size at every level; "
                   "simplify the definition")


def _refuse_size(what: str, size: int, depth: int):
    if size > MAX_FORMULA_NODES:
        raise DefinitionError(f"{what} grows too large (more than {MAX_FORMULA_NODES} nodes once "
                              "helpers, ops and let bindings are written out)", hint=_TOO_LARGE_HINT)
    if depth > MAX_FORMULA_DEPTH:
        raise DefinitionError(f"{what} nests too deeply (more than {MAX_FORMULA_DEPTH} levels once "
                              "helpers, ops and let bindings are written out)", hint=_TOO_LARGE_HINT)


def _check_size(value, what: str):
    """``value``, unless written out as a tree it is over the size or depth limit."""
    size, depth, _ = _stats(value)
    _refuse_size(what, size, depth)
    return value


def _check_substitution(formula, args, what: str) -> None:
    """Refuse, before building it, a formula whose x and y are replaced by ``args``
    if the result would be over the size or depth limit."""
    size, depth, occ = _stats(formula, (_ops.X, _ops.Y))
    arg_stats = [_stats(a) for a in args]
    new_size = size + sum(n * (a[0] - 1) for n, a in zip(occ, arg_stats))
    new_depth = depth + max((a[1] for a, n in zip(arg_stats, occ) if n), default=0)
    _refuse_size(what, new_size, new_depth)


class _Builder:
    src: Source

    @_budgeted
    def build(self, tree, env=None):
        out = self.visit(tree, env or {})
        try:
            return _check_size(out, "the expression")
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None

    def visit(self, tree, env):
        if isinstance(tree, Token):  # pragma: no cover (the grammar wraps tokens)
            raise DefinitionError(f"unexpected token {tree!r}", span=self.src.span(tree))
        budget = _BUDGET.get()
        if budget is not None:
            budget.steps += 1
            if budget.steps > MAX_BUILD_STEPS:
                raise DefinitionError(
                    f"the definition takes more than {MAX_BUILD_STEPS} steps to build once its "
                    "helpers, ops and metrics are inlined", span=self.src.span(tree),
                    hint="a helper that calls another one twice doubles the work at every level")
        return getattr(self, "_" + tree.data)(tree, env)

    def _binop(self, tree, env):
        """A chain ``a + b - c ...`` (left-deep in the tree), folded in a loop."""
        chain = []
        node = tree
        while isinstance(node, Tree) and node.data == "binop":
            chain.append(node)
            node = node.children[0]
        value = self._binop_first(node, env)
        for t in reversed(chain):
            try:
                value = self._binop_step(t, value, env)
            except GbdistError as e:
                raise e.with_span(self.src.span(t)) from None
        return value

    def _binop_first(self, tree, env):
        return self.visit(tree, env)

    def _let(self, tree, env):
        *bindings, body = tree.children
        inner = dict(env)
        for b in bindings:
            name, value = b.children
            try:
                inner[str(name)] = _check_size(self.visit(value, inner), f"let {name}")
            except GbdistError as e:
                raise e.with_span(self.src.span(b)) from None
        return self.visit(body, inner)

    def _pos(self, tree, env):
        return self.visit(tree.children[0], env)

    @staticmethod
    def _arguments(tree: Tree):
        """(positional trees, keyword name -> tree, parameter trees) of a call."""
        _, args, params = tree.children
        positional, keywords = [], {}
        for a in (args.children if args is not None else ()):
            if isinstance(a, Tree) and a.data == "keyword":
                keywords[str(a.children[0])] = a.children[1]
            elif keywords:
                raise DSLSyntaxError("a positional argument follows a keyword argument")
            else:
                positional.append(a)
        extra = list(params.children) if params is not None else []
        for p in extra:
            if isinstance(p, Tree) and p.data == "keyword":
                keywords[str(p.children[0])] = p.children[1]
        return positional, keywords, [p for p in extra if not (isinstance(p, Tree) and p.data == "keyword")]


class FormulaBuilder(_Builder):
    """An op body → a sympy formula (a :class:`Sym`) over the canonical x, y."""

    def __init__(self, src: Source, scope: dict, op_name: str, args: tuple, params: dict):
        self.src = src
        self.scope = scope
        self.op_name = op_name
        self.args = args
        self.env0 = {a: Sym(s) for a, s in zip(args, (_ops.X, _ops.Y))}
        self.env0.update({k: Sym(v) for k, v in params.items()})

    @_budgeted
    def build(self, tree, env=None):
        out = self.visit(tree, {**self.env0, **(env or {})})
        try:
            _check_size(out, f"the formula of op {self.op_name!r}")
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None
        return out if isinstance(out, Sym) else Sym(out)

    @_located
    def _number(self, tree, env):
        text = _number_text(tree)
        return Sym(int(text) if text.isdigit() else float(text))

    @_located
    def _name(self, tree, env):
        name = str(tree.children[0])
        if name in env:
            return env[name]
        if name == "inf":
            return Sym(sp.oo)
        thing = lookup(name, self.scope)
        if isinstance(thing, (Op, ParamOp)):
            raise DefinitionError(f"op {name!r} needs its arguments here",
                                  hint=f"call it, e.g. {name}(x{', y' if _arity(thing) == 2 else ''})")
        params = ", ".join(self.args)
        raise DefinitionError(
            f"op {self.op_name!r} uses {name!r}, which is not one of its parameters",
            expected=f"the parameters ({params}), numbers, inf, or names bound by let",
            got=name, hint=_suggest(name, env) or "an op's formula sees only its own parameters")

    def _binop_step(self, tree, x, env):
        _, op, b = tree.children
        y = self.visit(b, env)
        fn = _BINOPS[str(op)]
        return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                "div": lambda: x / y, "pow": lambda: x ** y}[fn]()

    @_located
    def _compare(self, tree, env):
        a, op, b = tree.children
        x, y = self.visit(a, env), self.visit(b, env)
        return {"eq": Sym.__eq__, "ne": Sym.__ne__, "lt": Sym.__lt__, "le": Sym.__le__,
                "gt": Sym.__gt__, "ge": Sym.__ge__}[_COMPARE[str(op)]](x, y)

    @_located
    def _and_(self, tree, env):
        return self.visit(tree.children[0], env) & self.visit(tree.children[1], env)

    @_located
    def _or_(self, tree, env):
        return self.visit(tree.children[0], env) | self.visit(tree.children[1], env)

    @_located
    def _not_(self, tree, env):
        return ~self.visit(tree.children[0], env)

    @_located
    def _neg(self, tree, env):
        return -self.visit(tree.children[0], env)

    @_located
    def _attr(self, tree, env):
        raise TypeCheckError(f".{tree.children[1]} applies to matrices, not to the scalars of an op",
                             hint="an op's formula works on two numbers x and y")

    @_located
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
            values = _bind_params(thing, [self.visit(p, env) for p in params], {})
            inner = FormulaBuilder(thing.src, thing.scope, thing.name, thing.args, values)
            formula = inner.build(thing.body).expr
            _check_substitution(formula, args, f"the formula of op {self.op_name!r}")
            return Sym(_ops.build(formula.xreplace, dict(zip((_ops.X, _ops.Y), (a.expr for a in args)))))
        if params:
            raise ArityError(f"op {name!r} has no parameters", got=f"{len(params)} after ';'")
        if isinstance(thing, Op):
            if len(args) != thing.arity:
                raise ArityError(f"op {name!r} takes {thing.arity} argument(s)",
                                 got=f"{len(args)} argument(s)")
            _check_substitution(thing.formula, args, f"the formula of op {self.op_name!r}")
            return thing(*args)
        if thing is None:
            raise UnknownNameError(f"unknown function {name!r} in the formula of op {self.op_name!r}",
                                   expected="abs, sqrt, log, exp, min, max, where or an op",
                                   hint=_suggest(name, list(FORMULA_FUNCTIONS) + _op_names(self.scope)))
        raise DefinitionError(f"{name!r} is {_describe(thing)}; an op's formula can only call "
                              "scalar functions and other ops")


def _formula_function(name: str, args: list) -> Sym:
    arity = {"min": 2, "max": 2, "where": 3}.get(name, 1)
    if len(args) != arity:
        raise ArityError(f"{name}() takes {arity} argument(s)", got=f"{len(args)}",
                         expected=FORMULA_FUNCTIONS[name][0])
    fn = {"abs": _ops.s_abs, "sqrt": _ops.s_sqrt, "log": _ops.s_log, "exp": _ops.s_exp,
          "min": _ops.s_min, "max": _ops.s_max, "where": _ops.s_where}[name]
    return fn(*args)


def _arity(op) -> int:
    return op.arity if isinstance(op, Op) else len(op.args)


def _op_names(scope: dict) -> list[str]:
    return [n for n in list(scope) + list(_GLOBAL) + list(_ops.BY_NAME)
            if isinstance(lookup(n, scope), (Op, ParamOp))]


def _describe(thing) -> str:
    if isinstance(thing, ir.Node):
        return f"the expression {ir.to_text(thing)}"
    if isinstance(thing, (Op, ParamOp)):
        return f"the op {thing.name!r}"
    if isinstance(thing, Semiring):
        return f"the semiring {thing.name or repr(thing)}"
    if isinstance(thing, Monoid):
        return f"the monoid {thing.name!r}"
    if isinstance(thing, metrics.Metric):
        return f"the metric {thing.name!r}"
    if isinstance(thing, Helper):
        return f"the helper {thing.name!r}"
    if thing is None:
        return "None"
    return f"the number {thing:g}" if isinstance(thing, float) else repr(thing)


def _number_of(value, what) -> float:
    if isinstance(value, Sym):  # a parameter of the enclosing op, already a number
        try:
            return float(value.expr)
        except TypeError:
            pass
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeCheckError(f"the parameters of {_describe(what)} must be numbers",
                         got=_describe(value) if not isinstance(value, Sym) else str(value.expr))


def _bind_params(owner, positional: list, keywords: dict, defaults: dict | None = None) -> dict:
    """Match parameter values to ``owner.params`` (positional first, then by name)."""
    names = list(owner.params)
    if len(positional) > len(names):
        raise ArityError(f"{_describe(owner)} takes {len(names)} parameter(s)",
                         expected=", ".join(names) or "none", got=f"{len(positional)}")
    values = dict(defaults or {})
    values.update(zip(names, positional))
    for k, v in keywords.items():
        if k not in names:
            raise UnknownNameError(f"{_describe(owner)} has no parameter {k!r}",
                                   expected=", ".join(names) or "no parameters", hint=_suggest(k, names))
        values[k] = v
    missing = [n for n in names if values.get(n) is None]
    if missing:
        raise ArityError(f"{_describe(owner)} needs the parameter {missing[0]!r}",
                         expected=f"{owner.name}({'; ' if isinstance(owner, metrics.Metric) else ''}"
                                  f"{', '.join(names)})")
    return values


class ExprBuilder(_Builder):
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

    @_located
    def _number(self, tree, env):
        return float(_number_text(tree))

    @_located
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
        if thing is not None:
            return thing
        if self.free_operands and len(name) == 1 and name.isalpha():
            return ir.Matrix(name, span) if name.isupper() else ir.Vector(name, span)
        raise UnknownNameError(f"unknown name {name!r}",
                               hint=_suggest(name, list(env) + _known_names(self.scope)))

    # -- arithmetic over the output grid ---------------------------------------

    def _value(self, v, tree, what: str):
        """A value (number or IR node) for pointwise arithmetic."""
        if isinstance(v, float):
            return v
        if isinstance(v, ir.Node):
            return v
        raise TypeCheckError(f"{what} needs a value (a number or a matrix expression)",
                             got=_describe(v), span=self.src.span(tree))

    def _node(self, v, tree) -> ir.Node:
        return ir.Const(v, span=self.src.span(tree)) if isinstance(v, float) else v

    def _pointwise(self, fn: str, trees: list, env, tree, values=()):
        """``fn`` over the values of ``trees`` (the first ``len(values)`` already computed)."""
        values = [self._value(values[i] if i < len(values) else self.visit(t, env), t, f"{fn}()")
                  for i, t in enumerate(trees)]
        if all(isinstance(v, float) for v in values):
            return _fold(fn, *values)
        return ir.Pointwise(fn, tuple(self._node(v, t) for v, t in zip(values, trees)),
                            span=self.src.span(tree))

    def _binop_step(self, tree, x, env):
        a, op, b = tree.children
        return self._pointwise(_BINOPS[str(op)], [a, b], env, tree, values=[x])

    @_located
    def _compare(self, tree, env):
        a, op, b = tree.children
        return self._pointwise(_COMPARE[str(op)], [a, b], env, tree)

    @_located
    def _neg(self, tree, env):
        return self._pointwise("neg", [tree.children[0]], env, tree)

    def _logic(self, tree, env, fn):
        values = [self.visit(t, env) for t in tree.children]
        if not all(isinstance(v, float) for v in values):
            raise TypeCheckError("and, or, not combine conditions on numbers (parameters) only",
                                 hint="over the output grid use where(...) and min/max")
        return 1.0 if fn(*(v != 0 for v in values)) else 0.0

    @_located
    def _and_(self, tree, env):
        return self._logic(tree, env, lambda a, b: a and b)

    @_located
    def _or_(self, tree, env):
        return self._logic(tree, env, lambda a, b: a or b)

    @_located
    def _not_(self, tree, env):
        return self._logic(tree, env, lambda a: not a)

    @_located
    def _attr(self, tree, env):
        target, attr = tree.children
        if str(attr) != "T":
            raise UnknownNameError(f"unknown attribute .{attr}", expected=".T (the transpose)")
        v = self.visit(target, env)
        if not isinstance(v, ir.Node):
            raise TypeCheckError(".T needs a matrix", got=_describe(v))
        return ir.Transpose(v, span=self.src.span(tree))

    # -- calls ------------------------------------------------------------------

    @_located
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
                                   hint=_suggest(name, list(EXPR_FUNCTIONS) + _known_names(self.scope)))
        args = [self.visit(a, env) for a in positional]
        kw = {k: self.visit(v, env) for k, v in keywords.items()}
        extra = [self.visit(p, env) for p in params]
        if isinstance(thing, ParamOp):
            values = _bind_params(thing, [_number_of(v, thing) for v in args + extra],
                                  {k: _number_of(v, thing) for k, v in kw.items()})
            return thing.instantiate(values)
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
            out = _check_size(out, f"the expression (after inlining helper {name!r})")
            if len(_HELPER_MEMO) > 4096:
                _HELPER_MEMO.clear()
            _HELPER_MEMO[memo_key] = (thing, out)
            return out
        if isinstance(thing, metrics.Metric):
            if len(args) < 2:
                raise ArityError(f"metric {name!r} takes two matrices", got=f"{len(args)} argument(s)",
                                 expected=f"{name}(A, B)")
            values = _bind_params(thing, [_number_of(v, thing) for v in args[2:] + extra],
                                  {k: _number_of(v, thing) for k, v in kw.items()}, thing.params)
            for k, t in zip(("first", "second"), positional[:2]):
                if not isinstance(args[0 if k == "first" else 1], ir.Node):
                    raise TypeCheckError(f"the {k} argument of metric {name!r} must be a matrix",
                                         got=_describe(args[0 if k == "first" else 1]),
                                         span=self.src.span(t))
            return _check_size(thing.call(args[0], args[1], **values),
                               f"the expression (after inlining metric {name!r})")
        raise TypeCheckError(f"{_describe(thing)} cannot be called",
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
            raise TypeCheckError(f"{what} needs a matrix", got=_describe(v), span=self.src.span(t),
                                 hint="e.g. A, B.T or apply(square, A)")
        return v

    def _op(self, t, env, what: str, arity: int | None = None) -> Op:
        v = self.visit(t, env)
        span = self.src.span(t)
        if isinstance(v, ParamOp):
            raise ArityError(f"op {v.name!r} needs its parameters here", span=span,
                             expected=f"{v.name}({', '.join(v.params)})")
        if not isinstance(v, Op):
            raise TypeCheckError(f"{what} needs an op", got=_describe(v), span=span,
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
            raise TypeCheckError("expected a semiring", got=_describe(v), span=self.src.span(t),
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
                raise TypeCheckError("annihilator must be a number, inf or None", got=_describe(ann),
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

    def _unary_fn(fn):
        def method(self, tree, pos, kw, env):
            self._args(fn, tree, pos, kw, 1)
            return self._pointwise(fn, pos, env, tree)
        return method

    _fn_sqrt = _unary_fn("sqrt")
    _fn_abs = _unary_fn("abs")
    _fn_log = _unary_fn("log")
    _fn_exp = _unary_fn("exp")

    def _fn_min(self, tree, pos, kw, env):
        self._args("min", tree, pos, kw, 2)
        return self._pointwise("minimum", pos, env, tree)

    def _fn_max(self, tree, pos, kw, env):
        self._args("max", tree, pos, kw, 2)
        return self._pointwise("maximum", pos, env, tree)


# ---------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------


@dataclass
class Definitions:
    """What a text defined, by name: ``.ops``, ``.semirings``, ``.metrics``, ``.helpers``."""

    source: str
    ops: dict = field(default_factory=dict)
    semirings: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    helpers: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)  # alias -> metric name
    spans: dict = field(default_factory=dict)  # name -> Span of its definition
    _all: dict = field(default_factory=dict, repr=False)  # every name above, in order
    _order: dict = field(default_factory=dict, repr=False)  # name -> position in _all

    def __getitem__(self, name: str):
        for table in (self.ops, self.semirings, self.metrics, self.helpers):
            if name in table:
                return table[name]
        raise UnknownNameError(f"{name!r} is not defined in {self.source}",
                               hint=_suggest(name, self.names()))

    def names(self) -> list[str]:
        return list(self.ops) + list(self.semirings) + list(self.metrics) + list(self.helpers)

    @property
    def scope(self) -> dict:
        return {**self.ops, **self.semirings, **self.metrics, **self.helpers}

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
        return getattr(self, "_" + stmt.data)(stmt)

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
        if _builtin(name) is not None:
            raise RedefinitionError(f"{name!r} is a built-in {_describe(_builtin(name)).split()[1]}",
                                    span=span, hint="choose another name")
        other = None if metric else _GLOBAL.get(name)
        if other is not None and other[1] != self.src.name:
            raise RedefinitionError(f"{name!r} is already defined", span=span,
                                    got=f"defined in {other[1]}", hint="choose another name")
        m = metrics.find(name) if metric else None
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
        if len(args) not in (1, 2):
            raise ArityError(f"op {name!r} must take one or two arguments (x, or x and y)",
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
                op = _make_op(name, len(args), formula, doc)
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
            raise TypeCheckError(f"semiring {name!r} must be a semiring", got=_describe(v),
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
            if default is not None:
                value = ExprBuilder(self.src, scope).build(default)
                if not isinstance(value, float):
                    raise TypeCheckError(f"the default of parameter {str(pname)!r} must be a number",
                                         got=_describe(value), span=self.src.span(default))
            defaults[str(pname)] = value
        cond = requires.children[0] if requires is not None else None
        build = _MetricBody(name, tuple(map(str, operands)), body, cond, self.src, scope)
        m = metrics.Metric(name, build, defaults, self._doc(span), self.src.name, ())
        if all(v is not None for v in defaults.values()):
            expr = m.expression()  # build once with the defaults: errors surface here
            if self.typecheck:
                from .compiler.typecheck import infer
                try:
                    infer(expr, dict(metrics.ROLES))
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
                                   hint=_suggest(target, self.defs.metrics) or
                                   "define the metric above the alias")
        for tok in names_tree.children:
            alias, span = self._claim(tok, metric=True)
            self.defs.aliases[alias] = target
        m = self.defs.metrics[target]
        aliases = tuple(a for a, t in self.defs.aliases.items() if t == target)
        self.defs.add(self.defs.metrics, target,
                      metrics.Metric(m.name, m.build, m.params, m.doc, m.source, aliases))

    # -- registration ----------------------------------------------------------

    def commit(self) -> Definitions:
        """Make the definitions visible to later texts and to ``pairwise_distances``."""
        for table in (self.defs.ops, self.defs.semirings, self.defs.helpers):
            for name, obj in table.items():
                _GLOBAL[name] = (obj, self.src.name)
        for m in self.defs.metrics.values():
            metrics.register(m, replace=True)
        if self.defs.metrics:  # programs are cached by metric name: forget stale ones
            from .pairwise import _metric_program
            _metric_program.cache_clear()
        return self.defs


@dataclass(frozen=True, eq=False)
class _MetricBody:
    """The ``build`` of a text-defined metric: (A, B, **params) → IR."""

    name: str
    operands: tuple[str, str]
    body: Tree
    requires: Tree | None
    src: Source
    scope: dict

    def __call__(self, A, B, **params):
        params = {k: float(v) for k, v in params.items()}
        env = {self.operands[0]: A, self.operands[1]: B, **params}
        builder = ExprBuilder(self.src, self.scope)
        if self.requires is not None:
            ok = builder.build(self.requires, dict(params))
            if not isinstance(ok, float):
                raise TypeCheckError(f"the requires clause of metric {self.name!r} must be a "
                                     "condition on its parameters", span=self.src.span(self.requires))
            if ok == 0:
                shown = ", ".join(f"{k} = {v:g}" for k, v in params.items())
                raise InputError(f"metric {self.name!r} requires {_source_text(self.src, self.requires)}",
                                 got=shown)
        return builder.build(self.body, env)


def _source_text(src: Source, tree: Tree) -> str:
    m = tree.meta
    return src.text[m.start_pos:m.end_pos]


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def define(text: str, source: str = "<text>") -> Definitions:
    """Parse ``text``, register its ops, semirings and metrics by name, and return them.

    ``gb.define("op chi2(x, y) = ...\\nmetric chi2_dist(A, B) = ...")`` makes
    ``gb.pairwise_distances(X, metric="chi2_dist")`` work.
    """
    if not isinstance(text, str):
        raise InputError("define() needs the text of a metric file", got=type(text).__name__)
    metrics.ensure_builtins()
    loader = Loader(text, source)
    loader.run()
    return loader.commit()


MAX_FILE_BYTES = 64 * 2**20  # a metric file larger than this is refused


def read_source(path) -> str:
    """The text of a metric file: a regular file of at most MAX_FILE_BYTES, in UTF-8.

    Every failure is an :class:`InputError` naming the file (and, for a file
    that is not UTF-8, the offset of the first bad byte); a FIFO or a device
    is refused without reading it.
    """
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise InputError("a metric file is named by a path", expected="a str or pathlib.Path",
                         got=type(path).__name__)
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise InputError(f"cannot read the metric file {name!r}", got=e.strerror or str(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise InputError(f"cannot read the metric file {name!r}: it is {kind}")
        if st.st_size > MAX_FILE_BYTES:
            raise InputError(f"the metric file {name!r} is too large",
                             expected=f"at most {MAX_FILE_BYTES} bytes", got=f"{st.st_size} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise InputError(f"the metric file {name!r} is too large",
                                 expected=f"at most {MAX_FILE_BYTES} bytes")
            chunks.append(chunk)
    except OSError as e:
        raise InputError(f"cannot read the metric file {name!r}", got=e.strerror or str(e)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"the metric file {name!r} is not UTF-8 text",
                         got=f"byte 0x{data[e.start]:02x} at offset {e.start} (line {line})",
                         hint="save the file as UTF-8") from None


def load(path) -> Definitions:
    """:func:`define` the contents of a metric file; errors name the file."""
    return define(read_source(path), str(path))


def parse_expression(text: str, definitions: Definitions | None = None,
                     source: str = "<expression>") -> ir.Node:
    """One expression (``mxm(A, B.T, semiring(absdiff, plus))``) as IR.

    Single capital letters name matrix operands, single small letters vectors.
    """
    metrics.ensure_builtins()
    tree = parse_tree(text, source, start="expression")
    scope = definitions.scope if definitions is not None else {}
    out = ExprBuilder(Source(source, text), scope, free_operands=True).build(tree.children[0])
    if not isinstance(out, ir.Node):
        raise TypeCheckError("the expression does not compute anything over matrices",
                             got=_describe(out), span=Source(source, text).span(tree.children[0]))
    return out


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one definition of a file (``gbdist check``)."""

    kind: str  # "op", "semiring", "def", "metric", "alias", "syntax"
    name: str
    span: Span | None
    ok: bool
    lines: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        head = f"{where}{'ok   ' if self.ok else 'ERROR'} {self.kind} {self.name}"
        return "\n".join([head] + [f"    {line}" for line in self.lines])


def check(text: str, source: str = "<text>") -> list[CheckReport]:
    """Parse, type-check and prove every definition; one report per definition.

    A definition that fails does not stop the others (those that use it then
    report an unknown name). Nothing is registered.
    """
    metrics.ensure_builtins()
    loader = Loader(text, source)
    try:
        stmts = loader.statements()
    except GbdistError as e:
        return [CheckReport("syntax", "", e.span, False, tuple(str(e).splitlines()))]
    reports = []
    for stmt in stmts:
        kind = stmt.data.removesuffix("_def")
        first = stmt.children[0]
        name = str(first) if isinstance(first, Token) else ", ".join(map(str, first.children))
        span = loader.src.span(first)
        try:
            obj = loader.statement(stmt)
            lines = _verify(kind, obj)
            reports.append(CheckReport(kind, name, span, True, tuple(lines)))
        except GbdistError as e:
            reports.append(CheckReport(kind, name, e.span or span, False, tuple(str(e).splitlines())))
    return reports


def _proof_summary(a) -> str:
    refuted = sum(not p.holds for p in a.proofs)
    return (f"checks: {len(a.proofs) - refuted} proven"
            + (f", {refuted} refuted (those shortcuts are not taken)" if refuted else ""))


def _verify(kind: str, obj) -> list[str]:
    """Analyse and prove a definition; lines describing what was found."""
    from .compiler.analysis import analyze
    if kind == "op":
        if isinstance(obj, ParamOp):
            return [f"{obj!r}: parameters are substituted where it is used"]
        lines = [f"{obj!r}    domain {obj.domain}"]
        if obj.arity == 2:
            try:
                lines.append(f"monoid: {_ops.as_monoid(obj)!r}")
            except GbdistError:
                lines.append("not a monoid (no identity): usable as ⊗, not as ⊕")
        return lines
    if kind == "semiring":
        a = analyze(obj)
        return [f"{obj!r}: {a.strategy}"
                + (f", expansion rank {a.expansion_rank}" if a.expansion_rank else ""),
                _proof_summary(a)]
    if kind == "metric":
        if any(v is None for v in obj.params.values()):
            return ["has parameters without defaults: analysed when they are given"]
        from .api import compile
        program = compile(obj.expression(), dict(metrics.ROLES))
        lines = []
        for d in program.plan.products:
            a = d.analysis
            lines.append(f"{ir.to_text(d.node)}: {a.strategy}"
                         + (f", expansion rank {a.expansion_rank}" if a.expansion_rank else ""))
            lines.append("  " + _proof_summary(a) + (f"; OVERRIDE: {a.override}" if a.override else ""))
        lines.append(f"plan: {len(program.plan.steps)} step(s), output {program.plan.output_kind}")
        return lines
    if kind == "def":
        return [f"{obj!r}: inlined where it is called"]
    return ["alias of a metric defined above"]
