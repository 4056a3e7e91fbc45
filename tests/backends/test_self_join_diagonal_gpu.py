"""d(a, a) is exactly 0 on the device for metrics that normalise their rows (issue 25).

The self-join of ``sp.random(50, 200, density=0.2, random_state=3) * 1e3`` under
jensenshannon had diagonal entries of 1e-8 on CUDA whenever X and Y were two objects (a
copy, a device input, a kNN index): each side's rows were normalised by row sums added
with an atomic scatter-add, in an order left to chance, so two equal rows could come out
one rounding apart and were no longer recognised as identical. Row sums are now added in
entry order, one thread per row (kernels/rows.cuh ``gb_row_sums``), as on the host.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _case():
    return (sps.random(50, 200, density=0.2, random_state=3) * 1e3).tocsr()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("how", ["same", "copy", "device", "device_copy"])
def test_jensenshannon_diagonal_is_exactly_zero(dtype, how):
    import cupyx.scipy.sparse as cps
    X = _case().astype(dtype)
    if how == "same":
        D = gb.pairwise_distances(X, metric="jensenshannon", backend="cuda")
    elif how == "copy":
        D = gb.pairwise_distances(X, X.copy(), metric="jensenshannon", backend="cuda")
    else:
        G = cps.csr_matrix(X)
        D = gb.pairwise_distances(G, G.copy() if how == "device_copy" else G,
                                  metric="jensenshannon", backend="cuda").get()
    assert (np.diagonal(D) == 0).all(), np.diagonal(D)[np.diagonal(D) != 0]
    dense = X.toarray().astype(np.float64)
    ref = cdist(dense, dense, "jensenshannon")
    np.testing.assert_allclose(D, ref, rtol=0, atol=1e-6 if dtype == np.float32 else 1e-12)


def test_knn_finds_each_row_at_exactly_zero():
    X = _case()
    d, i = gb.knn(X, X.copy(), k=3, metric="jensenshannon", backend="cuda")
    assert (i[:, 0] == np.arange(X.shape[0])).all()
    assert (d[:, 0] == 0).all()


def test_device_row_sums_are_the_hosts_bit_for_bit():
    import cupy
    from gbdist.backends.cuda import rows as dev_rows
    rng = np.random.default_rng(5)
    X = sps.random(300, 2000, density=0.3, random_state=6, format="csr") * rng.uniform(1, 1e6)
    host = np.zeros(X.shape[0])
    np.add.at(host, np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.data)
    for itype in (np.int32, np.int64):
        dev = dev_rows.row_sums(cupy.asarray(X.indptr.astype(itype)), cupy.asarray(X.data)).get()
        assert (dev.view(np.uint64) == host.view(np.uint64)).all()
