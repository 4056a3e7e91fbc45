"""Column-weighted products (issue 26): SciPy's w= for canberra and hamming on any values,
a weight read at each column by the kernels (compiler/colfactor.py), against SciPy's
cdist/pdist with w= in float64, on random, offset (+1e4, +1e6), sparse and real data."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist, pdist

import gbdist as gb
from gbdist.backends.cpu import CPUBackend

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
METRICS = ("canberra", "hamming")
BACKENDS = ("cpu", "numpy")  # the compiled CPU kernels and the NumPy reference


def _backend(name):
    return CPUBackend() if name == "numpy" else name


def _data(seed=0, m=25, n=18, k=9, offset=0.0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, k)), 1)
    Y = np.round(rng.normal(size=(n, k)), 1)
    X[X < 0.2] = 0.0  # sparse, with repeated values (hamming's x == y)
    Y[Y < 0.1] = 0.0
    Y[3] = X[3]  # an identical row
    X[5] = 0.0  # an empty row
    w = rng.uniform(0.0, 2.0, k)
    w[2] = 0.0  # a column left out
    return X + offset, Y + offset, w


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
@pytest.mark.parametrize("metric", METRICS)
def test_scipy_weights_on_any_values(metric, offset, backend):
    X, Y, w = _data(offset=offset)
    D = gb.pairwise_distances(X, Y, metric=metric, w=w, backend=_backend(backend))
    with np.errstate(all="ignore"):
        want = cdist(X, Y, metric, w=w)
    np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-13)
    assert D[3, 3] == 0.0


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("metric", METRICS)
def test_sparse_input_and_float32(metric, dtype):
    X, Y, w = _data(1)
    Xs, Ys = sps.csr_matrix(X.astype(dtype)), sps.csr_matrix(Y.astype(dtype))
    D = gb.pairwise_distances(Xs, Ys, metric=metric, w=w)
    with np.errstate(all="ignore"):
        want = cdist(X.astype(dtype).astype(np.float64), Y.astype(dtype).astype(np.float64),
                     metric, w=w)
    np.testing.assert_allclose(D, want, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7)


@pytest.mark.parametrize("metric", METRICS)
def test_pdist_with_weights(metric):
    X, _, w = _data(2)
    with np.errstate(all="ignore"):
        want = pdist(X, metric, w=w)
    np.testing.assert_allclose(gb.pdist(X, metric, w=w), want, rtol=1e-12, atol=1e-13)


def test_explain_names_the_column_factor():
    text = str(gb.explain("canberra", w=np.ones(4)))
    assert "weight=" in text and "column-weighted" in text


def test_an_op_with_a_column_factor_compiles_in_python():
    w = gb.column("w")
    op = gb.op("w_ne_py", lambda x, y: w * gb.where(x != y, 1, 0))
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
    X, Y, wv = _data(3)
    out = prog(A=X, B=Y, w=wv)
    want = ((X[:, None, :] != Y[None, :, :]) * wv).sum(-1)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "ratings.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
@pytest.mark.parametrize("metric", METRICS)
def test_movielens_ratings(metric):
    raw = np.loadtxt(DATA / "ml-latest-small" / "ratings.csv", delimiter=",", skiprows=1,
                     usecols=(0, 1, 2), max_rows=6000)
    users = np.unique(raw[:, 0], return_inverse=True)[1]
    items = np.unique(raw[:, 1], return_inverse=True)[1]
    R = sps.csr_matrix((raw[:, 2], (users, items)))
    keep = np.flatnonzero(np.asarray((R != 0).sum(0)).ravel() >= 3)[:150]
    X = R[:40][:, keep].toarray()
    w = np.random.default_rng(4).uniform(0.0, 3.0, X.shape[1])
    D = gb.pairwise_distances(sps.csr_matrix(X), metric=metric, w=w)
    with np.errstate(all="ignore"):
        want = cdist(X, X, metric, w=w)
    np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-12)
