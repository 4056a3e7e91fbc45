"""Breadth-first search as repeated products of a frontier vector with the adjacency.

A frontier ``f`` is a sparse vector: the vertices reached at the current level. One BFS step
is a product over a semiring whose ⊗ only says "an edge exists" and whose ⊕ picks one
contributor, written through the complement of the visited set::

    next<~visited.S, replace> = f ⊕.⊗ A        visited<next.S> = true

* **push** (``vxm``): walk the rows of A named by the frontier's entries and scatter to their
  out-neighbours. Cost ~ the edges leaving the frontier: right when the frontier is small.
* **pull** (``mxv`` with Aᵀ): every *unvisited* vertex looks at its in-neighbours and asks
  whether one of them is in the frontier. Cost ~ the edges into the unvisited vertices (and
  the mask means visited rows are never computed): right when the frontier is large.
  The in-neighbours are rows of Aᵀ, or of A itself when A's pattern is symmetric (an
  undirected graph; checked without a transpose, :func:`._common.pattern_is_symmetric`):
  the BFS semirings read only the pattern, so an undirected BFS never builds Aᵀ (a cached
  copy of A: 247 MiB of a first call on the 1.87·10⁷-entry power law, 61 MiB on a road grid,
  against SuiteSparse's 23 MiB; issue 28).

**Frontier-proportional work.** ``visited`` is kept as a bitmap (``p``: one byte a vertex,
0 or 1), SuiteSparse's bitmap format, updated in place: the push step is the kernels'
:meth:`~gbdist.backends.base.GraphKernels.spmspv_update`, which folds the frontier's rows into
the state and returns only the vertices that entered, so a push level costs the frontier's
edges and nothing n-wide is built, scanned or merged (a sorted-key ``visited`` merged every
level, or a ``~visited`` mask rebuilt densely, cost O(n) a level: 2,000 levels of a road grid
were 21x SuiteSparse). A pull level reads the bitmap as its complemented mask directly.

**Direction** (Beamer's direction-optimising BFS, :func:`choose_direction`): from the
statistics of the level, m_f = edges leaving the frontier and m_u = edges leaving the
unvisited vertices (kept up to date by subtracting the degrees of each new level), pull when
``m_f > m_u / ALPHA`` and stay pulling while the frontier holds at least ``n / BETA`` vertices.

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

from ._common import (any_pair, as_matrix, check_source, host, min_first, min_second,
                      pattern_is_symmetric)

# Beamer et al. (SC'12): push -> pull when the frontier's edges exceed the unvisited
# vertices' edges / ALPHA; pull -> push when the frontier holds under n / BETA vertices.
ALPHA = 14.0
BETA = 24.0


def choose_direction(pulling: bool, m_f: float, m_u: float, n_f: int, n: int) -> bool:
    """The planner rule: True = pull this level. ``pulling``: the last level pulled;
    ``m_f``/``m_u``: edges leaving the frontier / the unvisited vertices; ``n_f``: the
    frontier's vertices."""
    if pulling:
        return n_f >= n / BETA
    return m_f > m_u / ALPHA


def _check_direction(direction: str) -> None:
    if direction not in ("auto", "push", "pull"):
        raise gb.ParameterError("unknown BFS direction", expected="'auto', 'push' or 'pull'",
                                got=repr(direction))


class _Frontier:
    """The state of a BFS: the visited bitmap ``p`` and values ``d`` (kept by the kernels),
    the frontier's indices, and the statistics the direction rule reads."""

    def __init__(self, M, s, sr_push, sr_pull, d, direction, backend):
        xp = M.xp
        self.M, self.xp, self.n = M, xp, M.nrows
        self.K = gr.get_kernels(backend, M.on_device, work=M.nvals)
        self.sr_push, self.sr_pull, self.d = sr_push, sr_pull, d
        self.p = xp.zeros(self.n, dtype=np.uint8)
        self.p[s] = 1
        self.idx = xp.asarray([s], dtype=np.int64)
        self.direction = direction
        self.backend = backend
        self.indptr = M.csr.indptr
        self.m_u = float(M.nvals)
        self.pulling = False
        self._in = None

    def in_edges(self):
        """The CSR whose row i lists i's in-neighbours (the pull's operand), chosen at the
        first pull: Aᵀ when it is already cached on A, A itself when A's pattern is
        symmetric (the semirings of a BFS read only the pattern), else Aᵀ built and kept."""
        if self._in is None:
            M = self.M
            if M.has_transpose() or not pattern_is_symmetric(M, self.backend):
                self._in = M.T.csr
            else:
                self._in = M.csr
        return self._in

    def step(self, u_val):
        """The next frontier (sorted vertex ids) from the current one with values ``u_val``;
        the new vertices are in ``p`` and their ⊕ values in ``d``."""
        xp, n = self.xp, self.n
        ip = self.indptr
        m_f = float((ip[self.idx + 1] - ip[self.idx]).sum())  # O(frontier): no n-wide degrees
        self.m_u -= m_f
        if self.direction == "auto":
            self.pulling = choose_direction(self.pulling, m_f, self.m_u, int(self.idx.size), n)
        else:
            self.pulling = self.direction == "pull"
        dt = self.d.dtype
        if self.pulling:
            # y(i) = ⊕_k Aᵀ(i, k) ⊗ f(k) for the unvisited i only (mask: the bitmap, complemented)
            x = xp.zeros(n, dtype=dt)
            x[self.idx] = u_val
            present = xp.zeros(n, dtype=bool)
            present[self.idx] = True
            y, yp = self.K.spmv(self.in_edges(), x, present, self.sr_pull, mask=self.p.view(bool),
                                complement=True, out_dtype=dt)
            new = xp.flatnonzero(yp).astype(np.int64)
            self.d[new] = y[new]
            self.p[new] = 1
        else:
            # push: the frontier's rows folded into (d, p) where p is 0 (~visited.S)
            new, _ = self.K.spmspv_update(self.M.csr, self.idx, u_val, self.sr_push, self.d,
                                          self.p, only_new=True, out_dtype=dt)
        self.idx = new
        return new


def bfs_levels(A, source, *, direction: str = "auto", backend: str = "auto") -> np.ndarray:
    """Level (hop count from ``source``) of every vertex; -1 where unreachable.

    ``A[i, j]`` stored means an edge i -> j (its value, even 0, is ignored). Returns an int64
    NumPy array of length n, like
    ``networkx.single_source_shortest_path_length``. ``direction`` forces ``"push"`` or
    ``"pull"`` (default: chosen per level, :func:`choose_direction`).
    """
    _check_direction(direction)
    M = as_matrix(A)
    s = check_source(M, source)
    xp = M.xp
    levels = xp.full(M.nrows, -1, dtype=np.int64)
    levels[s] = 0
    f = _Frontier(M, s, any_pair, any_pair, xp.zeros(M.nrows, dtype=bool), direction, backend)
    depth = 0
    while f.idx.size:
        depth += 1
        new = f.step(xp.ones(f.idx.size, dtype=bool))
        levels[new] = depth
    return host(levels)


def bfs_parents(A, source, *, direction: str = "auto", backend: str = "auto") -> np.ndarray:
    """BFS tree: the parent of every vertex (the smallest-id vertex one level closer to
    ``source`` with an edge to it); ``source``'s parent is itself; -1 where unreachable."""
    _check_direction(direction)
    M = as_matrix(A)
    s = check_source(M, source)
    parents = M.xp.full(M.nrows, -1, dtype=np.int64)  # the state's values: d(j) = parent
    parents[s] = s
    f = _Frontier(M, s, min_first, min_second, parents, direction, backend)
    while f.idx.size:
        f.step(f.idx)  # each frontier vertex carries its own id
    return host(parents)
