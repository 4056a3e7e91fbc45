"""Loops and vector constructors in graph definitions (a mixin of :class:`.graph_builder.GraphBuilder`).

    graph sssp(A, s) =
        loop d = vector(A, 0, at=s)
        do   d = vxm(d, A, min_plus, accum=min, out=d)
        until unchanged(d)
        in d

``loop`` names the carried variables and their initial values; ``do`` binds names in
order, once per iteration (a carried name takes its next value, any other name is local
to the iteration); ``until COND [limit N]`` or ``repeat N`` says when it stops; ``in``
is the result, where the carried names are their final values. The body is built by a
second builder over the same scope into its own list of steps (:class:`.graphdef.Loop`):
it sees the operands and the outer let names (captured by reference, never copied as
text), and the carried variables. Checked here: the carried names (new, not an operand),
each carried variable's kind (the same before and after an iteration), the condition
(``unchanged(x)`` of a carried x, ``empty(x)`` of a matrix or vector, comparisons of
scalars, ``or``/``and``), and the limit or count (a whole number, or a scalar operand).
The interpreter is :mod:`gbdist.graph.loops`. ``vector(A, value [, at=i])`` and ``ids(A)``
make the vectors a loop starts from. A graph defined above and called in a body is
inlined here too (:meth:`LoopMixin.inline`, its loops' outer references moved).
"""
from __future__ import annotations

from lark import Tree

from ..algebra.ops import Monoid, Op
from ..algebra.semirings import Semiring
from ..errors import ArityError, TypeCheckError
from .graphdef import GraphDef, Loop, MaskRef, Ref, Step, Stop
from .scope import describe
from .syntax import located

_CONDITIONS = "unchanged(x) of a carried x, empty(x), or a comparison of scalars (err < tol)"


class LoopMixin:
    level = 0  # how deep in loops this builder's steps are
    enclosing: tuple = ()  # the carried names of the enclosing loops

    # -- vector constructors --------------------------------------------------------

    def _size_of(self, tree, pos, env, what):
        a = self.value(pos[0], env, what)
        self.require(a, "array", pos[0], what)
        return a

    def _fn_vector(self, tree, pos, kw, env):
        self.arity("vector", tree, pos, 2)
        a = self._size_of(tree, pos, env, "vector()")
        value = self.scalar(pos[1], env, "vector()'s value")
        fields = {}
        if "at" in kw:
            fields["at"] = self._whole(kw["at"], env, "at=", 0)
        rest = {k: v for k, v in kw.items() if k != "at"}
        return self.emit(tree, rest, env, "vector", [a, value], "vector", **fields)

    def _fn_ids(self, tree, pos, kw, env):
        self.arity("ids", tree, pos, 1)
        a = self._size_of(tree, pos, env, "ids()")
        return self.emit(tree, kw, env, "ids", [a], "vector")

    def _whole(self, t, env, what: str, low: int):
        """A whole number >= low, or a scalar (checked when the graph runs)."""
        v = self.scalar(t, env, what)
        if isinstance(v, float) and not (v.is_integer() and v >= low):
            raise TypeCheckError(f"{what} needs a whole number >= {low}", got=describe(v),
                                 span=self.src.span(t))
        return v

    # -- loops ----------------------------------------------------------------------

    @located
    def _loop(self, tree, env):
        init_tree, body_tree, stop_tree, result_tree = tree.children
        carried, inits, first = [], [], dict(env)  # initial values: bound in order, as let
        for b in init_tree.children:
            name_tok, value = b.children
            name = str(name_tok)
            if name in carried:
                raise TypeCheckError(f"loop variable {name!r} is named twice",
                                     span=self.src.span(name_tok))
            if name in self.operands or name in self.enclosing:
                what = "an operand of the graph" if name in self.operands else \
                    "a variable of the enclosing loop"
                raise TypeCheckError(f"loop variable {name!r} has the name of {what}",
                                     span=self.src.span(name_tok), hint="choose another name")
            ref = self.value(value, first, f"loop variable {name!r}")
            first[name] = ref
            carried.append(name)
            inits.append(ref)
        body = type(self)(self.src, self.scope, self.name, self.operands)
        body.kinds, body.arrays = self.kinds, self.arrays  # an operand's kind is one
        body.level, body.enclosing = self.level + 1, self.enclosing + tuple(carried)
        labels = dict(getattr(self, "labels", {}))
        benv, captures = {}, {}
        for key, v in env.items():
            if not isinstance(v, Ref):
                benv[key] = v
                continue
            src = v.source if isinstance(v.source, str) else f"%{self.level}.{v.source}"
            if src not in captures:
                captures[src] = Ref(v.source)
                if not isinstance(v.source, str):
                    self.kinds[src] = self.kind_of(Ref(v.source))
                    labels[src] = self.let_names.get(v.source, [f"%{v.source + 1}"])[0]
            benv[key] = Ref(src, v.transpose)
        for name, ref in zip(carried, inits):
            self.kinds[name] = self.kind_of(ref)
            benv[name] = Ref(name)
        body.labels = labels
        assigned = set()
        for b in body_tree.children:
            name_tok, value = b.children
            v = body.visit(value, benv)
            benv[str(name_tok)] = v
            assigned.add(str(name_tok))
            if isinstance(v, Ref) and isinstance(v.source, int) and not v.transpose:
                body.let_names.setdefault(v.source, []).append(str(name_tok))
        if not assigned & set(carried):
            raise TypeCheckError("a loop's do assigns none of its variables: it would never change",
                                 expected=", ".join(carried), span=self.src.span(body_tree),
                                 hint=f"e.g. do {carried[0]} = ...")
        nexts, kinds = [], []
        for name, ref, b in zip(carried, inits, init_tree.children):
            nxt = benv[name]
            if not isinstance(nxt, Ref):
                raise TypeCheckError(f"loop variable {name!r} must stay a matrix, vector or scalar",
                                     got=describe(nxt), span=self.src.span(body_tree))
            before, after = self.kind_of(ref), body.kind_of(nxt)
            known = [k for k in (before, self.kinds[name], after) if k != "any"]
            if len(set(known)) > 1:
                raise TypeCheckError(f"loop variable {name!r} is a {known[0]} before an iteration "
                                     f"and a {known[-1]} after it", span=self.src.span(body_tree),
                                     hint="a carried variable keeps its kind from one iteration "
                                          "to the next")
            if known and before == "any":
                self.require(ref, known[0], b, f"loop variable {name!r}")
            nexts.append(nxt)
            kinds.append(known[0] if known else "any")
        stop, limit = self._stop(stop_tree, body, benv, carried, env)
        used = _sources(body.steps, nexts, stop)
        caps = tuple((n, r) for n, r in captures.items() if n in used)
        loop = Loop(tuple(carried), tuple(body.steps), tuple(nexts), caps,
                    {n: self.kinds[n] for n in [c for c, _ in caps] + carried},
                    {i: tuple(n) for i, n in body.let_names.items()},
                    {n: labels[n] for n, _ in caps if n in labels}, stop, limit)
        i = self.new_index(tree)
        self.steps.append(Step(i, "loop", tuple(inits), kind="loop", span=self.src.span(tree),
                               loop=loop))
        outs = {}
        for k, (name, kind) in enumerate(zip(carried, kinds)):
            j = self.new_index(tree)
            self.steps.append(Step(j, "loop_value", (Ref(i),), k=k, kind=kind, loop=loop,
                                   span=self.src.span(tree)))
            self.let_names.setdefault(j, []).append(name)
            outs[name] = Ref(j)
        return self.visit(result_tree, {**env, **outs})

    def _stop(self, tree, body, benv, carried, env):
        """(Stop, limit): ``until COND [limit N]`` or ``repeat N``."""
        text = self.src.text[tree.meta.start_pos:tree.meta.end_pos]
        if tree.data == "repeat":
            return Stop("repeat", (self._whole(tree.children[0], env, "repeat", 0),), text), None
        cond, limit = tree.children
        stop = self._condition(cond, body, benv, carried)
        if limit is not None:
            limit = self._whole(limit, env, "limit", 1)
        return stop, limit

    def _condition(self, t, body, benv, carried) -> Stop:
        text = self.src.text[t.meta.start_pos:t.meta.end_pos] if not t.meta.empty else ""
        if t.data in ("or_", "and_"):
            return Stop(t.data[:-1], tuple(self._condition(c, body, benv, carried)
                                           for c in t.children), text)
        if t.data == "compare":
            left, op, right = t.children
            sides = tuple(body.scalar(s, benv, "a loop condition's comparison") for s in (left, right))
            return Stop("compare", (sides[0], str(op), sides[1]), text)
        if t.data == "call" and str(t.children[0]) in ("unchanged", "empty"):
            word = str(t.children[0])
            pos, kw, params = self._arguments(t)
            if kw or params or len(pos) != 1:
                raise ArityError(f"{word}() takes one name", expected=f"{word}(x)",
                                 span=self.src.span(t))
            if word == "unchanged":
                a = pos[0]
                if not (isinstance(a, Tree) and a.data == "name" and str(a.children[0]) in carried):
                    raise TypeCheckError("unchanged() takes a loop variable: the loop stops when "
                                         "an iteration leaves it as it was", expected=", ".join(carried),
                                         span=self.src.span(a))
                return Stop("unchanged", (carried.index(str(a.children[0])),), text)
            ref = body.value(pos[0], benv, "empty()")
            body.require(ref, "array", pos[0], "empty()")
            return Stop("empty", (ref,), text)
        raise TypeCheckError("a loop stops on " + _CONDITIONS, span=self.src.span(t),
                             hint="until unchanged(d), until empty(frontier), until err < tol; "
                                  "or repeat 10")


    # -- graphs calling graphs ----------------------------------------------------------

    def inline(self, g: GraphDef, tree, pos, kw, env) -> Ref:
        """A graph defined above, called inside this one: its steps, on these operands."""
        if kw or len(pos) != len(g.operands):
            raise ArityError(f"graph {g.name!r} takes {len(g.operands)} operand(s)",
                             expected=f"{g.name}({', '.join(g.operands)})", got=f"{len(pos)}",
                             span=self.src.span(tree))
        args = {}
        for t, o in zip(pos, g.operands):
            r = self.value(t, env, f"{g.name}()")
            want = g.kinds[o]
            self.require(r, {"any": "array"}.get(want, want), t, f"{g.name}()'s {o}")
            args[o] = r
        moved: dict[int, Ref] = {}
        loops: dict = {}

        def remap(x):
            if isinstance(x, MaskRef):
                return MaskRef(remap(x.ref), x.structural, x.complement)
            if not isinstance(x, Ref):
                return x
            base = args[x.source] if isinstance(x.source, str) else moved[x.source]
            return Ref(base.source, base.transpose != x.transpose)
        for s in g.steps:
            fields = {f: remap(getattr(s, f)) for f in ("mask", "out", "rows", "cols", "k", "at")}
            if s.bound is not None:
                fields["bound"] = (s.bound[0], remap(s.bound[1]))
            if s.loop is not None:
                fields["loop"] = loops.setdefault(id(s.loop), remap_loop(s.loop, remap))
            fields.update(algebra=s.algebra, selector=s.selector, accum=s.accum,
                          replace=s.replace, dtype=s.dtype, compensated=s.compensated)
            fields = {k: v for k, v in fields.items() if v is not None}
            inputs = [remap(r) if isinstance(r, Ref) else r for r in s.inputs]
            kind = s.kind
            key = (s.operation, tuple(inputs), kind, tuple(sorted(
                (k, id(v) if isinstance(v, (Op, Monoid, Semiring)) else v) for k, v in fields.items())))
            hit = self.memo.get(key)
            if hit is None:
                hit = self.new_index(tree)
                self.steps.append(Step(hit, s.operation, tuple(inputs), kind=kind,
                                       span=self.src.span(tree), **fields))
                self.memo[key] = hit
            moved[s.index] = Ref(hit)
        return remap(g.result)


def _sources(steps, nexts, stop) -> set:
    """The string sources (operands, captures, carried names) a loop body reads."""
    out = set()

    def add(x):
        if isinstance(x, MaskRef):
            add(x.ref)
        elif isinstance(x, Ref) and isinstance(x.source, str):
            out.add(x.source)
        elif isinstance(x, Stop):
            for a in x.args:
                add(a)
    for s in steps:
        for x in (*s.inputs, s.mask, s.out, s.rows, s.cols, s.k, s.at,
                  s.bound[1] if s.bound else None):
            add(x)
        if s.loop is not None and s.operation == "loop":
            for _, r in s.loop.captures:
                add(r)
            add(s.loop.limit)
            if s.loop.stop.kind == "repeat":
                add(s.loop.stop.args[0])
    for x in (*nexts, stop):
        add(x)
    return out


def remap_loop(loop: Loop, remap) -> Loop:
    """The loop of a graph called inside another: its outer references moved by ``remap``."""
    from dataclasses import replace
    stop = loop.stop
    if stop.kind == "repeat":
        stop = Stop("repeat", (remap(stop.args[0]),), stop.text)
    return replace(loop, captures=tuple((n, remap(r)) for n, r in loop.captures),
                   limit=remap(loop.limit), stop=stop)


def graph_defaults(builder, param_trees) -> dict:
    """``graph g(A; alpha = 0.85, tol)``: parameter -> its default (a number) or None."""
    out = {}
    for p in param_trees:
        name, default = p.children
        value = None
        if default is not None:
            value = builder.visit(default, {})
            if not isinstance(value, float):
                raise TypeCheckError(f"the default of parameter {str(name)!r} must be a number",
                                     got=describe(value), span=builder.src.span(default))
        out[str(name)] = value
    return out


__all__ = ["LoopMixin", "remap_loop", "graph_defaults"]
