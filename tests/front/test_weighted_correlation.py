"""SciPy's correlation with w= (issue 26): cosine over rows mapped to √w·(u − ū_w)
(``wcentre``), against SciPy's cdist / pdist in float64 on random, offset (+1e4, +1e6)
and real data."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist, pdist

import gbdist as gb
from gbdist.errors import InputError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _rows(seed, m, k, offset=0.0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, k)) * rng.uniform(0.5, 3, k) + offset


@pytest.mark.parametrize("backend", ("cpu", "compiled"))
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_weighted_correlation_equals_scipy(backend, offset):
    X, Y = _rows(0, 30, 7, offset), _rows(1, 20, 7, offset)
    w = np.random.default_rng(2).uniform(0, 2, 7)
    w[3] = 0.0  # a weight of 0 leaves the column out
    want = cdist(X, Y, "correlation", w=w)
    D = gb.pairwise_distances(X, Y, metric="correlation", w=w, backend=backend)
    assert D.dtype == np.float64
    np.testing.assert_allclose(D, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb.cdist(X, Y, "correlation", w=w, backend=backend), want,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb.pdist(X, "correlation", w=w, backend=backend),
                               pdist(X, "correlation", w=w), rtol=1e-9, atol=1e-12)
    # scaling w changes nothing (relative weights); w = 1 is the unweighted correlation
    np.testing.assert_allclose(gb.cdist(X, Y, "correlation", w=7.5 * w), want, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(gb.cdist(X, Y, "correlation", w=np.ones(7)),
                               cdist(X, Y, "correlation"), rtol=1e-9, atol=1e-12)


def test_weighted_correlation_constant_rows_sparse_and_errors():
    X, Y = _rows(3, 12, 5), _rows(4, 9, 5)
    X[2] = 4.0  # constant: NaN, as SciPy
    X[X < -1] = 0.0
    w = np.array([1.0, 0.5, 2.0, 0.0, 1.0])
    want = cdist(X, Y, "correlation", w=w)
    D = gb.cdist(sps.csr_matrix(X), Y, "correlation", w=w)
    # a constant row: NaN (0/0), decided on the values; SciPy's weighted path gives NaN or
    # about 1 depending on how its mean Σ w·u (w / Σ w) rounds
    assert np.isnan(D[2]).all() and np.isnan(cdist(X[2:3], Y, "correlation")).all()
    keep = np.arange(X.shape[0]) != 2
    np.testing.assert_allclose(D[keep], want[keep], rtol=1e-9, atol=1e-12)
    with pytest.raises(InputError, match="nonnegative"):
        gb.cdist(X, Y, "correlation", w=-w)
    with pytest.raises(InputError, match="one value per column"):
        gb.cdist(X, Y, "correlation", w=w[:3])


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "ratings.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
def test_weighted_correlation_on_movielens_user_profiles():
    raw = np.loadtxt(DATA / "ml-latest-small" / "ratings.csv", delimiter=",", skiprows=1,
                     usecols=(0, 1, 2, 3), max_rows=20000)
    users = np.unique(raw[:, 0], return_inverse=True)[1]
    # per user: mean and spread of ratings, number of ratings, mean timestamp (offset ~1e9)
    feats = np.array([[raw[users == u, 2].mean(), raw[users == u, 2].std(),
                       (users == u).sum(), raw[users == u, 3].mean() / 1e6]
                      for u in range(users.max() + 1)])
    X, Y = feats[:60], feats[60:]
    w = np.array([2.0, 1.0, 0.5, 1.0])
    np.testing.assert_allclose(gb.cdist(X, Y, "correlation", w=w),
                               cdist(X, Y, "correlation", w=w), rtol=1e-9, atol=1e-12)
