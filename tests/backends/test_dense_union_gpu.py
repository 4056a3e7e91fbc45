"""The dense union strategy (kernels/dense_union.cuh, dense_strategies.DENSE_UNION off) on a GPU:
forced, it equals the gather strategy's two passes bit for bit (NaN where gather's is NaN)
and SciPy within rounding, for chebyshev and a user min-union, float32 (float32 and float64
accumulators) and float64, on Tabula-Muris-like density (rows ~8% stored), empty rows, NaN
values, split K (a small output over many columns) and one K-range (a wide output over few
columns); while DENSE_UNION is off the planner never offers it, on it may.

The kernel's logic is also checked on the host (tests/backends/test_dense_union_host.py)."""
import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from own_distances import own_distances

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _rows(rng, n, k, density, dtype):
    X = sps.random(n, k, density=density, random_state=rng, dtype=np.float64).toarray()
    X *= rng.choice([-1.0, 1.0], X.shape) * 10.0 ** rng.uniform(-2, 2, (n, 1))
    X[::17] = 0.0  # empty rows
    return X.astype(dtype)


def _min_union():
    op = gb.op("du_gpu_inv", lambda x, y: 1 / (1 + abs(x - y)))
    A, B = gb.matrices("A B")
    return gb.compile(gb.mxm(A, B.T, gb.semiring(op, gb.ops.min)))


def _want(kind, X, Y):
    """SciPy, NaN where a row holds one (gather's max/min propagate NaN; SciPy's skips it)."""
    X, Y = X.astype(np.float64), Y.astype(np.float64)
    d = cdist(np.nan_to_num(X), np.nan_to_num(Y), "chebyshev")
    d[np.isnan(X).any(axis=1)] = np.nan
    d[:, np.isnan(Y).any(axis=1)] = np.nan
    return d if kind == "chebyshev" else 1.0 / (1.0 + d)


def _run(kind, X, Y, strategy):
    from gbdist.backends.cuda import last_run
    Xs, Ys = sps.csr_matrix(X), sps.csr_matrix(Y)
    if kind == "chebyshev":
        D = own_distances(Xs, Ys, metric="chebyshev", backend="cuda", strategy=strategy,
                          ensure_all_finite="allow-nan")
    else:
        D = _min_union()(A=Xs, B=Ys, backend="cuda", strategy=strategy,
                         ensure_all_finite="allow-nan")
    assert last_run()["strategy"] == strategy
    return np.asarray(D), last_run()["accumulate"]


SHAPES = {"tabula-like": (300, 260, 2300, 0.077),  # split K
          "wide": (700, 650, 12, 0.5),  # one K-range (K below a chunk)
          "tall": (2100, 40, 900, 0.1)}  # several row tiles, a thin column tile


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", ["chebyshev", "min_union"])
@pytest.mark.parametrize("dtype,acc", [(np.float32, "auto"), (np.float32, "float64"),
                                       (np.float64, "auto")])
def test_forced_dense_union_equals_gather(shape, kind, dtype, acc):
    from gbdist.backends.cuda import accumulate
    m, n, k, density = SHAPES[shape]
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 10 * (kind == "chebyshev"))
    X, Y = _rows(rng, m, k, density, dtype), _rows(rng, n, k, density, dtype)
    Y[1] = X[1]
    X[2, 3] = np.nan
    if kind == "chebyshev" and acc == "auto":  # chebyshev's float32 plan: no NaN (range check)
        X[2, 3] = 0.0
    with accumulate(acc):
        D, at = _run(kind, X, Y, "dense_union")
        Dg, atg = _run(kind, X, Y, "gather")
    assert at == atg
    np.testing.assert_array_equal(D, Dg)
    tol = 2e-7 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(D, _want(kind, X, Y), rtol=tol, atol=0, equal_nan=True)


def test_the_planner_offers_it_only_when_on(monkeypatch):
    from gbdist.backends.cuda import cache, dense_strategies, last_run, strategies
    rng = np.random.default_rng(3)
    X = sps.csr_matrix(_rows(rng, 400, 3000, 0.077, np.float32))
    seen = []
    real = strategies.estimate

    def spy(job):
        est = real(job)
        seen.append(set(est))
        return est

    monkeypatch.setattr(strategies, "estimate", spy)
    cache.CHOICES.clear()
    monkeypatch.setattr(dense_strategies, "DENSE_UNION", False)
    own_distances(X, X, metric="chebyshev", backend="cuda")
    assert seen and all("dense_union" not in s for s in seen)
    assert last_run()["strategy"] != "dense_union"
    monkeypatch.setattr(dense_strategies, "DENSE_UNION", True)
    seen.clear()
    own_distances(X, X, metric="chebyshev", backend="cuda")
    assert seen and all("dense_union" in s for s in seen)


def test_knn_on_a_prepared_operand_with_it_on(monkeypatch):
    """gb.knn on gb.prepare(X) with the planner free to take it: the same neighbours as with
    it off (the benchmark's comparison, small)."""
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import cache, dense_strategies, strategies
    rng = np.random.default_rng(5)
    Xp = gb.prepare(cps.csr_matrix(sps.csr_matrix(_rows(rng, 500, 2500, 0.077, np.float32))))
    res = {}
    for on in (False, True):
        monkeypatch.setattr(dense_strategies, "DENSE_UNION", on)
        cache.CHOICES.clear()
        res[on] = [np.asarray(a.get()) for a in gb.knn(Xp, k=10, metric="chebyshev", backend="cuda")]
    for a, b in zip(res[False], res[True]):
        np.testing.assert_array_equal(a, b)
