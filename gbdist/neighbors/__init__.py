"""Neighbour searches over the backend protocol.

* :mod:`~gbdist.neighbors.search` — the ONE kNN / radius / chunked-distances loop: X and Y
  bound and prepared once, tiles from :func:`gbdist.runtime.tiles`, top-k by the
  backend's ``select_k`` / ``merge_k`` (host or device alike);
* :mod:`~gbdist.compiler.symmetry` — the proof that a metric is symmetric (compiler
  level: imports no runtime and no backend), which lets a self-join compute each
  unordered pair once;
* :mod:`~gbdist.neighbors.estimators` — the scikit-learn estimators and graph functions.
"""
from ..backends.cpu import merge_k, select_k
from ..runtime import get_backend, register_cache
from .search import (
    Search, _knn, _radius, drop_self, knn, knn_both, knn_plan, pairwise_distances_chunked)
from ..compiler import symmetry
from ..compiler.symmetry import is_symmetric

register_cache(symmetry._SYMMETRY.clear)

_ESTIMATORS = ("KNeighborsTransformer", "NearestNeighbors", "RadiusNeighborsTransformer",
               "kneighbors_graph", "radius_neighbors_graph")


def __getattr__(name: str):
    """The scikit-learn estimators, imported on first use (PEP 562): scikit-learn takes
    ~0.8 s to import, and ``gb.knn`` / ``gbdist knn`` never need it."""
    if name in _ESTIMATORS:
        from . import estimators
        value = getattr(estimators, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["knn", "NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
           "kneighbors_graph", "radius_neighbors_graph", "pairwise_distances_chunked",
           "is_symmetric", "select_k", "merge_k", "drop_self", "knn_plan", "knn_both", "Search"]


def _backend(backend, budget: int | None = None):
    """A backend name ("auto", "cpu", "compiled", "cuda") or a backend object, resolved."""
    return get_backend(backend, budget)
