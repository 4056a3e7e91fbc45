"""gr.mxv(A, u, sr, symmetric=...) (issue 30): the planner rule (gbdist.compiler.spmv_choice)
from row statistics — the symmetric kernel on stencils and bands on the device, the full CSR on
power-law graphs, with masks, sparse vectors, or host data — and the products on the host
against SciPy (the full matrix built from its upper triangle, stored zeros kept)."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from gbdist.compiler import spmv_choice as rule
from benchmarks import stencils as st

SR = gb.semirings


def _stats(A):
    return rule.row_statistics(np.diff(A.indptr), np)


def _powerlaw(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    src = (n * rng.random(20 * n) ** 2.5).astype(np.int64)
    dst = rng.integers(0, n, 20 * n)
    P = sps.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    return (P + P.T).tocsr()


@pytest.mark.parametrize("make", [lambda: st.poisson3d(12), lambda: st.fem27(10), lambda: st.band(2000, 9)])
def test_rule_picks_symmetric_on_regular_rows(make):
    c = rule.choose(_stats(st.as_scipy(make())), on_device=True, masked=False, u_full=True, any_monoid=False)
    assert c.kernel == "symmetric" and "regular" in c.explain()


def test_rule_keeps_full_csr_on_powerlaw_and_other_shapes():
    s = _stats(_powerlaw())
    assert s["cv"] > rule.REGULAR_CV
    assert rule.choose(s, on_device=True, masked=False, u_full=True, any_monoid=False).kernel == "full"
    p = _stats(st.as_scipy(st.poisson3d(8)))
    for kw in ({"on_device": False}, {"masked": True}, {"u_full": False}, {"any_monoid": True}):
        args = dict(on_device=True, masked=False, u_full=True, any_monoid=False) | kw
        assert rule.choose(p, **args).kernel == "full", kw


def test_upper_and_full_products_on_the_host_match_scipy():
    A = st.as_scipy(st.fem27(6, seed=2))
    U = sps.triu(A, format="csr")
    U.data[3] = 0.0  # a stored zero above the diagonal: its transposed entry stays stored
    A = (U + sps.triu(U, 1, format="csr").T).tocsr()
    x = np.random.default_rng(3).random(A.shape[0])
    ref = U @ x + sps.triu(U, 1).T @ x
    yu = gr.mxv(gb.Matrix(U), gb.Vector(x), SR.plus_times, symmetric="upper")
    yf = gr.mxv(gb.Matrix(A), gb.Vector(x), SR.plus_times, symmetric=True)
    for y in (yu, yf):
        np.testing.assert_allclose(np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y.dense_parts()[0]),
                                   ref, rtol=1e-13)
        assert y.spmv_choice.kernel == "full" and "host data" in gr.explain(y)
    # min_plus on the upper form equals min_plus on the full matrix
    m = gr.mxv(gb.Matrix(U), gb.Vector(x), SR.min_plus, symmetric="upper")
    f = gr.mxv(gb.Matrix(A), gb.Vector(x), SR.min_plus)
    np.testing.assert_array_equal(m.dense_parts()[0], f.dense_parts()[0])


def test_declared_symmetry_is_checked():
    A = st.as_scipy(st.poisson3d(4, seed=1))
    B = A.tolil()
    B[0, 1] = 5.0
    x = gb.Vector(np.ones(A.shape[0]))
    with pytest.raises(gb.errors.InputError, match="differs from its transpose"):
        gr.mxv(gb.Matrix(B.tocsr()), x, SR.plus_times, symmetric=True)
    with pytest.raises(gb.errors.InputError, match="upper triangle"):
        gr.mxv(gb.Matrix(A), x, SR.plus_times, symmetric="upper")
    with pytest.raises(gb.errors.InputError, match="symmetric must be"):
        gr.mxv(gb.Matrix(A), x, SR.plus_times, symmetric="lower")


@pytest.mark.parametrize("make,lanes", [(lambda: st.poisson3d(12), 2), (lambda: st.fem27(10), 4),
                                        (lambda: st.band(2000, 1), 2), (lambda: st.band(2000, 40), 8)])
def test_full_csr_rule_takes_regular_rows_in_order(make, lanes):
    c = rule.choose_full(_stats(st.as_scipy(make())))
    assert (c.kernel, c.group) == ("rows", lanes)
    assert f"{lanes} lanes a row" in c.explain() and "regular" in c.reason


def test_full_csr_rule_keeps_row_tiles_on_powerlaw_and_skewed_rows():
    c = rule.choose_full(_stats(_powerlaw()))
    assert c.kernel == "stream" and c.group == 0
    A = st.as_scipy(st.poisson3d(20)).tolil()
    A[0, :40] = 1.0  # one long row: the longest row > 4 x the mean, cv still small
    s = _stats(A.tocsr())
    assert s["cv"] <= rule.REGULAR_CV and rule.choose_full(s).kernel == "stream"
    assert rule.choose_full(rule.row_statistics(np.zeros(0, dtype=np.int64), np)).kernel == "stream"
    assert [rule.lanes_for(m) for m in (1, 12, 12.1, 48, 48.1, 96, 96.1, 192.1)] == \
        [2, 2, 4, 4, 8, 8, 16, 32]
