"""Host row sums for apply(normalize, ·) (gbdist.backends.rows.row_sums): the order of the
device's gb_row_sums, so equal rows get equal sums wherever they are stored, and the sums are
right to float64 rounding. (That host and device agree bit for bit is checked on the GPU in
test_self_join_diagonal_gpu.py.)"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sps

from gbdist.backends.rows import normalise_rows, row_sums


def _stored_at_offsets(row, rng):
    pieces = [rng.uniform(0, 1, k) for k in (0, 1, 5, 31, 33, 64)]
    data = np.concatenate([np.concatenate([p, row]) for p in pieces])
    indptr = np.concatenate([[0], np.cumsum([[len(p), len(row)] for p in pieces])])
    return indptr.astype(np.int64), data, pieces


def test_equal_rows_get_equal_sums_wherever_they_are_stored():
    rng = np.random.default_rng(8)
    row = rng.uniform(0, 1e6, 1000) * 10.0 ** rng.integers(-8, 8, 1000)
    indptr, data, pieces = _stored_at_offsets(row, rng)
    sums = row_sums(indptr, data)
    mine = sums[1::2]
    assert (mine.view(np.uint64) == mine[0].view(np.uint64)).all()
    assert abs(mine[0] - math.fsum(row)) <= 1e-14 * math.fsum(row)
    for got, p in zip(sums[0::2], pieces):
        assert abs(got - math.fsum(p)) <= 1e-14 * max(math.fsum(p), 1e-300)


def test_sums_of_random_rows_and_edge_shapes():
    X = sps.random(200, 500, density=0.3, random_state=2, format="csr")
    X.data *= 1e3
    ref = np.array([math.fsum(X.data[X.indptr[r]:X.indptr[r + 1]]) for r in range(200)])
    np.testing.assert_allclose(row_sums(X.indptr.astype(np.int64), X.data), ref, rtol=1e-14)
    empty = row_sums(np.zeros(4, dtype=np.int64), np.zeros(0))
    assert empty.shape == (3,) and (empty == 0).all()
    # entries past indptr[-1] are not read
    assert row_sums(np.array([0, 2], dtype=np.int64), np.array([1.0, 2.0, 99.0]))[0] == 3.0


def test_normalised_equal_rows_are_equal():
    rng = np.random.default_rng(3)
    row = rng.uniform(0, 1e3, 77)
    indptr, data, _ = _stored_at_offsets(row, rng)
    out = normalise_rows(indptr, data, "A")
    first = out[indptr[1]:indptr[2]]
    for r in range(3, len(indptr) - 1, 2):
        assert (out[indptr[r]:indptr[r + 1]].view(np.uint64) == first.view(np.uint64)).all()
