"""Corrupt sparse matrices for tests/test_inputs.py (run in a subprocess there).

Each builder assigns arrays after a valid construction: SciPy's constructors
check only some of this, and gbdist must refuse all of it before any kernel
(or SciPy's own C++ routines) reads out of bounds.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps


def good():
    return sps.random(5, 6, density=0.5, format="csr", random_state=np.random.default_rng(0))


def _set(m, **attrs):
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def _item(arr, i, v):
    arr[i] = v
    return arr


def _dok_bad_key():
    m = sps.dok_matrix((5, 6))
    m[1, 1] = 2.0
    store = m._dict if isinstance(getattr(m, "_dict", None), dict) else m
    dict.__setitem__(store, (1, 40), 3.0)  # past the shape, bypassing dok's own check
    return m


def _coo_array_bad():
    m = sps.coo_array(good())
    m.coords[1][0] = 77
    return m


def _huge_int64():
    m = good()
    m.indices = m.indices.astype(np.int64)
    m.indices[0] = 2**40
    return m


def _bsr_bad():
    m = sps.bsr_matrix(good()[:4].toarray(), blocksize=(2, 2))
    m.indices[0] = 5
    return m


BUILDERS = {
    "issue_negative_index": lambda: sps.csr_matrix((np.ones(2), [0, -5], [0, 1, 2, 2]), shape=(3, 3)),
    "index_past_shape": lambda: (lambda m: _set(m, indices=_item(m.indices, 3, 9)))(good()),
    "huge_int64_index": _huge_int64,
    "indptr_decreasing": lambda: (lambda m: _set(m, indptr=_item(m.indptr, 2, m.indptr[3] + 1)))(good()),
    "indptr_not_from_0": lambda: (lambda m: _set(m, indptr=_item(m.indptr, 0, 1)))(good()),
    "indptr_past_nnz": lambda: (lambda m: _set(m, indptr=_item(m.indptr, -1, m.indptr[-1] + 50)))(good()),
    "indptr_short": lambda: (lambda m: _set(m, indptr=m.indptr[:-2]))(good()),
    "indptr_long": lambda: (lambda m: _set(m, indptr=np.concatenate([m.indptr, m.indptr[-1:]])))(good()),
    "data_short": lambda: (lambda m: _set(m, data=m.data[:-3]))(good()),
    "indices_float": lambda: (lambda m: _set(m, indices=m.indices.astype(np.float64)))(good()),
    "indices_2d": lambda: (lambda m: _set(m, indices=m.indices.reshape(1, -1)))(good()),
    "negative_shape": lambda: _set(good(), _shape=(-1, 6)),
    "shape_too_small": lambda: _set(good(), _shape=(4, 2)),
    "csr_array_bad_index": lambda: (lambda m: _set(m, indices=_item(m.indices, 0, -1)))(sps.csr_array(good())),
    "csc_bad_row": lambda: (lambda m: _set(m, indices=_item(m.indices, 1, 100)))(good().tocsc()),
    "csc_indptr_decreasing": lambda: (lambda m: _set(m, indptr=_item(m.indptr, 1, m.indptr[2] + 1)))(
        good().tocsc()),
    "coo_negative_row": lambda: (lambda m: _set(m, row=_item(m.row, 0, -3)))(good().tocoo()),
    "coo_col_past_shape": lambda: (lambda m: _set(m, col=_item(m.col, 2, 6)))(good().tocoo()),
    "coo_array_bad": _coo_array_bad,
    "bsr_bad_block": _bsr_bad,
    "dok_bad_key": _dok_bad_key,
}
