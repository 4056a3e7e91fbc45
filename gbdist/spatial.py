"""SciPy-shaped distances: ``cdist``, ``pdist`` and ``squareform`` as in
``scipy.spatial.distance``, computed by gbdist.

They follow SciPy where SciPy and scikit-learn differ (docs/metrics.md, "Output dtypes
and self-joins"): the result is float64 whatever the input dtype (computed in float64),
``out=`` is checked as SciPy checks it, NaN and ±inf in the input are computed with
(their IEEE value), an input with no rows gives an empty result, and every metric keeps
gbdist's own definition (cosine of a zero row is NaN, as SciPy's), and on the host every
product is summed as written, as SciPy sums it (its accuracy: no union correction or
expansion, which gb.pairwise_distances takes within 1e-6). Unlike SciPy they
also take sparse and CuPy inputs (a CuPy input gives a CuPy result).
"""
from __future__ import annotations

import numpy as np

from . import runtime
from .compiler import ir
from .errors import InputError
from .front import colparams
from .front.library import get_metric
from .pairwise import _pairwise, as_input

__all__ = ["cdist", "pdist", "squareform"]


def _xp(a):
    if runtime.is_cupy(a):
        import cupy
        return cupy
    return np


def _shape2(X, name: str) -> tuple[int, int]:
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise InputError(f"{name} must be a 2-dimensional array",
                         got=f"shape {tuple(shape) if shape is not None else '?'}")
    return int(shape[0]), int(shape[1])


def _check_out(out, shape: tuple, like) -> None:
    """SciPy's checks of ``out=`` (its messages, as typed ValueErrors)."""
    if out is None:
        return
    if not hasattr(out, "shape") or _xp(out) is not _xp(like):
        raise InputError("out must be an array on the result's device",
                         expected=f"a {'CuPy' if _xp(like) is not np else 'NumPy'} array",
                         got=type(out).__name__)
    if out.dtype != np.float64:
        raise InputError("wrong out dtype, expected float64", expected="float64",
                         got=str(out.dtype))
    if tuple(out.shape) != tuple(shape):
        raise InputError("Output array has incorrect shape.", expected=f"shape {shape}",
                         got=f"shape {tuple(out.shape)}")
    if not out.flags.c_contiguous:
        raise InputError("Output array must be C-contiguous")


def _distances(XA, XB, metric, backend, working_memory, params, dtype=np.float64):
    """The full (mA, mB) matrix (XB None: the exactly symmetric self-join). On the host
    every product is summed as written (SciPy's own evaluation, and its accuracy: a few
    units in the last place) where gb.pairwise_distances takes the rewrites the accuracy
    rule allows (docs/metrics.md, "Accuracy")."""
    name = metric if callable(metric) and not isinstance(metric, str) else get_metric(metric).name
    budget = runtime.working_memory_bytes(working_memory)
    dtype = np.float64 if dtype is None else dtype
    host = backend in ("auto", "cpu") and not any(
        runtime.is_cupy(x) for x in (XA, XB) if x is not None)
    return _pairwise(XA, XB, name, backend, budget, dtype, "auto", params,
                     {"ensure_all_finite": False}, ensure_non_empty=False, as_written=host)


def _derives_defaults(metric, params: dict) -> bool:
    """Whether ``metric`` called with ``params`` computes a parameter from the data
    (seuclidean's V, mahalanobis' VI ...: a column operand with a default, not given)."""
    if not isinstance(metric, str):
        return False
    m = get_metric(colparams.route(get_metric(metric).name, params))
    return any(isinstance(v, ir.ColVector) and v.default and params.get(k) is None
               for k, v in m.params.items())


def _distinct_operand(XB):
    """``XB`` as another object over the same rows (a view; a shallow copy of a sparse
    matrix): the runtime reads one object passed twice once (scikit-learn's ``X is Y``
    rule for data-derived defaults), SciPy's cdist stacks XA and XB whatever they are."""
    if isinstance(XB, np.ndarray) or runtime.is_cupy(XB):
        return XB.view()
    if hasattr(XB, "copy") and hasattr(XB, "tocsr"):
        return XB.copy()
    return XB


def cdist(XA, XB, metric="euclidean", *, out=None, backend: str = "auto",
          working_memory=None, dtype=np.float64, **kwargs):
    """Distances between each pair of rows of XA and XB, shaped (mA, mB): SciPy's
    ``scipy.spatial.distance.cdist``. float64; ``out=`` (C-contiguous float64 of that
    shape) receives the result and is returned. ``kwargs`` are the metric's parameters
    (``p=`` for minkowski). ``dtype=np.float32`` (not SciPy's) computes and returns
    float32 (without ``out=``)."""
    XA, XB = as_input(XA, "XA"), as_input(XB, "XB")
    if XB is XA and _derives_defaults(metric, kwargs):
        XB = _distinct_operand(XB)  # SciPy's default V / VI: over XA and XB stacked
    mA, n = _shape2(XA, "XA")
    mB, nB = _shape2(XB, "XB")
    if n != nB:
        raise InputError("XA and XB must have the same number of columns (i.e. feature "
                         "dimension.)", got=f"{n} and {nB} columns")
    xp = _xp(XA) if runtime.is_cupy(XA) else _xp(XB)
    _check_out(out, (mA, mB), xp.zeros(0))
    if mA == 0 or mB == 0:
        D = xp.zeros((mA, mB), dtype=dtype)
    else:
        D = _distances(XA, XB, metric, backend, working_memory, kwargs, dtype)
    if out is None:
        return D
    out[...] = D
    return out


def pdist(X, metric="euclidean", *, out=None, backend: str = "auto", working_memory=None,
          dtype=np.float64, **kwargs):
    """The condensed distances of SciPy's ``scipy.spatial.distance.pdist``: d(i, j) for
    every i < j, row by row, a float64 vector of m(m − 1)/2 values (``squareform`` turns
    it into the square matrix and back). ``out=`` and ``dtype=`` as in :func:`cdist`."""
    X = as_input(X, "X")
    m, _ = _shape2(X, "X")
    xp = _xp(X)
    size = m * (m - 1) // 2
    _check_out(out, (size,), xp.zeros(0))
    if m < 2:
        v = xp.zeros(0, dtype=dtype)
    else:
        D = _distances(X, None, metric, backend, working_memory, kwargs, dtype)
        rows, cols = np.triu_indices(m, 1)
        v = D[xp.asarray(rows), xp.asarray(cols)]
    if out is None:
        return v
    out[...] = v
    return out


def squareform(X, force: str = "no", checks: bool = True):
    """SciPy's ``squareform`` (NumPy input: SciPy's own function), also for CuPy arrays:
    a condensed vector to its symmetric square matrix with a zero diagonal, and back."""
    if not runtime.is_cupy(X):
        from scipy.spatial.distance import squareform as scipy_squareform
        return scipy_squareform(X, force=force, checks=checks)
    import cupy
    if force not in ("no", "tomatrix", "tovector"):
        raise InputError("force must be 'no', 'tomatrix' or 'tovector'", got=repr(force))
    to_matrix = X.ndim == 1 if force == "no" else force == "tomatrix"
    if to_matrix:
        d = int(np.ceil(np.sqrt(X.shape[0] * 2)))
        if d * (d - 1) != X.shape[0] * 2:
            raise InputError("Incompatible vector size. It must be a binomial coefficient n "
                             "choose 2 for some integer n >= 2.", got=f"{X.shape[0]} values")
        M = cupy.zeros((d, d), dtype=X.dtype)
        rows, cols = np.triu_indices(d, 1)
        M[cupy.asarray(rows), cupy.asarray(cols)] = X
        M[cupy.asarray(cols), cupy.asarray(rows)] = X
        return M
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise InputError("The matrix argument must be square.", got=f"shape {X.shape}")
    if checks:
        if bool(cupy.any(cupy.diagonal(X) != 0)):
            raise InputError("The matrix argument must have a zero diagonal.")
        if not bool(cupy.all(X == X.T)):
            raise InputError("The matrix argument must be symmetric.")
    rows, cols = np.triu_indices(X.shape[0], 1)
    return X[cupy.asarray(rows), cupy.asarray(cols)]
