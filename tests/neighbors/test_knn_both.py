"""knn_both: both directions of a block pair from one pass, against two plain searches."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.neighbors import knn_both


def _blocks(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = sps.random(23, 15, density=0.3, format="csr", random_state=rng, dtype=dtype)
    Y = sps.random(9, 15, density=0.3, format="csr", random_state=rng, dtype=dtype)
    X.data = np.round(X.data * 3)  # small integers: many exact ties between candidates
    Y.data = np.round(Y.data * 3)
    Y = sps.vstack([Y, X[:2]], format="csr")  # duplicates across the blocks: distance 0
    return X, Y


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan", "jaccard"])
@pytest.mark.parametrize("k", [1, 4, 30])  # 30: more than either block holds
def test_both_directions_equal_two_searches(metric, k):
    X, Y = _blocks()
    (dr, ir), (dc, ic) = knn_both(X, Y, k, metric=metric, working_memory=0.001)
    for (d, i), (q, idx) in (((dr, ir), (X, Y)), ((dc, ic), (Y, X))):
        want_d, want_i = gb.knn(q, idx, k=min(k, idx.shape[0]), metric=metric, exclude_self=False)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_array_equal(d, want_d)


def test_refuses_a_metric_not_proven_symmetric():
    X, Y = _blocks()
    with pytest.raises(gb.InputError, match="proven symmetric"):
        knn_both(X, Y, 3, metric="kl_divergence")


def test_float32_stays_float32():
    X, Y = _blocks(dtype=np.float32)
    (dr, _), (dc, _) = knn_both(X, Y, 3, metric="euclidean")
    assert dr.dtype == dc.dtype == np.float32
