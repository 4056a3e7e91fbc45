"""Operands from outside: memory safety on corrupt input, the non-finite policy,
overflow, domains of powers, wide inputs and the typed errors of bad arguments.

References are independent: SciPy's cdist on dense copies, dense float64
brute force of each formula written out here, and mpmath at 200 bits for the
extreme magnitudes. Cases that could crash the interpreter run in a subprocess.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric (IEEE semantics, its cosine)
import gbdist.io
from gbdist.errors import CorruptInputError, NonFiniteError, ResultTooLargeError

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=str(ROOT))


# ---------------------------------------------------------------------------
# corrupt sparse input: refused before any kernel reads it, never a crash
# ---------------------------------------------------------------------------

_RUNNER = """
import json, sys
import numpy as np, scipy.sparse as sps, gbdist as gb
from gbdist.io import read_matrix
from corrupt_inputs import BUILDERS
out = {}
for name, build in BUILDERS.items():
    M = build()
    res = {}
    for call in ("pairwise", "pairwise_Y", "knn", "chunked", "mxm", "savez"):
        try:
            if call == "pairwise":
                gb.pairwise_distances(M, metric="euclidean", backend="cpu")
            elif call == "pairwise_Y":
                gb.pairwise_distances(np.ones((2, 6)), M, metric="manhattan", backend="cpu")
            elif call == "knn":
                gb.knn(M, k=1, backend="cpu")
            elif call == "chunked":
                list(gb.pairwise_distances_chunked(M, backend="cpu"))
            elif call == "mxm":
                gb.mxm(M, np.ones((6, 2)), gb.semirings.plus_times, backend="cpu")
            else:
                if M.format != "csr" or np.ndim(M.indices) != 1 or M.indices.dtype.kind == "f":
                    continue  # (load_npz itself casts float indices to integers)
                f = sys.argv[1] + "/" + name + ".npz"
                np.savez(f, data=M.data, indices=M.indices, indptr=M.indptr,
                         format=np.array("csr"), shape=np.array(M.shape))
                read_matrix(f)
            res[call] = "no error"
        except gb.GbdistError as e:
            res[call] = [type(e).__name__, isinstance(e, ValueError), str(e)]
        except Exception as e:
            res[call] = ["untyped " + type(e).__name__, False, str(e)]
    out[name] = res
print(json.dumps(out))
"""
CORRUPT_CASES = ["issue_negative_index", "index_past_shape", "huge_int64_index",
                 "indptr_decreasing", "indptr_not_from_0", "indptr_past_nnz", "indptr_short",
                 "indptr_long", "data_short", "indices_float", "indices_2d", "negative_shape",
                 "shape_too_small", "csr_array_bad_index", "csc_bad_row", "csc_indptr_decreasing",
                 "coo_negative_row", "coo_col_past_shape", "coo_array_bad", "bsr_bad_block",
                 "dok_bad_key"]


@pytest.fixture(scope="module")
def corrupt_results(tmp_path_factory):
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    r = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path_factory.mktemp("corrupt"))],
                       capture_output=True, text=True, timeout=300, cwd=str(ROOT),
                       env=dict(os.environ, PYTHONPATH=path))
    assert r.returncode == 0, f"the subprocess died (rc {r.returncode}): {r.stderr[-2000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_every_corrupt_case_is_exercised(corrupt_results):
    from corrupt_inputs import BUILDERS
    assert sorted(BUILDERS) == sorted(CORRUPT_CASES) == sorted(corrupt_results)


@pytest.mark.parametrize("case", CORRUPT_CASES)
def test_corrupt_sparse_input_is_refused_with_a_typed_error(corrupt_results, case):
    assert corrupt_results[case]
    for call, res in corrupt_results[case].items():
        assert res != "no error", f"{case} via {call} was accepted"
        name, is_value_error, msg = res
        assert name in ("CorruptInputError", "InputError"), f"{case} via {call}: {name}: {msg}"
        assert is_value_error
        assert "Got:" in msg, msg
        if name == "CorruptInputError" and call != "savez":
            assert "check_format" in msg, msg


def test_issue_example_names_the_index_and_row():
    X = sps.csr_matrix((np.ones(2), [0, -5], [0, 1, 2, 2]), shape=(3, 3))
    with pytest.raises(CorruptInputError) as e:
        gb.pairwise_distances(X, backend="cpu")
    msg = str(e.value)
    assert "index -5" in msg and "row 1" in msg and "[0, 3)" in msg and "X.check_format()" in msg


def test_corrupt_npz_in_the_cli_exits_nonzero_without_a_signal(tmp_path):
    M = sps.random(5, 6, density=0.5, format="csr", random_state=0)
    f = tmp_path / "bad.npz"
    indices = M.indices.copy()
    indices[0] = 1000
    np.savez(f, data=M.data, indices=indices, indptr=M.indptr, format=np.array("csr"),
             shape=np.array(M.shape))
    r = run_python(f"import sys; from gbdist.cli.knn import main; "
                   f"sys.exit(main(['knn', {str(f)!r}, '-k', '2', '-o', {str(tmp_path / 'o')!r}]))")
    assert r.returncode > 0, (r.returncode, r.stderr[-1000:])
    assert "column index" in (r.stderr + r.stdout)


def test_npy_header_promising_more_than_the_file_is_refused_before_allocating(tmp_path):
    import numpy.lib.format as npformat
    f = tmp_path / "huge.npy"
    with open(f, "wb") as fp:
        npformat.write_array_header_1_0(fp, {"descr": "<f8", "fortran_order": False,
                                             "shape": (10**11, 3)})
        fp.write(b"\0" * 64)
    with pytest.raises(gb.InputError, match="promises more data"):
        gb.io.read_matrix(f)
    mtx = tmp_path / "huge.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n100000000000 3 100000000000\n"
                   "1 1 1.0\n")
    with pytest.raises(gb.InputError, match="promises more data"):
        gb.io.read_matrix(mtx)


# ---------------------------------------------------------------------------
# valid but unusual inputs: same numbers as SciPy on a dense copy
# ---------------------------------------------------------------------------


def _unusual(rng):
    D = np.where(rng.random((6, 8)) < 0.5, rng.normal(size=(6, 8)), 0.0)
    rows, cols = np.nonzero(D)
    yield "csr", sps.csr_matrix(D)
    yield "csr_array", sps.csr_array(D)
    yield "csc", sps.csc_matrix(D)
    yield "coo_duplicates", sps.coo_matrix((np.concatenate([D[rows, cols] / 2] * 2),
                                            (np.concatenate([rows] * 2), np.concatenate([cols] * 2))),
                                           shape=D.shape)
    unsorted = sps.csr_matrix(D)
    for i in range(unsorted.shape[0]):
        s, t = unsorted.indptr[i], unsorted.indptr[i + 1]
        unsorted.indices[s:t] = unsorted.indices[s:t][::-1].copy()
        unsorted.data[s:t] = unsorted.data[s:t][::-1].copy()
    unsorted.has_sorted_indices = True  # a lie: validation must not trust the flag
    yield "unsorted_flag_lies", unsorted
    i64 = sps.csr_matrix(D)
    i64.indices, i64.indptr = i64.indices.astype(np.int64), i64.indptr.astype(np.int64)
    yield "int64", i64
    yield "lil", sps.lil_matrix(D)
    yield "dok", sps.dok_matrix(D)
    yield "dia", sps.dia_matrix(D)
    yield "bsr", sps.bsr_matrix(np.vstack([D, np.zeros((0, 8))]), blocksize=(2, 2))
    yield "int_dense", np.rint(D * 3).astype(np.int64)
    yield "bool_dense", D > 0
    yield "list", D.tolist()


@pytest.mark.parametrize("metric,ref", [("euclidean", "euclidean"), ("manhattan", "cityblock"),
                                        ("chebyshev", "chebyshev"), ("cosine", "cosine")])
def test_unusual_but_valid_inputs_match_scipy(metric, ref):
    rng = np.random.default_rng(3)
    for name, X in _unusual(rng):
        dense = X.toarray() if sps.issparse(X) else np.asarray(X, dtype=np.float64)
        before = X.copy() if sps.issparse(X) else None
        D = own_distances(X, metric=metric, backend="cpu")
        R = cdist(dense.astype(np.float64), dense.astype(np.float64), ref)
        # (atol: the self-distances of the expanded euclidean are not exact zeros yet)
        assert_allclose(D, R, rtol=1e-9, atol=1e-7, equal_nan=True, err_msg=name)
        if before is not None and X.format in ("csr", "csc", "coo"):  # never modified in place
            assert (X != before).nnz == 0, name


# ---------------------------------------------------------------------------
# non-finite input: refused by default; the formula's IEEE value when allowed
# ---------------------------------------------------------------------------


def test_nan_and_inf_are_refused_by_default_naming_operand_row_and_column():
    X = np.ones((3, 4))
    X[2, 1] = np.nan
    with pytest.raises(NonFiniteError) as e:
        gb.pairwise_distances(X, backend="cpu")
    assert isinstance(e.value, ValueError)
    assert "Input X contains NaN" in str(e.value) and "row 2, column 1" in str(e.value)
    Y = np.ones((2, 4))
    Y[1, 3] = -np.inf
    with pytest.raises(ValueError, match="Input Y contains infinity") as e:
        gb.pairwise_distances(np.ones((3, 4)), Y, backend="cpu")
    assert "row 1, column 3" in str(e.value)
    with pytest.raises(ValueError, match="Input Y contains infinity"):
        gb.pairwise_distances(np.ones((3, 4)), Y, backend="cpu", ensure_all_finite="allow-nan")
    S = sps.csr_matrix(X)
    with pytest.raises(NonFiniteError, match="row 2, column 1"):
        gb.pairwise_distances(S, metric="cosine", backend="cpu")
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_times))
    with pytest.raises(NonFiniteError, match="Input A contains NaN"):
        prog(A=X, B=np.ones((2, 4)), backend="cpu")
    with pytest.raises(gb.InputError, match="ensure_all_finite must be"):
        gb.pairwise_distances(np.ones((2, 2)), backend="cpu", ensure_all_finite="yes")


def _brute(metric, X, Y):
    """Dense float64 evaluation of each formula over all k columns (IEEE throughout)."""
    x, y = X[:, None, :], Y[None, :, :]
    k = X.shape[1]
    with np.errstate(all="ignore"):
        if metric == "euclidean":
            return np.sqrt(np.sum((x - y) ** 2, axis=2))
        if metric == "sqeuclidean":
            return np.sum((x - y) ** 2, axis=2)
        if metric == "manhattan":
            return np.sum(np.abs(x - y), axis=2)
        if metric == "chebyshev":
            return np.max(np.abs(x - y), axis=2)
        if metric == "minkowski":
            return np.sum(np.abs(x - y) ** 3, axis=2) ** (1 / 3)
        if metric == "cosine":
            return 1 - np.sum(x * y, axis=2) / (np.sqrt(np.sum(x * x, axis=2))
                                                * np.sqrt(np.sum(y * y, axis=2)))
        if metric == "inner_product":
            return np.sum(x * y, axis=2)
        if metric == "canberra":
            den = np.abs(x) + np.abs(y)
            return np.sum(np.where(den == 0, 0, np.abs(x - y) / den), axis=2)
        if metric == "braycurtis":
            return np.sum(np.abs(x - y), axis=2) / np.sum(np.abs(x + y), axis=2)
        if metric == "hamming":
            return np.sum(x != y, axis=2) / k
    raise KeyError(metric)


IEEE_METRICS = ["euclidean", "sqeuclidean", "manhattan", "chebyshev", "minkowski", "cosine",
                "inner_product", "canberra", "braycurtis", "hamming"]


@pytest.mark.parametrize("metric", IEEE_METRICS)
def test_allowed_non_finite_values_give_the_formulas_ieee_value(metric):
    rng = np.random.default_rng(11)
    X = np.where(rng.random((7, 6)) < 0.6, rng.normal(size=(7, 6)), 0.0)
    Y = np.where(rng.random((5, 6)) < 0.6, rng.normal(size=(5, 6)), 0.0)
    X[1, 2], X[4, 0], X[4, 5] = np.inf, -np.inf, 2.0
    X[5, 3] = np.nan
    Y[2, 4] = np.inf
    Y[3, 1] = np.nan
    params = {"p": 3} if metric == "minkowski" else {}
    R = _brute(metric, X, Y)
    if metric != "hamming":  # (NaN != y is true: hamming stays finite)
        assert not np.isfinite(R).all()  # the references do involve IEEE special values
    for fmt in (np.asarray, sps.csr_matrix):
        D = gb.pairwise_distances(fmt(X), fmt(Y), metric=metric, backend="cpu",
                                  ensure_all_finite=False, **params)
        assert_allclose(D, R, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=metric)
        assert (np.isposinf(D) == np.isposinf(R)).all() and (np.isnan(D) == np.isnan(R)).all()


def test_allow_nan_computes_nan_rows_and_refuses_inf():
    X = np.array([[1.0, np.nan, 0.0], [0.0, 1.0, 2.0]])
    D = own_distances(X, metric="euclidean", backend="cpu", ensure_all_finite="allow-nan")
    assert np.isnan(D[0]).all() and np.isnan(D[:, 0]).all() and D[1, 1] == 0
    with pytest.raises(NonFiniteError):
        own_distances(np.array([[np.inf, 1.0]]), backend="cpu", ensure_all_finite="allow-nan")


def test_issue_examples_inf_gives_inf_and_nan_propagates():
    X = np.array([[np.inf, 1.0, 0.0], [0.0, 1.0, 2.0], [3.0, 0.0, 1.0]])
    for metric in ("euclidean", "manhattan", "minkowski"):
        D = own_distances(X, metric=metric, backend="cpu", ensure_all_finite=False)
        assert np.isposinf(D[0, 1:]).all() and np.isposinf(D[1:, 0]).all(), metric
    D = own_distances(X, metric="cosine", backend="cpu", ensure_all_finite=False)
    assert np.isnan(D[0]).all() and np.isfinite(D[1:, 1:]).all()
    X[2, 2] = np.nan
    for metric in ("canberra", "inner_product"):
        D = own_distances(X, metric=metric, backend="cpu", ensure_all_finite=False)
        assert np.isnan(D[2]).all() and np.isnan(D[:, 2]).all(), metric


# ---------------------------------------------------------------------------
# overflow: finite distances of values near and beyond 1e154
# ---------------------------------------------------------------------------


def _mp_ref(metric, a, b):
    mp.mp.prec = 200
    a = [mp.mpf(float(v)) for v in a]
    b = [mp.mpf(float(v)) for v in b]
    pairs = list(zip(a, b))
    if metric == "euclidean":
        return mp.sqrt(sum((x - y) ** 2 for x, y in pairs))
    if metric == "sqeuclidean":
        return sum((x - y) ** 2 for x, y in pairs)
    if metric == "manhattan":
        return sum(abs(x - y) for x, y in pairs)
    if metric == "chebyshev":
        return max(abs(x - y) for x, y in pairs)
    if metric == "cosine":
        return 1 - sum(x * y for x, y in pairs) / (mp.sqrt(sum(x * x for x in a))
                                                   * mp.sqrt(sum(y * y for y in b)))
    if metric == "canberra":
        return sum(0 if x == y == 0 else abs(x - y) / (abs(x) + abs(y)) for x, y in pairs)
    if metric == "braycurtis":
        return sum(abs(x - y) for x, y in pairs) / sum(abs(x + y) for x, y in pairs)
    raise KeyError(metric)


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "manhattan", "chebyshev",
                                    "cosine", "canberra", "braycurtis"])
def test_extreme_magnitudes_do_not_overflow_the_expansion(metric):
    X = np.array([[1e200, 0.0, 1.0], [0.0, 1.0, 1.0], [-1e200, 3e199, 1.0],
                  [1e160, 1.0, 0.0], [1e160 + 1e146, 0.0, 0.0], [1.5e154, 1e154, 0.0],
                  [1e-310, 0.0, 2.0],
                  # finite dot product, overflowing norms: cosine 1 − 1e308/1e311, not 1
                  [1e155, 0.0, 0.0], [1e153, 1e156, 0.0]])
    D = gb.pairwise_distances(X, metric=metric, backend="cpu")
    with np.errstate(over="ignore"):
        R = np.array([[float(_mp_ref(metric, a, b)) for b in X] for a in X])
    assert (np.isfinite(D) == np.isfinite(R)).all(), (D, R)
    fin = np.isfinite(R)
    if metric == "cosine":  # 1 − ratio: absolute accuracy on the range [0, 2]
        assert_allclose(D[fin], R[fin], rtol=0, atol=1e-12)
    else:
        assert_allclose(D[fin], R[fin], rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------
# domains: float powers of negative data are a DomainError, not NaN
# ---------------------------------------------------------------------------


def test_float_powers_of_negative_data_raise_domain_error(isolated_definitions):
    A, B = gb.matrices("A B")
    root = gb.op("root_diff", lambda x, y: (x ** 0.5 - y ** 0.5) ** 2)
    cube = gb.op("cube_root", lambda x, y: (y * y) ** (1 / 3) + x ** (1 / 3))
    guarded = gb.op("guarded", lambda x, y: gb.where(x >= 0, x ** 0.5, 0) * y)
    X = np.array([[1.0, 2.0], [3.0, -4.0]])
    P = np.abs(X)
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(root, gb.ops.plus)))
    with pytest.raises(gb.DomainError, match="input A") as e:
        prog(A=X, B=P, backend="cpu")
    assert isinstance(e.value, ValueError) and "-4" in str(e.value)
    with pytest.raises(gb.DomainError, match="input B"):
        prog(A=P, B=X, backend="cpu")
    D = prog(A=P, B=P, backend="cpu")
    R = np.array([[np.sum((np.sqrt(a) - np.sqrt(b)) ** 2) for b in P] for a in P])
    assert_allclose(D, R, atol=1e-12)
    with pytest.raises(gb.DomainError):
        gb.compile(gb.mxm(A, B.T, gb.semiring(cube, gb.ops.plus)))(A=X, B=P, backend="cpu")
    # (y*y)^(1/3) is a power of a nonnegative quantity only by value: negative y is fine there
    gb.compile(gb.mxm(A, B.T, gb.semiring(cube, gb.ops.plus)))(A=P, B=P, backend="cpu")
    # the text language builds the same formulas
    gb.define("op root_diff_text(x, y) = (x^0.5 - y^0.5)^2\n"
              "metric root_text(A, B) = mxm(A, B.T, semiring(root_diff_text, plus))")
    with pytest.raises(gb.DomainError, match=r"power 0.5 of x|nonnegative inputs only"):
        gb.pairwise_distances(X, metric="root_text", backend="cpu")
    assert_allclose(gb.pairwise_distances(P, metric="root_text", backend="cpu"), R, atol=1e-12)
    # a power under where(...) is guarded by its condition: no refusal, no NaN
    G = gb.compile(gb.mxm(A, B.T, gb.semiring(guarded, gb.ops.plus)))(A=X, B=X, backend="cpu")
    Rg = np.array([[np.sum(np.where(a >= 0, np.sqrt(np.abs(a)), 0) * b) for b in X] for a in X])
    assert_allclose(G, Rg, atol=1e-12)


# ---------------------------------------------------------------------------
# wide inputs: nothing sized by the number of columns
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("metric,ref", [("euclidean", "euclidean"), ("chebyshev", "chebyshev"),
                                        ("manhattan", "cityblock"), ("cosine", "cosine"),
                                        ("canberra", "canberra"), ("hamming", "hamming"),
                                        ("russellrao", "russellrao"), ("braycurtis", "braycurtis")])
def test_wide_inputs_are_compressed_without_changing_values(metric, ref):
    rng = np.random.default_rng(5)
    k = 300_000  # > 2^16 and > 4 nnz: the column space is compressed
    cols = rng.choice(k, size=40, replace=False)
    X = sps.csr_matrix((rng.normal(size=60), (rng.integers(0, 4, 60), rng.choice(cols, 60))),
                       shape=(4, k))
    Y = sps.csr_matrix((rng.normal(size=30), (rng.integers(0, 3, 30), rng.choice(cols, 30))),
                       shape=(3, k))
    if ref == "russellrao":
        X.data[:], Y.data[:] = 1.0, 1.0
    from gbdist import runtime
    from gbdist.backends.cpu import CPUBackend
    b = runtime.bind(gb.pairwise.metric_program(metric).plan, {"A": X, "B": Y}, drop_zeros=True)
    b = CPUBackend().prepare(b).bound  # the host backend compresses the column space
    assert b.width < 200 and b.ncols == k
    D = gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    Xd, Yd = X.toarray(), Y.toarray()
    R = cdist(Xd != 0, Yd != 0, ref) if ref == "russellrao" else cdist(Xd, Yd, ref)
    assert_allclose(D, R, rtol=1e-10, atol=1e-12)


_WIDE = """
import resource, sys, tracemalloc, json
import numpy as np, scipy.sparse as sps, gbdist as gb
k = int(float(sys.argv[1]))
X = sps.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, k // 2, k - 1], dtype=np.int64),
                    np.array([0, 1, 2, 3])), shape=(3, k))
out = {}
for metric in ("euclidean", "manhattan", "chebyshev", "cosine", "canberra", "hamming"):
    # warm-up: the compiled backend loaded (a process's first small calls run on the NumPy
    # backend until Numba is loaded: gbdist.runtime.core.FIRST_CALLS)
    gb.pairwise_distances(sps.random(3, 20, density=0.5, format="csr"), metric=metric,
                          backend="compiled")
    tracemalloc.start()
    D = gb.pairwise_distances(X, metric=metric, backend="cpu", working_memory=16)  # MiB
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out[metric] = [peak, D.tolist()]
# The peak resident size of this process. /proc's VmHWM belongs to this program's own
# address space; getrusage's ru_maxrss also counts the parent's size at fork (a large
# pytest process would be reported), so it is only the fall-back off Linux.
try:
    with open("/proc/self/status") as f:
        out["maxrss_kib"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    out["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


@pytest.mark.parametrize("k", [1e8, 3e9])
def test_wide_input_memory_stays_within_the_budget(k):
    r = subprocess.run([sys.executable, "-c", _WIDE, str(k)], capture_output=True, text=True,
                       timeout=300, cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    budget = 16 * 2**20 + 3 * 3 * 8  # working_memory + the answer
    dense = np.zeros((3, 3))
    vals = [1.0, 2.0, 3.0]
    for metric, (peak, D) in ((m, v) for m, v in res.items() if m != "maxrss_kib"):
        assert peak < budget, f"{metric}: traced peak {peak} bytes"
        if metric == "euclidean":
            for i in range(3):
                for j in range(3):
                    dense[i, j] = 0 if i == j else np.hypot(vals[i], vals[j])
            assert_allclose(D, dense, rtol=1e-14)
        if metric == "hamming":
            assert_allclose(np.array(D)[~np.eye(3, dtype=bool)], 2 / float(k), rtol=1e-12)
    # one array of k int64 would be 0.8 GiB (k = 1e8) or 24 GiB (3e9); the process stays small
    assert res["maxrss_kib"] < 600 * 1024


def test_result_beyond_memory_is_a_typed_error_before_allocating():
    X = sps.csr_matrix((4_000_000, 3))  # 4e6 × 4e6 float64: 128 TB
    with pytest.raises(ResultTooLargeError) as e:
        gb.pairwise_distances(X, backend="cpu")
    assert isinstance(e.value, MemoryError) and isinstance(e.value, ValueError)
    assert "pairwise_distances_chunked" in str(e.value) and "knn" in str(e.value)


# ---------------------------------------------------------------------------
# arguments: typed errors with hints
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("wm", ["16 furlongs", "16X", -1, 0, "0.5B", True, float("nan"), float("inf"), [1]])
def test_bad_working_memory_is_a_typed_error(wm):
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_times))
    with pytest.raises(gb.ParameterError, match="working_memory") as info:
        prog(A=np.ones((2, 2)), B=np.ones((2, 2)), backend="cpu", working_memory=wm)
    assert info.value.expected.startswith("a positive number of MiB") and "GiB" in info.value.hint
    assert info.value.got == repr(wm)


@pytest.mark.parametrize("dtype", ["abc", np.int32, "complex128", object])
def test_bad_dtype_is_a_typed_error(dtype):
    with pytest.raises(gb.InputError, match="dtype must be float32 or float64"):
        gb.pairwise_distances(np.ones((2, 2)), backend="cpu", dtype=dtype)


@pytest.mark.parametrize("bad", [[[1.0, 2.0], [3.0]], [["a", "b"]], [[1 + 2j, 0]], np.ones(3),
                                 np.ones((2, 2, 2)), [[None, 1.0]]])
def test_unusable_arrays_are_typed_errors(bad):
    with pytest.raises(gb.InputError) as e:
        gb.pairwise_distances(bad, backend="cpu")
    assert "Got:" in str(e.value)


def test_bool_parameter_is_not_taken_from_the_cache_of_an_equal_number():
    X = np.random.default_rng(0).random((4, 3))
    gb.pairwise_distances(X, metric="minkowski", p=1.0, backend="cpu")
    with pytest.raises(gb.InputError, match="must be a number"):
        gb.pairwise_distances(X, metric="minkowski", p=True, backend="cpu")


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_indexes_do_not_hint_nonsense(n):
    with pytest.raises(gb.InputError) as e:
        gb.knn(np.ones((n, 3)), k=1, backend="cpu")
    assert "<= 0" not in str(e.value) and "<= -1" not in str(e.value)
    assert "more samples" in str(e.value)


# ---------------------------------------------------------------------------
# the path of a backend that binds its own operands (CUDA), exercised on the CPU
# ---------------------------------------------------------------------------


class _RawBackend:
    """A stand-in for the CUDA backend through the backend protocol: it computes with the
    CPU kernels but reports no suspect entries (fused kernels keep no step values), so
    the runtime must have validated the inputs first and repair the result after."""

    name = "raw"
    xp = np

    def __init__(self):
        from gbdist.backends.cpu import CPUBackend
        self.cpu = CPUBackend()
        self.seen = None

    def __getattr__(self, name):  # the rest of the protocol: the CPU backend's
        return getattr(self.cpu, name)

    def prepare(self, bound, strategy="auto", exact=True):
        self.seen = dict(bound.data)
        return self.cpu.prepare(bound, strategy, exact)

    def run_tile(self, prepared, r0, r1, c0, c1):
        from gbdist.backends.base import Tile
        return Tile(self.cpu.run_tile(prepared, r0, r1, c0, c1).values, None)


@pytest.fixture
def raw_backend(monkeypatch):
    from gbdist.runtime import core
    be = _RawBackend()
    monkeypatch.setattr(core, "get_backend", lambda name, wm=None, work=None: be)
    return be


def test_self_binding_backend_gets_validated_inputs_and_fixed_results(raw_backend):
    bad = sps.csr_matrix((np.ones(2), [0, -5], [0, 1, 2, 2]), shape=(3, 3))
    with pytest.raises(CorruptInputError):
        own_distances(bad)
    assert raw_backend.seen is None  # refused before the backend saw anything
    X = np.ones((2, 3))
    X[1, 2] = np.nan
    with pytest.raises(NonFiniteError, match="row 1, column 2"):
        own_distances(X)
    with pytest.raises(ValueError, match="0 sample"):  # scikit-learn's refusal of empty input
        gb.pairwise_distances(np.ones((0, 3)))
    # overflow hidden by the epilogue (finite dot, overflowing norms): still repaired
    X1, Y1 = np.array([[1e155, 0.0, 0.0]]), np.array([[1e153, 1e156, 0.0]])
    assert_allclose(own_distances(X1, Y1, metric="cosine")[0, 0],
                    float(_mp_ref("cosine", X1[0], Y1[0])), rtol=0, atol=1e-12)
    # overflow in the rewrite, recomputed on the host in the direct form
    E = np.array([[1e200, 0.0, 1.0], [0.0, 1.0, 1.0], [1e160, 1.0, 0.0], [1e160 + 1e146, 0.0, 0.0]])
    for metric in ("euclidean", "manhattan", "cosine"):
        D = own_distances(E, metric=metric)
        assert_allclose(D, np.array([[float(_mp_ref(metric, a, b)) for b in E] for a in E]),
                        rtol=1e-12, atol=1e-12 if metric == "cosine" else 0)
    # allowed non-finite rows: the IEEE values of the formula
    rng = np.random.default_rng(4)
    F = np.where(rng.random((5, 4)) < 0.6, rng.normal(size=(5, 4)), 0.0)
    F[1, 1], F[3, 0] = np.inf, np.nan
    for metric in ("euclidean", "cosine", "canberra"):
        D = own_distances(F, metric=metric, ensure_all_finite=False)
        assert_allclose(D, _brute(metric, F, F), rtol=1e-9, atol=1e-12, equal_nan=True)
    # float32 inputs keep their dtype through the checked (float64) host copies
    assert own_distances(np.ones((2, 3), dtype=np.float32)).dtype == np.float32


def test_structural_semirings_with_allowed_inf_match_brute_force():
    rng = np.random.default_rng(0)
    n = 12
    mask = rng.random((n, n)) < 0.3
    W = np.where(mask, rng.integers(1, 5, (n, n)).astype(float), 0.0)
    W[mask & (rng.random((n, n)) < 0.2)] = np.inf
    r, c = np.nonzero(mask)
    G = sps.csr_matrix((W[r, c], (r, c)), shape=(n, n))
    assert np.isinf(G.data).any()
    D = gb.mxm(G, G, gb.semirings.min_plus, backend="cpu", ensure_all_finite=False)
    R = np.full((n, n), np.inf)
    for i in range(n):
        for j in range(n):
            for k in range(n):
                if mask[i, k] and mask[k, j]:
                    R[i, j] = min(R[i, j], W[i, k] + W[k, j])
    assert np.array_equal(D, R)
    # plus_times (intersection proven for finite data): the dense formula's inf·0 = NaN
    D = gb.mxm(G, G.T, gb.semirings.plus_times, backend="cpu", ensure_all_finite=False)
    Wd = np.where(mask, W, 0.0)
    with np.errstate(all="ignore"):
        R = np.array([[np.sum(Wd[i] * Wd[j]) for j in range(n)] for i in range(n)])
    assert np.isnan(R).any()
    assert_allclose(D, R, equal_nan=True)


def test_neighbours_refuse_non_finite_input_by_default():
    X = np.random.default_rng(1).random((6, 3))
    X[4, 2] = np.nan
    with pytest.raises(NonFiniteError, match="row 4, column 2"):
        gb.knn(X, k=2, backend="cpu")
    with pytest.raises(NonFiniteError):
        list(gb.pairwise_distances_chunked(X, backend="cpu"))


@pytest.mark.parametrize("seed", range(12))
def test_seeded_non_finite_fuzz_against_dense_ieee_brute_force(seed):
    """Random data with NaN/±inf sprinkled in, every metric of the IEEE table, sparse
    and dense inputs, ensure_all_finite=False (and 'allow-nan' when no inf is drawn)."""
    rng = np.random.default_rng(1000 + seed)
    m, n, k = rng.integers(1, 7), rng.integers(1, 6), rng.integers(1, 7)
    special = np.array([np.inf, -np.inf, np.nan])
    X, Y = (np.where(rng.random((r, k)) < 0.5, rng.normal(size=(r, k)), 0.0) for r in (m, n))
    for M in (X, Y):
        hit = rng.random(M.shape) < 0.12
        M[hit] = rng.choice(special if seed % 3 else special[2:], size=int(hit.sum()))
    allow = "allow-nan" if not (np.isinf(X).any() or np.isinf(Y).any()) and seed % 2 else False
    for metric in IEEE_METRICS:
        params = {"p": 3} if metric == "minkowski" else {}
        R = _brute(metric, X, Y)
        for fmt in (np.asarray, sps.csr_matrix):
            D = own_distances(fmt(X), fmt(Y), metric=metric, backend="cpu",
                                      ensure_all_finite=allow, **params)
            assert_allclose(D, R, rtol=1e-9, atol=1e-9, equal_nan=True,
                            err_msg=f"{metric} seed {seed}\nX={X!r}\nY={Y!r}")
            assert (np.isnan(D) == np.isnan(R)).all() and (np.isposinf(D) == np.isposinf(R)).all()


def test_hellinger_with_allowed_inf_is_inf():
    X = np.array([[0.2, 0.0, np.inf], [0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])
    D = gb.pairwise_distances(X, metric="hellinger", backend="cpu", ensure_all_finite=False)
    with np.errstate(all="ignore"):
        R = np.sqrt(np.sum((np.sqrt(X[:, None, :]) - np.sqrt(X[None, :, :])) ** 2, axis=2)) / np.sqrt(2)
    assert np.isposinf(R[0, 1:]).all() and np.isnan(R[0, 0])
    assert_allclose(D, R, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_overflow_hidden_by_the_epilogue_is_still_repaired():
    """⟨a, b⟩ = 1e308 is finite, ‖a‖‖b‖ overflows: the rewritten cosine gives exactly 1
    (a finite, wrong value) — the overflowing step, not the result, triggers the repair."""
    X, Y = np.array([[1e155, 0.0, 0.0]]), np.array([[1e153, 1e156, 0.0]])
    D = gb.pairwise_distances(X, Y, metric="cosine", backend="cpu")
    R = float(_mp_ref("cosine", X[0], Y[0]))
    assert 0.998 < R < 0.9999
    assert_allclose(D[0, 0], R, rtol=0, atol=1e-12)
