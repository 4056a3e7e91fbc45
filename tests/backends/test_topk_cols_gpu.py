"""The columns' top-k on the device (``topk.select_k_columns``: gb_topk_cols, then gb_topk
over the runs' lists), against ``select_k`` of the transposed tile bit for bit, and the
symmetric kNN with it against the kNN with the transposed copy. Off by default
(``topk.COLUMN_SELECT``) until this has run on a GPU; the logic is checked on the host by
tests/backends/test_topk_cols_host.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")


@pytest.fixture
def columns(monkeypatch):
    from gbdist.backends.cuda import topk
    monkeypatch.setattr(topk, "COLUMN_SELECT", True)
    return topk


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,width,k", [(3000, 2000, 11), (20_724, 1_000, 11), (500, 333, 16),
                                          (700, 129, 17), (64, 5000, 32), (9, 40, 11)])
def test_columns_equal_the_transposed_selection(columns, dtype, rows, width, k):
    rng = np.random.default_rng(rows + k)
    D = cupy.asarray((rng.integers(0, 9, size=(rows, width)) / 8).astype(dtype))
    D[cupy.asarray(rng.random((rows, width)) < 0.02)] = np.nan
    D[cupy.asarray(rng.random((rows, width)) < 0.02)] = dtype(-0.0)
    got = columns.select_k_columns(D, k, 17)
    want = columns.select_k(cupy.ascontiguousarray(D.T), k, 17)
    assert got is not None
    np.testing.assert_array_equal(cupy.asnumpy(got[1]), cupy.asnumpy(want[1]))
    np.testing.assert_array_equal(cupy.asnumpy(got[0]).view(np.uint8),
                                  cupy.asnumpy(want[0]).view(np.uint8))


def test_over_the_register_lists_it_declines(columns):
    D = cupy.zeros((100, 50), dtype=np.float32)
    assert columns.select_k_columns(D, columns.COLS_MAX_K + 1) is None


@pytest.mark.parametrize("metric", ["cosine", "manhattan", "jensenshannon"])
def test_symmetric_knn_with_the_columns_kernel_is_unchanged(monkeypatch, metric):
    import cupyx.scipy.sparse as cps

    import gbdist as gb
    from gbdist.backends.cuda import topk
    X = sps.random(1500, 300, density=0.05, random_state=3, format="csr", dtype=np.float32)
    X.data = np.round(X.data * 8) / 8 + np.float32(0.125)  # ties
    Xd = cps.csr_matrix(X)
    monkeypatch.setattr(topk, "COLUMN_SELECT", False)
    want = gb.knn(Xd, k=10, metric=metric, backend="cuda", working_memory=1)
    monkeypatch.setattr(topk, "COLUMN_SELECT", True)
    got = gb.knn(Xd, k=10, metric=metric, backend="cuda", working_memory=1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b))
