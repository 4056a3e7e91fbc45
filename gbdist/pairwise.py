"""``pairwise_distances`` and ``explain``: the user-facing entry points for metrics."""
from __future__ import annotations

import functools
from typing import Callable

from . import ir, metrics
from .api import Program, compile
from .errors import InputError, TypeCheckError
from .explain import Explanation

_ROLES = dict(metrics.ROLES)


@functools.lru_cache(maxsize=256)
def _metric_program(name: str, params: tuple) -> Program:
    expr = metrics.get(name).expression(**dict(params))
    return compile(expr, _ROLES)


def metric_program(metric, **params) -> Program:
    """The compiled program of a metric given by name, callable or expression."""
    if isinstance(metric, str):
        m = metrics.get(metric)
        for k, v in params.items():
            if isinstance(v, bool):  # True == 1.0: refused before the cache can confuse them
                raise InputError(f"parameter {k!r} of {m.name!r} must be a number, not a bool",
                                 got=repr(v))
        try:
            key = tuple(sorted(params.items()))
            hash(key)
        except TypeError:
            raise InputError("metric parameters must be numbers", got=repr(params)) from None
        return _metric_program(m.name, key)
    if isinstance(metric, ir.Node):
        if params:
            raise InputError("parameters are only accepted with a named metric", got=", ".join(params))
        return compile(metric, _ROLES)
    if callable(metric):
        A, B = ir.Matrix("A"), ir.Matrix("B")
        expr = metric(A, B, **params)
        if not isinstance(expr, ir.Node):
            raise TypeCheckError("a metric callable must return a gbdist expression",
                                 got=type(expr).__name__,
                                 hint="e.g. lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff)")
        return compile(expr, _ROLES)
    raise InputError("metric must be a name, a callable (A, B) -> expression, or an expression",
                     got=type(metric).__name__)


def pairwise_distances(X, Y=None, metric: str | Callable = "euclidean", backend: str = "auto",
                       working_memory: int | None = None, dtype=None, strategy: str = "auto",
                       **params):
    """Distances between the rows of X and the rows of Y (or of X), shaped (n_X, n_Y).

    Inputs: SciPy sparse (csr/csc/coo, matrix or array classes), NumPy dense,
    or CuPy arrays (the result then stays on the GPU). Explicit zeros are data
    (the value 0), so they are dropped before the run. ``strategy`` forces a
    CUDA kernel strategy ("gather", "scatter", "dense"; default: chosen from
    cheap statistics of the inputs, see docs/cuda.md).
    """
    program = metric_program(metric, **params)
    Yv = X if Y is None else Y
    swapped = _orientation(program, Y is None)
    needed = set(program.inputs)
    inputs = {k: v for k, v in (("A", X), ("B", Yv)) if k in needed}
    out = program(**inputs, backend=backend, working_memory=working_memory,
                  dtype=dtype, drop_zeros=True, strategy=strategy)
    return _promised_shape(out, program.plan.output_kind, swapped, _nrows(X), _nrows(Yv))


def _nrows(M) -> int:
    shape = getattr(M, "shape", None)
    if shape is None:
        import numpy as np
        shape = np.shape(M)
    return int(shape[0]) if len(shape) else 1


def _orientation(program: Program, same: bool) -> bool:
    """False when the result's rows follow A (X) and its columns B (Y); True when the
    metric was written the other way round (``mxm(B, A.T)``); a typed error otherwise."""
    rows, cols = set(), set()
    for step in program.plan.steps:
        for side, (name, _flipped) in step.sides:
            name = "A" if same else name
            (rows if side == "left" else cols).add(name)
    if rows <= {"A"} and cols <= {"B"} or same:
        return False
    if rows <= {"B"} and cols <= {"A"}:
        return True
    raise TypeCheckError(
        "a metric must give one value per (row of X, row of Y)",
        expected="results whose rows follow A (X) and whose columns follow B (Y), e.g. mxm(A, B.T)",
        got=f"rows indexed by {', '.join(sorted(rows)) or 'nothing'} and columns by "
            f"{', '.join(sorted(cols)) or 'nothing'}",
        hint="write products as mxm(A, B.T, ...) and reduce(A, ...) for X's rows, reduce(B, ...) for Y's")


def _promised_shape(out, kind: str, swapped: bool, nx: int, ny: int):
    """The result shaped (n_X, n_Y): transposed if the metric was written as
    mxm(B, A.T); a value per row of X (or of Y), or one scalar, broadcast."""
    from .runtime import is_cupy
    if is_cupy(out):
        import cupy as xp
    else:
        import numpy as xp
    out = xp.asarray(out)
    if kind == "matrix":
        out = out.T if swapped else out
        if out.shape != (nx, ny):
            raise TypeCheckError("a metric's result does not have one value per (row of X, row of Y)",
                                 expected=f"shape ({nx}, {ny})", got=f"shape {tuple(out.shape)}")
        return xp.ascontiguousarray(out)
    if kind in ("col", "row"):
        by_rows = (kind == "col") != swapped
        col = out.reshape(-1, 1) if by_rows else out.reshape(1, -1)
        return xp.ascontiguousarray(xp.broadcast_to(col, (nx, ny)))
    return xp.full((nx, ny), out.reshape(()), dtype=out.dtype)


def explain(metric, **params) -> Explanation:
    """The compiler's account of a metric (by name) or any expression."""
    if isinstance(metric, str):
        m = metrics.get(metric)
        title = f"{m.name}" + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        return Explanation.from_plan(metric_program(metric, **params).plan, title)
    if isinstance(metric, ir.Node) and not params:
        return Explanation.from_plan(compile(metric).plan)
    return Explanation.from_plan(metric_program(metric, **params).plan)
