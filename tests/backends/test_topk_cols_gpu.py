"""The columns' top-k on the device (``topk.select_k_columns``: gb_topk_cols, then gb_topk
over the runs' lists), against ``select_k`` of the transposed tile bit for bit, and the
symmetric kNN with it against the kNN with the transposed copy (``topk.COLUMN_SELECT``
off, the default); ``topk.transpose`` (gb_transpose) against NumPy bit for bit. The logic of
both kernels is also checked on the host by tests/backends/test_topk_cols_host.py."""
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


def test_over_the_register_lists_it_selects_the_transposed_copy(columns):
    D = cupy.asarray(np.random.default_rng(1).random((100, 50)).astype(np.float32))
    got = columns.select_k_columns(D, columns.COLS_MAX_K + 1, 3)
    want = columns.select_k(cupy.ascontiguousarray(D.T), columns.COLS_MAX_K + 1, 3)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (70, 45), (33, 1000), (2_100_000, 3)])
def test_transpose_copies_the_bits(dtype, rows, cols):
    """gb_transpose (4- and 8-byte items; float16 through CuPy) against NumPy's transpose,
    bit for bit (-0.0 and a NaN payload), on a tile, a column slice of a wider one (its rows
    strided), a row slice, and one already transposed (returned as is)."""
    from gbdist.backends.cuda import topk
    rng = np.random.default_rng(rows + cols)
    H = (rng.random((rows, cols + 5)) * 100 - 50).astype(dtype)
    if np.dtype(dtype).kind == "f":
        H[0, 0] = -0.0
        u = np.dtype(f"u{H.itemsize}")
        H.view(u)[-1, 3] = np.iinfo(u).max  # a NaN with a payload, all bits set
    W = cupy.asarray(H)
    assert cupy.asnumpy(W).tobytes() == H.tobytes()
    wrong = []
    for name, view, ref in (("tile", W, H), ("columns", W[:, 2:2 + cols], H[:, 2:2 + cols]),
                            ("rows", W[rows // 2:], H[rows // 2:]),
                            # made on the host: with cupy.asfortranarray (a float32 device
                            # copy) this case lost the NaN's sign bit on an H200, 2026-11-28
                            ("fortran", cupy.array(np.asfortranarray(H), order="F"), H)):
        T = topk.transpose(view)
        assert T.flags.c_contiguous and T.shape == ref.T.shape
        got, want = cupy.asnumpy(T).view(np.uint8), np.ascontiguousarray(ref.T).view(np.uint8)
        if not np.array_equal(got, want):
            at = np.argwhere(got != want)[:3].tolist()
            wrong.append((name, at, got[tuple(at[0])], want[tuple(at[0])]))
    assert not wrong, wrong


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
