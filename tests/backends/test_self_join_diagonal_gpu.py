"""d(a, a) is exactly 0 on the device for metrics that normalise their rows (issue 25).

The self-join of ``sp.random(50, 200, density=0.2, random_state=3) * 1e3`` under
jensenshannon had diagonal entries of 1e-8 on CUDA whenever X and Y were two objects (a
copy, a device input, a kNN index): each side's rows were normalised by row sums added
with an atomic scatter-add, in an order left to chance, so two equal rows could come out
one rounding apart and were no longer recognised as identical. Row sums are now added in
an order fixed by each entry's offset in its row, one warp per row (kernels/rows.cuh
``gb_row_sums``), the order the host's ``rows.row_sums`` follows too.
"""
from __future__ import annotations

import math

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
    from gbdist.backends import rows as host_rows
    from gbdist.backends.cuda import rows as dev_rows
    rng = np.random.default_rng(5)
    X = sps.random(300, 2000, density=0.3, random_state=6, format="csr") * rng.uniform(1, 1e6)
    host = host_rows.row_sums(X.indptr.astype(np.int64), X.data)
    for itype in (np.int32, np.int64):
        dev = dev_rows.row_sums(cupy.asarray(X.indptr.astype(itype)), cupy.asarray(X.data)).get()
        assert (dev.view(np.uint64) == host.view(np.uint64)).all()


def test_equal_rows_get_equal_sums_wherever_they_are_stored():
    """The warp's order depends on offsets within the row, not on where the row starts."""
    import cupy
    from gbdist.backends.cuda import rows as dev_rows
    rng = np.random.default_rng(8)
    row = rng.uniform(0, 1e6, 1000) * 10.0 ** rng.integers(-8, 8, 1000)
    pieces = [rng.uniform(0, 1, k) for k in (0, 1, 5, 31, 33, 64)]
    data = np.concatenate([np.concatenate([p, row]) for p in pieces])
    ends = np.cumsum([[len(p), len(row)] for p in pieces])
    indptr = np.concatenate([[0], ends])
    sums = dev_rows.row_sums(cupy.asarray(indptr), cupy.asarray(data)).get()
    mine = sums[1::2]
    assert (mine.view(np.uint64) == mine[0].view(np.uint64)).all()
    assert abs(mine[0] - math.fsum(row)) <= 1e-14 * math.fsum(row)
