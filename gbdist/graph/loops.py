"""Running the loops of graph definitions, and the vectors they start from.

A ``loop`` step (:class:`gbdist.front.graphdef.Loop`, checked when it was defined) holds
its body as steps of its own. :func:`run_loop` binds the carried variables to their
initial values and the body's outer names to the values they refer to, runs the body
(:func:`gbdist.graph.program.run_steps`, the same interpreter as the definition's own
steps), checks that each carried variable kept its kind, shape and dtype, and tests the
stop condition after each iteration:

* ``until unchanged(x)``: the iteration left x as it was (same pattern and values);
* ``until empty(x)``: x has no stored entry;
* ``until a < b`` (``<= > >= == !=``): scalars computed by the body, numbers, operands;
* ``or`` / ``and`` of those; ``repeat N``: exactly N iterations (N >= 0).

An ``until`` loop runs at most ``limit N`` iterations, by default the largest dimension
of the matrices and vectors it reads, plus one (enough for BFS, Bellman-Ford and label
propagation, whose rounds are bounded by the number of vertices); past it,
:class:`LoopLimitError`. Nothing is evaluated from text: conditions are the checked
:class:`~gbdist.front.graphdef.Stop` trees, comparisons the functions of :mod:`operator`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, TypeCheckError
from .objects import Matrix, Vector

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


class LoopLimitError(InputError):
    """An ``until`` loop of a graph definition ran its limit of iterations without stopping."""


@dataclass(frozen=True)
class LoopRun:
    """What a loop step computed: the carried variables' final values, how many iterations
    ran, and the values of the last iteration's body steps (for ``gr.trace``)."""

    state: tuple
    iterations: int
    last: tuple = ()


def run_loop(step, get, run_steps, backend) -> LoopRun:
    loop = step.loop
    state = [get(r) for r in step.inputs]
    outer = {name: get(ref) for name, ref in loop.captures}
    repeat = loop.stop.kind == "repeat"
    if repeat:
        limit = _whole(get(loop.stop.args[0]), "repeat", 0)
    elif loop.limit is None:
        dims = [max(v.shape) for v in (*outer.values(), *state)
                if isinstance(v, (Matrix, Vector)) and v.shape and max(v.shape)]
        limit = max(dims, default=0) + 1
    else:
        limit = _whole(get(loop.limit), "limit", 1)
    iterations, last = 0, ()
    while iterations < limit:
        env = {**outer, **dict(zip(loop.carried, state))}
        last, bget = run_steps(loop.body, env, backend)
        new = [bget(r) for r in loop.next]
        iterations += 1
        _check_state(loop, state, new, iterations)
        stop = not repeat and _stopped(loop.stop, state, new, bget)
        state = new
        if stop:
            return LoopRun(tuple(state), iterations, tuple(last))
    if repeat:
        return LoopRun(tuple(state), iterations, tuple(last))
    raise LoopLimitError(
        f"the loop over {', '.join(loop.carried)} did not stop within {limit} iterations",
        expected=f"until {loop.stop.text} within the limit"
                 + (" (by default the largest dimension + 1)" if loop.limit is None else ""),
        got=f"{loop.stop.text} still false after iteration {limit}",
        hint="raise it with `limit N` (Bellman-Ford past n rounds: a negative cycle)")


def _stopped(stop, old, new, get) -> bool:
    if stop.kind == "unchanged":
        k = stop.args[0]
        a, b = old[k], new[k]
        if isinstance(a, (Matrix, Vector)):
            return bool(a.isequal(b))
        return bool(_scalar(a) == _scalar(b))
    if stop.kind == "empty":
        return get(stop.args[0]).nvals == 0
    if stop.kind == "compare":
        left, op, right = stop.args
        return bool(_COMPARE[op](_scalar(get(left)), _scalar(get(right))))
    parts = (_stopped(s, old, new, get) for s in stop.args)
    return any(parts) if stop.kind == "or" else all(parts)


def _describe(v) -> tuple:
    if isinstance(v, Matrix):
        return "matrix", v.shape, np.dtype(v.dtype)
    if isinstance(v, Vector):
        return "vector", v.shape, np.dtype(v.dtype)
    return "scalar", (), np.asarray(_scalar(v)).dtype


def _check_state(loop, old, new, iteration: int) -> None:
    """Each carried variable keeps its kind, shape and dtype from one iteration to the next."""
    for name, a, b in zip(loop.carried, old, new):
        (ka, sa, da), (kb, sb, db) = _describe(a), _describe(b)
        if (ka, sa) != (kb, sb) or (da != db and ka != "scalar"):
            what = f"a {ka} {sa} of {da}" if ka != "scalar" else f"a scalar of {da}"
            now = f"a {kb} {sb} of {db}" if kb != "scalar" else f"a scalar of {db}"
            raise TypeCheckError(
                f"loop variable {name!r} changes in iteration {iteration}: it was {what}, "
                f"the body makes it {now}",
                hint=f"give the step that computes it dtype={da}" if (ka, sa) == (kb, sb)
                else "a carried variable keeps its kind and shape")


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def _whole(v, what: str, low: int) -> int:
    v = _scalar(v)
    if isinstance(v, bool) or not float(v).is_integer() or v < low:
        raise InputError(f"{what} needs a whole number >= {low}", got=repr(v))
    return int(v)


def make_vector(s, get) -> Vector:
    """``vector(A, value [, at=i])`` (every entry, or one) and ``ids(A)``, A's rows long,
    where A lives."""
    A = get(s.inputs[0])
    n = A.shape[0]
    device = bool(getattr(A, "on_device", False))
    if s.operation == "ids":
        dtype = np.dtype(s.dtype or np.int64)
        return Vector.from_coo(np.arange(n), np.arange(n), n, dtype=dtype, on_device=device)
    value = _scalar(get(s.inputs[1]))
    dtype = np.dtype(s.dtype) if s.dtype else np.asarray(value).dtype
    if s.at is None:
        return Vector.from_coo(np.arange(n), np.full(n, value, dtype=dtype), n, dtype=dtype,
                               on_device=device)
    i = _scalar(get(s.at))
    if isinstance(i, bool) or not float(i).is_integer() or not 0 <= i < n:
        raise InputError("vector(..., at=i): i is not a row of the matrix",
                         expected=f"a whole number in [0, {n})", got=repr(i))
    return Vector.from_coo([int(i)], np.asarray([value], dtype=dtype), n, dtype=dtype,
                           on_device=device)


__all__ = ["run_loop", "make_vector", "LoopRun", "LoopLimitError"]
