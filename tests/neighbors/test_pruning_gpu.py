"""The pruned kNN on the device (gbdist.backends.cuda.pruned) against brute force.

The same data and reference as tests/neighbors/test_pruning.py (very sparse rows on a
quarter grid: ties everywhere, empty rows, duplicate rows; the NumPy oracle backend's full
float64 distance matrix ordered by (distance, index), NaN last), with the operands on the
device: for every named metric the pruning proof covers, the device search must answer
(where it does not decline: a two-pass union, column operands) with the brute-force
distances and, where the sums are exact, the very indices; and the same answer as the
full device search in the same run.
"""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist.compiler.pruning import pruning
from gbdist.pairwise import metric_program

from test_pruning import (BUILTIN, MAPPED, MAX_METRIC, NOT_PRUNED, ROUNDED, _params, brute, oracle,
                          sparse_rows)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


@pytest.fixture
def device_spy(monkeypatch):
    """The device pruned searches that ran: True where one answered, False where it declined."""
    from gbdist.backends.cuda import pruned as dev
    calls = []
    real = dev.search_pruned_device

    def counted(*a, **kw):
        out = real(*a, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(dev, "search_pruned_device", counted)
    return calls


@pytest.mark.parametrize("self_join", [True, False], ids=["self", "XY"])
@pytest.mark.parametrize("name", [n for n in BUILTIN if n not in NOT_PRUNED | MAPPED])
def test_device_pruned_knn_matches_brute_force(name, self_join, device_spy, monkeypatch):
    params, kind = _params(name)
    assert pruning(metric_program(name, **params).plan).applies
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X = sparse_rows(rng, 70, 300, kind)
    Y = None if self_join else np.vstack([sparse_rows(rng, 40, 300, kind), X[[4, 9]]])
    k = 5
    R = oracle(X, Y, name, params, monkeypatch)
    Xg = cps.csr_matrix(sps.csr_matrix(X))
    Yg = None if Y is None else cps.csr_matrix(sps.csr_matrix(Y))
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    d, i = gb.knn(Xg, Yg, k=k, metric=name, backend="cuda", **params)
    d, i = cupy.asnumpy(d), cupy.asnumpy(i)
    assert device_spy and device_spy[-1], "the device search declined (or was not asked)"
    Rd, Ri = brute(R, k, self_join)
    assert_allclose(d, np.take_along_axis(R, i, axis=1), rtol=1e-12, atol=1e-12, equal_nan=True)
    assert_allclose(d, Rd, rtol=1e-12, atol=1e-12, equal_nan=True)
    if name not in ROUNDED:  # exact sums: the very indices, ties by the lower one
        assert_array_equal(i, Ri)
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    d0, i0 = gb.knn(Xg, Yg, k=k, metric=name, backend="cuda", **params)
    assert_allclose(d, cupy.asnumpy(d0), rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", ["manhattan", "euclidean", "cosine", "canberra", "hamming"])
def test_device_pruned_float32_ties(name, device_spy, monkeypatch):
    """float32 data with continuous values: sums of different keys round to one float32
    (ties across keys), many rows and a host (NumPy) input bound on the device. Same answer
    as the host pruned search and as the full device search."""
    rng = np.random.default_rng(7)
    X = sps.random(3000, 2000, density=0.002, random_state=rng, format="csr", dtype=np.float32)
    X.data += np.float32(1e-3)
    X = X.tolil()
    X[[5, 17]] = 0
    X[[40, 41]] = X[39]
    X = sps.csr_matrix(X)
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    d, i = gb.knn(X, k=10, metric=name, backend="cuda")
    assert device_spy and device_spy[-1]
    dh, ih = gb.knn(X, k=10, metric=name, backend="cpu")
    assert_allclose(d, dh, rtol=2e-6, atol=1e-6, equal_nan=True)
    agree = (i == ih) | np.isclose(d, dh, rtol=2e-6, atol=1e-6)
    assert agree.all()
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    d0, i0 = gb.knn(X, k=10, metric=name, backend="cuda")
    assert_allclose(d, d0, rtol=2e-6, atol=1e-6, equal_nan=True)


def test_device_explain_pruning():
    from gbdist.neighbors.pruned import explain_pruning
    rng = np.random.default_rng(3)
    # enough rows for the rule to pay (2500·m ≤ m·n: n ≥ 2500 rows, and few shared columns)
    X = sps.csr_matrix(sparse_rows(rng, 3000, 60000, "real", per=(1, 3)))
    text = explain_pruning(cps.csr_matrix(X), metric="manhattan", backend="cuda")
    assert "proof: applies" in text and "search: pruned" in text
    assert text == explain_pruning(X, metric="manhattan", backend="cpu")  # the same rule


PRUNED = [n for n in BUILTIN if n not in NOT_PRUNED | MAPPED]


@pytest.mark.parametrize("name", PRUNED)
def test_device_summaries_equal_the_host(name):
    """The row summaries the device search reads (gb_row_reduce on the device operands,
    kernels generated from the plan) against the host search's (NumPy), float64 and
    float32 data: equal up to the order of the sums."""
    from gbdist.backends.cuda import pruned_plan
    from gbdist.backends.pruned import Pairs
    from gbdist.runtime import bind
    params, kind = _params(name)
    plan = metric_program(name, **params).plan
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    for dtype in (np.float64, np.float32):
        X = sps.csr_matrix(sparse_rows(rng, 50, 200, kind).astype(dtype))
        Y = sps.csr_matrix(sparse_rows(rng, 30, 200, kind).astype(dtype))
        db = bind(plan, {"A": cps.csr_matrix(X), "B": cps.csr_matrix(Y)}, drop_zeros=True,
                  xp=cupy)
        # the host search on the very operands the device bound (copied to the host)
        data = {k: sps.csr_matrix((cupy.asnumpy(v.data), cupy.asnumpy(v.indices),
                                   cupy.asnumpy(v.indptr)), shape=v.shape)
                for k, v in db.data.items()}
        host = Pairs(dataclasses.replace(db, data=data, memos={}), dtype)
        pk = pruned_plan.kernels(db.plan, dtype)
        left, right = pruned_plan.summaries(pk, db.data, db.ncols)
        assert set(left) == set(host.lsum) and set(right) == set(host.rsum)
        for got, want in ((left, host.lsum), (right, host.rsum)):
            for k in want:
                assert_allclose(cupy.asnumpy(got[k]), want[k], rtol=1e-13, atol=1e-300,
                                err_msg=f"{name} {np.dtype(dtype).name} {k}")


@pytest.mark.parametrize("self_join", [True, False], ids=["self", "XY"])
@pytest.mark.parametrize("name,lanes", [("chebyshev", None), ("weighted_chebyshev", None),
                                        ("prune_maxw_m", None), ("chebyshev", 4), ("chebyshev", 32),
                                        ("prune_maxw_m", 8)])
def test_device_two_pass_union(name, lanes, self_join, device_spy, monkeypatch,
                               isolated_definitions):
    """Two-pass unions (max over the union of stored columns) on the device pruned path:
    gb_prune_union at the overlapping pairs (G lanes a pair: the rule's, or forced), the
    summaries ⊕_A f(x, z_B), ⊕_B f(z_A, y) for the rest; data with empty rows, duplicate
    rows and ties everywhere (max(L, R) is L for every R ≤ L). The very indices of NumPy
    brute force, of the host pruned search and of the full device search; explain shows
    the pruning."""
    from gbdist.backends.cuda import pruned_plan
    from gbdist.neighbors.pruned import explain_pruning
    monkeypatch.setattr(pruned_plan, "UNION_LANES", lanes)
    gb.define(MAX_METRIC)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X = sparse_rows(rng, 90, 300, "real")
    Y = None if self_join else np.vstack([sparse_rows(rng, 50, 300, "real"), X[[4, 9]]])
    Yd = X if Y is None else Y
    two = 2 if name == "prune_maxw_m" else 1
    R = np.array([[np.max(np.abs(two * a - b)) for b in Yd] for a in X])
    Xg = cps.csr_matrix(sps.csr_matrix(X))
    Yg = None if Y is None else cps.csr_matrix(sps.csr_matrix(Y))
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    text = explain_pruning(Xg, Yg, metric=name, backend="cuda")
    assert "proof: applies" in text and "Max(L0, R0)" in text and "search: pruned" in text
    out = {}
    for k in (1, 5, 12):
        d, i = gb.knn(Xg, Yg, k=k, metric=name, backend="cuda")
        assert device_spy and device_spy[-1], "the device search declined"
        d, i = cupy.asnumpy(d), cupy.asnumpy(i)
        Rd, Ri = brute(R, k, self_join)
        assert_allclose(d, Rd, rtol=0, atol=0)
        assert_array_equal(i, Ri)
        dh, ih = gb.knn(sps.csr_matrix(X), None if Y is None else sps.csr_matrix(Y), k=k,
                        metric=name, backend="cpu")
        assert_array_equal(i, ih)
        out[k] = (d, i)
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    d0, i0 = gb.knn(Xg, Yg, k=5, metric=name, backend="cuda")
    assert_array_equal(out[5][1], cupy.asnumpy(i0))
    assert_allclose(out[5][0], cupy.asnumpy(d0), rtol=0, atol=0)


NEGMIN_METRIC = ("op prune_negabs(x, y) = -abs(x - y)\n"
                 "metric prune_negmin_m(A, B) = mxm(A, B.T, semiring(prune_negabs, min))")


@pytest.mark.parametrize("self_join", [True, False], ids=["self", "XY"])
@pytest.mark.parametrize("name", ["chebyshev", "prune_negmin_m"])
@pytest.mark.parametrize("storage", [np.float64, np.float32], ids=["float64", "float32"])
def test_device_union_top(name, storage, self_join, device_spy, monkeypatch,
                          isolated_definitions):
    """pruned_plan.UNION_TOP (issue 29): max / min unions at the overlapping pairs from the
    overlap SpGEMM's values and each row's best one-sided entry (gb_prune_union_keys, the
    row-wise sort, gb_prune_union_top); a min union (minus chebyshev: -0.0 at equal values);
    data with empty, duplicate and tied rows, float64 and float32. The very indices and
    values of NumPy brute force, and the same answer as gb_prune_union (UNION_TOP off) and
    as the full device search; the new kernels must have run."""
    from gbdist.backends.cuda import pruned_plan
    gb.define(NEGMIN_METRIC)
    calls, real = [], pruned_plan.union_top_pairs

    def counted(pk, step, A, a, B, b, pi, pj, inter):
        calls.append(int(pi.size))
        return real(pk, step, A, a, B, b, pi, pj, inter)
    monkeypatch.setattr(pruned_plan, "union_top_pairs", counted)
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 4)
    X = sparse_rows(rng, 90, 300, "real").astype(storage)
    Y = None if self_join else np.vstack([sparse_rows(rng, 50, 300, "real").astype(storage),
                                          X[[4, 9]]])
    Yd = (X if Y is None else Y).astype(np.float64)
    Xd = X.astype(np.float64)
    if name == "prune_negmin_m":
        R = np.array([[np.min(-np.abs(a - b)) for b in Yd] for a in Xd])
    else:
        R = np.array([[np.max(np.abs(a - b)) for b in Yd] for a in Xd])
    Xg = cps.csr_matrix(sps.csr_matrix(X))
    Yg = None if Y is None else cps.csr_matrix(sps.csr_matrix(Y))
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    for k in (1, 5, 12):
        got = {}
        for top in (True, False):
            monkeypatch.setattr(pruned_plan, "UNION_TOP", top)
            d, i = gb.knn(Xg, Yg, k=k, metric=name, backend="cuda")
            assert device_spy and device_spy[-1], "the device search declined"
            got[top] = (cupy.asnumpy(d), cupy.asnumpy(i))
        d, i = got[True]
        Rd, Ri = brute(R.astype(storage).astype(np.float64), k, self_join)
        assert_allclose(d, Rd, rtol=0, atol=0)
        assert_array_equal(i, Ri)
        assert_array_equal(i, got[False][1])
        assert_allclose(d, got[False][0], rtol=0, atol=0)
    assert sum(calls) > 0, "gb_prune_union_top did not run"
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    d0, i0 = gb.knn(Xg, Yg, k=5, metric=name, backend="cuda")
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    monkeypatch.setattr(pruned_plan, "UNION_TOP", True)
    d5, i5 = (cupy.asnumpy(a) for a in gb.knn(Xg, Yg, k=5, metric=name, backend="cuda"))
    assert_array_equal(i5, cupy.asnumpy(i0))
    assert_allclose(d5, cupy.asnumpy(d0), rtol=0, atol=0)


def power_law_rows(rng, m, K, kind):
    """Rows of 1–8 entries whose columns follow a power law (a few popular columns, many
    rare), values on a quarter grid (ties), with empty and duplicate rows."""
    p = 1.0 / np.arange(1, K + 1) ** 1.2
    X = np.zeros((m, K))
    for r in range(m):
        c = rng.choice(K, size=int(rng.integers(1, 9)), replace=False, p=p / p.sum())
        X[r, c] = np.round(rng.normal(size=c.size) * 2) / 4 + 0.125
    if kind == "binary":
        X = (X != 0).astype(float)
    elif kind in ("nonneg", "prob"):
        X = np.abs(X)
    X[[3, 30]] = 0.0  # empty rows
    X[[6, 60, 61]] = X[5]  # duplicate rows
    if kind == "prob":
        X = X / np.maximum(X.sum(axis=1, keepdims=True), 1e-300)
    return X


@pytest.mark.parametrize("name", PRUNED + ["prune_maxw_m"])
def test_device_pruned_equals_full_on_power_law(name, device_spy, monkeypatch,
                                                isolated_definitions):
    """Every named metric the proof covers (and a user-defined max metric): the device
    pruned search (GBDIST_PRUNE=always) against the full device search (never) and the
    host pruned search on a small power-law shape, float64, self-join and a query set;
    indices equal where the sums are exact, ties (within rounding) either way elsewhere."""
    gb.define(MAX_METRIC)
    params, kind = _params(name) if name != "prune_maxw_m" else ({}, "real")
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 2)
    X = sps.csr_matrix(power_law_rows(rng, 400, 1500, kind))
    Q = sps.csr_matrix(power_law_rows(rng, 120, 1500, kind))
    for Yh in (None, Q):
        args = [cps.csr_matrix(X), None if Yh is None else cps.csr_matrix(Yh)]
        monkeypatch.setenv("GBDIST_PRUNE", "always")
        d, i = (cupy.asnumpy(a) for a in gb.knn(*args, k=10, metric=name, backend="cuda", **params))
        assert device_spy and device_spy[-1], "the device search declined"
        dh, ih = gb.knn(X, Yh, k=10, metric=name, backend="cpu", **params)
        monkeypatch.setenv("GBDIST_PRUNE", "never")
        d0, i0 = (cupy.asnumpy(a) for a in gb.knn(*args, k=10, metric=name, backend="cuda", **params))
        for dd, ii in ((d0, i0), (dh, ih)):
            assert_allclose(d, dd, rtol=1e-12, atol=1e-12, equal_nan=True)
            if name in ROUNDED:
                assert ((i == ii) | np.isclose(d, dd, rtol=1e-12, atol=1e-12)).all()
            else:
                assert_array_equal(i, ii)


def tie_rows(rng, m, K, name):
    """Rows whose k-th value is a tie across keys at most queries: for chebyshev the first
    half of the rows scaled ×4 (max(L, R) is L at every index row with R ≤ L, and a query
    of small L finds such rows only past the low indices: gb_prune_tie skips blocks), for
    jensenshannon rows normalised to sum 1 (keys a few ulps apart, values rounded to one);
    with empty and duplicate rows."""
    X = sparse_rows(rng, m, K, "prob" if name == "jensenshannon" else "real")
    if name == "chebyshev":
        X[:m // 2] *= 4.0
    X[[m - 2, m - 1]] = X[m // 2 + 7]  # duplicates at high indices too
    X[m - 40] = 0.0
    return X


@pytest.mark.parametrize("name", ["chebyshev", "jensenshannon"])
def test_device_ties_across_keys_without_dense_rows(name, device_spy, monkeypatch):
    """Queries whose k-th value is a tie across keys get the tie's lowest free indices on
    the device (two binary searches, gb_prune_tie), not a row of h against every index
    row: with DENSE_LIMIT = 0 any dense row would make the search decline (the old code
    did, on this data). Same answer as the host pruned search and as brute force (the
    NumPy oracle, float64), self-join and a query set, k = 1, 10, 31."""
    from gbdist.backends.cuda import pruned as dev
    monkeypatch.setattr(dev, "DENSE_LIMIT", 0)
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 3)
    X = tie_rows(rng, 2000, 300, name)
    Q = np.vstack([tie_rows(rng, 150, 300, name), X[[5, 1500, 1998]]])
    for Y, self_join in ((None, True), (Q, False)):
        A, B = (X, None) if self_join else (Q, X)  # queries, index rows
        R = oracle(A, B, name, {}, monkeypatch)
        Ag, Bg = cps.csr_matrix(sps.csr_matrix(A)), None if B is None else \
            cps.csr_matrix(sps.csr_matrix(B))
        for k in (1, 10, 31):
            monkeypatch.setenv("GBDIST_PRUNE", "always")
            dev.PROFILE.pop("tie_rows", None)
            d, i = (cupy.asnumpy(a) for a in gb.knn(Ag, Bg, k=k, metric=name, backend="cuda"))
            assert device_spy and device_spy[-1], "the device search declined"
            assert dev.PROFILE.get("tie_rows", 0) > A.shape[0] // 20, dev.PROFILE
            dh, ih = gb.knn(sps.csr_matrix(A), None if B is None else sps.csr_matrix(B), k=k,
                            metric=name, backend="cpu")
            Rd, Ri = brute(R, k, self_join)
            assert_allclose(d, Rd, rtol=1e-12, atol=1e-12, equal_nan=True)
            assert_allclose(d, np.take_along_axis(R, i, axis=1), rtol=1e-12, atol=1e-12)
            assert_allclose(d, dh, rtol=1e-12, atol=1e-12, equal_nan=True)
            if name == "chebyshev":  # exact values: the very indices, ties to the lower
                assert_array_equal(i, Ri)
                assert_array_equal(i, ih)
            else:  # summaries summed in another order: a tie may fall within rounding
                assert ((i == ih) | np.isclose(d, dh, rtol=1e-12, atol=1e-12)).all()
                assert ((i == Ri) | np.isclose(d, Rd, rtol=1e-12, atol=1e-12)).all()
