"""Breadth-first search as repeated products of a frontier vector with the adjacency.

A frontier ``f`` is a sparse vector: the vertices reached at the current level. One BFS step
is a product over a semiring whose ⊗ only says "an edge exists" and whose ⊕ picks one
contributor::

    next = f ⊕.⊗ A      masked by ~visited (complement, structural)

* **push** (``vxm``): walk the rows of A named by the frontier's entries and scatter to their
  out-neighbours. Cost ~ the edges leaving the frontier: right when the frontier is small.
* **pull** (``mxv`` with Aᵀ): every *unvisited* vertex looks at its in-neighbours and asks
  whether one of them is in the frontier. Cost ~ the edges into the unvisited vertices (and
  the mask means visited rows are never computed): right when the frontier is large.

Switching between the two per level is Beamer's *direction-optimising* BFS. The mask
``~visited.S`` is what makes each step cheap: entries for vertices already visited are never
produced, so the frontier holds only new vertices.

Levels use ``any_pair`` (⊗ = 1: "an edge", ⊕ = any: one is enough). Parents need to know
*which* frontier vertex reached j, without positional operators: give each frontier entry its
own vertex id as value, and take ``min_first`` (push: ⊗ = first picks u(k) = k; ⊕ = min picks
the smallest) or ``min_second`` (pull: ``mxv`` multiplies A(i, k) by x(k), so second picks
x(k) = k). The smallest id makes the answer deterministic.
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import any_pair, as_matrix, check_source, host, min_first, min_second, vector

# Pull when the frontier holds more than this share of the vertices (Beamer's heuristic
# compares edge counts; the vertex share is a cheap stand-in that needs no degree sums).
PULL_SHARE = 1 / 16


def _use_pull(frontier_nvals: int, n: int, direction: str) -> bool:
    if direction == "push":
        return False
    if direction == "pull":
        return True
    return frontier_nvals > PULL_SHARE * n


def _check_direction(direction: str) -> None:
    if direction not in ("auto", "push", "pull"):
        raise gb.ParameterError("unknown BFS direction", expected="'auto', 'push' or 'pull'",
                                got=repr(direction))


def bfs_levels(A, source, *, direction: str = "auto", backend: str = "auto") -> np.ndarray:
    """Level (hop count from ``source``) of every vertex; -1 where unreachable.

    ``A[i, j]`` stored means an edge i -> j (its value, even 0, is ignored). Returns an int64
    NumPy array of length n, like ``networkx.single_source_shortest_path_length``.
    ``direction`` forces ``"push"`` or ``"pull"`` (default: chosen per level).
    """
    _check_direction(direction)
    M = as_matrix(A)
    s = check_source(M, source)
    n = M.nrows
    frontier = vector(M, [s], [True], dtype=bool)
    visited = frontier  # a vector whose *pattern* is the visited set (used as a mask)
    levels = np.full(n, -1, dtype=np.int64)
    levels[s] = 0
    depth = 0
    while frontier.nvals:
        depth += 1
        if _use_pull(frontier.nvals, n, direction):
            # y(i) = any_k Aᵀ(i, k) · f(k) = "some in-neighbour of i is in the frontier"
            frontier = gr.mxv(M.T, frontier, any_pair, mask=~visited.S, backend=backend)
        else:
            # y(j) = any_k f(k) · A(k, j) = "some frontier vertex has an edge to j"
            frontier = gr.vxm(frontier, M, any_pair, mask=~visited.S, backend=backend)
        if not frontier.nvals:
            break
        levels[host(frontier.indices)] = depth
        visited = gr.ewise_add(visited, frontier, gb.ops.lor, backend=backend)
    return levels


def bfs_parents(A, source, *, direction: str = "auto", backend: str = "auto") -> np.ndarray:
    """BFS tree: the parent of every vertex (the smallest-id vertex one level closer to
    ``source`` with an edge to it); ``source``'s parent is itself; -1 where unreachable."""
    _check_direction(direction)
    M = as_matrix(A)
    s = check_source(M, source)
    n = M.nrows
    frontier = vector(M, [s], [s], dtype=np.int64)  # value = own vertex id
    parents_v = frontier  # pattern = visited, value = parent
    while frontier.nvals:
        if _use_pull(frontier.nvals, n, direction):
            # q(i) = min_k { f(k) = k : Aᵀ(i, k) stored }  (second picks the frontier value)
            q = gr.mxv(M.T, frontier, min_second, mask=~parents_v.S, backend=backend)
        else:
            # q(j) = min_k { f(k) = k : A(k, j) stored }   (first picks the frontier value)
            q = gr.vxm(frontier, M, min_first, mask=~parents_v.S, backend=backend)
        if not q.nvals:
            break
        parents_v = gr.ewise_add(parents_v, q, gb.ops.first, backend=backend)
        reached = host(q.indices)
        frontier = vector(M, reached, reached, dtype=np.int64)  # next frontier: own ids again
    parents = np.full(n, -1, dtype=np.int64)
    parents[host(parents_v.indices)] = host(parents_v.values).astype(np.int64)
    return parents
