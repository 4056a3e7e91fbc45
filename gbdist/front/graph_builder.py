"""The builder of graph definitions: a ``graph`` body's parse tree → :class:`.graphdef.GraphDef`.

Each call of a graph operation becomes a :class:`~.graphdef.Step` after its arguments are
checked: operands and earlier results by kind (matrix, vector, scalar, index — an
operand takes the kind of its first use), algebra slots through the one registry (a
semiring where a product needs one, a monoid for reductions, an op for ewise/apply),
masks (``X.S``, ``X.V``, ``not ...``) only in ``mask=``. Errors are the language's typed
errors with the span of the offending argument. Loops and ``vector``/``ids`` are
:mod:`.graph_loop`; ``monoid NAME = monoid(op, identity=e)`` is :func:`.graphdef.build_monoid`.
"""
from __future__ import annotations

import math
from functools import partialmethod

from lark import Tree

from ..algebra.ops import Monoid, Op
from ..algebra.semirings import Semiring
from ..errors import ArityError, DefinitionError, TypeCheckError, UnknownNameError
from .builder import Builder, budgeted
from .expr import ExprBuilder
from .graph_loop import LoopMixin
from .graph_ops import SELECT_INDEX_UNARY, MoreOpsMixin, word_in
from .graphdef import (
    DTYPES, GRAPH_FUNCTIONS, KEYWORDS, POSITIONAL_SELECTORS, SELECTORS, GraphDef, MaskRef, Ref,
    Step)
from .scope import describe, known_names, lookup, number_text
from .syntax import MAX_FORMULA_NODES, Source, located, suggest

class GraphBuilder(LoopMixin, MoreOpsMixin, Builder):
    """A ``graph`` body → a :class:`GraphDef` (steps in order, every name and kind checked)."""

    def __init__(self, src: Source, scope: dict, name: str, operands: tuple[str, ...],
                 defaults: dict | None = None):
        self.src, self.scope, self.name, self.operands = src, scope, name, operands
        self.defaults = defaults or {}  # the parameters after ';': scalars
        self.kinds = {o: "scalar" if o in self.defaults else "any" for o in operands}
        self.arrays: set = set()  # operands used where a matrix or a vector fits
        self.steps: list[Step] = []
        self.memo: dict = {}
        self.let_names: dict = {}
        self.algebra = ExprBuilder(src, scope)

    @budgeted
    def build_graph(self, body: Tree, text: str = "", doc: str = "") -> GraphDef:
        env = {o: Ref(o) for o in self.operands}
        result = self.visit(body, env)
        if not isinstance(result, Ref):
            raise TypeCheckError(f"graph {self.name!r} must compute a matrix, vector or scalar",
                                 got=describe(result), span=self.src.span(body),
                                 hint="e.g. mxm(A, A, plus_pair, mask=A.S)")
        return GraphDef(self.name, self.operands, {o: self.kinds[o] for o in self.operands},
                        tuple(self.steps), result, {i: tuple(n) for i, n in self.let_names.items()},
                        text, doc, self.src.name, dict(self.defaults))

    # -- kinds ------------------------------------------------------------------

    def kind_of(self, ref: Ref) -> str:
        return self.kinds[ref.source] if isinstance(ref.source, str) else self.steps[ref.source].kind

    def require(self, ref: Ref, kind: str, tree, what: str) -> None:
        """``ref`` must be a ``kind`` ("matrix", "vector", "scalar", "index", or "array":
        a matrix or a vector); an operand used for the first time takes that kind."""
        have = self.kind_of(ref)
        fits = {"array": ("matrix", "vector")}.get(kind, (kind,))
        if have in fits:
            return
        if have == "any":
            if isinstance(ref.source, str):  # an operand takes the kind of its first use
                if kind == "array":
                    self.arrays.add(ref.source)
                    return
                if kind in ("matrix", "vector") or ref.source not in self.arrays:
                    self.kinds[ref.source] = kind
                    return
                have = "matrix or vector"
            if kind in ("matrix", "vector", "array"):
                return  # a step whose kind follows an operand not yet known: checked at run time
        words = {"array": "a matrix or a vector", "index": "an index array (rows=, cols=)"}
        used = "an operand used as " if isinstance(ref.source, str) else ""
        got = f"{self.label_of(ref)}, {used}a {have}"
        raise TypeCheckError(f"{what} needs {words.get(kind, 'a ' + kind)}", got=got,
                             span=self.src.span(tree))

    def label_of(self, ref: Ref) -> str:
        if isinstance(ref.source, str):
            return ref.source
        names = self.let_names.get(ref.source)
        return names[0] if names else f"the result of {self.steps[ref.source].operation}"

    # -- leaves -----------------------------------------------------------------

    @located
    def _name(self, tree, env):
        name = str(tree.children[0])
        if name in env:
            return env[name]
        if name == "inf":
            return math.inf
        thing = lookup(name, self.scope)
        if thing is not None:
            return thing
        raise UnknownNameError(f"unknown name {name!r}",
                               hint=suggest(name, list(env) + known_names(self.scope)))

    @located
    def _number(self, tree, env):
        return float(number_text(tree))

    @located
    def _neg(self, tree, env):
        v = self.visit(tree.children[0], env)
        if isinstance(v, float):
            return -v
        raise self._no_arithmetic()

    def _no_arithmetic(self):
        return TypeCheckError("a graph definition composes graph operations; arithmetic is "
                              "written inside ops", expected="mxm, vxm, ewise_add, apply, ... calls",
                              hint="op f(x, y) = ... then ewise_add(A, B, f) or apply(f, A, right=2)")

    @located
    def _binop(self, tree, env):
        raise self._no_arithmetic()

    _compare = _and_ = _or_ = _binop

    @located
    def _not_(self, tree, env):
        raise TypeCheckError("a complemented mask (not X.S) is only meaningful as mask=",
                             hint="e.g. vxm(q, A, any_pair, mask=not visited.S)")

    @located
    def _attr(self, tree, env):
        target, attr = tree.children
        attr = str(attr)
        if attr in ("S", "V"):
            raise TypeCheckError(f"a mask (.{attr}) is only meaningful as mask=",
                                 hint=f"e.g. mxm(A, A, plus_pair, mask=A.{attr})")
        if attr != "T":
            raise UnknownNameError(f"unknown attribute .{attr}",
                                   expected=".T (transpose), .S and .V (masks, in mask=)")
        ref = self.value(target, env, ".T")
        self.require(ref, "matrix", target, ".T")
        return Ref(ref.source, not ref.transpose)

    def _let(self, tree, env):
        *bindings, body = tree.children
        inner = dict(env)
        for b in bindings:
            name, value = b.children
            v = self.visit(value, inner)
            inner[str(name)] = v
            if isinstance(v, Ref) and isinstance(v.source, int) and not v.transpose:
                self.let_names.setdefault(v.source, []).append(str(name))
        return self.visit(body, inner)

    # -- argument slots ----------------------------------------------------------

    def value(self, t, env, what: str) -> Ref:
        """A matrix, vector or scalar operand of an operation."""
        v = self.visit(t, env)
        if isinstance(v, Ref):
            return v
        hint = None
        if isinstance(v, (Semiring, Monoid, Op)):
            hint = "the algebra goes after the operands: mxm(A, B, semiring), apply(op, A)"
        raise TypeCheckError(f"{what} needs a matrix or vector here", got=describe(v),
                             span=self.src.span(t), hint=hint)

    def _local(self, t, env):
        """The operand or let name ``t`` stands for, if it is one (algebra slots refuse them)."""
        if isinstance(t, Tree) and t.data == "name" and str(t.children[0]) in env:
            return str(t.children[0])
        return None

    def semiring(self, t, env, what: str) -> Semiring:
        if self._local(t, env):
            raise TypeCheckError(f"{what} needs a semiring", got=f"the operand {self._local(t, env)!r}",
                                 span=self.src.span(t), hint="e.g. plus_times, min_plus, any_pair")
        v = self.algebra.visit(t, {})
        if isinstance(v, Semiring):
            return v
        hint = "a name such as plus_times, or semiring(mul, add)"
        if isinstance(v, (Monoid, Op)):
            hint = f"a product needs ⊗ and ⊕: e.g. semiring(times, {v.name})"
        raise TypeCheckError(f"{what} needs a semiring", got=describe(v), span=self.src.span(t),
                             hint=hint)

    def monoid(self, t, env, what: str) -> Monoid:
        if self._local(t, env):
            raise TypeCheckError(f"{what} needs a monoid", got=f"the operand {self._local(t, env)!r}",
                                 span=self.src.span(t), hint="e.g. plus, min, max, or a `monoid`")
        v = self.algebra.visit(t, {})
        if isinstance(v, Semiring):
            raise TypeCheckError(f"{what} needs a monoid, not a semiring", got=describe(v),
                                 span=self.src.span(t), hint=f"its ⊕ is {v.add.name}")
        return self.algebra._monoid(t, {}, what)

    def binary(self, t, env, what: str) -> Op:
        return self.op(t, env, what, 2)

    def op(self, t, env, what: str, arity: int) -> Op:
        if self._local(t, env):
            raise TypeCheckError(f"{what} needs an op", got=f"the operand {self._local(t, env)!r}",
                                 span=self.src.span(t))
        v = self.algebra.visit(t, {})
        if isinstance(v, Monoid) and arity == 2:
            return v.op
        if isinstance(v, Semiring):
            raise TypeCheckError(f"{what} takes an op, not a semiring", got=describe(v),
                                 span=self.src.span(t), hint=f"e.g. {v.add.name} or {v.mul.name}")
        return self.algebra._op(t, {}, what, arity)

    def scalar(self, t, env, what: str):
        """A number, or a scalar computed by reduce_scalar."""
        v = self.visit(t, env)
        if isinstance(v, float):
            return v
        if isinstance(v, Ref):
            self.require(v, "scalar", t, what)
            return v
        raise TypeCheckError(f"{what} needs a number", got=describe(v), span=self.src.span(t))

    def word(self, t, allowed, what: str) -> str:
        """A name from a fixed list (a selector, a dtype, true/false)."""
        if not (isinstance(t, Tree) and t.data == "name"):
            raise TypeCheckError(f"{what} is one of: {', '.join(allowed)}", span=self.src.span(t))
        w = str(t.children[0])
        if w not in allowed:
            raise UnknownNameError(f"{what} {w!r} is not known", expected=", ".join(allowed),
                                   hint=suggest(w, allowed), span=self.src.span(t))
        return w

    def mask(self, t, env, kind: str) -> MaskRef:
        complement = False
        while isinstance(t, Tree) and t.data == "not_":
            complement, t = not complement, t.children[0]
        structural = False
        if isinstance(t, Tree) and t.data == "attr" and str(t.children[1]) in ("S", "V"):
            structural = str(t.children[1]) == "S"
            t = t.children[0]
        ref = self.value(t, env, "mask=")
        self.require(ref, kind if kind in ("matrix", "vector") else "array", t, "mask=")
        return MaskRef(ref, structural, complement)

    # -- calls ------------------------------------------------------------------

    @located
    def _call(self, tree, env):
        name = str(tree.children[0])
        positional, keywords, params = self._arguments(tree)
        if params:
            raise ArityError(f"{name}() takes no parameters after ';'")
        seen = set()
        for a in (tree.children[1].children if tree.children[1] is not None else ()):
            if isinstance(a, Tree) and a.data == "keyword":
                k = str(a.children[0])
                if k in seen:
                    raise ArityError(f"{name}() is given {k}= twice", span=self.src.span(a))
                seen.add(k)
        if name not in GRAPH_FUNCTIONS or name in env:
            thing = lookup(name, self.scope)
            if isinstance(thing, GraphDef):
                return self.inline(thing, tree, positional, keywords, env)
            raise UnknownNameError(
                f"{name!r} is not a graph operation", expected=", ".join(GRAPH_FUNCTIONS),
                hint=suggest(name, list(GRAPH_FUNCTIONS) + [
                    n for n in known_names(self.scope) if isinstance(lookup(n, self.scope), GraphDef)])
                or "a graph body calls graph operations and graphs defined above")
        bad = sorted(set(keywords) - set(KEYWORDS[name]))
        if bad:
            k = bad[0]
            hint = ("masks go in mask=" if k in ("S", "V") else None) or suggest(k, KEYWORDS[name])
            raise UnknownNameError(f"{name}() has no argument {k!r}",
                                   expected=", ".join(KEYWORDS[name]), hint=hint,
                                   span=self.src.span(keywords[k]))
        return getattr(self, "_fn_" + name)(tree, positional, keywords, env)

    def arity(self, name, tree, pos, low, high=None):
        high = low if high is None else high
        if not low <= len(pos) <= high:
            want = f"{low}" if low == high else f"{low} to {high}"
            raise ArityError(f"{name}() takes {want} positional argument(s)", got=f"{len(pos)}",
                             expected=GRAPH_FUNCTIONS[name][0], span=self.src.span(tree))

    def emit(self, tree, kw, env, operation, inputs, kind, **fields) -> Ref:
        """Check the write-back keywords, then add the step (or reuse an identical one)."""
        result_kind = kind
        if "mask" in kw:
            fields["mask"] = self.mask(kw["mask"], env, result_kind)
        if "accum" in kw:
            fields["accum"] = self.binary(kw["accum"], env, "accum=")
        if "out" in kw:
            out = self.value(kw["out"], env, "out=")
            self.require(out, result_kind if result_kind in ("matrix", "vector") else "array",
                         kw["out"], "out=")
            fields["out"] = out
        if "replace" in kw:
            fields["replace"] = self.word(kw["replace"], ("true", "false"), "replace=") == "true"
        if "dtype" in kw:
            fields["dtype"] = self.word(kw["dtype"], DTYPES, "dtype=")
        if "compensated" in kw:
            fields["compensated"] = self.word(kw["compensated"], ("true", "false"),
                                              "compensated=") == "true"
        if fields.get("accum") is not None and fields.get("out") is None and "assign" not in operation:
            raise TypeCheckError(f"{operation}(accum=...) needs out=: the accumulator combines "
                                 "the result with out's entries",
                                 hint="e.g. vxm(d, A, min_plus, accum=min, out=d)",
                                 span=self.src.span(kw["accum"]))
        if fields.get("replace") and fields.get("mask") is None:
            raise TypeCheckError("replace=true needs a mask=: it clears what the mask leaves out",
                                 span=self.src.span(kw["replace"]))
        key = (operation, tuple(inputs), kind, tuple(sorted(
            (k, id(v) if isinstance(v, (Op, Monoid, Semiring)) else v) for k, v in fields.items())))
        hit = self.memo.get(key)
        if hit is not None:
            return Ref(hit)
        i = self.new_index(tree)
        self.steps.append(Step(i, operation, tuple(inputs), kind=kind, span=self.src.span(tree),
                               **fields))
        self.memo[key] = i
        return Ref(i)

    def new_index(self, tree) -> int:
        """The index of a new step; a definition of more than MAX_FORMULA_NODES steps (graphs
        calling graphs on different operands double at every level) is refused."""
        if len(self.steps) >= MAX_FORMULA_NODES:
            raise DefinitionError(f"graph {self.name!r} grows too large (more than "
                                  f"{MAX_FORMULA_NODES} operations once the graphs it calls are "
                                  "written out)", span=self.src.span(tree),
                                  hint="a graph that calls another twice doubles at every level")
        return len(self.steps)

    def _product(self, name, tree, pos, kw, env, *, kinds, result):
        self.arity(name, tree, pos, 3)
        inputs = []
        for t, k in zip(pos[:2], kinds):
            r = self.value(t, env, f"{name}()")
            self.require(r, k, t, f"{name}()")
            inputs.append(r)
        sr = self.semiring(pos[2], env, f"{name}()")
        return self.emit(tree, kw, env, name, inputs, result, algebra=sr)

    _fn_mxm = partialmethod(_product, "mxm", kinds=("matrix", "matrix"), result="matrix")
    _fn_mxv = partialmethod(_product, "mxv", kinds=("matrix", "vector"), result="vector")
    _fn_vxm = partialmethod(_product, "vxm", kinds=("vector", "matrix"), result="vector")

    def _same_kind(self, refs, trees, what) -> str:
        kinds = {self.kind_of(r) for r in refs} - {"any"}
        if len(kinds) > 1:
            raise TypeCheckError(f"{what} needs two matrices or two vectors",
                                 got=" and ".join(self.kind_of(r) for r in refs),
                                 span=self.src.span(trees[-1]))
        kind = kinds.pop() if kinds else "any"
        for r, t in zip(refs, trees):
            self.require(r, kind if kind != "any" else "array", t, what)
        return kind

    def _ewise(self, name, tree, pos, kw, env):
        self.arity(name, tree, pos, 3)
        refs = [self.value(t, env, f"{name}()") for t in pos[:2]]
        kind = self._same_kind(refs, pos[:2], f"{name}()")
        op = self.binary(pos[2], env, f"{name}()")
        return self.emit(tree, kw, env, name, refs, kind, algebra=op)

    _fn_ewise_add = partialmethod(_ewise, "ewise_add")
    _fn_ewise_mult = partialmethod(_ewise, "ewise_mult")

    def _fn_apply(self, tree, pos, kw, env):
        self.arity("apply", tree, pos, 2)
        iu = self.index_unary(pos[0], env, "any")
        if iu is not None:
            return self._apply_index_unary(tree, iu, pos, kw, env)
        a = self.value(pos[1], env, "apply()")
        kind = self._same_kind([a], pos[1:], "apply()")
        sides = [s for s in ("left", "right") if s in kw]
        if len(sides) == 2:
            raise ArityError("apply() takes left= or right=, not both", span=self.src.span(tree))
        bound = None
        if sides:
            op = self.op(pos[0], env, f"apply(..., {sides[0]}=)", 2)
            bound = (sides[0], self.scalar(kw[sides[0]], env, f"{sides[0]}="))
        else:
            op = self.op(pos[0], env, "apply()", 1)
        rest = {k: v for k, v in kw.items() if k not in ("left", "right")}
        return self.emit(tree, rest, env, "apply", [a], kind, algebra=op, bound=bound)

    def _fn_select(self, tree, pos, kw, env):
        self.arity("select", tree, pos, 2, 3)
        a = self.value(pos[0], env, "select()")
        iu = None if word_in(pos[1], SELECTORS) else self.index_unary(pos[1], env, "bool")
        if iu is not None:
            return self._select_index_unary(tree, iu, a, pos, kw, env)
        word = self.word(pos[1], tuple(SELECTORS) + SELECT_INDEX_UNARY, "the selector")
        if word not in SELECTORS:  # an index-unary op's name, given to an op of the file
            raise TypeCheckError(f"the selector {word!r} names an op of this file, not a "
                                 "predicate", span=self.src.span(pos[1]))
        if len(pos) == 3 and "k" in kw:
            raise ArityError("select() takes k once (third argument or k=)", span=self.src.span(tree))
        kt = pos[2] if len(pos) == 3 else kw.get("k")
        kind = self._same_kind([a], pos[:1], "select()")
        if word in POSITIONAL_SELECTORS:
            self.require(a, "matrix", pos[0], f"select(..., {word})")
            kind = "matrix"
        k = None
        if kt is not None:
            k = self.scalar(kt, env, "select()'s k")
            if word in POSITIONAL_SELECTORS and isinstance(k, float) and not k.is_integer():
                raise TypeCheckError(f"select(..., {word}, k) needs a whole number k (a diagonal)",
                                     got=describe(k), span=self.src.span(kt))
        elif word not in POSITIONAL_SELECTORS and word != "nonzero":
            raise ArityError(f"select(..., {word}, k) compares the values with k: give k",
                             span=self.src.span(tree), expected=f"select(A, {word}, 0)")
        rest = {k_: v for k_, v in kw.items() if k_ != "k"}
        return self.emit(tree, rest, env, "select", [a], kind, selector=SELECTORS[word], k=k)

    def _reduce(self, name, tree, pos, kw, env, *, kind):
        self.arity(name, tree, pos, 2)
        a = self.value(pos[0], env, f"{name}()")
        self.require(a, "matrix" if kind == "vector" else "array", pos[0], f"{name}()")
        m = self.monoid(pos[1], env, f"{name}()")
        return self.emit(tree, kw, env, name, [a], kind, algebra=m)

    _fn_reduce_rows = partialmethod(_reduce, "reduce_rows", kind="vector")
    _fn_reduce_cols = partialmethod(_reduce, "reduce_cols", kind="vector")
    _fn_reduce_scalar = partialmethod(_reduce, "reduce_scalar", kind="scalar")

    def _indices(self, kw, env, what):
        """rows= / cols=: an operand given as an index array when the graph runs, or a vector
        computed by the definition (its stored values are the indices: ``rows=f``)."""
        out = {}
        for key in ("rows", "cols"):
            if key in kw:
                t = kw[key]
                out[key] = self._index_ref(t, env, f"{what}(..., {key}=)")
        return out

    def _index_ref(self, t, env, what):
        ref = self.value(t, env, what)
        if ref.transpose:
            raise TypeCheckError(f"{what} takes an index array or a vector",
                                 got="a transposed matrix", span=self.src.span(t))
        if isinstance(ref.source, str) and ref.source in self.operands \
                and self.kind_of(ref) in ("any", "index") and ref.source not in self.arrays:
            self.require(ref, "index", t, what)  # an index array given when the graph runs
        else:
            try:
                self.require(ref, "vector", t, what)
            except TypeCheckError as e:
                raise TypeCheckError(f"{what} takes an index array (an operand) or a vector "
                                     "whose stored values are the indices",
                                     got=e.got, span=self.src.span(t),
                                     hint="e.g. extract(f, rows=f), or f[f]") from None
        return ref

    @located
    def _index(self, tree, env):
        """``x[v]``: extract(x, rows=v) — the entries of x at the indices v holds."""
        target, name = tree.children
        x = self.value(target, env, "x[...]")
        self.require(x, "array", target, "x[...]")
        idx = self._index_ref(Tree("name", [name]), env, "x[...]'s index")
        return self.emit(tree, {}, env, "extract", [x], self.kind_of(x), rows=idx)

    def _fn_extract(self, tree, pos, kw, env):
        self.arity("extract", tree, pos, 1)
        a = self.value(pos[0], env, "extract()")
        kind = self._same_kind([a], pos, "extract()")
        idx = self._indices(kw, env, "extract")
        if "cols" in idx:
            self.require(a, "matrix", pos[0], "extract(..., cols=)")
            kind = "matrix"
        rest = {k: v for k, v in kw.items() if k not in ("rows", "cols")}
        return self.emit(tree, rest, env, "extract", [a], kind, **idx)

    def _fn_assign(self, tree, pos, kw, env):
        self.arity("assign", tree, pos, 2)
        c = self.value(pos[0], env, "assign()")
        kind = self._same_kind([c], pos[:1], "assign()")
        v = self.visit(pos[1], env)
        if isinstance(v, Ref) and self.kind_of(v) != "scalar":
            self._same_kind([c, v], pos, "assign()")
        elif not isinstance(v, (Ref, float)):
            raise TypeCheckError("assign() stores a matrix, a vector or a number",
                                 got=describe(v), span=self.src.span(pos[1]))
        idx = self._indices(kw, env, "assign")
        rest = {k: x for k, x in kw.items() if k not in ("rows", "cols")}
        return self.emit(tree, rest, env, "assign", [c, v], kind, **idx)

__all__ = ["GraphBuilder"]
