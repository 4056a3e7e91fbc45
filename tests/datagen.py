"""Seeded random sparse data in every input form (imported by the tests as ``datagen``).

The builders return the *input object* handed to gbdist together with the dense
float64 array that the reference implementation (SciPy, or brute force) sees.
The dense reference is always taken from the input itself (``toarray()`` sums
duplicates), so an edge case cannot silently change the expected values.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------


def random_dense(rng: np.random.Generator, m: int, k: int, kind: str = "real",
                 density: float = 0.3, empty_rows: int = 2) -> np.ndarray:
    """A dense float64 array with ~``density`` nonzeros and some all-zero rows.

    kind: ``real`` (negatives; half small integers so that ties and equal values
    occur), ``nonneg``, ``binary`` (0/1), ``prob`` (nonnegative rows summing to 1,
    no empty rows), ``latlon`` (rows (latitude, longitude) in radians: 2 columns, whatever
    k; haversine's).
    """
    if kind == "latlon":
        return np.c_[rng.uniform(-1.5, 1.5, m), rng.uniform(-np.pi, np.pi, m)]
    mask = rng.random((m, k)) < density
    ints = rng.integers(-3, 4, (m, k)).astype(np.float64)
    ints[ints == 0] = 1.0
    floats = rng.uniform(-2.0, 2.0, (m, k))
    vals = np.where(rng.random((m, k)) < 0.5, ints, floats)
    if kind == "nonneg":
        vals = np.abs(vals)
    elif kind == "binary":
        vals = np.ones((m, k))
    elif kind == "prob":
        vals = np.abs(vals)
        mask[:, 0] |= ~mask.any(axis=1)  # no empty rows: SciPy normalises each row
        empty_rows = 0
    X = np.where(mask, vals, 0.0)
    if empty_rows:
        X[rng.choice(m, size=min(empty_rows, m), replace=False)] = 0.0
    if kind == "prob":
        X /= X.sum(axis=1, keepdims=True)
    return X


# ---------------------------------------------------------------------------
# input forms (the edge cases of the issue)
# ---------------------------------------------------------------------------

FORMS = ("csr_matrix", "csr_array", "csc_matrix", "csc_array", "coo_matrix", "coo_array",
         "dense", "explicit_zeros", "unsorted", "duplicates", "int64")


def make_input(X: np.ndarray, form: str, dtype, rng: np.random.Generator,
               zero_stored: bool = True):
    """``X`` (dense float64) in the given input form; returns (input, dense reference).

    ``zero_stored=False`` keeps every value (explicit zeros only where X is 0):
    for rows that must keep summing to 1.
    """
    Xt = X.astype(dtype)
    if form == "dense":
        return Xt, Xt.astype(np.float64)
    if form.endswith("_matrix") or form.endswith("_array"):
        fmt, cls = form.split("_")
        ctor = getattr(sps, f"{fmt}_{cls}")
        M = ctor(sps.csr_matrix(Xt))
        assert M.format == fmt
        return M, M.toarray().astype(np.float64)
    if form == "explicit_zeros":
        M = sps.csr_matrix(Xt)
        # Stored zeros at unstored positions and in place of some stored values.
        coo = M.tocoo()
        zr, zc = np.nonzero(Xt == 0)
        pick = rng.choice(len(zr), size=min(len(zr), max(3, len(zr) // 10)), replace=False)
        rows = np.concatenate([coo.row, zr[pick]])
        cols = np.concatenate([coo.col, zc[pick]])
        data = np.concatenate([coo.data, np.zeros(len(pick), dtype=Xt.dtype)])
        M = sps.coo_matrix((data, (rows, cols)), shape=X.shape).tocsr()
        if zero_stored:
            M.data[::7] = 0
        assert (M.data == 0).sum() >= 3
        return M, M.toarray().astype(np.float64)
    if form == "unsorted":
        M = sps.csr_matrix(Xt)
        indices, data = M.indices.copy(), M.data.copy()
        for i in range(M.shape[0]):
            s, t = M.indptr[i], M.indptr[i + 1]
            indices[s:t] = indices[s:t][::-1]
            data[s:t] = data[s:t][::-1]
        U = sps.csr_matrix((data, indices, M.indptr.copy()), shape=M.shape)
        assert not U.has_sorted_indices
        return U, U.toarray().astype(np.float64)
    if form == "duplicates":
        M = sps.csr_matrix(Xt).tocoo()
        # Each value split in two parts, plus pairs (a, -a) at unstored positions.
        zr, zc = np.nonzero(Xt == 0)
        pick = rng.choice(len(zr), size=min(len(zr), 5), replace=False)
        a = np.full(len(pick), 0.75, dtype=Xt.dtype)
        part = (M.data * 0.25).astype(Xt.dtype)
        rows = np.concatenate([M.row, M.row, zr[pick], zr[pick]])
        cols = np.concatenate([M.col, M.col, zc[pick], zc[pick]])
        data = np.concatenate([part, M.data - part, a, -a])
        D = sps.coo_matrix((data, (rows, cols)), shape=X.shape)
        assert D.nnz > M.nnz
        return D, D.toarray().astype(np.float64)
    if form == "int64":
        M = sps.csr_matrix(Xt)
        M.indices = M.indices.astype(np.int64)
        M.indptr = M.indptr.astype(np.int64)
        assert M.indices.dtype == np.int64
        return M, M.toarray().astype(np.float64)
    raise ValueError(form)


def tied_sparse(m: int, n: int = 24, seed: int = 0, dtype=np.float64) -> sps.csr_matrix:
    """A CSR matrix with few distinct values (many exact distance ties), a duplicate row
    (row 3 = row 7: distance 0 to another row) and an empty row (11, or the last): the
    cases where a distributed merge could pick other neighbours than a single search."""
    rng = np.random.default_rng(seed)
    X = sps.random(m, n, density=0.25, format="csr", random_state=rng, dtype=np.float64)
    X.data = np.round(X.data * 4) / 4 + 0.25
    X = X.tolil()
    X[3] = X[7]
    X[min(11, m - 1)] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    return X.astype(dtype)


def tall_sparse(m=4000, n=40000, per_row=3, seed=11):
    """Rows with a few stored columns among many: the pruned search pays (issue 29), with
    empty rows, duplicate rows and tied values."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(m), per_row)
    cols = rng.integers(0, n, rows.size)
    vals = rng.integers(1, 4, rows.size).astype(np.float64)
    vals[np.isin(rows, np.arange(0, m, 97))] = 0  # empty rows
    dup = np.arange(1, m - 1, 89)  # each a duplicate of the next row
    take = np.isin(rows, dup)
    cols[take] = cols[np.isin(rows, dup + 1)]
    vals[take] = vals[np.isin(rows, dup + 1)]
    X = sps.csr_matrix((vals, (rows, cols)), shape=(m, n))
    X.eliminate_zeros()
    return X
