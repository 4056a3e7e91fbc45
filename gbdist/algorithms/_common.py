"""What every algorithm shares: turning the input into a :class:`gbdist.Matrix`, the
checks (square, source in range, undirected), and the semirings the algorithms name.

Only public names are used (``import gbdist as gb``, ``from gbdist import graph as gr``):
this package is a reader's guide to that API and a test of it.
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

o = gb.ops

# Semirings the algorithms name. `semiring(mul, add)`: ⊗ first, ⊕ second.
any_pair = gb.semirings.any_pair        # "is there an edge from the frontier": value 1
min_first = gb.semiring(o.first, o.min, name="min_first")    # vxm: min of u(k) over edges k -> j
min_second = gb.semiring(o.second, o.min, name="min_second")  # mxv: min of x(k) over edges i -> k
min_plus = gb.semirings.min_plus
plus_times = gb.semirings.plus_times
plus_pair = gb.semirings.plus_pair


class NegativeCycleError(gb.InputError):
    """A negative-weight cycle is reachable from the source: shortest paths do not exist
    (networkx raises ``NetworkXUnbounded``). Also a ``ValueError``."""


def as_matrix(A, name: str = "A"):
    """``A`` as a graph :class:`gbdist.Matrix` (SciPy/CuPy sparse, a dense array, or a Matrix
    kept as it is), checked to be square."""
    M = A if isinstance(A, gb.Matrix) else gb.Matrix(A)
    if M.nrows != M.ncols:
        raise gb.InputError(f"{name} must be a square adjacency matrix",
                            expected="an n x n matrix (row i lists the edges leaving vertex i)",
                            got=f"shape {M.shape}",
                            hint="a bipartite or rectangular matrix is not a graph's adjacency")
    return M


def check_source(M, source) -> int:
    """The source vertex as a Python int in ``[0, n)``."""
    n = M.nrows
    if isinstance(source, (bool, np.bool_)) or not isinstance(source, (int, np.integer)):
        raise gb.ParameterError("source must be a vertex index",
                                expected=f"an integer in [0, {n})",
                                got=f"{type(source).__name__} {source!r}")
    if not 0 <= int(source) < n:
        raise gb.InputError("source is not a vertex of the graph",
                            expected=f"an integer in [0, {n})", got=str(int(source)),
                            hint="vertices are the row indices of the adjacency matrix")
    return int(source)


def pattern_is_symmetric(M, backend: str = "auto") -> bool:
    """True when every stored (i, j) has a stored (j, i): an undirected graph.

    Where ``M.T`` is already cached (the pull-direction products build and keep it), the
    patterns of A and Aᵀ are compared as canonical CSR index arrays (and their values, bit
    for bit: equal ones are kept on M too, ``M.known_symmetry() == "values"``). Otherwise the kernel
    set's ``pattern_symmetric`` answers without building Aᵀ (compiled: each mirror found by
    bisection in its row; the transpose would be kept on M for nothing but this check:
    ~60 MiB of a 3.6·10⁶-entry graph). The answer is kept on M for its current version
    (a later call on the same matrix costs nothing), and what an operation carried to M
    from its operand (``M.known_symmetry()``: an ``apply`` keeps its operand's pattern)
    answers without a check."""
    known = M.known_symmetry()
    if known is not None:
        return known is not False

    def build():
        if M.has_transpose():
            A, T = M.csr, M.T.csr  # NumPy or CuPy arrays: == and .all() work on both
            same = bool(A.indices.shape == T.indices.shape and (A.indptr == T.indptr).all()
                        and (A.indices == T.indices).all())
            bits = f"u{A.data.dtype.itemsize}"
            if same and bool((A.data.view(bits) == T.data.view(bits)).all()):
                M.prepared(M.SYMMETRIC_VALUES, lambda: True)  # A == Aᵀ bit for bit: known too
            return same
        K = gr.get_kernels(backend, M.on_device, work=M.nvals)
        return bool(K.pattern_symmetric(M.csr))
    return M.prepared(M.SYMMETRIC_PATTERN, build)  # the form known_symmetry reads


def require_undirected(M, what: str, backend: str = "auto") -> None:
    if not pattern_is_symmetric(M, backend):
        raise gb.InputError(f"{what} needs an undirected graph",
                            expected="a structurally symmetric adjacency (A[i, j] stored "
                                     "exactly when A[j, i] is)",
                            got="a directed graph (some edge has no reverse edge)",
                            hint="symmetrise it first, e.g. A + A.T in SciPy, or "
                                 "gr.ewise_add(A, A.T, gb.ops.first)")


def ids(n: int):
    """0, 1, ..., n-1 as int64 values (a vertex carries its own id)."""
    return np.arange(n, dtype=np.int64)


def vector(M, indices, values, dtype=None):
    """A sparse :class:`gbdist.Vector` of size ``M.nrows`` on the same side as ``M``
    (host or device)."""
    v = gb.Vector.from_coo(np.asarray(indices, dtype=np.int64), np.asarray(values), M.nrows,
                           dtype=dtype)
    if getattr(M, "on_device", False):
        v = v.to_device()
    return v


def host(a) -> np.ndarray:
    """A NumPy copy of a 1-D array that may live on the device."""
    get = getattr(a, "get", None)
    return np.asarray(get() if get is not None else a)
