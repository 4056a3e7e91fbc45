"""The scikit-learn shaped estimators (NearestNeighbors, the graph transformers) and the
graph functions, on top of :mod:`gbdist.neighbors.search`."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sps
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import validate_data

from ..compiler import ir
from ..errors import GbdistError, InputError, NotFittedError, ParameterError
from ..inputs import is_cupy, refuse_graph_operand
from ..pairwise import metric_program, precomputed_distances, sklearn_metric
from ..runtime import get_backend, result_dtype, to_csr, working_memory_bytes
from ..runtime.prepared import prepare
from .search import _knn, _radius, drop_self, reads_nan, select_k
from ..front import colparams

def _object_rows(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    out = np.empty(len(indptr) - 1, dtype=object)
    out[:] = [values[indptr[q]:indptr[q + 1]] for q in range(len(indptr) - 1)]
    return out


def _int64_csr(data, indices, indptr, shape) -> sps.csr_matrix:
    """A CSR whose indices and indptr stay int64 (scikit-learn's graphs), whatever SciPy
    would shrink them to."""
    g = sps.csr_matrix((data, indices, indptr), shape=shape)
    g.indices = np.asarray(indices, dtype=np.int64)
    g.indptr = np.asarray(indptr, dtype=np.int64)
    return g


_MODES = ("connectivity", "distance")


def _check_mode(mode) -> None:
    if mode not in _MODES:
        raise InputError('Unsupported mode, must be one of "connectivity", or "distance" but '
                         f'got "{mode}" instead', expected="'connectivity' or 'distance'",
                         got=repr(mode))


def _precomputed_knn(D, k: int, exclude_self: bool):
    """The k smallest entries per row of a precomputed distance matrix (dense, or sparse
    with its stored entries as the candidates, as scikit-learn reads a graph)."""
    need = k + 1 if exclude_self else k
    if not sps.issparse(D):
        d, i = select_k(np.asarray(D, dtype=np.float64), need)
    else:
        g = sps.csr_matrix(D)
        g.sum_duplicates()
        counts = np.diff(g.indptr)
        if counts.size and counts.min() < need:
            raise InputError(f"{need} neighbors per samples are required, but some samples have "
                             f"only {counts.min()}.",
                             hint="store at least n_neighbors entries per row of the graph")
        rows = np.repeat(np.arange(g.shape[0]), counts)
        order = np.lexsort((g.indices, g.data, rows))
        take = (g.indptr[:-1, None] + np.arange(need)[None, :])
        sel = order[take]
        d = g.data[sel].astype(np.float64)
        i = g.indices[sel].astype(np.int64)
    if exclude_self:
        d, i = drop_self(d, i, k, np, first_if_missing=True)
    return d.astype(D.dtype if D.dtype == np.float32 else np.float64), i


def _precomputed_radius(D, radius, exclude_self: bool, sort_results: bool) -> sps.csr_matrix:
    g = sps.csr_matrix(D) if sps.issparse(D) else None
    if g is None:
        r, c = np.nonzero(np.asarray(D) <= radius)
        v = np.asarray(D)[r, c]
    else:
        g.sum_duplicates()
        r = np.repeat(np.arange(g.shape[0]), np.diff(g.indptr))
        keep = g.data <= radius
        r, c, v = r[keep], g.indices[keep], g.data[keep]
    r, c = r.astype(np.int64), c.astype(np.int64)
    if exclude_self:
        keep = r != c
        r, c, v = r[keep], c[keep], v[keep]
    order = np.lexsort((c, v, r) if sort_results else (c, r))
    m = D.shape[0]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    return _int64_csr(v[order], c[order], indptr, D.shape)


def _wrap_sklearn_error(e: Exception) -> Exception:
    """scikit-learn's validation errors as gbdist errors of the same Python classes."""
    msg = str(e)
    if isinstance(e, TypeError):
        return ParameterError(msg)
    return InputError(msg)


def _fitted_data(X):
    """scikit-learn's estimators also fit on a fitted neighbours estimator or a
    BallTree/KDTree (its data is the index); gbdist reads their data."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        return X._fit_X
    from sklearn.neighbors import BallTree, KDTree
    from sklearn.neighbors._base import NeighborsBase
    if isinstance(X, NeighborsBase):
        return X._fit_X
    if isinstance(X, (BallTree, KDTree)):
        return np.asarray(X.data)
    return X


def _check_graph_params(est, metric, p, metric_params) -> None:
    """The graph functions given a fitted estimator: its parameters must be the ones asked
    for (scikit-learn's check)."""
    have = est.get_params()
    for name, value in (("metric", metric), ("p", p), ("metric_params", metric_params)):
        if have.get(name) != value:
            raise InputError(f"Got {value} for {name}, while the estimator has {have.get(name)} "
                             f"for the same parameter.",
                             hint="pass the estimator's own parameters, or pass the data")


class _NeighborsBase(BaseEstimator):
    """The neighbour searches shared by :class:`NearestNeighbors` and the transformers.

    gbdist always searches by brute force (every distance computed, tiled within
    ``working_memory``): ``algorithm`` and ``leaf_size`` are accepted and checked as
    scikit-learn checks them, and change nothing; ``n_jobs`` is accepted and ignored
    (the backend chooses its threads).
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="both"), None],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "p": [Interval(numbers.Real, 0, None, closed="right"), None],
        "metric": [str, callable, ir.Node],
        "metric_params": [dict, None],
        "n_jobs": [numbers.Integral, None],
        "backend": "no_validation",
        "working_memory": [Interval(numbers.Real, 0, None, closed="neither"), str, None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed()
        tags.input_tags.positive_only = tags.input_tags.pairwise
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "_fit_X")

    def _precomputed(self) -> bool:
        return isinstance(self.metric, str) and self.metric == "precomputed"

    # -- fitting ---------------------------------------------------------------

    def _check_params(self) -> None:
        try:
            self._validate_params()
        except InvalidParameterError as e:
            raise ParameterError(str(e)) from None

    def _set_effective_metric(self) -> None:
        """scikit-learn's rule: ``p`` belongs to minkowski (``metric_params`` wins, with a
        SyntaxWarning); minkowski with p = 1, 2, inf is manhattan, euclidean, chebyshev."""
        params = dict(self.metric_params or {})
        if "p" in params and self.p is not None:
            warnings.warn("Parameter p is found in metric_params. The corresponding parameter "
                          "from __init__ is ignored.", SyntaxWarning, stacklevel=3)
        metric = self.metric
        if isinstance(metric, str) and metric == "minkowski":
            p = params.pop("p", self.p)
            p = 2 if p is None else p
            w = params.pop("w", None)
            if w is None and p in (1, 2, np.inf):
                metric = {1: "manhattan", 2: "euclidean"}.get(p, "chebyshev")
            else:
                params["p"], params["w"] = p, w
        self.effective_metric_ = metric
        self.effective_metric_params_ = params

    def _validate(self, X, reset: bool):
        refuse_graph_operand(X, "X")
        if is_cupy(X):  # CuPy (dense or cupyx sparse): checked on the host
            X = X.get()
        try:
            return validate_data(self, X, reset=reset, accept_sparse="csr",
                                 ensure_all_finite="allow-nan" if self._reads_nan() else True)
        except (ValueError, TypeError) as e:
            if isinstance(e, GbdistError):
                raise
            raise _wrap_sklearn_error(e) from None

    def _reads_nan(self) -> bool:  # NaN passes the input checks (nan_euclidean)
        return reads_nan(getattr(self, "metric", None), getattr(self, "metric_params", None))

    def _validate_precomputed(self, X, reset: bool):
        D = precomputed_distances(X)
        if reset:
            self.n_features_in_ = D.shape[1]
        elif D.shape[1] != self.n_samples_fit_:
            raise InputError(f"Precomputed metric requires shape (n_queries, n_indexed). Got "
                             f"({D.shape[0]}, {D.shape[1]}) for {self.n_samples_fit_} indexed.")
        return D

    def fit(self, X, y=None):
        """Store the index (X as canonical CSR, explicit zeros dropped; with
        ``metric="precomputed"`` the square distance matrix itself). ``y`` is ignored."""
        self._check_params()
        X = _fitted_data(X)
        if self._precomputed():
            D = self._validate_precomputed(X, reset=True)
            if D.shape[0] != D.shape[1]:
                raise InputError(f"Precomputed matrix must be square. Input is a "
                                 f"{D.shape[0]}x{D.shape[1]} matrix.")
            self.effective_metric_, self.effective_metric_params_ = "precomputed", {}
            self._plan = None
            self._fit_dtype = np.dtype(np.float32 if D.dtype == np.float32 else np.float64)
            self._fit_X = D
            self._fit_index = D
        else:
            X = self._validate(X, reset=True)
            self._set_effective_metric()
            params = dict(self.effective_metric_params_)
            if "w" in params and params["w"] is None:  # scikit-learn's unweighted minkowski
                del params["w"]
            # scikit-learn's conventions: its cosine is 1 against a zero row (docs/metrics.md)
            self._plan = metric_program(sklearn_metric(self.effective_metric_, params),
                                        **params).plan
            self._columns = colparams.split(params)[1]  # column operands (w=...)
            self._fit_dtype = result_dtype({"A": X})
            # the index prepared once (validated, canonical, read-only): each query pays
            # only for itself (gbdist.runtime.prepared)
            self._fit_index = prepare(to_csr(X, "X", drop_zeros=True, ensure_all_finite=(
                "allow-nan" if self._reads_nan() else True)))
            self._fit_X = self._fit_index.source
        self.n_samples_fit_ = self._fit_X.shape[0]
        self._fit_method = "brute"
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "_fit_X"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call "
                                 f"'fit' with appropriate arguments before using this estimator.",
                                 hint="call fit(X) first")

    def _query(self, X):
        """(queries, is the fitted data, budget, backend, result dtype)."""
        self._check_fitted()
        budget = working_memory_bytes(self.working_memory)
        be = None if self._precomputed() else get_backend(self.backend, budget)
        if X is None:
            return self._fit_index, True, budget, be, self._fit_dtype
        if self._precomputed():
            Q = self._validate_precomputed(X, reset=False)
        else:
            Q = self._validate(X, reset=False)
        both32 = self._fit_dtype == np.float32 and result_dtype({"A": Q}) == np.float32
        return Q, False, budget, be, np.dtype(np.float32 if both32 else np.float64)

    # -- k nearest -------------------------------------------------------------

    def _check_n_neighbors(self, n_neighbors, n_queries: int, is_train: bool) -> int:
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Real):
            raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer "
                                 f"value", got=repr(k))
        if k <= 0:
            raise InputError(f"Expected n_neighbors > 0. Got {k}")
        if not isinstance(k, numbers.Integral):
            raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer "
                                 f"value", got=repr(k))
        n = self.n_samples_fit_
        if k + is_train > n:
            rel = "n_neighbors < n_samples_fit" if is_train else "n_neighbors <= n_samples_fit"
            raise InputError(f"Expected {rel}, but n_neighbors = {k}, n_samples_fit = {n}, "
                             f"n_samples = {n_queries}")
        return int(k)

    def kneighbors(self, X=None, n_neighbors=None, return_distance: bool = True):
        """The n_neighbors nearest fitted rows of each row of X, as ``(distances,
        indices)`` sorted by (distance, index); of the fitted data when X is None, each
        point then left out of its own neighbours (scikit-learn's rule). Indices are
        int64; distances float32 when the fitted data and X are float32."""
        Q, is_train, budget, be, dt = self._query(X)
        k = self._check_n_neighbors(n_neighbors, Q.shape[0], is_train)
        if self._plan is None:
            d, i = _precomputed_knn(Q, k, is_train)
            d = d.astype(dt)
        else:
            d, i = _knn(self._plan, Q, self._fit_index, k, be, budget, is_train, dt,
                        columns=getattr(self, "_columns", None))
        return (d, i) if return_distance else i

    def kneighbors_graph(self, X=None, n_neighbors=None, mode: str = "connectivity"):
        """CSR of shape (n_queries, n_samples_fit): 1.0 (``"connectivity"``) or the
        distance (``"distance"``) at each query's neighbours, in neighbour order within
        a row; int64 indices, as scikit-learn's."""
        _check_mode(mode)
        d, i = self.kneighbors(X, n_neighbors, return_distance=True)
        nq, k = i.shape
        data = np.ones(i.size) if mode == "connectivity" else d.ravel()
        indptr = np.arange(0, nq * k + 1, max(k, 1), dtype=np.int64)[:nq + 1]
        return _int64_csr(data, i.ravel(), indptr, (nq, self.n_samples_fit_))

    # -- radius ------------------------------------------------------------------

    def _radius_csr(self, X, radius, sort_results):
        r = self.radius if radius is None else radius
        Q, is_train, budget, be, dt = self._query(X)
        if self._plan is None:
            if isinstance(r, bool) or not isinstance(r, numbers.Real) or np.isnan(r):
                raise ParameterError("radius must be a number", got=repr(r))
            g = _precomputed_radius(Q, r, is_train, sort_results)
            g.data = g.data.astype(dt)
            return g
        g = _radius(self._plan, Q, self._fit_index, r, be, budget, is_train, sort_results, dt,
                    getattr(self, "_columns", None))
        return _int64_csr(g.data, g.indices, g.indptr, g.shape)

    def radius_neighbors(self, X=None, radius=None, return_distance: bool = True,
                         sort_results: bool = False):
        """For each query, the fitted rows at distance <= radius, as object arrays of
        arrays (scikit-learn's shape); index order unless ``sort_results``."""
        if sort_results and not return_distance:
            raise InputError("return_distance must be True if sort_results is True.")
        g = self._radius_csr(X, radius, sort_results)
        ind = _object_rows(g.indices.astype(np.int64), g.indptr)
        if not return_distance:
            return ind
        return _object_rows(g.data, g.indptr), ind

    def radius_neighbors_graph(self, X=None, radius=None, mode: str = "connectivity",
                               sort_results: bool = False):
        """CSR of shape (n_queries, n_samples_fit) of the pairs within radius (1.0 or the
        distance); int64 indices."""
        _check_mode(mode)
        if sort_results and mode == "connectivity":
            sort_results = False  # scikit-learn ignores it: every value is 1
        g = self._radius_csr(X, radius, sort_results)
        if mode == "connectivity":
            g.data = np.ones_like(g.data, dtype=np.float64)
        return g


class NearestNeighbors(_NeighborsBase):
    """Unsupervised neighbour search: a scikit-learn estimator, a drop-in for
    ``sklearn.neighbors.NearestNeighbors``.

    ``metric`` is ``"precomputed"``, any gbdist metric name (built-in, an alias such
    as ``"l2"`` or ``"cityblock"``, or one registered with ``gb.define_metric`` / the
    DSL), a callable ``(A, B) -> expression`` (not scikit-learn's ``f(x, y) -> float``)
    or an expression. ``p`` is minkowski's (``metric_params`` wins, as in scikit-learn).
    ``algorithm``, ``leaf_size`` and ``n_jobs`` are accepted and change nothing: gbdist
    always searches by brute force. ``backend`` ("auto", "cpu", "cuda" or a backend
    object) and ``working_memory`` (MiB or ``"2GB"``, default: the backend's ``default_budget()``) are
    gbdist's.
    """

    def __init__(self, *, n_neighbors=5, radius=1.0, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory


class _GraphTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _NeighborsBase):
    _parameter_constraints: dict = {
        **_NeighborsBase._parameter_constraints,
        "mode": [StrOptions(set(_MODES))],
    }

    def fit(self, X, y=None):
        """Fit the index on X; ``y`` is ignored."""
        super().fit(X)
        self._n_features_out = self.n_samples_fit_
        return self

    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``: X's own graph (each point its own first neighbour)."""
        return self.fit(X).transform(X)


class KNeighborsTransformer(_GraphTransformer):
    """X as a sparse graph of its k nearest fitted neighbours, a drop-in for
    ``sklearn.neighbors.KNeighborsTransformer`` (e.g. before ``TSNE``, ``Isomap`` or
    ``DBSCAN(metric="precomputed")`` in a Pipeline).

    ``transform(X)`` is ``kneighbors_graph(X, mode=mode, n_neighbors=n_neighbors + 1)``
    in ``"distance"`` mode (each sample counted as its own neighbour, as in
    scikit-learn) and with ``n_neighbors`` in ``"connectivity"`` mode. Other
    parameters as :class:`NearestNeighbors`.
    """

    def __init__(self, *, mode="distance", n_neighbors=5, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.mode = mode
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory

    radius = None

    def transform(self, X):
        """The (n_queries, n_samples_fit) CSR graph of X's nearest fitted neighbours."""
        self._check_fitted()
        add_one = self.mode == "distance"
        return self.kneighbors_graph(X, mode=self.mode, n_neighbors=self.n_neighbors + add_one)


class RadiusNeighborsTransformer(_GraphTransformer):
    """X as a sparse graph of its fitted neighbours within ``radius``, a drop-in for
    ``sklearn.neighbors.RadiusNeighborsTransformer``; ``transform(X)`` is
    ``radius_neighbors_graph(X, mode=mode, sort_results=True)``."""

    def __init__(self, *, mode="distance", radius=1.0, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, backend="auto",
                 working_memory=None):
        self.mode = mode
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.backend = backend
        self.working_memory = working_memory

    n_neighbors = None

    def transform(self, X):
        """The (n_queries, n_samples_fit) CSR graph of X's fitted neighbours within radius."""
        self._check_fitted()
        return self.radius_neighbors_graph(X, mode=self.mode, sort_results=True)


def _query_include_self(X, include_self, mode):
    """scikit-learn's rule: the fitted data is queried as itself (each point its own
    neighbour) with include_self, else as ``X=None`` (each point left out)."""
    if include_self == "auto":
        include_self = mode == "connectivity"
    return X if include_self else None


def kneighbors_graph(X, n_neighbors, *, mode="connectivity", metric="minkowski", p=2,
                     metric_params=None, include_self=False, n_jobs=None, backend="auto",
                     working_memory=None):
    """``sklearn.neighbors.kneighbors_graph``: the (n_samples, n_samples) CSR graph of
    each row's n_neighbors nearest other rows (itself included with ``include_self``).
    X may also be a fitted gbdist neighbours estimator (its index is used)."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        _check_graph_params(X, metric, p, metric_params)
        return X.kneighbors_graph(_query_include_self(X._fit_X, include_self, mode),
                                  n_neighbors, mode=mode)
    nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, p=p,
                          metric_params=metric_params, n_jobs=n_jobs, backend=backend,
                          working_memory=working_memory).fit(X)
    return nn.kneighbors_graph(_query_include_self(nn._fit_X, include_self, mode), mode=mode)


def radius_neighbors_graph(X, radius, *, mode="connectivity", metric="minkowski", p=2,
                           metric_params=None, include_self=False, n_jobs=None, backend="auto",
                           working_memory=None):
    """``sklearn.neighbors.radius_neighbors_graph``: the (n_samples, n_samples) CSR graph
    of the pairs of rows within ``radius`` (the diagonal with ``include_self``).
    X may also be a fitted gbdist neighbours estimator (its index is used)."""
    if isinstance(X, _NeighborsBase):
        X._check_fitted()
        _check_graph_params(X, metric, p, metric_params)
        return X.radius_neighbors_graph(_query_include_self(X._fit_X, include_self, mode),
                                        radius, mode=mode)
    nn = NearestNeighbors(radius=radius, metric=metric, p=p, metric_params=metric_params,
                          n_jobs=n_jobs, backend=backend, working_memory=working_memory).fit(X)
    return nn.radius_neighbors_graph(_query_include_self(nn._fit_X, include_self, mode),
                                     radius, mode=mode)
