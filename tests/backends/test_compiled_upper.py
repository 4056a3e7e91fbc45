"""The compiled CPU backend's diagonal tiles on and above the diagonal
(``run_tile(..., upper=True)``): the generated ``gb_fused`` computes only the cells j >= i
of a diagonal tile (every product kernel: the scatter walk from each column's first row
>= i, the two-pass unions, the dense columns' start), ``mirror_lower`` fills the rest.

Every metric of tests/metric_cases.py: the upper cells bit for bit the whole tile's, the
tile exactly symmetric, at the grid's corner and at an offset (r0 = c0 > 0); the cells
below the diagonal not written by the kernel (a poisoned output, the mirror switched off:
fails where upper is ignored); the kNN of a self-join through ``gb.knn(backend="cpu")``
that of ``symmetric=False``, with empty rows, duplicate rows and ties."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from metric_cases import METRICS, fit_columns

pytest.importorskip("numba")

import gbdist as gb  # noqa: E402
from gbdist import runtime  # noqa: E402
from gbdist.backends import compiled  # noqa: E402
from gbdist.backends.compiled import CompiledCPUBackend  # noqa: E402
from gbdist.neighbors.search import Search  # noqa: E402
from gbdist.pairwise import metric_program  # noqa: E402
from gbdist.runtime.tiles import takes_upper  # noqa: E402


def _rows(kind: str, m: int = 40, k: int = 14, dtype=np.float64, seed: int = 5):
    """Random rows of the metric's data kind with an empty row (3), duplicate rows (9, 10
    of 2) and repeated values (ties)."""
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=0.3, random_state=seed, format="lil", dtype=np.float64)
    X[3] = 0
    X = X.tocsr()
    X.data = np.where(rng.random(X.nnz) < 0.3, 1.0, X.data)  # ties
    if kind == "real":
        X.data = X.data * np.where(rng.random(X.nnz) < 0.4, -1.0, 1.0)
    elif kind == "binary":
        X.data[:] = 1.0
    elif kind == "prob":
        s = np.asarray(X.sum(axis=1)).ravel()
        s[s == 0] = 1
        X = sps.csr_matrix(X.multiply(1 / s[:, None]))
    elif kind == "latlon":
        X = sps.csr_matrix(rng.uniform(-1, 1, (m, 2)))
    X = sps.lil_matrix(X)
    X[9] = X[2]
    X[10] = X[2]
    return sps.csr_matrix(X, dtype=dtype)


def _prepared(metric: str, dtype=np.float64, **kw):
    params, kind, _ref, _power = METRICS[metric]
    X, = fit_columns(metric, _rows(kind, dtype=dtype, **kw))
    plan = metric_program(metric.split("-p")[0], **params).plan
    be = CompiledCPUBackend()
    return be, Search(plan, X, X, be, None, dtype=dtype).prepared, X


def _check_upper(be, p, r0: int, r1: int) -> None:
    whole = be.run_tile(p, r0, r1, r0, r1).values
    kernel = p.mod.gb_fused
    signatures = len(kernel.signatures)
    up = be.run_tile(p, r0, r1, r0, r1, upper=True).values
    assert len(kernel.signatures) == signatures  # upper: the same compiled kernel
    assert up.dtype == whole.dtype and up.shape == whole.shape == (r1 - r0, r1 - r0)
    iu = np.triu_indices(r1 - r0)
    np.testing.assert_array_equal(up[iu], whole[iu])  # bit for bit, NaN where NaN
    np.testing.assert_array_equal(up, up.T)


@pytest.mark.parametrize("metric", list(METRICS))
def test_an_upper_tile_is_the_whole_tiles_upper_half_mirrored(metric):
    be, p, _X = _prepared(metric)
    assert takes_upper(be)
    _check_upper(be, p, 0, 40)  # the whole grid
    _check_upper(be, p, 5, 30)  # a diagonal tile at an offset
    _check_upper(be, p, 39, 40)  # one row


@pytest.mark.parametrize("metric", ["chebyshev", "manhattan", "canberra", "jensenshannon",
                                    "cosine", "haversine", "weighted_chebyshev",
                                    "weighted_canberra", "braycurtis"])
def test_float32_upper_tiles(metric):
    be, p, _X = _prepared(metric, np.float32)
    assert p.bound.dtype == np.float32
    _check_upper(be, p, 0, 40)
    _check_upper(be, p, 7, 33)


class _Poisoned:
    """``np`` for the backend's module, whose ``empty`` fills with -7 (the kernel's output
    starts known)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float):
        return np.full(shape, -7.0, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("metric", ["chebyshev", "manhattan", "haversine", "weighted_canberra",
                                    "cosine", "nan_euclidean"])
def test_the_kernel_leaves_the_cells_below_the_diagonal(metric, dtype, monkeypatch):
    """Ignoring upper (the whole tile computed, or the cells below written) fails here:
    with the mirror off, every cell below the diagonal keeps the poison, every other is
    the whole tile's. (intersection, union by correction, the ordered max union, the
    direct union, a weighted plan, several product steps; float32 and float64 outputs)"""
    be, p, X = _prepared(metric, dtype)
    whole = be.run_tile(p, 4, 31, 4, 31).values
    monkeypatch.setattr(compiled, "np", _Poisoned())
    monkeypatch.setattr(compiled, "mirror_lower", lambda D: None)
    up = be.run_tile(p, 4, 31, 4, 31, upper=True).values
    assert up.dtype == whole.dtype
    il, iu = np.tril_indices(27, -1), np.triu_indices(27)
    # the proven d(a, a) of equal rows (9 and 10) is the runtime's, written on the tile
    D = X[4:31].toarray()
    equal = (D[:, None, :] == D[None, :, :]).all(axis=2)
    assert equal[il].sum() == 1
    assert (up[il][~equal[il]] == -7).all()
    np.testing.assert_array_equal(up[iu], whole[iu])
    assert not (whole[il] == -7).any()


def test_the_dense_columns_product_honours_upper():
    """Rows with dense columns (their products a matrix product that starts the sums,
    ``CompiledPrepared.split``): only the cells j >= i are started from it."""
    rng = np.random.default_rng(2)
    m, k = 300, 400
    X = sps.random(m, k, density=0.02, random_state=3, format="csr").tolil()
    X[:, :12] = rng.uniform(0.1, 1.0, (m, 12))  # 12 columns every row stores
    X[17] = 0
    X[40] = X[41]
    X = X.tocsr()
    be = CompiledCPUBackend()
    p = Search(metric_program("cosine").plan, X, X, be, None).prepared
    assert p.split() is not None
    _check_upper(be, p, 0, m)
    _check_upper(be, p, 20, 280)


def test_not_a_diagonal_tile_or_not_a_matrix_is_the_whole_tile():
    be, p, _X = _prepared("chebyshev")
    a = be.run_tile(p, 0, 20, 10, 30, upper=True).values  # not diagonal: whole
    np.testing.assert_array_equal(a, be.run_tile(p, 0, 20, 10, 30).values)


class _Spy(CompiledCPUBackend):
    """The compiled backend recording the ``upper`` each tile is asked, without its fused
    search (``search_k``, gb_knn: the plans whose products are all scatters, which
    computes j >= i of a self-join itself), so that every plan runs the tile loop."""
    calls: list = []
    search_k = None

    def run_tile(self, p, r0, r1, c0, c1, upper=False):
        _Spy.calls.append(((r0, r1) == (c0, c1), upper))
        return super().run_tile(p, r0, r1, c0, c1, upper=upper)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("metric", ["chebyshev", "manhattan", "canberra", "jensenshannon",
                                    "haversine", "weighted_chebyshev", "braycurtis"])
@pytest.mark.parametrize("wm", [None, 6000 / 2**20])  # one tile; several, offset diagonals
def test_knn_with_upper_tiles_is_the_non_symmetric_answer(metric, dtype, wm, monkeypatch):
    monkeypatch.delenv("GBDIST_CPU_BACKEND", raising=False)
    assert isinstance(runtime.get_backend("cpu"), CompiledCPUBackend)
    params, kind, _ref, _power = METRICS[metric]
    X, = fit_columns(metric, _rows(kind, m=90, dtype=dtype, seed=11))
    ref = gb.knn(X, k=7, metric=metric, backend="cpu", symmetric=False, working_memory=wm,
                 **params)
    got = gb.knn(X, k=7, metric=metric, backend="cpu", working_memory=wm, **params)
    _Spy.calls.clear()
    spied = gb.knn(X, k=7, metric=metric, backend=_Spy(), working_memory=wm, **params)
    assert _Spy.calls and all(up == diag for diag, up in _Spy.calls)
    if wm is not None:
        assert len(_Spy.calls) > sum(d for d, _u in _Spy.calls) >= 2
    assert got[0].dtype == spied[0].dtype == ref[0].dtype == np.dtype(dtype)
    # the symmetric search computes d(i, j) once (its operands in the other order may
    # differ in the last bit for a sum, as before the upper tiles)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    # the tile loop and gb_knn both compute d(i, j), i < j, with row i on the left: the same
    # bits (before the upper tiles a diagonal tile's cells below were row j's: last bits)
    np.testing.assert_array_equal(spied[0], got[0])
    for d, i in (got, spied):
        np.testing.assert_array_equal(i, ref[1])
        np.testing.assert_allclose(d, ref[0], rtol=rtol, atol=0)
