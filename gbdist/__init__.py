"""gbdist: sparse semiring products and distances written as algebra.

    import gbdist as gb
    A, B = gb.matrices("A B")
    manhattan = gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.plus))
    print(gb.explain(manhattan))
    D = gb.pairwise_distances(X, metric="manhattan")

    gb.define("metric l1_text(A, B) = mxm(A, B.T, semiring(absdiff, plus))")
"""
from .algebra import ops
from .algebra.ops import monoid
from .algebra.semirings import UNSET, Semiring, semirings
from .front.api import (
    Program, abs, apply, compile, eq, exp, log, matrices, maximum, minimum, mxm, mxv, ncols, op,
    power, reduce, semiring, sqrt, vectors, where)
from .errors import (
    AnalysisError, ArityError, BackendError, CorruptInputError, DefinitionError, DomainError,
    DSLSyntaxError, GbdistError, InputError, MetricTypeError, NonFiniteError, NotFittedError,
    ParameterError, RedefinitionError, ResultTooLargeError, TypeCheckError, UnknownAttributeError,
    UnknownNameError)
from .compiler.explain import Explanation
from .front import Definitions, define, define_metric, load, metric_names
from .pairwise import explain, pairwise_distances
from .runtime import clear_caches
from .neighbors import (
    KNeighborsTransformer, NearestNeighbors, RadiusNeighborsTransformer, knn, kneighbors_graph,
    pairwise_distances_chunked, radius_neighbors_graph)

from . import graph
from .graph import Matrix, Vector

from .version import __version__

__all__ = [
    "ops", "semirings", "semiring", "Semiring", "UNSET", "op", "matrices", "vectors", "mxm", "mxv",
    "reduce", "apply", "sqrt", "log", "exp", "abs", "where", "maximum", "minimum", "ncols", "eq",
    "power", "compile", "Program", "define_metric", "define", "load", "Definitions", "metric_names", "pairwise_distances",
    "explain", "Explanation", "GbdistError", "DefinitionError", "DSLSyntaxError",
    "UnknownNameError", "UnknownAttributeError", "RedefinitionError", "ArityError", "TypeCheckError", "AnalysisError",
    "InputError", "DomainError", "BackendError", "CorruptInputError", "NonFiniteError",
    "ResultTooLargeError", "ParameterError", "NotFittedError", "MetricTypeError",
    "knn", "NearestNeighbors", "KNeighborsTransformer", "RadiusNeighborsTransformer",
    "kneighbors_graph", "radius_neighbors_graph", "pairwise_distances_chunked", "clear_caches",
    "monoid", "graph", "Matrix", "Vector",
]
