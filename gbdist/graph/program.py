"""Running graph definitions written in the text language: ``gr.run`` and ``gr.trace``.

    gb.define("graph triangles(A) = let L = select(A, tril, -1) in "
              "reduce_scalar(mxm(L, L.T, plus_pair, mask=L.S), plus)")
    gr.run("triangles", A)          # an int-valued NumPy scalar
    print(gr.trace("triangles", A)) # each step with the decision it actually took

A definition is checked when it is defined (:mod:`gbdist.front.graphdef`: a list of
steps). This module is the interpreter: it walks the steps in order and calls the
public operations of :mod:`gbdist.graph` with the step's inputs, algebra and keywords,
each step once (``let`` bindings and repeated sub-expressions are one step); a loop step
runs its body's steps once per iteration (:mod:`.loops`). Nothing of
the user's text is evaluated: the steps hold resolved algebra objects and references.
"""
from __future__ import annotations

import numpy as np

from ..errors import ArityError, InputError, ParameterError, UnknownNameError
from ..front.graph_explain import GraphExplanation, explain_graph
from ..front.graphdef import GraphDef, MaskRef, Ref
from ..front.library import find_graph, graph_names
from ..front.syntax import suggest
from . import indexing, operations as ops, reductions, structure
from .union import ewise_union
from .loops import make_vector, run_loop
from .objects import Matrix, Vector


def _graph(graph) -> GraphDef:
    if isinstance(graph, GraphDef):
        return graph
    if isinstance(graph, str):
        g = find_graph(graph)
        if g is not None:
            return g
        raise UnknownNameError(f"unknown graph definition {graph!r}",
                               hint=suggest(graph, graph_names()) or
                               "define one with gb.define('graph NAME(A) = ...')")
    raise ParameterError("run() takes a graph definition or its name", got=type(graph).__name__)


def _bind(g: GraphDef, args, kwargs) -> dict:
    if len(args) > len(g.operands):
        raise ArityError(f"graph {g.name!r} takes {len(g.operands)} operand(s)",
                         expected=f"{g.name}({', '.join(g.operands)})", got=f"{len(args)}")
    values = dict(zip(g.operands, args))
    for k, v in kwargs.items():
        if k not in g.operands:
            raise UnknownNameError(f"graph {g.name!r} has no operand {k!r}",
                                   expected=", ".join(g.operands), hint=suggest(k, g.operands))
        if k in values:
            raise ArityError(f"operand {k!r} of graph {g.name!r} is given twice")
        values[k] = v
    for o, default in g.defaults.items():
        if o not in values and default is not None:
            values[o] = default
    missing = [o for o in g.operands if o not in values]
    if missing:
        raise ArityError(f"graph {g.name!r} needs the operand {missing[0]!r}",
                         expected=f"{g.name}({', '.join(g.operands)})")
    return {o: _wrap(values[o], g.kinds[o], o, g.name) for o in g.operands}


def _wrap(x, kind: str, name: str, graph: str):
    """An operand as the operations take it: gb.Matrix / gb.Vector (SciPy, CuPy and NumPy
    inputs wrapped as graphs, fill 'absent'), an index array, or a number."""
    if kind == "index" or isinstance(x, (Matrix, Vector)):
        return x
    ndim = getattr(x, "ndim", None) if not isinstance(x, (int, float)) else 0
    if kind in ("scalar", "any") and ndim == 0 and not isinstance(x, bool):
        return x
    if kind == "scalar":
        raise InputError(f"operand {name!r} of graph {graph!r} is a number",
                         got=type(x).__name__)
    if kind == "vector" or (kind == "any" and ndim == 1):
        return Vector(x)
    if kind == "matrix" or (kind == "any" and ndim == 2):
        return Matrix(x)
    raise InputError(f"operand {name!r} of graph {graph!r} must be a matrix, a vector or a number",
                     got=type(x).__name__)


def run(graph, /, *operands, backend: str = "auto", **named):
    """Run a graph definition (a name or ``defs.graphs[name]``) on its operands, given in
    order or by name; ``backend`` goes to every operation. Returns the last step's result
    (a gb.Matrix, gb.Vector or NumPy scalar, with ``.decision`` where it has one)."""
    return _execute(_graph(graph), operands, named, backend)[0]


def trace(graph, /, *operands, backend: str = "auto", **named) -> GraphExplanation:
    """:func:`run`, keeping each step's result: a :class:`GraphExplanation` whose steps show
    the decision each operation took (``result.decision``) and the result's dtype; the
    final result is ``.result``."""
    g = _graph(graph)
    result, values, env = _execute(g, operands, named, backend)
    fills = {o: getattr(env[o], "fill", None) for o in g.operands
             if g.kinds[o] not in ("index", "scalar")}
    return explain_graph(g, fills).with_run(values, result)


def _execute(g: GraphDef, operands, named, backend):
    env = _bind(g, operands, named)
    values, get = run_steps(g.steps, env, backend)
    return get(g.result), values, env


def run_steps(steps, env: dict, backend):
    """Run ``steps`` in order over ``env`` (string source -> value): (their values, the
    getter of a Ref). A loop runs its body through this function once per iteration."""
    values: list = []

    def get(ref):
        if isinstance(ref, MaskRef):
            m = get(ref.ref)
            mask = m.S if ref.structural else m.V
            return ~mask if ref.complement else mask
        if not isinstance(ref, Ref):
            return ref  # a number
        v = env[ref.source] if isinstance(ref.source, str) else values[ref.source]
        if ref.transpose:
            return v.T if isinstance(v, Matrix) else Matrix(v).T
        return v

    for s in steps:
        if s.operation == "loop":
            values.append(run_loop(s, get, run_steps, backend))
        elif s.operation == "loop_value":
            values.append(get(s.inputs[0]).state[s.k])
        elif s.operation in ("vector", "ids"):
            values.append(make_vector(s, get))
        else:
            values.append(_step(s, get, backend))
    return values, get


def _step(s, get, backend):
    kw = {}
    if s.mask is not None:
        kw["mask"] = get(s.mask)
    if s.accum is not None:
        kw["accum"] = s.accum
    if s.replace:
        kw["replace"] = True
    if s.out is not None:
        kw["out"] = get(s.out).dup()  # the definition is functional: the operand is not changed
    if s.dtype is not None:
        kw["dtype"] = np.dtype(s.dtype)
    if s.compensated:
        kw["compensated"] = True
    op, inputs = s.operation, [get(r) for r in s.inputs]
    if op in _MORE:
        return _MORE[op](s, inputs, dict(kw, backend=backend) if op == "ewise_union" else kw, get)
    if op in ("mxm", "mxv", "vxm", "ewise_add", "ewise_mult"):
        return getattr(ops, op)(*inputs, s.algebra, backend=backend, **kw)
    if op == "apply":
        if s.bound is not None:
            kw[s.bound[0]] = _scalar(get(s.bound[1]))
        return ops.apply(s.algebra, inputs[0], backend=backend, **kw)
    if op == "select":
        k = 0 if s.k is None else _scalar(get(s.k))
        if s.selector in ("tril", "triu", "diag", "offdiag"):
            k = int(k)
        selector = s.algebra if s.algebra is not None else s.selector  # a user index-unary op
        return ops.select(inputs[0], selector, k, backend=backend, **kw)
    if op in ("reduce_rows", "reduce_cols", "reduce_scalar"):
        return getattr(ops, op)(inputs[0], s.algebra, backend=backend, **kw)
    rows = None if s.rows is None else get(s.rows)
    cols = None if s.cols is None else get(s.cols)
    if op == "extract" and s.selector in ("row", "col"):  # A[i, :], A[:, j], A[i, c]
        one, other = (rows, cols) if s.selector == "row" else (cols, rows)
        return indexing.extract_line(inputs[0], s.selector, _scalar(one), other)
    if op == "extract":
        return indexing.extract(inputs[0], rows, cols, backend=backend, **kw)
    C, value = inputs
    C = C.dup() if isinstance(C, (Matrix, Vector)) else (
        Vector(C) if getattr(C, "ndim", 2) == 1 else Matrix(C))
    value = _scalar(value) if np.ndim(value) == 0 and not isinstance(value, (Matrix, Vector)) else value
    write = indexing.subassign if op == "subassign" else indexing.assign
    return write(C, value, rows, cols, backend=backend, **kw)


def _union(s, inputs, kw, get):
    A, B, a, b = inputs
    return ewise_union(A, B, s.algebra, _scalar(a), _scalar(b), **kw)


def _diag(s, inputs, kw, get):
    k = 0 if s.k is None else _scalar(get(s.k))
    if isinstance(k, bool) or not float(k).is_integer():
        raise InputError("diag(x, k): k is a whole number", got=repr(k))
    return structure.diag(_as_array(inputs[0]), int(k))


def _concat(s, inputs, kw, get):
    tiles = [_as_array(x) for x in inputs]
    if isinstance(tiles[0], Vector):
        return structure.concat(tiles)
    return structure.concat([tiles] if s.selector == "cols" else [[t] for t in tiles])


def _resize(s, inputs, kw, get):
    A, *dims = inputs
    return structure.resize(_as_array(A).dup(), *(int(_scalar(d)) for d in dims))


def _as_array(x):
    if isinstance(x, (Matrix, Vector)):
        return x
    return Vector(x) if getattr(x, "ndim", 2) == 1 else Matrix(x)


_MORE = {
    "ewise_union": _union,
    "count": lambda s, ins, kw, get: reductions.count(ins[0], s.selector),
    "argmin": lambda s, ins, kw, get: reductions.argmin(ins[0], s.selector),
    "argmax": lambda s, ins, kw, get: reductions.argmax(ins[0], s.selector),
    "kronecker": lambda s, ins, kw, get: structure.kronecker(ins[0], ins[1], s.algebra, **kw),
    "diag": _diag,
    "concat": _concat,
    "resize": _resize,
}


def _scalar(v):
    """A bound scalar: a number of the text, or a reduce_scalar result (NumPy/CuPy scalar)."""
    return v.item() if hasattr(v, "item") else v


__all__ = ["run", "trace"]
