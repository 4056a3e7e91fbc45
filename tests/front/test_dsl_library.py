"""The built-in metrics come from the library file gbdist/front/metrics.gbd, build the
same IR as their Python API definitions, and text-defined metrics match SciPy."""
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist.front import colparams
from gbdist.algebra.ops import normalize
from gbdist.algebra import ops
from gbdist.front import check, get_metric, library
from gbdist.algebra.semirings import semiring, semirings

ROOT = Path(__file__).resolve().parents[2]

# --- the same metrics written with the Python API (the reference IR) -----------

_x, _y = ops.Sym(ops.X), ops.Sym(ops.Y)
canberra_op = ops.make_op("c", gb.where(abs(_x) + abs(_y) == 0, 0, abs(_x - _y) / (abs(_x) + abs(_y))))
abssum_op = ops.make_op("s", abs(_x + _y))
hellinger_op = ops.make_op("h", (gb.sqrt(_x) - gb.sqrt(_y)) ** 2)
js_op = ops.make_op("j", gb.where(_x == 0, 0, _x * gb.log(2 * _x / (_x + _y)))
                    + gb.where(_y == 0, 0, _y * gb.log(2 * _y / (_x + _y))))
kl_op = ops.make_op("k", gb.where(_x == 0, 0, _x * gb.log(_x / _y)))


def _norm2(M):
    return gb.sqrt(gb.reduce(gb.apply(ops.square, M), ops.plus))


def _nnz(M):
    return gb.reduce(gb.apply(ops.nonzero, M), ops.plus)


def _shared(A, B):
    return gb.mxm(gb.apply(ops.nonzero, A), gb.apply(ops.nonzero, B).T, semirings.plus_times)


def _minkowski(A, B, p=2.0):
    if p == math.inf:
        return gb.mxm(A, B.T, semirings.max_absdiff)
    return gb.power(gb.mxm(A, B.T, semiring(ops.absdiff_pow(p), ops.plus)), 1.0 / p)


def _correlation(A, B):
    k = gb.ncols(A)
    sa, sb = gb.reduce(A, ops.plus), gb.reduce(B, ops.plus)
    qa = gb.reduce(gb.apply(ops.square, A), ops.plus)
    qb = gb.reduce(gb.apply(ops.square, B), ops.plus)
    num = gb.mxm(A, B.T, semirings.plus_times) - sa * sb / k
    va = gb.maximum(qa - sa * sa / k, 0)
    vb = gb.maximum(qb - sb * sb / k, 0)
    const_a = gb.eq(gb.reduce(A, ops.max), gb.reduce(A, ops.min))
    const_b = gb.eq(gb.reduce(B, ops.max), gb.reduce(B, ops.min))
    return gb.where(const_a + const_b > 0, float("nan"),
                    gb.maximum(gb.minimum(1 - num / gb.sqrt(va * vb), 2), 0))


def _jaccard(A, B):
    inter = _shared(A, B)
    union = _nnz(A) + _nnz(B) - inter
    return gb.where(gb.eq(union, 0), 0, (union - inter) / union)


def _counts(A, B):
    tt = _shared(A, B)
    return tt, _nnz(A) - tt, _nnz(B) - tt, gb.ncols(A) - _nnz(A) - _nnz(B) + tt


def _yule(A, B):
    tt, tf, ft, ff = _counts(A, B)
    return gb.where(gb.eq(tf * ft, 0), 0, 2 * tf * ft / (tt * ff + tf * ft))


def _rogerstanimoto(A, B):
    differ = _nnz(A) + _nnz(B) - 2 * _shared(A, B)
    return 2 * differ / (gb.ncols(A) + differ)


def _sokalsneath(A, B):
    tt = _shared(A, B)
    differ = _nnz(A) + _nnz(B) - 2 * tt
    return 2 * differ / (tt + 2 * differ)


known_op = ops.make_op("n", gb.where(gb.isnan(_x), 0, _x))
missing_op = ops.make_op("m", gb.where(gb.isnan(_x), 1, 0))


def _nan_euclidean(A, B):
    a, b = gb.apply(known_op, A), gb.apply(known_op, B)
    ma, mb = gb.apply(missing_op, A), gb.apply(missing_op, B)
    n = (gb.ncols(A) - gb.reduce(ma, ops.plus) - gb.reduce(mb, ops.plus)
         + gb.mxm(ma, mb.T, semirings.plus_times))
    s = (gb.mxm(a, b.T, semirings.plus_sqdiff)
         - gb.mxm(ma, gb.apply(ops.square, b).T, semirings.plus_times)
         - gb.mxm(gb.apply(ops.square, a), mb.T, semirings.plus_times))
    return gb.where(gb.eq(n, 0), float("nan"), gb.sqrt(gb.maximum(gb.ncols(A) / n * s, 0)))


def _kulczynski1(A, B):
    tt = _shared(A, B)
    return tt / (_nnz(A) + _nnz(B) - 2 * tt)


PYTHON = {
    "euclidean": lambda A, B: gb.sqrt(gb.mxm(A, B.T, semirings.plus_sqdiff)),
    "sqeuclidean": lambda A, B: gb.mxm(A, B.T, semirings.plus_sqdiff),
    "manhattan": lambda A, B: gb.mxm(A, B.T, semirings.plus_absdiff),
    "chebyshev": lambda A, B: gb.mxm(A, B.T, semirings.max_absdiff),
    "minkowski": _minkowski,
    "canberra": lambda A, B: gb.mxm(A, B.T, semiring(canberra_op, ops.plus)),
    "braycurtis": lambda A, B: (gb.mxm(A, B.T, semirings.plus_absdiff)
                                / gb.mxm(A, B.T, semiring(abssum_op, ops.plus))),
    "cosine": lambda A, B: gb.maximum(gb.minimum(
        1 - gb.mxm(A, B.T, semirings.plus_times) / (_norm2(A) * _norm2(B)), 2), 0),
    "correlation": _correlation,
    "hamming": lambda A, B: gb.mxm(A, B.T, semirings.plus_ne) / gb.ncols(A),
    "jaccard": _jaccard,
    "dice": lambda A, B: ((_nnz(A) + _nnz(B)) - 2 * _shared(A, B)) / (_nnz(A) + _nnz(B)),
    "russellrao": lambda A, B: (gb.ncols(A) - _shared(A, B)) / gb.ncols(A),
    "hellinger": lambda A, B: gb.sqrt(gb.mxm(A, B.T, semiring(hellinger_op, ops.plus))) / math.sqrt(2.0),
    "jensenshannon_unnormalized": lambda A, B: gb.sqrt(gb.maximum(
        gb.mxm(A, B.T, semiring(js_op, ops.plus)) / 2, 0)),
    "jensenshannon": lambda A, B: gb.sqrt(gb.maximum(gb.mxm(
        gb.apply(normalize, A), gb.apply(normalize, B).T, semiring(js_op, ops.plus)) / 2, 0)),
    "kl_divergence": lambda A, B: gb.mxm(A, B.T, semiring(kl_op, ops.plus, annihilator=0)),
    "inner_product": lambda A, B: gb.mxm(A, B.T, semirings.plus_times),
    "cosine_sklearn": lambda A, B: gb.where(gb.eq(_nnz(A) * _nnz(B), 0), 1, gb.maximum(gb.minimum(
        1 - gb.mxm(A, B.T, semirings.plus_times) / (_norm2(A) * _norm2(B)), 2), 0)),
    "matching": lambda A, B: (_nnz(A) + _nnz(B) - 2 * _shared(A, B)) / gb.ncols(A),
    "yule": _yule,
    "rogerstanimoto": _rogerstanimoto,
    "sokalmichener": _rogerstanimoto,
    "sokalsneath": _sokalsneath,
    "kulczynski1": _kulczynski1,
    "nan_euclidean": _nan_euclidean,
}

ALIASES = {"l2": "euclidean", "cityblock": "manhattan", "l1": "manhattan", "linf": "chebyshev",
           "infinity": "chebyshev", "kldivergence": "kl_divergence", "dot": "inner_product",
           "euclid": "euclidean", "sqe": "sqeuclidean", "cos": "cosine", "cheb": "chebyshev",
           "pnorm": "minkowski", "e": "euclidean", "js": "jensenshannon", "c": "manhattan"}


def library_metric_names() -> set[str]:
    return set(re.findall(r"^metric\s+(\w+)", library.LIBRARY.read_text(), re.M))


def test_every_builtin_metric_comes_from_the_library_file():
    names = library_metric_names()
    # the column-aware metrics' IR is compared with the Python API's in
    # tests/front/test_column_operands.py (their ops read gb.column("w")); gower_mixed and
    # the row-transform metrics (mahalanobis, haversine) are tested against SciPy /
    # scikit-learn in test_weighted_catalogue.py and test_row_transforms.py
    column_aware = set(colparams.WEIGHTED.values()) | {"seuclidean", "gower", "gower_mixed",
                                                       "mahalanobis", "haversine"}
    assert column_aware <= names
    assert names - column_aware == set(PYTHON)
    for name in names:
        m = get_metric(name)
        assert m.source == str(library.LIBRARY)
        assert m.doc, name  # the comment above the definition
    assert set(PYTHON) <= set(gb.metric_names())
    # library.py (the loader of the built-ins) holds no metric definitions of its own
    assert "gb.mxm" not in Path(library.__file__).read_text()


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_library_ir_equals_the_python_api_ir(name):
    A, B = gb.matrices("A B")
    assert get_metric(name).expression() == PYTHON[name](A, B)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 0.5, 2.5, math.inf])
def test_minkowski_parameter_is_substituted_before_analysis(p):
    A, B = gb.matrices("A B")
    assert get_metric("minkowski").expression(p=p) == _minkowski(A, B, float(p))


def test_minkowski_expansion_ranks():
    assert gb.explain("minkowski", p=4).products[0].expansion_rank == 3
    assert gb.explain("minkowski", p=3).products[0].expansion_rank is None
    assert gb.explain("minkowski", p=2).products[0].expansion_rank == 1
    assert gb.explain("minkowski", p=math.inf).products[0].strategy == "two-pass-union"


@pytest.mark.parametrize("alias, name", sorted(ALIASES.items()))
def test_aliases_resolve(alias, name):
    assert get_metric(alias) is get_metric(name)


def test_library_file_ships_in_the_wheel_configuration():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = cfg["tool"]["setuptools"]
    assert "gbdist.front" in tool["packages"]
    assert "*.gbd" in tool["package-data"]["gbdist.front"]
    assert "*.lark" in tool["package-data"]["gbdist.grammar"]
    assert tool["package-dir"]["gbdist.grammar"] == "grammar"
    assert library.LIBRARY.parent == ROOT / "gbdist" / "front" and library.LIBRARY.suffix == ".gbd"
    assert (ROOT / "grammar" / "gbdist.lark").is_file()


def test_library_file_checks_clean():
    reports = check(library.LIBRARY.read_text(), str(library.LIBRARY))
    assert all(r.ok for r in reports), "\n".join(str(r) for r in reports if not r.ok)
    kinds = {r.name: r.kind for r in reports}
    assert kinds["manhattan"] == "metric" and kinds["absdiff_pow"] == "op" and kinds["norm2"] == "def"


# --- text-defined metrics against SciPy / brute force -----------------------------

TEXT = """
# Bray-Curtis, written the way a user would
op abs_sum(x, y) = abs(x + y)
metric bc_text(A, B) = mxm(A, B.T, plus_absdiff) / mxm(A, B.T, semiring(abs_sum, plus))

# chi-square distance, with 0/0 = 0
op chi2_term(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))
metric chi2_text(A, B) = mxm(A, B.T, semiring(chi2_term, plus))

# Minkowski with a user parameter and a user op with a parameter
op my_pow(x, y; p) = abs(x - y)^p
metric mink_text(A, B; p = 3) requires p > 0 = mxm(A, B.T, semiring(my_pow(p), plus)) ^ (1 / p)
"""


@pytest.fixture(scope="module")
def text_metrics():
    return gb.define(TEXT, source="<test_dsl_library>")


def _data(seed, signed):
    rng = np.random.default_rng(seed)
    X = sps.random(23, 31, density=0.25, random_state=rng, format="csr")
    Y = sps.random(17, 31, density=0.25, random_state=rng, format="csr")
    if signed:
        X.data -= 0.5
        Y.data -= 0.5
    keep = np.ones((X.shape[0], 1))
    keep[3] = 0  # an empty row
    return sps.csr_matrix(X.multiply(keep)), Y


def test_text_braycurtis_matches_scipy(text_metrics):
    X, Y = _data(1, signed=False)
    got = gb.pairwise_distances(X, Y, metric="bc_text", dtype=np.float64)
    Xd, Yd = X.toarray(), Y.toarray()
    want = cdist(Xd, Yd, "braycurtis")
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12, atol=1e-12)
    # the built-in agrees with the text-defined one everywhere
    np.testing.assert_array_equal(np.isnan(got), np.isnan(gb.pairwise_distances(X, Y, metric="braycurtis",
                                                                                dtype=np.float64)))


@pytest.mark.parametrize("signed", [False, True])
def test_text_chi_square_matches_brute_force(text_metrics, signed):
    X, Y = _data(2, signed)
    got = gb.pairwise_distances(X, Y, metric="chi2_text", dtype=np.float64)
    a, b = X.toarray()[:, None, :], Y.toarray()[None, :, :]
    with np.errstate(all="ignore"):
        want = np.where(a + b == 0, 0.0, (a - b) ** 2 / (a + b)).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("p", [1, 3, 4.5])
def test_text_minkowski_matches_scipy(text_metrics, p):
    X, Y = _data(3, signed=True)
    got = gb.pairwise_distances(X, Y, metric="mink_text", p=p, dtype=np.float64)
    np.testing.assert_allclose(got, cdist(X.toarray(), Y.toarray(), "minkowski", p=p), rtol=1e-9, atol=1e-9)
    with pytest.raises(gb.InputError, match="requires p > 0"):
        gb.pairwise_distances(X, Y, metric="mink_text", p=0)
