"""Graph algorithms written only with gbdist's public GraphBLAS operations.

This package is a reader's guide to ``gbdist.graph`` as much as a library: each module's
docstring explains the algebra (which semiring, which mask, why), and the code uses nothing
but ``import gbdist as gb`` and ``from gbdist import graph as gr``. Every function takes a
SciPy or CuPy sparse adjacency matrix (``A[i, j]`` stored = an edge i -> j; a stored 0 is
an edge of weight 0), a dense array, or a :class:`gbdist.Matrix`.

====================================  =========================================================
``bfs_levels(A, source)``             hop count per vertex, -1 unreachable (direction-optimising)
``bfs_parents(A, source)``            BFS tree parents (source -> itself, -1 unreachable)
``sssp(A, source)``                   Bellman–Ford over min_plus; NegativeCycleError
``pagerank(A, alpha, tol, max_iter)`` networkx's weighted PageRank (dangling vertices;
                                      on the GPU one SpMV and one fused kernel a step)
``triangle_count(A)``                 masked L·Lᵀ over plus_pair (undirected; on the GPU
                                      counted without forming the product)
``connected_components(A)``           union-find (CUDA, compiled CPU) or FastSV (reference);
                                      label = smallest vertex id of the component
``ktruss(A, k)``                      the k-truss edges (values: support) as a Matrix
``jaccard(A)``, ``cosine(A)``         similarity of adjacent vertices, on the edges
====================================  =========================================================

The guide is docs/graph.md.
"""
from ._common import NegativeCycleError
from .bfs import bfs_levels, bfs_parents
from .components import connected_components
from .pagerank import PowerIterationFailedConvergence, pagerank
from .similarity import cosine, jaccard
from .sssp import sssp
from .triangles import ktruss, triangle_count

__all__ = ["bfs_levels", "bfs_parents", "sssp", "pagerank", "triangle_count",
           "connected_components", "ktruss", "jaccard", "cosine", "NegativeCycleError",
           "PowerIterationFailedConvergence"]
