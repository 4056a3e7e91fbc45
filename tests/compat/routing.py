"""Adapters that answer scikit-learn's and SciPy's calls with gbdist, where gbdist can.

Each adapter has the peer's signature. It routes a call to gbdist only when
gbdist supports the metric (a name gbdist knows, spelled as the peer spells it)
and every argument given (SciPy's ``out=`` included: ``gb.cdist`` / ``gb.pdist`` take it;
``w=`` a vector where gbdist has the metric's weighted form); anything else (a callable
metric of the user's, a weighted metric gbdist lacks, a tree algorithm, a metric gbdist
lacks) goes to the peer's ORIGINAL function (taken when this module is imported, before
any test module), so a test measures gbdist only where gbdist answered. ``COUNT`` counts
the routed calls (the pytest plugin reads it per test).

The test modules get the adapters when they are imported (:func:`routed_builtins`, used
by plugin.py's import hook): SciPy's ``test_distance`` builds its weight-checking
wrappers (``wcdist = _weight_checked(cdist)``, ``wcityblock`` ...) at import time, and
they wrap the adapters. SciPy's per-pair functions (``cityblock(u, v, w)`` ...) are
routed too, as the 1 x 1 ``cdist`` of the two vectors.

The adapters translate the API only: they never convert results, so every
difference in values, dtypes or exceptions shows up in the peer's tests.
"""
from __future__ import annotations

import builtins
import inspect
import types

import numpy as np
import scipy.spatial.distance as ssd
import sklearn.metrics.pairwise as skp
import sklearn.neighbors as skn

import gbdist as gb
from gbdist.front import colparams, get_metric

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
    """Whether gbdist's ``metric`` takes ``params``: its own parameters, and ``w=`` a 1-D
    vector where the library has the metric's column-aware form (``minkowski`` with w= is
    ``weighted_minkowski``); ``w=None`` is the peers' default (no weights)."""
    if metric is None:
        return False
    params = {k: v for k, v in params.items() if not (k == "w" and v is None)}
    if "w" in params:
        if np.ndim(params["w"]) != 1 or metric not in colparams.WEIGHTED:
            return False  # a metric gbdist has no weighted form of, or SciPy's error to give
        metric = colparams.WEIGHTED[metric]
    known = get_metric(metric).params
    return all(k in known and v is not None for k, v in params.items())


def _no_none_w(kwargs) -> dict:
    """``kwargs`` without ``w=None`` (the peers' default: no weights)."""
    return {k: v for k, v in kwargs.items() if not (k == "w" and v is None)}


# --- scikit-learn: metrics ----------------------------------------------------------

_SK_FINITE = ("ensure_all_finite", "force_all_finite")
# scikit-learn's own functions (the fall-backs), taken before any test module is imported
_SK_PAIRWISE = skp.pairwise_distances
_SK_CHUNKED = skp.pairwise_distances_chunked


def _split(kwds):
    params = {k: v for k, v in kwds.items() if k not in _SK_FINITE}
    return params, {k: v for k, v in kwds.items() if k in _SK_FINITE}


def pairwise_distances(X, Y=None, metric="euclidean", **kwds):
    """Only the arguments the caller gave are passed on (n_jobs=None included)."""
    params, finite = _split({k: v for k, v in kwds.items() if k != "n_jobs"})
    if metric == "precomputed" or _params_ok(_metric(metric), params):
        _routed()
        return gb.pairwise_distances(X, Y, metric, backend=BACKEND, **_no_none_w(kwds))
    return _SK_PAIRWISE(X, Y, metric, **kwds)


def pairwise_distances_chunked(X, Y=None, **kwds):
    metric = kwds.get("metric", "euclidean")
    params, finite = _split({k: v for k, v in kwds.items()
                             if k not in ("metric", "n_jobs", "working_memory", "reduce_func")})
    if metric == "precomputed" or _params_ok(_metric(metric), params):
        _routed()
        return gb.pairwise_distances_chunked(X, Y, backend=BACKEND, **_no_none_w(kwds))
    return _SK_CHUNKED(X, Y, **kwds)


# --- scikit-learn: neighbors --------------------------------------------------------


def _nn_supported(kw: dict) -> bool:
    """gbdist answers brute-force searches ("auto" included: gbdist is always brute) over
    a metric it knows, with metric_params it takes (scikit-learn's p / w=None too)."""
    if kw.get("algorithm", "auto") not in ("auto", "brute"):
        return False
    metric = kw.get("metric", "minkowski")
    params = {k: v for k, v in (kw.get("metric_params") or {}).items()
              if not (k == "w" and v is None)}
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


ROUTED_NEIGHBORS = ("NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
                    "kneighbors_graph", "radius_neighbors_graph")


def neighbors_module() -> types.ModuleType:
    """``sklearn.neighbors`` with the routed names in place (a copy: the real module is
    left alone)."""
    mod = types.ModuleType("sklearn.neighbors")
    mod.__dict__.update(vars(skn))
    for name in ROUTED_NEIGHBORS:
        mod.__dict__[name] = globals()[name]
    return mod


# --- SciPy --------------------------------------------------------------------------

# SciPy's own functions, taken before any test module imports the routed names: every
# fall-back (and the reference half of an out= test) calls these, never an adapter.
_SCIPY = {name: getattr(ssd, name) for name in (
    "cdist", "pdist", "braycurtis", "canberra", "chebyshev", "cityblock", "correlation",
    "cosine", "dice", "euclidean", "hamming", "jaccard", "jensenshannon", "mahalanobis",
    "minkowski", "rogerstanimoto", "russellrao", "seuclidean", "sokalsneath", "sqeuclidean",
    "yule")}

# In SciPy's out= tests (test_cdist_out, test_pdist_out) a call without out= is SciPy's
# own, so the test compares gbdist's out= answer with SciPy's (the plugin sets this).
REFERENCE = {"unless_out": False}


def _scipy_ok(metric, kwargs) -> str | None:
    """The gbdist metric answering SciPy's ``metric`` with ``kwargs``, or None (SciPy
    answers: a metric gbdist lacks, a weighted form it lacks, a ``w`` that is not a
    vector, which is SciPy's to refuse). A callable metric is SciPy's to call."""
    name = _metric(metric)
    return name if _params_ok(name, kwargs) else None


def _xdist_ok(metric, kwargs) -> str | None:
    """The gbdist metric answering SciPy's ``cdist`` / ``pdist`` with ``metric`` and
    ``kwargs``, or None: as :func:`_scipy_ok`, but a parameter the metric does not take
    (``cdist(X, Y, "cosine", p=2.)``, ``N0tV4l1D_p4raM=``) is gbdist's to refuse too, with
    the TypeError SciPy raises (gbdist's ParameterError), ``w=`` to a metric that takes no
    weights (seuclidean, mahalanobis, jensenshannon) included: SciPy's extra-argument tests
    reach gbdist. A ``w`` that is not a vector stays SciPy's to refuse."""
    name = _metric(metric)
    if name is None or _params_ok(name, kwargs):
        return name
    w = kwargs.get("w")
    return None if w is not None and np.ndim(w) != 1 else name


def cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """gbdist's own cdist (float64, SciPy's out= checks), where gbdist knows the metric."""
    name = _xdist_ok(metric, kwargs)
    if name is None or (REFERENCE["unless_out"] and out is None):
        return _SCIPY["cdist"](XA, XB, _scipy_metric(metric), out=out, **kwargs)
    _routed()
    return gb.cdist(XA, XB, name, out=out, backend=BACKEND, **_no_none_w(kwargs))


def pdist(X, metric="euclidean", *, out=None, **kwargs):
    """gbdist's own pdist: the condensed distances of its exactly symmetric self-join."""
    name = _xdist_ok(metric, kwargs)
    if name is None or (REFERENCE["unless_out"] and out is None):
        return _SCIPY["pdist"](X, _scipy_metric(metric), out=out, **kwargs)
    _routed()
    return gb.pdist(X, name, out=out, backend=BACKEND, **_no_none_w(kwargs))


def _scipy_metric(metric):
    """What SciPy's own function gets as ``metric``: SciPy's per-pair function for a
    routed one (so a fall-back never reaches gbdist through the callable)."""
    return _SCIPY.get(getattr(metric, "_gbdist_metric", None), metric)


def _vector(u):
    """``u`` as a 1-D array when gbdist computes it as SciPy would (real or integer or
    boolean values; SciPy keeps float32 / float16 / longdouble / complex in their own
    type, gbdist computes float64), else None."""
    try:
        a = np.asarray(u)
    except Exception:  # noqa: BLE001 - SciPy's function reports it
        return None
    if a.ndim != 1 or a.size == 0 or not (a.dtype.kind in "biu" or a.dtype == np.float64):
        return None
    return a


def _per_pair(scipy_name: str):
    """SciPy's per-pair function ``scipy.spatial.distance.<name>(u, v, ...)`` answered by
    gbdist as the 1 x 1 ``cdist`` of the two vectors, where gbdist supports the metric and
    the arguments; else SciPy's own function."""
    original = _SCIPY[scipy_name]
    signature = inspect.signature(original)

    def adapter(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        given = dict(bound.arguments)
        first, second = list(signature.parameters)[:2]
        u, v = _vector(given.pop(first, None)), _vector(given.pop(second, None))
        if u is None or v is None:  # vectors of unequal lengths: gbdist's ValueError
            return original(*args, **kwargs)
        name = _scipy_ok(scipy_name, given)
        if name is None:
            return original(*args, **kwargs)
        _routed()
        return gb.cdist(u[None, :], v[None, :], name, backend=BACKEND,
                        **_no_none_w(given))[0, 0]

    adapter.__name__ = adapter.__qualname__ = scipy_name
    adapter.__doc__ = original.__doc__
    adapter.__signature__ = signature
    adapter._gbdist_metric = scipy_name
    return adapter


PER_PAIR = {name: _per_pair(name) for name in _SCIPY if name not in ("cdist", "pdist")}

# SciPy's tests that call a bare per-pair function as the function under test, not as the
# reference of another call (test id pattern -> the names routed while it runs: the
# plugin puts the adapters in place for the test and SciPy's functions back after it).
# Not routed: test_jensenshannon (base= and axis= of SciPy's per-pair function, which
# gbdist's cdist does not have: SciPy's cdist refuses them too) and
# test_sokalsneath_all_false (SciPy's per-pair function raises where its cdist, and
# gbdist's, return NaN).
SUBJECTS = {
    r"test_distance\.py::test_bad_p\[": ("minkowski",),
    r"test_distance\.py::TestSomeDistanceFunctions::test_minkowski$": ("minkowski",),
    r"test_distance\.py::TestSomeDistanceFunctions::test_mahalanobis$": ("mahalanobis",),
    r"test_distance\.py::TestSomeDistanceFunctions::test_correlation_positive$":
        ("correlation",),
    r"test_distance\.py::TestPdist::test_pdist_sokalsneath_mtica1$": ("sokalsneath",),
}


def subjects(test_id: str) -> tuple:
    """The bare names routed while the test ``test_id`` ("file::test") runs."""
    import re
    return next((names for pattern, names in SUBJECTS.items() if re.search(pattern, test_id)),
                ())


# --- the routes: test module -> {module it imports from: {name: adapter}} ------------

MODULES = ("sklearn.metrics.tests.test_pairwise", "sklearn.neighbors.tests.test_neighbors",
           "scipy.spatial.tests.test_distance")


def imports(module_name: str) -> dict:
    """What a peer's test module gets instead of the peer's names when it imports them
    (its ``from <module> import <name>`` statements, run with the routed names: the
    import hook of plugin.py), as {imported module: {name: adapter}}."""
    if module_name == "sklearn.metrics.tests.test_pairwise":
        return {"sklearn.metrics.pairwise": {
            "pairwise_distances": pairwise_distances,
            "pairwise_distances_chunked": pairwise_distances_chunked}}
    if module_name == "sklearn.neighbors.tests.test_neighbors":
        routed = neighbors_module()
        return {"sklearn": {"neighbors": routed},
                "sklearn.neighbors": {n: getattr(routed, n) for n in ROUTED_NEIGHBORS},
                "sklearn.metrics.pairwise": {"pairwise_distances": pairwise_distances}}
    if module_name == "scipy.spatial.tests.test_distance":
        return {"scipy.spatial.distance": {"cdist": cdist, "pdist": pdist, **PER_PAIR}}
    return {}


class _Routed(types.ModuleType):
    """A module as a test module's ``from ... import`` sees it: the routed names, and the
    real module's for the rest."""

    def __init__(self, real, names: dict):
        super().__init__(real.__name__, real.__doc__)
        self.__dict__.update(names)
        self._real = real

    def __getattr__(self, attr):
        return getattr(self._real, attr)


def after_import(module) -> None:
    """Once a peer's test module is imported: its bare names of SciPy's per-pair functions
    (``dice``, ``cityblock`` ...) are SciPy's own again. The weight-checking wrappers it
    built at import (``wdice = _weight_checked(dice)`` ...) keep the adapters, while the
    tests that use a bare function as the reference (``expected = dice(u, v)``,
    ``cdist(X, Y, metric=eval(metric))``) compare gbdist with SciPy, not with itself."""
    for name in imports(module.__name__).get("scipy.spatial.distance", {}):
        if name in PER_PAIR and module.__dict__.get(name) is PER_PAIR[name]:
            module.__dict__[name] = _SCIPY[name]


def routed_builtins(module_name: str) -> dict:
    """The builtins a peer's test module runs with: its ``import`` statements (at import
    time and in its functions alike) give the routed names of :func:`imports`; the peer
    modules themselves, and every other importer, keep their own functions."""
    table = imports(module_name)
    real_import = builtins.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        mod = real_import(name, globals, locals, fromlist, level)
        if fromlist and level == 0 and name in table:
            return _Routed(mod, table[name])
        return mod

    return {**vars(builtins), "__import__": __import__}
