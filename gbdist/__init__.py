"""gbdist: sparse semiring products and distances written as algebra.

    import gbdist as gb
    A, B = gb.matrices("A B")
    manhattan = gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.plus))
    print(gb.explain(manhattan))
    D = gb.pairwise_distances(X, metric="manhattan")

    gb.define("metric l1_text(A, B) = mxm(A, B.T, semiring(absdiff, plus))")

``import gbdist`` loads nothing heavy: each public name below is imported from its
module on first use (PEP 562 ``__getattr__``), so sympy, scikit-learn, Numba, lark,
Dask and CuPy are imported only by the work that needs them (docs/cpu.md, "Start-up").
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .version import __version__

# public name -> the module that defines it (attribute of the same name)
_LAZY = {
    **dict.fromkeys(("monoid",), "gbdist.algebra.ops"),
    **dict.fromkeys(("UNSET", "Semiring", "semirings"), "gbdist.algebra.semirings"),
    **dict.fromkeys((
        "Program", "abs", "apply", "compile", "eq", "exp", "isnan", "log", "matrices", "maximum", "minimum",
        "mxm", "mxv", "ncols", "op", "power", "reduce", "semiring", "sqrt", "vectors", "where"),
        "gbdist.front.api"),
    **dict.fromkeys((
        "AnalysisError", "ArityError", "BackendError", "CorruptInputError", "DefinitionError",
        "DomainError", "DSLSyntaxError", "GbdistError", "InputError", "MetricTypeError",
        "NonFiniteError", "NotFittedError", "ParameterError", "RedefinitionError",
        "ResultTooLargeError", "TypeCheckError", "UnknownAttributeError", "UnknownNameError"),
        "gbdist.errors"),
    "Explanation": "gbdist.compiler.explain",
    **dict.fromkeys(("Definitions", "define", "define_metric", "load", "metric_names"), "gbdist.front"),
    **dict.fromkeys(("explain", "pairwise_distances"), "gbdist.pairwise"),
    **dict.fromkeys(("cdist", "pdist", "squareform"), "gbdist.spatial"),
    "clear_caches": "gbdist.runtime",
    "prepare": "gbdist.runtime.prepared",
    "column": "gbdist.algebra.sym",
    **dict.fromkeys((
        "KNeighborsTransformer", "NearestNeighbors", "RadiusNeighborsTransformer", "knn",
        "kneighbors_graph", "pairwise_distances_chunked", "radius_neighbors_graph"),
        "gbdist.neighbors"),
    **dict.fromkeys(("Matrix", "Vector"), "gbdist.graph"),
}
# names that are modules: gb.ops is gbdist.algebra.ops; gb.graph, gb.runtime, ... subpackages
_MODULES = {"ops": "gbdist.algebra.ops"}
_SUBMODULES = frozenset((
    "algebra", "algorithms", "backends", "cli", "compiler", "dask", "errors", "front", "graph",
    "inputs", "io", "names", "neighbors", "pairwise", "paths", "resources", "runtime", "spatial",
    "version"))


def __getattr__(name: str):
    """PEP 562: a public name (or subpackage) is imported on first access, then kept."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later reads are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


if TYPE_CHECKING:  # what the names above are, for type checkers and IDEs (never runs)
    from . import graph, runtime
    from .algebra import ops
    from .algebra.ops import monoid
    from .algebra.semirings import UNSET, Semiring, semirings
    from .algebra.sym import column
    from .compiler.explain import Explanation
    from .runtime.prepared import prepare
    from .errors import (
        AnalysisError, ArityError, BackendError, CorruptInputError, DefinitionError, DomainError,
        DSLSyntaxError, GbdistError, InputError, MetricTypeError, NonFiniteError, NotFittedError,
        ParameterError, RedefinitionError, ResultTooLargeError, TypeCheckError,
        UnknownAttributeError, UnknownNameError)
    from .front import Definitions, define, define_metric, load, metric_names
    from .front.api import (
        Program, abs, apply, compile, eq, exp, isnan, log, matrices, maximum, minimum, mxm, mxv, ncols,
        op, power, reduce, semiring, sqrt, vectors, where)
    from .graph import Matrix, Vector
    from .neighbors import (
        KNeighborsTransformer, NearestNeighbors, RadiusNeighborsTransformer, knn,
        kneighbors_graph, pairwise_distances_chunked, radius_neighbors_graph)
    from .pairwise import explain, pairwise_distances
    from .spatial import cdist, pdist, squareform
    from .runtime import clear_caches

__all__ = [
    "ops", "semirings", "semiring", "Semiring", "UNSET", "op", "matrices", "vectors", "mxm", "mxv",
    "reduce", "apply", "sqrt", "log", "exp", "abs", "where", "isnan", "maximum", "minimum", "ncols", "eq",
    "power", "compile", "Program", "define_metric", "define", "load", "Definitions", "metric_names", "pairwise_distances",
    "cdist", "pdist", "squareform", "prepare",
    "explain", "Explanation", "GbdistError", "DefinitionError", "DSLSyntaxError",
    "UnknownNameError", "UnknownAttributeError", "RedefinitionError", "ArityError", "TypeCheckError", "AnalysisError",
    "InputError", "DomainError", "BackendError", "CorruptInputError", "NonFiniteError",
    "ResultTooLargeError", "ParameterError", "NotFittedError", "MetricTypeError",
    "knn", "NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
    "kneighbors_graph", "radius_neighbors_graph", "pairwise_distances_chunked", "clear_caches",
    "monoid", "graph", "Matrix", "Vector", "column",
]
