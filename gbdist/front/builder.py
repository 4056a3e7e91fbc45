"""What both builders share: the work budget, the size limits, and the walk of
the parse tree (one method per grammar rule, named ``_<rule>``).

:class:`~gbdist.front.formula.FormulaBuilder` (op bodies → sympy) and
:class:`~gbdist.front.expr.ExprBuilder` (metric bodies → IR) subclass
:class:`Builder`. Every definition is built under one budget of parse-tree
steps (helpers, ops and metrics it uses share it), and every value it builds
is refused if, written out as a tree, it would be over the size or depth
limit: a text cannot make the front end, the analysis or a kernel blow up.
"""
from __future__ import annotations

import contextvars
import functools

import sympy as sp
from lark import Token, Tree

from ..compiler import ir
from ..algebra import ops as _ops
from ..errors import DefinitionError, DSLSyntaxError, GbdistError
from ..algebra.sym import Sym
from .syntax import MAX_BUILD_STEPS, MAX_FORMULA_DEPTH, MAX_FORMULA_NODES, Source, unexpected

# The work budget of the definition being built. Helpers, ops and metrics used
# inside it are built by nested builders, which share the outermost budget.
_BUDGET: contextvars.ContextVar = contextvars.ContextVar("gbdist_build_budget", default=None)


class _Budget:
    def __init__(self):
        self.steps = 0


def budgeted(fn):
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


def check_size(value, what: str):
    """``value``, unless written out as a tree it is over the size or depth limit."""
    size, depth, _ = _stats(value)
    _refuse_size(what, size, depth)
    return value


def check_substitution(formula, args, what: str) -> None:
    """Refuse, before building it, a formula whose x and y are replaced by ``args``
    if the result would be over the size or depth limit."""
    size, depth, occ = _stats(formula, (_ops.X, _ops.Y))
    arg_stats = [_stats(a) for a in args]
    new_size = size + sum(n * (a[0] - 1) for n, a in zip(occ, arg_stats))
    new_depth = depth + max((a[1] for a, n in zip(arg_stats, occ) if n), default=0)
    _refuse_size(what, new_size, new_depth)


class Builder:
    src: Source

    @budgeted
    def build(self, tree, env=None):
        try:
            return check_size(self.visit(tree, env or {}), "the expression")
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - nothing untyped reaches the user
            raise unexpected(e, self.src.span(tree)) from None

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

    def _subscript(self, tree, env):
        raise DefinitionError("A[i, :], A[:, j] and A[r, c] are written in graph definitions "
                              "only", span=self.src.span(tree),
                              hint="graph row(A, i) = A[i, :]")

    def _loop(self, tree, env):
        raise DefinitionError("loop ... do ... until ... in is written in graph definitions only",
                              span=self.src.span(tree), hint="graph g(A, u) = loop x = u do ...")

    def _binop(self, tree, env):
        """A chain ``a + b - c ...`` (left-deep in the tree), folded in a loop."""
        chain = []
        node = tree
        while isinstance(node, Tree) and node.data == "binop":
            chain.append(node)
            node = node.children[0]
        value = self._binop_first(node, env, chain)
        for t in reversed(chain):
            try:
                value = self._binop_step(t, value, env)
            except GbdistError as e:
                raise e.with_span(self.src.span(t)) from None
        return value

    def _binop_first(self, tree, env, chain=()):
        """The first operand of a chain (``chain``: the binop nodes, outermost first)."""
        return self.visit(tree, env)

    def _let(self, tree, env):
        *bindings, body = tree.children
        inner = dict(env)
        for b in bindings:
            name, value = b.children
            try:
                inner[str(name)] = check_size(self.visit(value, inner), f"let {name}")
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
