"""``pairwise_distances`` and ``explain``: the user-facing entry points for metrics."""
from __future__ import annotations

import functools
from typing import Callable

from . import ir, metrics
from .api import Program, compile
from .errors import InputError, TypeCheckError
from .runtime import run
from .explain import Explanation

_ROLES = dict(metrics.ROLES)


@functools.lru_cache(maxsize=256)
def _metric_program(name: str, params: tuple) -> Program:
    expr = metrics.get(name).expression(**{k: v for k, _, v in params})
    return compile(expr, _ROLES)


def metric_program(metric, **params) -> Program:
    """The compiled program of a metric given by name, callable or expression."""
    if isinstance(metric, str):
        m = metrics.get(metric)
        try:  # keyed by type too: p=True must not hit the entry of p=1 (True == 1)
            key = tuple(sorted((k, type(v), v) for k, v in params.items()))
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
                       ensure_all_finite=True, **params):
    """Distances between the rows of X and the rows of Y (or of X), shaped (n_X, n_Y).

    Inputs: SciPy sparse (csr/csc/coo, matrix or array classes), NumPy dense,
    or CuPy arrays (the result then stays on the GPU). Explicit zeros are data
    (the value 0), so they are dropped before the run. ``strategy`` forces a
    CUDA kernel strategy ("gather", "scatter", "dense"; default: chosen from
    cheap statistics of the inputs, see docs/cuda.md). ``ensure_all_finite``
    (True, False, "allow-nan") and the refusal of empty inputs follow
    scikit-learn (docs/inputs.md).
    """
    program = metric_program(metric, **params)
    return run(program.plan, {"A": X, "B": X if Y is None else Y}, backend=backend,
               working_memory=working_memory, dtype=dtype, drop_zeros=True, strategy=strategy,
               ensure_all_finite=ensure_all_finite, labels={"A": "X", "B": "X" if Y is None else "Y"},
               ensure_non_empty=True)


def explain(metric, **params) -> Explanation:
    """The compiler's account of a metric (by name) or any expression."""
    if isinstance(metric, str):
        m = metrics.get(metric)
        title = f"{m.name}" + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        return Explanation.from_plan(metric_program(metric, **params).plan, title)
    if isinstance(metric, ir.Node) and not params:
        return Explanation.from_plan(compile(metric).plan)
    return Explanation.from_plan(metric_program(metric, **params).plan)
