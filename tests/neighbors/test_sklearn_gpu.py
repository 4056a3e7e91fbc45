"""The scikit-learn estimators on the CUDA backend: same answers as the CPU backend and
scikit-learn, CuPy inputs accepted, check_estimator passing."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import neighbors as skn
from sklearn.utils.estimator_checks import parametrize_with_checks

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")


@parametrize_with_checks([gb.NearestNeighbors(backend="cuda"),
                          gb.KNeighborsTransformer(backend="cuda")])
def test_check_estimator_on_the_gpu(estimator, check):
    check(estimator)


def test_duplicates_self_exclusion_on_the_device():
    X = np.ones((3, 1))  # more duplicates than neighbours: by index, the k lowest others
    d, i = gb.NearestNeighbors(n_neighbors=1, backend="cuda").fit(X).kneighbors()
    assert_array_equal(i, [[1], [0], [0]])
    assert_allclose(d, 0)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(40, 5))
    for metric in ("inner_product", "euclidean"):
        assert_array_equal(gb.knn(Z, k=4, metric=metric, backend="cuda")[1],
                           gb.knn(Z, k=4, metric=metric, backend="cpu")[1])


def test_cupy_inputs_to_the_estimator():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 7))
    ours = gb.NearestNeighbors(n_neighbors=4, backend="cuda").fit(cupy.asarray(X))
    theirs = skn.NearestNeighbors(n_neighbors=4, algorithm="brute").fit(X)
    d, i = ours.kneighbors(cupy.asarray(X[:9]))
    sd, si = theirs.kneighbors(X[:9])
    assert_allclose(d, sd, atol=1e-6)
    assert_array_equal(i, si)
    g = gb.KNeighborsTransformer(n_neighbors=3, backend="cuda").fit_transform(X)
    assert g.indices.dtype == np.int64
    assert_allclose(g.toarray(), skn.KNeighborsTransformer(n_neighbors=3).fit_transform(X)
                    .toarray(), atol=1e-6)
