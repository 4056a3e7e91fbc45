"""tests/test_inputs.py on the CUDA backend: CuPy operands are validated on the
device (one transfer of a few numbers per operand) before any kernel reads them,
NaN/inf follow the same policy, overflow and IEEE entries are recomputed in the
direct form, and the results equal the CPU backend's. Corrupt operands run in a
subprocess, where an illegal memory access could not take pytest down.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose

import gbdist as gb
from gbdist.errors import CorruptInputError, NonFiniteError

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

ROOT = Path(__file__).resolve().parents[2]

_RUNNER = """
import json
import numpy as np, scipy.sparse as sps, cupy, cupyx.scipy.sparse as cps, gbdist as gb

def good():
    return cps.csr_matrix(sps.random(5, 6, density=0.5, format="csr", random_state=0))

def setitem(a, i, v):
    a[i] = v
    return a

cases = {
    "issue_negative_index": lambda: cps.csr_matrix(
        (cupy.ones(2), cupy.array([0, -5], dtype=cupy.int32), cupy.array([0, 1, 2, 2], dtype=cupy.int32)),
        shape=(3, 3)),
    "index_past_shape": lambda: (lambda m: (setitem(m.indices, 3, 9), m)[1])(good()),
    "indptr_decreasing": lambda: (lambda m: (setitem(m.indptr, 2, int(m.indptr[3]) + 1), m)[1])(good()),
    "indptr_not_from_0": lambda: (lambda m: (setitem(m.indptr, 0, 1), m)[1])(good()),
    "indptr_past_nnz": lambda: (lambda m: (setitem(m.indptr, -1, int(m.indptr[-1]) + 50), m)[1])(good()),
    "csc_bad_row": lambda: (lambda m: (setitem(m.indices, 1, 100), m)[1])(good().tocsc()),
    "coo_bad_col": lambda: (lambda m: (setitem(m.col, 2, 60), m)[1])(good().tocoo()),
    "host_issue_example": lambda: sps.csr_matrix((np.ones(2), [0, -5], [0, 1, 2, 2]), shape=(3, 3)),
}
out = {}
for name, build in cases.items():
    M = build()
    res = {}
    for call in ("pairwise", "pairwise_Y", "mxm"):
        try:
            if call == "pairwise":
                gb.pairwise_distances(M, metric="euclidean", backend="cuda")
            elif call == "pairwise_Y":
                gb.pairwise_distances(cupy.ones((2, M.shape[1])), M, metric="manhattan", backend="cuda")
            else:
                gb.mxm(M, cupy.ones((M.shape[1], 2)), gb.semirings.plus_times, backend="cuda")
            cupy.cuda.Device().synchronize()
            res[call] = "no error"
        except gb.GbdistError as e:
            res[call] = [type(e).__name__, isinstance(e, ValueError), str(e)]
        except Exception as e:
            res[call] = ["untyped " + type(e).__name__, False, str(e)]
    out[name] = res
print(json.dumps(out))
"""


def test_corrupt_device_operands_are_refused_before_any_kernel():
    r = subprocess.run([sys.executable, "-c", _RUNNER], capture_output=True, text=True, timeout=300,
                       cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
    assert r.returncode == 0, f"the subprocess died (rc {r.returncode}): {r.stderr[-2000:]}"
    results = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(results) == 8
    for case, calls in results.items():
        for call, res in calls.items():
            assert res != "no error", f"{case} via {call} was accepted"
            name, is_value_error, msg = res
            assert name == "CorruptInputError" and is_value_error, f"{case} via {call}: {name}: {msg}"
            assert "Got:" in msg and "check_format" in msg


def test_issue_example_on_the_device():
    X = cps.csr_matrix((cupy.ones(2), cupy.array([0, -5], dtype=cupy.int32),
                        cupy.array([0, 1, 2, 2], dtype=cupy.int32)), shape=(3, 3))
    with pytest.raises(CorruptInputError, match=r"\[0, 3\)"):
        gb.pairwise_distances(X, backend="cuda")


def test_non_finite_device_input_is_refused_naming_row_and_column():
    X = cupy.ones((3, 4))
    X[2, 1] = cupy.nan
    with pytest.raises(NonFiniteError, match="Input X contains NaN") as e:
        gb.pairwise_distances(X, backend="cuda")
    assert "row 2, column 1" in str(e.value)
    S = cps.csr_matrix(cupy.asarray(np.array([[1.0, 0, 2.0], [0, np.inf, 0]])))
    with pytest.raises(NonFiniteError, match="Input Y contains infinity") as e:
        gb.pairwise_distances(cupy.ones((2, 3)), S, backend="cuda")
    assert "row 1, column 1" in str(e.value)
    with pytest.raises(NonFiniteError):
        gb.pairwise_distances(cupy.ones((2, 3)), S, backend="cuda", ensure_all_finite="allow-nan")
    with pytest.raises(ValueError, match="Found array with 0 sample"):
        gb.pairwise_distances(cupy.ones((0, 3)), backend="cuda")


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "manhattan", "chebyshev", "cosine",
                                    "canberra", "braycurtis", "inner_product", "hamming"])
def test_allowed_non_finite_values_match_the_cpu_on_the_device(metric):
    rng = np.random.default_rng(11)
    X = np.where(rng.random((7, 6)) < 0.6, rng.normal(size=(7, 6)), 0.0)
    Y = np.where(rng.random((5, 6)) < 0.6, rng.normal(size=(5, 6)), 0.0)
    X[1, 2], X[4, 0] = np.inf, -np.inf
    X[5, 3] = np.nan
    Y[2, 4] = np.inf
    ref = gb.pairwise_distances(X, Y, metric=metric, backend="cpu", ensure_all_finite=False)
    for x, y in ((X, Y), (cupy.asarray(X), cupy.asarray(Y)),
                 (cps.csr_matrix(cupy.asarray(X)), cps.csr_matrix(cupy.asarray(Y)))):
        got = gb.pairwise_distances(x, y, metric=metric, backend="cuda", ensure_all_finite=False)
        got = cupy.asnumpy(got)
        assert_allclose(got, ref, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=metric)
        assert (np.isnan(got) == np.isnan(ref)).all() and (np.isposinf(got) == np.isposinf(ref)).all()


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev", "cosine", "canberra"])
def test_extreme_magnitudes_match_the_cpu_on_the_device(metric):
    X = np.array([[1e200, 0.0, 1.0], [0.0, 1.0, 1.0], [-1e200, 3e199, 1.0],
                  [1e160, 1.0, 0.0], [1e160 + 1e146, 0.0, 0.0], [1.5e154, 1e154, 0.0]])
    ref = gb.pairwise_distances(X, metric=metric, backend="cpu")
    assert np.isfinite(ref).all()
    got = cupy.asnumpy(gb.pairwise_distances(cupy.asarray(X), metric=metric, backend="cuda"))
    assert_allclose(got, ref, rtol=1e-12, atol=1e-12 if metric == "cosine" else 0)
    # finite dot product, overflowing norms: the epilogue hides the overflow (cosine = 1)
    X1, Y1 = np.array([[1e155, 0.0, 0.0]]), np.array([[1e153, 1e156, 0.0]])
    ref1 = gb.pairwise_distances(X1, Y1, metric=metric, backend="cpu")
    got1 = cupy.asnumpy(gb.pairwise_distances(cupy.asarray(X1), cupy.asarray(Y1), metric=metric,
                                              backend="cuda"))
    assert_allclose(got1, ref1, rtol=1e-12, atol=1e-12 if metric == "cosine" else 0)


def test_float_powers_of_negative_device_data_raise_domain_error():
    A, B = gb.matrices("A B")
    root = gb.op("root_diff_gpu", lambda x, y: (x ** 0.5 - y ** 0.5) ** 2)
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(root, gb.ops.plus)))
    X = cupy.asarray(np.array([[1.0, 2.0], [3.0, -4.0]]))
    with pytest.raises(gb.DomainError, match="input A"):
        prog(A=X, B=cupy.abs(X), backend="cuda")
    with pytest.raises(gb.DomainError, match="input B"):
        prog(A=cps.csr_matrix(cupy.abs(X)), B=cps.csr_matrix(X), backend="cuda")


def test_valid_device_input_results_match_the_cpu():
    X = sps.random(20, 30, density=0.3, format="csr", random_state=2)
    got = gb.pairwise_distances(cps.csr_matrix(X), metric="euclidean", backend="cuda")
    assert isinstance(got, cupy.ndarray)
    assert_allclose(cupy.asnumpy(got), gb.pairwise_distances(X, metric="euclidean", backend="cpu"),
                    rtol=1e-9, atol=1e-9)


def test_result_beyond_gpu_memory_is_a_typed_error_before_any_kernel():
    X = cps.csr_matrix((4_000_000, 3), dtype=cupy.float64)  # 4e6 × 4e6 float64: 128 TB
    with pytest.raises(gb.ResultTooLargeError) as e:
        gb.pairwise_distances(X, backend="cuda")
    assert isinstance(e.value, MemoryError) and isinstance(e.value, ValueError)
    assert "pairwise_distances_chunked" in str(e.value)


@pytest.mark.parametrize("metric", ["hellinger", "jensenshannon"])
def test_negative_device_values_of_nonnegative_metrics_are_refused(metric):
    """The minimum on the device decides these checks (issue 25); a negative value still
    gets the per-value message."""
    X = sps.random(30, 40, density=0.3, format="csr", random_state=4)
    bad = X.copy()
    bad.data[7] = -0.5
    with pytest.raises(gb.DomainError, match="input B"):
        gb.pairwise_distances(cps.csr_matrix(X), cps.csr_matrix(bad), metric=metric, backend="cuda")
    got = gb.pairwise_distances(cps.csr_matrix(X), cps.csr_matrix(X), metric=metric, backend="cuda")
    ref = gb.pairwise_distances(X, X.copy(), metric=metric, backend="cpu")
    assert_allclose(cupy.asnumpy(got), ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("layout", ["sorted_unflagged", "unsorted", "duplicates"])
def test_device_csr_not_marked_canonical(layout):
    """A cupyx CSR whose has_canonical_format is unset is checked by one kernel; only an
    unsorted or duplicated one is copied and sorted. The caller's matrix is never changed."""
    rng = np.random.default_rng(9)
    X = sps.random(40, 60, density=0.2, format="csr", random_state=5)
    ip, ix, v = X.indptr.copy(), X.indices.copy(), X.data.copy()
    if layout == "unsorted":
        for r in range(0, 40, 3):
            s = slice(ip[r], ip[r + 1])
            perm = rng.permutation(ip[r + 1] - ip[r])
            ix[s], v[s] = ix[s][perm], v[s][perm]
    elif layout == "duplicates":  # the second entry of each long row doubles its first column
        for r in range(40):
            if ip[r + 1] - ip[r] >= 2:
                ix[ip[r] + 1], v[ip[r] + 1] = ix[ip[r]], 1.0
    ref_m = sps.csr_matrix((v, ix, ip), shape=X.shape)
    ref_m.sum_duplicates()
    G = cps.csr_matrix((cupy.asarray(v), cupy.asarray(ix), cupy.asarray(ip)), shape=X.shape)
    G.has_canonical_format = False
    before = [a.get().copy() for a in (G.data, G.indices, G.indptr)]
    got = gb.pairwise_distances(G, metric="manhattan", backend="cuda")
    ref = gb.pairwise_distances(ref_m, metric="manhattan", backend="cpu")
    assert_allclose(cupy.asnumpy(got), ref, rtol=1e-12, atol=1e-12)
    for a, b in zip(before, (G.data, G.indices, G.indptr)):
        assert (a == b.get()).all()
    assert not G.has_canonical_format
