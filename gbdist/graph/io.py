"""Graphs in and out: NetworkX (``to_networkx`` / ``from_networkx``) and files
(``save`` / ``load``: a ``.npz`` of the canonical CSR, or a vector's indices and values,
with the dtype, shape and fill; read back checked, never unpickled). A hypersparse
:class:`~.hyper.HyperMatrix` is saved as its sorted row and column ids and the canonical
CSR of its compact matrix (SuiteSparse's hypersparse CSR, the column ids compressed too), a
:class:`~.hyper.HyperVector` as its ids and values: nothing of the dimension's size.

``to_networkx(A)`` is python-graphblas's ``gb.io.to_networkx``: a ``networkx.DiGraph`` on
nodes ``0..n-1``, an edge per stored entry with its value as the ``weight`` attribute.
``from_networkx(G, nodelist=None, weight="weight", dtype=None)`` is
``gb.io.from_networkx``: the adjacency in ``G``'s node order (``nodelist``), a missing
weight is 1.
"""
from __future__ import annotations

import numpy as np

from ..errors import CorruptInputError, InputError
from . import sparse as S
from .construct import _check_fill
from .objects import Matrix, Vector

FORMAT = 1


def to_networkx(A, edge_attribute="weight"):
    """A ``networkx.DiGraph`` with an edge (i, j, weight=A(i, j)) per stored entry."""
    import networkx as nx
    A = A.to_host() if isinstance(A, Matrix) else Matrix(A)
    if A.nrows != A.ncols:
        raise InputError("to_networkx needs a square Matrix", got=str(A.shape))
    G = nx.DiGraph()
    G.add_nodes_from(range(A.nrows))
    r, c, v = A.to_coo()
    if edge_attribute is None:
        G.add_edges_from(zip(r.tolist(), c.tolist()))
    else:
        G.add_weighted_edges_from(zip(r.tolist(), c.tolist(), v.tolist()), weight=edge_attribute)
    return G


def from_networkx(G, nodelist=None, weight="weight", dtype=None):
    """The adjacency Matrix of ``G`` (rows and columns in ``nodelist`` / ``G``'s order)."""
    import networkx as nx
    S_ = nx.to_scipy_sparse_array(G, nodelist=nodelist, weight=weight, dtype=dtype,
                                  format="csr")
    return Matrix(S_)


def save(path, x) -> None:
    """Write a Matrix or Vector (or a HyperMatrix / HyperVector) to ``path`` (``.npz``): its
    stored entries, dtype, shape and fill, exactly (``load`` gives an equal object)."""
    from .hyper import HyperMatrix, HyperVector
    if isinstance(x, HyperMatrix):
        csr = x.compact.to_host()._csr
        np.savez(path, kind=np.array("hypermatrix"), format=np.array(FORMAT),
                 shape=np.array(x.shape, dtype=np.int64), fill=np.array("absent"),
                 row_ids=np.asarray(x.row_ids, np.int64), col_ids=np.asarray(x.col_ids, np.int64),
                 indptr=np.asarray(csr.indptr, dtype=np.int64),
                 indices=np.asarray(csr.indices, dtype=np.int64), data=csr.data)
    elif isinstance(x, HyperVector):
        np.savez(path, kind=np.array("hypervector"), format=np.array(FORMAT),
                 shape=np.array([x.size], dtype=np.int64), fill=np.array("absent"),
                 indices=np.asarray(x.ids, np.int64), data=np.asarray(x.compact.to_dense()))
    elif isinstance(x, Matrix):
        h = x.to_host()
        csr = h._csr
        np.savez(path, kind=np.array("matrix"), format=np.array(FORMAT),
                 shape=np.array(h.shape, dtype=np.int64), fill=np.array(str(h.fill)),
                 indptr=np.asarray(csr.indptr, dtype=np.int64),
                 indices=np.asarray(csr.indices, dtype=np.int64), data=csr.data)
    elif isinstance(x, Vector):
        h = x.to_host()
        np.savez(path, kind=np.array("vector"), format=np.array(FORMAT),
                 shape=np.array([h.size], dtype=np.int64), fill=np.array(str(h.fill)),
                 indices=h._idx, data=h._vals)
    else:
        raise InputError("save writes a gb.Matrix, gb.Vector, gr.HyperMatrix or gr.HyperVector",
                         got=type(x).__name__)


def _bad(path, why):
    return CorruptInputError(f"{path}: not a gbdist graph file", got=why,
                             hint="write it with gr.save")


def load(path):
    """The object written by :func:`save`, its arrays checked (sorted, in range,
    consistent) before use."""
    try:
        f = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise _bad(path, f"{type(e).__name__}: {e}") from None
    with f:
        try:
            kind, fmt = str(f["kind"]), int(f["format"])
            shape = tuple(int(s) for s in f["shape"])
            fill = _check_fill(0 if str(f["fill"]) == "0" else str(f["fill"]))
            indices, data = f["indices"], f["data"]
            indptr = f["indptr"] if kind in ("matrix", "hypermatrix") else None
            ids = (f["row_ids"], f["col_ids"]) if kind == "hypermatrix" else None
        except (KeyError, ValueError) as e:
            raise _bad(path, f"{type(e).__name__}: {e}") from None
    if fmt != FORMAT or kind not in ("matrix", "vector", "hypermatrix", "hypervector"):
        raise _bad(path, f"kind {kind!r}, format {fmt}")
    dt = S.check_dtype(data.dtype, "the stored values")
    if indices.dtype.kind not in "iu" or indices.shape != data.shape or indices.ndim != 1:
        raise _bad(path, "indices and values differ")
    if kind in ("vector", "hypervector"):
        if len(shape) != 1 or not _sorted_in(indices, shape[0]):
            raise _bad(path, "vector indices unsorted or out of range")
        if kind == "hypervector":
            from .hyper import HyperVector
            return HyperVector.from_coo(indices.astype(np.int64), data.astype(dt), shape[0])
        return Vector(_parts=(indices.astype(np.int64), data.astype(dt), shape[0]), fill=fill)
    if len(shape) != 2:
        raise _bad(path, f"a matrix of shape {shape}")
    if kind == "matrix":
        return Matrix(fill=fill, _csr=_checked_csr(path, indptr, indices, data.astype(dt), shape))
    from .hyper import HyperMatrix
    if not all(i.dtype.kind in "iu" and i.ndim == 1 and _sorted_in(i, d)
               for i, d in zip(ids, shape)):
        raise _bad(path, "hypersparse ids unsorted or out of range")
    compact = Matrix(_csr=_checked_csr(path, indptr, indices, data.astype(dt),
                                       (ids[0].size, ids[1].size)))
    return HyperMatrix(ids[0].astype(np.int64), ids[1].astype(np.int64), compact, shape)


def _sorted_in(ix, n: int) -> bool:
    """Whether ``ix`` is strictly increasing inside [0, n)."""
    return not ix.size or bool(ix.min() >= 0 and ix.max() < n and np.all(np.diff(ix) > 0))


def _checked_csr(path, indptr, indices, data, shape):
    """The canonical CSR (sorted, in-range columns per row) of ``shape``, or CorruptInputError."""
    m, n = shape
    ok = (indptr.ndim == 1 and indptr.size == m + 1 and indptr[0] == 0
          and indptr[-1] == data.size and np.all(np.diff(indptr) >= 0))
    if ok and indices.size:
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        keys = rows * n + indices.astype(np.int64)
        ok = indices.min() >= 0 and indices.max() < n and bool(np.all(np.diff(keys) > 0))
    if not ok:
        raise _bad(path, "the CSR is not canonical (indptr, sorted in-range columns)")
    keys = (np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr)) * n
            + indices.astype(np.int64))
    return S.keys_csr(keys, data, (m, n), False)
