"""The Python API end to end: user ops and metrics, programs, eager calls, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import gbdist as gb
from datagen import random_dense

A, B = gb.matrices("A B")


def test_contract_names():
    for name in ("plus", "times", "absdiff", "sqdiff", "min", "max", "minus", "lor", "land",
                 "any", "pair", "first", "second", "abs", "sqrt", "log", "exp", "square"):
        assert isinstance(getattr(gb.ops, name), gb.ops.Op), name
    for name in ("plus_times", "min_plus", "max_plus", "max_times", "lor_land", "any_pair",
                 "plus_pair", "plus_absdiff", "max_absdiff"):
        assert isinstance(gb.semirings[name], gb.Semiring)
    for fn in ("sqrt", "log", "exp", "abs", "where", "maximum", "minimum", "ncols", "mxm", "mxv",
               "reduce", "apply", "compile", "define_metric", "pairwise_distances", "explain",
               "op", "semiring", "matrices"):
        assert callable(getattr(gb, fn)), fn


# --- a user-defined op and metric, end to end ------------------------------------


def test_chi_square_end_to_end():
    chi2 = gb.op("chi2", lambda x, y: gb.where(x + y == 0, 0, (x - y) ** 2 / (x + y)))
    assert chi2.arity == 2
    gb.define_metric("chi2_test", lambda A, B: gb.mxm(A, B.T, gb.semiring(chi2, gb.ops.plus)),
                     replace=True)
    assert "chi2_test" in gb.metric_names()
    ex = gb.explain("chi2_test")
    assert ex.products[0].strategy == "union-correction"
    rng = np.random.default_rng(0)
    X = random_dense(rng, 30, 40, "nonneg")
    Y = random_dense(rng, 20, 40, "nonneg")
    D = gb.pairwise_distances(sps.csr_matrix(X), sps.coo_array(Y), metric="chi2_test",
                              backend="cpu")
    R = np.zeros((30, 20))
    for i in range(30):
        for j in range(20):
            for k in range(40):
                s = X[i, k] + Y[j, k]
                if s != 0:
                    R[i, j] += (X[i, k] - Y[j, k]) ** 2 / s
    assert_allclose(D, R, rtol=1e-10, atol=1e-12)


def test_user_bray_curtis_matches_scipy():
    abssum = gb.op("abssum_user", lambda x, y: abs(x + y))
    gb.define_metric(
        "braycurtis_user",
        lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff)
        / gb.mxm(A, B.T, gb.semiring(abssum, gb.ops.plus)),
        replace=True)
    rng = np.random.default_rng(1)
    X, Y = random_dense(rng, 25, 30), random_dense(rng, 18, 30)
    D = gb.pairwise_distances(X, Y, metric="braycurtis_user", backend="cpu")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = cdist(X, Y, "braycurtis")
    assert_allclose(D, R, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert_allclose(D, gb.pairwise_distances(X, Y, metric="braycurtis"), equal_nan=True)


def test_metric_with_a_parameter_and_callables():
    gb.define_metric("lp_user", lambda A, B, p=2.0: gb.power(
        gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff_pow(p), gb.ops.plus)), 1.0 / p), replace=True)
    rng = np.random.default_rng(2)
    X = random_dense(rng, 12, 15)
    assert_allclose(gb.pairwise_distances(X, metric="lp_user", p=3),
                    cdist(X, X, "minkowski", p=3), atol=1e-4)
    # a callable and an expression work directly as metric=
    f = lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff)  # noqa: E731
    assert_allclose(gb.pairwise_distances(X, metric=f), cdist(X, X, "cityblock"), atol=1e-12)
    assert_allclose(gb.pairwise_distances(X, metric=f(A, B)), cdist(X, X, "cityblock"), atol=1e-12)


# --- compile / program ---------------------------------------------------------------


def test_compile_and_program():
    expr = 1 - gb.mxm(A, B.T, gb.semirings.plus_times) / (
        gb.sqrt(gb.reduce(gb.apply(gb.ops.square, A), gb.ops.plus))
        * gb.sqrt(gb.reduce(gb.apply(gb.ops.square, B), gb.ops.plus)))
    program = gb.compile(expr)
    assert sorted(program.inputs) == ["A", "B"]
    rng = np.random.default_rng(3)
    X = random_dense(rng, 20, 30, empty_rows=0)
    Y = random_dense(rng, 10, 30, empty_rows=0)
    D = program(A=sps.csr_matrix(X), B=Y)
    assert isinstance(D, np.ndarray) and D.shape == (20, 10)
    assert_allclose(D, cdist(X, Y, "cosine"), atol=1e-12)
    assert "union" not in str(program.explain())
    k = gb.compile(gb.ncols(A) + 0 * gb.reduce(A, gb.ops.plus))(A=X)
    assert_allclose(k, np.full(20, 30.0))


def test_program_input_errors():
    program = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_times))
    with pytest.raises(gb.InputError) as e:
        program(A=np.eye(3))
    msg = str(e.value)
    assert "Expected: A, B" in msg and "Got: A" in msg and "Hint:" in msg and "B=" in msg
    with pytest.raises(gb.InputError) as e:
        program(A=np.eye(3), B=np.eye(3), C=np.eye(3))
    assert "C" in str(e.value)
    with pytest.raises(gb.InputError):
        program(A=np.eye(3), B=np.eye(4))
    with pytest.raises(gb.InputError):
        program(A=np.eye(3), B=np.eye(3), dtype=np.int32)


# --- eager evaluation on concrete matrices ----------------------------------------------


def test_eager_products_and_reductions():
    rng = np.random.default_rng(4)
    X, Y = random_dense(rng, 15, 20), random_dense(rng, 11, 20)
    Xs, Ys = sps.csr_matrix(X), sps.csr_array(Y)
    assert_allclose(gb.mxm(Xs, Ys.T, gb.semirings.plus_times), X @ Y.T, atol=1e-12)
    assert_allclose(gb.mxm(X, Y.T, gb.semirings.plus_absdiff), cdist(X, Y, "cityblock"),
                    atol=1e-12)
    assert_allclose(gb.mxm(Xs, Ys.T, gb.semirings.max_absdiff), cdist(X, Y, "chebyshev"))
    v = rng.normal(size=20)
    assert_allclose(gb.mxv(Xs, v, gb.semirings.plus_times), X @ v, atol=1e-12)
    assert_allclose(gb.mxv(X, sps.csr_matrix(v), gb.semirings.plus_times), X @ v, atol=1e-12)
    assert_allclose(gb.reduce(Xs, gb.ops.plus), X.sum(1), atol=1e-12)
    assert_allclose(gb.reduce(X, gb.ops.max), X.max(1))
    sq = gb.apply(gb.ops.square, Xs)
    assert sps.issparse(sq) and sq.nnz == Xs.nnz
    assert_allclose(sq.toarray(), X**2)
    assert_allclose(gb.apply(gb.ops.abs, X).toarray(), np.abs(X))
    with pytest.raises(gb.InputError) as e:
        gb.apply(gb.ops.exp, Xs)  # exp(0) = 1 would fill every unstored entry
    assert "Hint:" in str(e.value)
    f32 = gb.mxm(X.astype(np.float32), Y.T.astype(np.float32), gb.semirings.plus_times)
    assert f32.dtype == np.float32


def test_symbolic_calls_build_ir():
    from gbdist.compiler import ir
    assert isinstance(gb.mxm(A, B.T, gb.semirings.plus_times), ir.MxM)
    assert isinstance(gb.reduce(A, gb.ops.plus), ir.RowReduce)
    assert isinstance(gb.apply(gb.ops.abs, A), ir.Apply)
    assert isinstance(gb.sqrt(A.T), ir.Pointwise)


# --- errors: typed, with Expected / Got / Hint ------------------------------------------


def test_op_definition_errors():
    with pytest.raises(gb.DefinitionError) as e:
        gb.op("bad", lambda x, y: x if x > y else y)
    assert "where" in str(e.value) and "Hint:" in str(e.value)
    with pytest.raises(gb.DefinitionError):
        gb.op("three", lambda x, y, z: x)
    with pytest.raises(gb.DefinitionError) as e:
        gb.op("strange", lambda x, y: x + "text")
    assert "Got:" in str(e.value)


def test_semiring_definition_errors():
    with pytest.raises(gb.DefinitionError) as e:
        gb.semiring(gb.ops.times, gb.ops.minus)
    assert "not a monoid" in str(e.value) and "Hint:" in str(e.value)
    with pytest.raises(gb.DefinitionError):
        gb.semiring(gb.ops.sqrt, gb.ops.plus)
    with pytest.raises(gb.TypeCheckError):
        gb.mxm(A, B.T, gb.ops.plus)


def test_metric_errors():
    with pytest.raises(gb.UnknownNameError) as e:
        gb.pairwise_distances(np.eye(2), metric="euclidian")
    assert "did you mean 'euclidean'" in str(e.value)
    with pytest.raises(gb.InputError) as e:
        gb.pairwise_distances(np.eye(2), metric="minkowski", p=-1)
    assert "p > 0" in str(e.value)
    with pytest.raises(gb.InputError) as e:
        gb.pairwise_distances(np.eye(2), metric="euclidean", p=3)
    assert "Expected:" in str(e.value)
    with pytest.raises(gb.InputError):
        gb.pairwise_distances(np.eye(2), metric="minkowski", p="3")
    with pytest.raises(gb.InputError):
        gb.pairwise_distances(np.eye(2), backend="tpu")
    with pytest.raises(gb.TypeCheckError):
        gb.pairwise_distances(np.eye(2), metric=lambda A, B: 3)
    with pytest.raises(gb.RedefinitionError):
        gb.define_metric("euclidean", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times))
    with pytest.raises(gb.DefinitionError):
        gb.define_metric("one_arg", lambda A: A)


def test_cuda_backend_error_without_gpu():
    try:
        import cupy  # noqa: F401
        pytest.skip("a GPU stack is installed")
    except ImportError:
        pass
    with pytest.raises(gb.BackendError) as e:
        gb.pairwise_distances(np.eye(2), backend="cuda")
    assert "Hint:" in str(e.value)


def test_every_error_is_a_gbdist_error():
    for cls in (gb.DefinitionError, gb.DSLSyntaxError, gb.UnknownNameError, gb.RedefinitionError,
                gb.ArityError, gb.TypeCheckError, gb.AnalysisError, gb.InputError, gb.DomainError,
                gb.BackendError):
        assert issubclass(cls, gb.GbdistError)


def test_explanation_is_readable():
    ex = gb.explain("manhattan")
    text = str(ex)
    for piece in ("manhattan", "union-correction", "f(x, 0) = |x|", "proofs", "plan",
                  "result ="):
        assert piece in text, piece
    assert ex.products[0].strategy == "union-correction"
    assert all(hasattr(p, "method") and hasattr(p, "holds") for p in ex.proofs)
    ex2 = gb.explain(gb.mxm(A, B.T, gb.semirings.min_plus))
    assert "structural" in str(ex2)
