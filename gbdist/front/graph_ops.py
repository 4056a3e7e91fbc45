"""More GraphBLAS operations in graph definitions (a mixin of :class:`.graph_builder.GraphBuilder`).

    graph g(A, B) =
        let U = ewise_union(A, B, minus, 0, 0),          # a missing side counts as 0
            d = count(A),                                # stored entries per row
            R = apply(rowindex, A, right=1)              # an index-unary op: i + 1
        in kronecker(select(U, valuegt, 0), diag(d), times)

Each is the Python operation of :mod:`gbdist.graph` under the same name, checked here
(kinds, algebra, whole numbers) and run by :func:`gbdist.graph.program.run`:
``ewise_union(A, B, op, a, b)``, ``count / argmin / argmax(A [, axis=cols])``,
``kronecker(A, B, op)``, ``diag(x [, k])`` (a vector → a matrix, a matrix → its diagonal),
``concat(X, Y, ... [, axis=cols])`` (matrices stacked, vectors joined), ``resize(A, m [, n])``
(a resized copy), ``subassign(C, value, rows=r, cols=c, mask=M)`` (GxB_subassign: a copy of
C whose region C(r, c) takes value under a mask of the region's shape). ``select`` and ``apply`` take GraphBLAS's index-unary ops (``rowindex``,
``colindex``, ``diagindex``, ``valuelt`` …, python-graphblas's names) and those of the
file (``op f(x, i, j, y) = ...``: value, row, column, thunk). ``split`` is not in the
language: a definition computes one matrix, vector or scalar (``extract`` takes a part).
"""
from __future__ import annotations

from lark import Tree

from ..algebra.positional import INDEX_UNARY, IndexUnaryOp, _sym_names
from ..errors import ArityError, TypeCheckError
from .graphdef import Ref
from .scope import describe, lookup
from .syntax import located

AXES = ("rows", "cols")
# The built-in index-unary ops whose value is an index or a value (apply), not a predicate.
APPLY_INDEX_UNARY = tuple(n for n, o in INDEX_UNARY.items() if o.result != "bool")
SELECT_INDEX_UNARY = tuple(n for n, o in INDEX_UNARY.items() if o.result == "bool")


class MoreOpsMixin:
    """``_fn_<name>`` for the operations above; :meth:`index_unary` for select / apply."""

    # -- index-unary ops --------------------------------------------------------------

    def index_unary(self, t, env, result: str):
        """The index-unary op ``t`` names (a built-in, or ``op f(x, i, j, y)`` of the file),
        or None when it names something else. ``result``: "bool" (select) or "any"."""
        if not (isinstance(t, Tree) and t.data == "name") or str(t.children[0]) in env:
            return None
        name = str(t.children[0])
        thing = lookup(name, self.scope)
        if not isinstance(thing, IndexUnaryOp):
            thing = INDEX_UNARY.get(name) if thing is None else None
        if thing is None:
            return None
        if result == "bool" and thing.result != "bool":
            raise TypeCheckError(f"select() needs a predicate: {name!r} gives a value",
                                 got=repr(thing), span=self.src.span(t),
                                 hint=f"apply({name}, A) stores its value; select takes "
                                      "tril, rowle, valuegt … or an op whose formula compares")
        return thing

    def _apply_index_unary(self, tree, iu, pos, kw, env):
        a = self.value(pos[1], env, "apply()")
        kind = self._same_kind([a], pos[1:], "apply()")
        if "left" in kw:
            raise ArityError(f"apply({iu.name}, ...) takes its thunk as right=",
                             span=self.src.span(kw["left"]), expected=f"apply({iu.name}, A, right=1)")
        bound = None
        if "right" in kw:
            bound = ("right", self.scalar(kw["right"], env, "right="))
        rest = {k: v for k, v in kw.items() if k != "right"}
        return self.emit(tree, rest, env, "apply", [a], kind, algebra=iu, bound=bound)

    def _select_index_unary(self, tree, iu, a, pos, kw, env):
        """select(A, op, k) with an index-unary predicate (k: its thunk, 0 when left out)."""
        if len(pos) == 3 and "k" in kw:
            raise ArityError("select() takes k once (third argument or k=)", span=self.src.span(tree))
        kt = pos[2] if len(pos) == 3 else kw.get("k")
        kind = self._same_kind([a], pos[:1], "select()")
        k = None if kt is None else self.scalar(kt, env, "select()'s k")
        if iu.thunk == "value" and k is None and "y" in _sym_names(iu.term):
            raise ArityError(f"select(..., {iu.name}, k) compares with k: give k",
                             span=self.src.span(tree), expected=f"select(A, {iu.name}, 0)")
        rest = {k_: v for k_, v in kw.items() if k_ != "k"}
        user = iu is not INDEX_UNARY.get(iu.name)
        return self.emit(tree, rest, env, "select", [a], kind, selector=iu.name, k=k,
                         algebra=iu if user else None)

    # -- operations ------------------------------------------------------------------

    def _fn_ewise_union(self, tree, pos, kw, env):
        self.arity("ewise_union", tree, pos, 5)
        refs = [self.value(t, env, "ewise_union()") for t in pos[:2]]
        kind = self._same_kind(refs, pos[:2], "ewise_union()")
        op = self.binary(pos[2], env, "ewise_union()")
        defaults = [self.scalar(t, env, "ewise_union()'s default") for t in pos[3:]]
        return self.emit(tree, kw, env, "ewise_union", refs + defaults, kind, algebra=op)

    def _axis_reduction(self, name, tree, pos, kw, env):
        self.arity(name, tree, pos, 1)
        a = self.value(pos[0], env, f"{name}()")
        self.require(a, "matrix", pos[0], f"{name}()")
        axis = self.word(kw["axis"], AXES, "axis=") if "axis" in kw else "rows"
        return self.emit(tree, {}, env, name, [a], "vector", selector=axis)

    def _fn_count(self, tree, pos, kw, env):
        return self._axis_reduction("count", tree, pos, kw, env)

    def _fn_argmin(self, tree, pos, kw, env):
        return self._axis_reduction("argmin", tree, pos, kw, env)

    def _fn_argmax(self, tree, pos, kw, env):
        return self._axis_reduction("argmax", tree, pos, kw, env)

    def _fn_kronecker(self, tree, pos, kw, env):
        self.arity("kronecker", tree, pos, 3)
        refs = []
        for t in pos[:2]:
            r = self.value(t, env, "kronecker()")
            self.require(r, "matrix", t, "kronecker()")
            refs.append(r)
        op = self.binary(pos[2], env, "kronecker()")
        return self.emit(tree, kw, env, "kronecker", refs, "matrix", algebra=op)

    def _fn_diag(self, tree, pos, kw, env):
        self.arity("diag", tree, pos, 1, 2)
        x = self.value(pos[0], env, "diag()")
        self.require(x, "array", pos[0], "diag()")
        k = self._integer(pos[1], env, "diag()'s k") if len(pos) == 2 else 0.0
        kind = {"vector": "matrix", "matrix": "vector"}.get(self.kind_of(x), "any")
        return self.emit(tree, {}, env, "diag", [x], kind, k=k)

    def _fn_concat(self, tree, pos, kw, env):
        if not pos:
            raise ArityError("concat() takes the matrices or vectors to join",
                             expected="concat(A, B [, axis=cols])", span=self.src.span(tree))
        refs = [self.value(t, env, "concat()") for t in pos]
        kind = self._same_kind(refs, pos, "concat()")
        axis = self.word(kw["axis"], AXES, "axis=") if "axis" in kw else "rows"
        if axis == "cols":
            for r, t in zip(refs, pos):
                self.require(r, "matrix", t, "concat(..., axis=cols)")
            kind = "matrix"
        return self.emit(tree, {}, env, "concat", refs, kind, selector=axis)

    def _fn_resize(self, tree, pos, kw, env):
        self.arity("resize", tree, pos, 2, 3)
        a = self.value(pos[0], env, "resize()")
        kind = self._same_kind([a], pos[:1], "resize()")
        if len(pos) == 3:
            self.require(a, "matrix", pos[0], "resize(A, m, n)")
            kind = "matrix"
        dims = [self._whole(t, env, "resize()'s size", 0) for t in pos[1:]]
        return self.emit(tree, {}, env, "resize", [a] + dims, kind)

    def _fn_subassign(self, tree, pos, kw, env):
        """subassign(C, value, rows=r, cols=c): as assign (the builder's ``_fn_assign``), but
        mask= has the region's shape and replace= clears only inside the region."""
        self.arity("subassign", tree, pos, 2)
        c = self.value(pos[0], env, "subassign()")
        kind = self._same_kind([c], pos[:1], "subassign()")
        v = self.visit(pos[1], env)
        if isinstance(v, Ref) and self.kind_of(v) != "scalar":
            self._same_kind([c, v], pos, "subassign()")
        elif not isinstance(v, (Ref, float)):
            raise TypeCheckError("subassign() stores a matrix, a vector or a number",
                                 got=describe(v), span=self.src.span(pos[1]))
        idx = self._indices(kw, env, "subassign")
        rest = {k: x for k, x in kw.items() if k not in ("rows", "cols")}
        return self.emit(tree, rest, env, "subassign", [c, v], kind, **idx)

    # -- A[i, :], A[:, j], A[r, c] ------------------------------------------------------

    @located
    def _subscript(self, tree, env):
        """``A[i, :]`` (row i, a vector over the columns), ``A[:, j]``, ``A[i, c]``,
        ``A[r, :]`` / ``A[r, c]`` (index vectors: a matrix): extract. One index is a number
        or a scalar (an operand used here first is one); an index list a vector of indices
        (computed, or an operand used as one before)."""
        target, *subs = tree.children
        a = self.value(target, env, "A[..., ...]")
        self.require(a, "matrix", target, "A[i, :] (two indices)")
        fields, one = {}, []
        for key, t in zip(("rows", "cols"), subs):
            if isinstance(t, Tree) and t.data == "whole":
                continue
            single, fields[key] = self._subscript_index(t, env, key)
            if single:
                one.append(key)
        if len(one) == 2:
            raise TypeCheckError("A[i, j] (one element) is not in the language: a graph "
                                 "definition computes matrices, vectors and scalars",
                                 span=self.src.span(tree),
                                 hint="A[i, :] is row i as a vector, A[:, j] column j")
        selector = {"rows": "row", "cols": "col"}.get(one[0]) if one else None
        return self.emit(tree, {}, env, "extract", [a], "vector" if one else "matrix",
                         selector=selector, **fields)

    def _subscript_index(self, t, env, key):
        """(whether ``t`` is one index, the number or Ref): a whole number, a scalar, or a
        vector of indices (an index array operand)."""
        what = "a row index" if key == "rows" else "a column index"
        v = self.visit(t, env)
        if isinstance(v, float):
            if not v.is_integer():
                raise TypeCheckError(f"{what} is a whole number", got=describe(v),
                                     span=self.src.span(t))
            return True, v
        if not isinstance(v, Ref):
            raise TypeCheckError(f"{what}: a whole number, a scalar, ':' or a vector of "
                                 "indices", got=describe(v), span=self.src.span(t))
        kind = self.kind_of(v)
        fresh = isinstance(v.source, str) and v.source not in self.arrays
        if kind == "scalar" or (kind == "any" and fresh and not v.transpose):
            self.require(v, "scalar", t, what)
            return True, v
        if kind == "matrix":
            raise TypeCheckError(f"{what}: a whole number, a scalar, ':' or a vector of "
                                 "indices", got=f"{self.label_of(v)}, a matrix",
                                 span=self.src.span(t))
        return False, self._index_ref(t, env, f"A[...]'s {key}")

    def _integer(self, t, env, what: str):
        """A whole number (either sign), or a scalar (checked when the graph runs)."""
        v = self.scalar(t, env, what)
        if isinstance(v, float) and not v.is_integer():
            raise TypeCheckError(f"{what} needs a whole number", got=describe(v),
                                 span=self.src.span(t))
        return v


def word_in(t, words) -> bool:
    """Whether the parse tree ``t`` is a bare name among ``words``."""
    return isinstance(t, Tree) and t.data == "name" and str(t.children[0]) in words


def index_unary_op(src, scope, name: str, args: tuple, body, doc: str = "") -> IndexUnaryOp:
    """``op f(x, i, j, y) = formula``: an index-unary op of the value, the row, the column and
    the thunk (named as the file names them). A comparison (or and / or / not of them) is a
    predicate, for ``select``; any other formula a value, for ``apply``."""
    from ..algebra import terms
    from ..algebra.lazy import sympy as sp
    from ..errors import DefinitionError
    from .formula import FormulaBuilder
    symbols = {a: sp.Symbol(c, real=True) for a, c in zip(args, "xijy")}
    expr = FormulaBuilder(src, scope, name, (), symbols).build(body).expr
    result = "bool" if isinstance(expr, (sp.core.relational.Relational,
                                         sp.logic.boolalg.Boolean)) else "value"
    try:
        term = terms.encode(expr)
    except terms.Unsupported as e:
        raise DefinitionError(f"index-unary op {name!r} uses a node gbdist cannot store",
                              got=str(e), span=src.span(body)) from None
    return IndexUnaryOp(name, term, result, "value", doc or f"op {name}({', '.join(args)})")


__all__ = ["MoreOpsMixin", "index_unary_op", "word_in", "AXES", "APPLY_INDEX_UNARY", "SELECT_INDEX_UNARY"]
