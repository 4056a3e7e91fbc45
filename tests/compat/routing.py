"""Adapters that answer scikit-learn's and SciPy's calls with gbdist, where gbdist can.

Each adapter has the peer's signature. It routes a call to gbdist only when
gbdist supports the metric (a name gbdist knows, spelled as the peer spells it)
and every argument given (SciPy's ``out=`` included: ``gb.cdist`` / ``gb.pdist`` take it);
anything else (a callable metric, ``w=``, a tree algorithm, a metric gbdist lacks) goes
to the peer's own function, so a
test measures gbdist only where gbdist answered. ``COUNT`` counts the routed
calls (the pytest plugin reads it per test).

The adapters translate the API only: they never convert results, so every
difference in values, dtypes or exceptions shows up in the peer's tests.
"""
from __future__ import annotations

import types

import numpy as np
import scipy.spatial.distance as ssd
import sklearn.metrics.pairwise as skp
import sklearn.neighbors as skn

import gbdist as gb
from gbdist.front import get_metric

COUNT = {"calls": 0}
BACKEND = "cpu"


def _routed():
    COUNT["calls"] += 1


def _metric(name) -> str | None:
    """The gbdist metric a peer's metric name means, or None when gbdist has none.

    Names are matched as the peer spells them (gbdist's lookup is case-insensitive,
    the peers' is not)."""
    if not isinstance(name, str) or name != name.lower():
        return None
    try:
        return get_metric(name).name
    except gb.UnknownNameError:
        return None


def _params_ok(metric: str | None, params: dict) -> bool:
    if metric is None:
        return False
    known = get_metric(metric).params
    return all(k in known and v is not None for k, v in params.items())


# --- scikit-learn: metrics ----------------------------------------------------------

_SK_FINITE = ("ensure_all_finite", "force_all_finite")


def _split(kwds):
    params = {k: v for k, v in kwds.items() if k not in _SK_FINITE}
    return params, {k: v for k, v in kwds.items() if k in _SK_FINITE}


def pairwise_distances(X, Y=None, metric="euclidean", **kwds):
    """Only the arguments the caller gave are passed on (n_jobs=None included)."""
    params, finite = _split({k: v for k, v in kwds.items() if k != "n_jobs"})
    if metric == "precomputed" or _params_ok(_metric(metric), params):
        _routed()
        return gb.pairwise_distances(X, Y, metric, backend=BACKEND, **kwds)
    return skp.pairwise_distances(X, Y, metric, **kwds)


def pairwise_distances_chunked(X, Y=None, **kwds):
    metric = kwds.get("metric", "euclidean")
    params, finite = _split({k: v for k, v in kwds.items()
                             if k not in ("metric", "n_jobs", "working_memory", "reduce_func")})
    if metric == "precomputed" or _params_ok(_metric(metric), params):
        _routed()
        return gb.pairwise_distances_chunked(X, Y, backend=BACKEND, **kwds)
    return skp.pairwise_distances_chunked(X, Y, **kwds)


# --- scikit-learn: neighbors --------------------------------------------------------


def _nn_supported(kw: dict) -> bool:
    """gbdist answers brute-force searches ("auto" included: gbdist is always brute) over
    a metric it knows, with metric_params it takes (scikit-learn's p / w=None too)."""
    if kw.get("algorithm", "auto") not in ("auto", "brute"):
        return False
    metric = kw.get("metric", "minkowski")
    params = dict(kw.get("metric_params") or {})
    if params.get("w", 0) is None:
        params.pop("w")
    if metric == "precomputed":
        return not params
    name = _metric(metric)
    if name is None:
        return False
    params.pop("p", None) if name == "minkowski" else None
    return _params_ok(name, params)


def _routed_class(gb_cls, sk_cls):
    """A subclass of the gbdist estimator, named as scikit-learn's, whose constructor
    returns scikit-learn's estimator for what gbdist does not support."""

    def __new__(cls, *args, **kw):
        if args or not _nn_supported(kw):
            return sk_cls(*args, **kw)
        _routed()
        return object.__new__(cls)

    cls = type(sk_cls.__name__, (gb_cls,), {"__new__": __new__, "__module__": __name__,
                                            "__doc__": gb_cls.__doc__})
    cls.__init__ = gb_cls.__init__  # get_params reads the gbdist signature
    return cls


# Names an older gbdist lacks stay scikit-learn's (the harness also measures old versions).
NearestNeighbors = _routed_class(gb.NearestNeighbors, skn.NearestNeighbors)
KNeighborsTransformer = (_routed_class(gb.KNeighborsTransformer, skn.KNeighborsTransformer)
                         if hasattr(gb, "KNeighborsTransformer") else skn.KNeighborsTransformer)
RadiusNeighborsTransformer = (
    _routed_class(gb.RadiusNeighborsTransformer, skn.RadiusNeighborsTransformer)
    if hasattr(gb, "RadiusNeighborsTransformer") else skn.RadiusNeighborsTransformer)


def _graph_kw_ok(X, kw) -> bool:
    if not hasattr(gb, "kneighbors_graph"):
        return False
    if isinstance(X, getattr(gb.neighbors, "_NeighborsBase", gb.NearestNeighbors)):
        return True
    if not isinstance(X, (np.ndarray, list, tuple)) and not hasattr(X, "tocsr"):
        return False  # a fitted scikit-learn estimator or tree
    return _nn_supported({"metric": kw.get("metric", "minkowski"),
                          "metric_params": kw.get("metric_params")})


def kneighbors_graph(X, n_neighbors, **kw):
    if _graph_kw_ok(X, kw):
        _routed()
        return gb.kneighbors_graph(X, n_neighbors, backend=BACKEND, **kw)
    return _SK_KNEIGHBORS_GRAPH(X, n_neighbors, **kw)


def radius_neighbors_graph(X, radius, **kw):
    if _graph_kw_ok(X, kw):
        _routed()
        return gb.radius_neighbors_graph(X, radius, backend=BACKEND, **kw)
    return _SK_RADIUS_GRAPH(X, radius, **kw)


_SK_KNEIGHBORS_GRAPH = skn.kneighbors_graph
_SK_RADIUS_GRAPH = skn.radius_neighbors_graph


def neighbors_module() -> types.ModuleType:
    """``sklearn.neighbors`` with the routed names in place (a copy: the real module is
    left alone)."""
    mod = types.ModuleType("sklearn.neighbors")
    mod.__dict__.update(vars(skn))
    for name in ("NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
                 "kneighbors_graph", "radius_neighbors_graph"):
        mod.__dict__[name] = globals()[name]
    return mod


# --- SciPy --------------------------------------------------------------------------


def _scipy_ok(metric, kwargs) -> str | None:
    name = _metric(metric)
    return name if _params_ok(name, kwargs) else None


def cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """gbdist's own cdist (float64, SciPy's out= checks), where gbdist knows the metric."""
    name = _scipy_ok(metric, kwargs)
    if name is None or not hasattr(gb, "cdist"):
        return ssd.cdist(XA, XB, metric, out=out, **kwargs)
    _routed()
    return gb.cdist(XA, XB, name, out=out, backend=BACKEND, **kwargs)


def pdist(X, metric="euclidean", *, out=None, **kwargs):
    """gbdist's own pdist: the condensed distances of its exactly symmetric self-join."""
    name = _scipy_ok(metric, kwargs)
    if name is None or not hasattr(gb, "pdist"):
        return ssd.pdist(X, metric, out=out, **kwargs)
    _routed()
    return gb.pdist(X, name, out=out, backend=BACKEND, **kwargs)


# --- the routes: test module -> {global name: adapter} -------------------------------

MODULES = ("sklearn.metrics.tests.test_pairwise", "sklearn.neighbors.tests.test_neighbors",
           "scipy.spatial.tests.test_distance")


def routes(module_name: str) -> dict:
    """The globals to replace in a peer's test module."""
    if module_name == "sklearn.metrics.tests.test_pairwise":
        return {"pairwise_distances": pairwise_distances,
                "pairwise_distances_chunked": pairwise_distances_chunked}
    if module_name == "sklearn.neighbors.tests.test_neighbors":
        return {"neighbors": neighbors_module(), "pairwise_distances": pairwise_distances}
    if module_name == "scipy.spatial.tests.test_distance":
        return {"cdist": cdist, "pdist": pdist}
    return {}
