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

import zlib

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist.compiler import ir
from gbdist.compiler.pruning import pruning
from gbdist.pairwise import metric_program

from test_pruning import BUILTIN, MAPPED, NOT_PRUNED, ROUNDED, _params, brute, oracle, sparse_rows

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


def _declines(name, params) -> bool:
    """Plans the device search leaves to the full search: a two-pass union, column operands."""
    plan = metric_program(name, **params).plan
    union = any(isinstance(st.node, ir.TwoPassUnion) for st in plan.steps)
    return union or bool(set(params) - {"p"})


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
    assert device_spy, "the pruned search was not asked"
    if not _declines(name, params):
        assert device_spy[-1], "the device search declined"
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
