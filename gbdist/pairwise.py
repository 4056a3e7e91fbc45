"""``pairwise_distances`` and ``explain``: the user-facing entry points for metrics."""
from __future__ import annotations

import difflib
import functools
import numbers
from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.sparse as sps

from .compiler import ir
from . import names, runtime
from .front import colparams, library
from .front.library import find_graph, find_metric, get_metric, graph_names
from .front.api import Program, compile
from .inputs import refuse_graph_operand
from .errors import (
    GbdistError, InputError, MetricTypeError, ParameterError, TypeCheckError, UnknownNameError)
from .runtime import run
from .runtime.prepared import Prepared
from .compiler.symmetry import is_symmetric

if TYPE_CHECKING:
    from .compiler.explain import Explanation

_ROLES = dict(names.ROLES)


@functools.lru_cache(maxsize=256)
def _metric_program(name: str, params: tuple, generation: int) -> Program:
    """Keyed on the registry's generation: a redefined metric is compiled anew. A built-in
    metric's plan is read from its stored record when there is one (no sympy, no parsing:
    :func:`gbdist.front.library.builtin_plan`)."""
    m = get_metric(name)
    if library.is_builtin(m):
        return Program(library.builtin_plan(m.name, params, _ROLES, compile))
    expr = m.expression(**{k: v for k, _, v in params})
    return compile(expr, _ROLES)


runtime.register_cache(_metric_program.cache_clear)


def metric_program(metric, **params) -> Program:
    """The compiled program of a metric given by name, callable or expression."""
    if isinstance(metric, str):
        params, _ = colparams.split(params)  # vectors: column operands, keyed by name
        m = get_metric(colparams.route(get_metric(metric).name, params))
        for k, v in params.items():
            if isinstance(v, bool):  # True == 1.0: refused before the cache can confuse them
                raise InputError(f"parameter {k!r} of {m.name!r} must be a number, not a bool",
                                 got=repr(v))
        try:  # keyed by type too: p=1 (int) and p=1.0 stay apart
            key = tuple(sorted((k, type(v), v) for k, v in params.items()))
            hash(key)
        except TypeError:
            raise InputError("metric parameters must be numbers", got=repr(params)) from None
        return _metric_program(m.name, key, names.generation())
    if isinstance(metric, ir.Node):
        if params and not all(colparams.is_vector(v) for v in params.values()):
            raise InputError("parameters are only accepted with a named metric", got=", ".join(params))
        return compile(metric, _ROLES)
    if callable(metric):
        A, B = ir.Matrix("A"), ir.Matrix("B")
        hint = ("gbdist calls a metric callable once, on symbolic matrices: "
                "lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff); a row function "
                "f(x, y) -> float (scikit-learn, SciPy) is not supported")
        try:
            expr = metric(A, B, **params)
        except GbdistError:
            raise
        except Exception as e:  # noqa: BLE001 — a row function failing on symbolic input
            label = getattr(metric, "__name__", type(metric).__name__)
            raise MetricTypeError(
                f"metric={label} looks like a row function f(u, v) -> float (scikit-learn/SciPy "
                "style): gbdist calls a metric callable once, with the symbolic matrices A and B, "
                "and it failed there",
                expected="a function of the whole matrices: lambda A, B: gb.mxm(A, B.T, "
                         "gb.semiring(mul, add))",
                got=f"{type(e).__name__}: {e}",
                hint="write the per-column term as an op and sum it: gb.semiring(gb.op('term', "
                     "lambda x, y: abs(x - y)), gb.ops.plus); or use a named metric "
                     "(gb.metric_names()); or keep the row function with "
                     "sklearn.metrics.pairwise_distances") from e
        if not isinstance(expr, ir.Node):
            raise MetricTypeError("a metric callable must return a gbdist expression",
                                  got=type(expr).__name__, hint=hint)
        return compile(expr, _ROLES)
    from .front.describe import not_a_metric
    raise not_a_metric(metric, "metric must be a name, a callable (A, B) -> expression, or an "
                               "expression built from gb.matrices(...)")


def as_input(x, name: str):
    """Sparse, NumPy and CuPy inputs unchanged; anything else (lists, tuples of rows,
    DataFrames) through ``np.asarray``, so a list of float32 rows stays float32 as in
    scikit-learn. A ``gb.Matrix`` / ``gb.Vector`` is an InputError naming the conversion
    (:func:`gbdist.inputs.refuse_graph_operand`)."""
    refuse_graph_operand(x, name)
    if (x is None or sps.issparse(x) or isinstance(x, (np.ndarray, Prepared))
            or runtime.is_cupy(x)):
        return x
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as e:
        raise InputError(f"{name} cannot be read as a 2-D array", got=str(e).splitlines()[0],
                         hint="pass a NumPy array, a SciPy sparse matrix or equal-length rows"
                         ) from None


def check_n_jobs(n_jobs) -> None:
    """``n_jobs`` as scikit-learn accepts it (an integer or None); gbdist ignores the value."""
    if n_jobs is not None and (isinstance(n_jobs, (bool, np.bool_))
                               or not isinstance(n_jobs, numbers.Integral)):
        raise ParameterError("The 'n_jobs' parameter must be an int or None.", got=repr(n_jobs),
                             hint="gbdist ignores n_jobs: the backend chooses its own threads")


def split_finite_kw(kwds: dict) -> tuple[dict, dict]:
    """(metric parameters, the input-check keyword): scikit-learn's ``ensure_all_finite``
    and its older name ``force_all_finite`` are not metric parameters."""
    params = dict(kwds)
    finite = params.pop("ensure_all_finite", None)
    old = params.pop("force_all_finite", "deprecated")
    if finite is None and old != "deprecated":
        finite = old
    if finite is not None and finite not in (True, False, "allow-nan"):
        raise ParameterError("ensure_all_finite must be True, False or 'allow-nan'",
                             got=repr(finite))
    return params, ({} if finite is None else {"ensure_all_finite": finite})


def precomputed_distances(X, Y=None, ensure_all_finite=True,
                          whom: str = "precomputed distance matrix.", square: bool = False):
    """``metric="precomputed"``: X is already the distance matrix (n_queries, n_indexed).

    Checked as scikit-learn checks it: 2-D, real, no negative values, finite unless
    ``ensure_all_finite`` says otherwise, and (with Y) as many columns as Y has rows;
    ``square`` (scikit-learn's pairwise functions, where Y omitted is X): without Y, as
    many columns as rows.
    Returned as given (dense float, or CSR with its stored entries as the distances).
    """
    X = as_input(X, "X")
    if runtime.is_cupy(X):
        X = X.get()
    if sps.issparse(X):
        D = sps.csr_matrix(X)
        if D.dtype.kind not in "biuf":
            raise InputError("a precomputed distance matrix must hold real numbers",
                             got=f"dtype {D.dtype}")
        values = D.data
    else:
        D = np.asarray(X)
        if D.dtype.kind not in "biuf":
            raise InputError("a precomputed distance matrix must hold real numbers",
                             got=f"dtype {D.dtype}")
        if D.dtype.kind != "f":
            D = D.astype(np.float64)
        values = D
    if D.ndim != 2:
        raise InputError("a precomputed distance matrix must be 2-D", got=f"shape {D.shape}")
    if D.shape[0] == 0 or D.shape[1] == 0:
        raise InputError(f"Found array with {D.shape[0]} sample(s) (shape={D.shape}) while a "
                         f"minimum of 1 is required.")
    if ensure_all_finite is not False:
        bad = np.isinf(values) if ensure_all_finite == "allow-nan" else ~np.isfinite(values)
        if bad.any():
            raise InputError("Input contains NaN or infinity in a precomputed distance matrix.",
                             hint="pass ensure_all_finite=False to allow them")
    with np.errstate(invalid="ignore"):
        if (values < 0).any():
            raise InputError(f"Negative values in data passed to {whom}",
                             hint="distances are never negative")
    if Y is not None or square:
        n = D.shape[0] if Y is None else Y.shape[0] if hasattr(Y, "shape") else len(Y)
        if D.shape[1] != n:
            raise InputError(f"Precomputed metric requires shape (n_queries, n_indexed). Got "
                             f"({D.shape[0]}, {D.shape[1]}) for {n} indexed.")
    return D


def pairwise_distances(X, Y=None, metric: str | Callable = "euclidean", *, n_jobs=None,
                       backend: str = "auto", working_memory=None, dtype=None,
                       strategy: str = "auto", **kwds):
    """Distances between the rows of X and the rows of Y (or of X), shaped (n_X, n_Y).

    scikit-learn's signature: ``pairwise_distances(X, Y=None, metric="euclidean", *,
    n_jobs=None, ensure_all_finite=None, **kwds)``; ``kwds`` are the metric's
    parameters (``p=`` for minkowski). ``n_jobs`` is accepted and ignored (the
    backend chooses its threads). ``ensure_all_finite`` (or its older name
    ``force_all_finite``) is passed on to the input check. ``metric="precomputed"``
    returns X itself after scikit-learn's checks.

    Inputs: SciPy sparse (csr/csc/coo, matrix or array classes), NumPy dense,
    lists of rows, or CuPy arrays (the result then stays on the GPU). Explicit
    zeros are data (the value 0), so they are dropped before the run.
    ``working_memory`` (MiB, as scikit-learn counts it; any positive number, or a
    string with a unit: ``"512MiB"``, ``"2GB"``) bounds the row blocks. ``strategy`` forces a CUDA kernel strategy ("gather",
    "scatter", "dense"; default: chosen from cheap statistics of the inputs, see
    docs/cuda.md). ``ensure_all_finite`` (True, False, "allow-nan") and the
    refusal of empty inputs follow scikit-learn (docs/inputs.md).
    """
    check_n_jobs(n_jobs)
    params, finite_kw = split_finite_kw(kwds)
    if isinstance(metric, str) and find_metric(metric) is get_metric("nan_euclidean"):
        params = _nan_euclidean_kw(params)
    names.check_keywords(pairwise_distances, params,  # metrc=: not a metric parameter
                         find_metric(metric) if isinstance(metric, str) else None)
    X = as_input(X, "X")
    Y = None if Y is None else as_input(Y, "Y")
    if isinstance(metric, str) and metric == "precomputed":
        return precomputed_distances(X, Y, **finite_kw, square=True,
                                     whom="`pairwise_distances`. Precomputed distance  need "
                                          "to have non-negative values.")
    budget = runtime.working_memory_bytes(working_memory)
    metric = sklearn_metric(metric, params)
    _warn_boolean(metric, params, X, Y)
    same = Y is None or Y is X
    dtype = sklearn_dtype(metric, X, Y, dtype)
    D = _pairwise(X, None if same else Y, metric, backend, budget, dtype, strategy, params,
                  finite_kw)
    if same and sklearn_name(metric) not in (None, "nan_euclidean"):  # nan_euclidean: NaN
        set_diagonal(D, 0)  # for an all-missing row; else pdist's square form, fill_diagonal
    return D


def _nan_euclidean_kw(params: dict) -> dict:
    """scikit-learn's nan_euclidean keywords: ``missing_values`` (NaN, the only one gbdist
    reads as missing) and ``copy`` (nothing is modified) are taken and dropped."""
    params = dict(params)
    mv, _ = params.pop("missing_values", np.nan), params.pop("copy", None)
    if not (isinstance(mv, (float, np.floating)) and np.isnan(mv)):
        raise ParameterError("nan_euclidean reads NaN as the missing value", got=f"missing_values={mv!r}",
                             hint="replace the missing values by np.nan first")
    return params


# --- the peers' conventions (docs/metrics.md, "Output dtypes and self-joins") ---------

# gbdist's names of the metrics scikit-learn's pairwise_distances knows (its spellings
# resolve to these); cosine as scikit-learn defines it on zero rows is cosine_sklearn
SKLEARN_METRICS = frozenset((
    "euclidean", "sqeuclidean", "manhattan", "chebyshev", "minkowski", "canberra", "braycurtis",
    "cosine_sklearn", "correlation", "hamming", "matching", "jaccard", "dice", "russellrao",
    "rogerstanimoto", "sokalsneath", "yule", "nan_euclidean", "seuclidean", "mahalanobis",
    "haversine"))
# ... and those whose result scikit-learn keeps in float32 for float32 input (its own
# euclidean_distances, cosine_distances, nan_euclidean_distances); the others go through
# SciPy or upcast, and return float64
SKLEARN_FLOAT32 = frozenset(("euclidean", "cosine_sklearn", "nan_euclidean"))
# a built-in metric whose zero-row convention differs in scikit-learn: its name there
_SKLEARN_VARIANT = {"cosine": "cosine_sklearn"}


def sklearn_name(metric) -> str | None:
    """The built-in metric a scikit-learn-shaped call names, when scikit-learn knows it."""
    if not isinstance(metric, str):
        return None
    m = find_metric(metric)
    if m is None or not library.is_builtin(m):
        return None
    return m.name if m.name in SKLEARN_METRICS else None


def sklearn_metric(metric, params=None):
    """What ``metric`` means in a scikit-learn-shaped function: the built-in ``cosine`` is
    scikit-learn's (``cosine_sklearn``: 1 against a zero row, where gbdist's is NaN). With
    column operands (``w=`` an array) it stays the weighted form SciPy defines."""
    if params and colparams.split(dict(params))[1]:
        return metric
    if isinstance(metric, str):
        m = find_metric(metric)
        if m is not None and library.is_builtin(m) and m.name in _SKLEARN_VARIANT:
            return _SKLEARN_VARIANT[m.name]
    return metric


def sklearn_dtype(metric, X, Y, dtype):
    """scikit-learn's result dtype when ``dtype`` is None: float32 only where scikit-learn
    keeps float32 input in float32, float64 for its other metrics; a metric scikit-learn
    does not know (gbdist's own, a user's), or device (CuPy) input, which scikit-learn does
    not take, keeps gbdist's rule (float32 when every input is)."""
    if dtype is not None:
        return dtype
    if any(runtime.is_cupy(m) for m in (X, Y) if m is not None):  # cupy or cupyx objects
        return None  # device input: no scikit-learn to follow; float32 stays (as cuML's)
    name = sklearn_name(metric)
    if name is None or name in SKLEARN_FLOAT32:
        return None
    return np.float64


def set_diagonal(D, value) -> None:
    """``D``'s diagonal set to ``value`` in place (NumPy or CuPy)."""
    n = min(D.shape)
    if n:
        D.reshape(-1)[:: D.shape[1] + 1][:n] = value


def mirror_upper(D) -> None:
    """Make the square ``D`` exactly symmetric in place: its upper triangle (diagonal
    included) copied onto the lower one, by blocks of rows (NumPy or CuPy; no n² temporary)."""
    xp = np
    if runtime.is_cupy(D):
        import cupy as xp
    n = D.shape[0]
    step = 1024
    for s in range(0, n, step):
        e = min(n, s + step)
        if s:
            D[s:e, :s] = D[:s, s:e].T
        block = D[s:e, s:e]  # its lower triangle from its upper one, where the array lives
        block[...] = xp.where(xp.tri(e - s, k=-1, dtype=bool), block.T, block)


_PATTERN_ONLY: dict = {}


def reads_pattern_only(expr: ir.Node) -> bool:
    """True when every operand of ``expr`` is read through ``apply(nonzero, ·)``: the
    metric sees only which entries are nonzero (jaccard, dice, russellrao), so it is a
    boolean metric in scikit-learn's sense. Decided from the expression, not the name
    (once per expression: asked on every call)."""
    hit = _PATTERN_ONLY.get(expr.key)
    if hit is None:
        if len(_PATTERN_ONLY) >= 1024:
            _PATTERN_ONLY.clear()
        hit = _PATTERN_ONLY[expr.key] = _reads_pattern_only(expr)
    return hit


def _reads_pattern_only(expr: ir.Node) -> bool:
    found = []

    def ok(n) -> bool:
        if isinstance(n, ir.Apply) and n.op.name == "nonzero":
            found.append(n)
            return True
        if isinstance(n, ir.NCols):  # the shape only
            return True
        if isinstance(n, (ir.Matrix, ir.Vector)):
            return False
        return all(ok(c) for c in n.children)

    return ok(expr) and bool(found)


def _warn_boolean(metric, params, X, Y) -> None:
    """scikit-learn's DataConversionWarning for a boolean metric on non-boolean data (gbdist
    reads the nonzero pattern, which is what scikit-learn's conversion to bool keeps)."""
    dtypes = [getattr(x, "dtype", None) for x in (X, Y) if x is not None]
    if all(dt == np.bool_ for dt in dtypes):
        return
    if not reads_pattern_only(metric_program(metric, **params).plan.expr):
        return
    import warnings
    from sklearn.exceptions import DataConversionWarning
    warnings.warn(f"Data was converted to boolean for metric {metric}", DataConversionWarning,
                  stacklevel=3)


def _pairwise(X, Y, metric, backend, budget_bytes, dtype, strategy, params, finite_kw=None,
              ensure_non_empty=True, as_written=False):
    """pairwise_distances with the budget in bytes (the CLI's unit). A self-join (Y None or
    X) of a metric proven symmetric is made exactly symmetric (its upper triangle mirrored).
    ``as_written``: every rewritten product (union correction, expansion) summed as
    written, whatever the accuracy rule would take (SciPy's functions: their accuracy)."""
    program = metric_program(metric, **params)
    plan = program.plan
    if as_written:
        from .compiler.accuracy import direct_plan
        plan = direct_plan(plan)
    Yv = X if Y is None else Y
    swapped = _orientation(program, Y is None)
    needed = set(program.inputs)
    inputs = {k: v for k, v in (("A", X), ("B", Yv)) if k in needed}
    inputs.update(colparams.split(params)[1])  # column operands, bound by name
    out = run(plan, inputs, backend=backend, working_memory=budget_bytes, dtype=dtype,
              drop_zeros=True, strategy=strategy, labels={"A": "X", "B": "X" if Y is None else "Y"},
              ensure_non_empty=ensure_non_empty, **(finite_kw or {}))
    D = _promised_shape(out, program.plan.output_kind, swapped, _nrows(X), _nrows(Yv))
    if (Y is None or Y is X) and D.ndim == 2 and D.shape[0] == D.shape[1] \
            and program.plan.output_kind == "matrix" and is_symmetric(program.plan):
        mirror_upper(D)  # a self-join of a symmetric metric: exactly symmetric
    return D


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
    """The compiler's account of a metric (by name) or any expression: the decisions, the
    proofs and the plan, with the row invariance the runtime checks numerically and, for a
    metric written in the text language, its definition with its ``let`` names.

    A graph definition's name (``gb.explain("triangle_count")``) gives its steps with the
    algebra and fill decision of each (:mod:`gbdist.front.graph_explain`); ``fills=``
    says what the operands are assumed to be ("absent": graphs, the default; 0: data).

    A built-in metric's explanation is a :class:`~gbdist.compiler.stored.StoredExplanation`:
    its text, Markdown, LaTeX and HTML are stored once rendered, so a later process shows
    them without sympy; every other attribute is the full :class:`Explanation`'s
    (``.explanation()``), made on first use."""
    if isinstance(metric, str) and find_metric(metric) is None:
        g = find_graph(metric)
        if g is not None:
            from .front.graph_explain import explain_graph
            return explain_graph(g, **params)
        close = difflib.get_close_matches(metric, graph_names(), n=1)
        if close and not difflib.get_close_matches(metric, names.metric_names(aliases=True), n=1):
            raise UnknownNameError(f"unknown metric or graph definition {metric!r}",
                                   hint=f"did you mean {close[0]!r}?")
    if isinstance(metric, str):
        params, _ = colparams.split(params)  # vectors: column operands, shown by name
        metric = colparams.route(get_metric(metric).name, params)
        m = get_metric(metric)
        if library.is_builtin(m):  # its renderings stored once computed
            return library.stored_explanation(m.name, params,
                                              lambda: _explain_metric(metric, params))
        return _explain_metric(metric, params)
    from .compiler.explain import Explanation
    from .front.graphdef import GraphDef
    from .runtime.invariance import invariance
    if not isinstance(metric, (GraphDef, ir.Node)) and not callable(metric):
        from .front.describe import not_a_metric
        raise not_a_metric(metric, "gb.explain takes a metric or graph definition name, an "
                                   "expression built from gb.matrices(...), a callable (A, B) "
                                   "-> expression, or a graph definition")
    if isinstance(metric, GraphDef):
        from .front.graph_explain import explain_graph
        return explain_graph(metric, **params)
    if isinstance(metric, ir.Node) and not params:
        plan = compile(metric).plan
    else:
        plan = metric_program(metric, **params).plan
    return Explanation.from_plan(plan).with_conditioning(str(invariance(plan)))


def _explain_metric(metric: str, params: dict) -> Explanation:
    """The explanation of a metric given by name, with its text definition and lets."""
    from .compiler.explain import Explanation
    from .front.describe import describe
    from .runtime.invariance import invariance
    m = get_metric(metric)
    title = f"{m.name}" + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
    plan = metric_program(metric, **params).plan
    ex = Explanation.from_plan(plan, title)
    text, lets = describe(m.name, **params)
    if text:
        ex = ex.with_definition(text, lets)
    return ex.with_conditioning(str(invariance(plan)))
