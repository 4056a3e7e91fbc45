"""The accuracy rule's γ counts the terms one pair's sums add (the two rows' stored
entries), not the columns: short rows over many columns keep the rewrite, and its
answers stay within the bound the rule promises (against float64 brute force)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.compiler import accuracy as rule
from gbdist.pairwise import metric_program
from gbdist.runtime import accuracy


def _short_rows(n=240, k=1_000_000, per_row=10, seed=3):
    """Rows of ``per_row`` positive entries summing to 1 over ``k`` columns drawn from a few
    hundred (so rows share columns), every third row a copy of its predecessor moved by
    a relative 3e-3 (close pairs: where a rewrite's cancellation shows)."""
    rng = np.random.default_rng(seed)
    pool = rng.choice(k, 400, replace=False)
    rows = []
    for i in range(n):
        if i % 3 == 2:
            c, v = rows[-1]
            v = v * (1 + 3e-3 * rng.standard_normal(v.size))
        else:
            c = np.sort(rng.choice(pool, per_row, replace=False))
            v = rng.random(per_row) + 0.05
        rows.append((c, v / v.sum()))
    indptr = np.concatenate([[0], np.cumsum([len(c) for c, _ in rows])])
    X = sps.csr_matrix((np.concatenate([v for _, v in rows]),
                        np.concatenate([c for c, _ in rows]), indptr), shape=(n, k))
    return X


def _memo():
    memo: dict = {}
    return lambda key, what, build: memo.setdefault((key, what), build())


def test_terms_are_the_rows_stored_entries_capped_by_the_columns():
    assert rule.terms(1_000_000, 10, 12) == 26
    assert rule.terms(20, 20, 20) == 20  # dense rows: the columns, as before
    assert rule.terms(5, 0, 0) == 4 and rule.terms(0, 0, 0) == 1


def test_short_rows_over_many_columns_keep_the_rewrite_and_its_accuracy():
    X = _short_rows()
    plan = metric_program("hellinger").plan
    guards = rule.guards(plan)
    assert guards
    mats = {("A", False): X, ("B", False): X}
    d = accuracy.decide(plan, mats, _memo(), False, X.shape[1])
    assert d.plan is plan and d.ratio <= rule.TOLERANCE, d.why
    # the same statistics with γ of every column would have refused the rewrite: the test
    # exercises the change, not a case both rules take
    stats = accuracy.column_stats(X)
    st = [accuracy.row_stats(guards[0], side, X, stats) for side in ("left", "right")]
    assert accuracy.ratio(guards[0], st[0], st[1], X.shape[1]) > rule.TOLERANCE
    # what the rule promises: every pair whose value is at least max(S_i, S_j) is within
    # 2·TOLERANCE of it (the rule's relative bound), against float64 brute force
    got = gb.pairwise_distances(X, metric="hellinger", backend="cpu")
    cols = np.unique(X.indices)
    D = X[:, cols].toarray()
    want = np.sqrt(((np.sqrt(D)[:, None, :] - np.sqrt(D)[None, :, :]) ** 2).sum(-1)) / np.sqrt(2)
    s = st[0][2]
    # S is the resolution of the product (the squared distance's sum): compare there
    floor = np.maximum(s[:, None], s[None, :])
    p_got, p_want = 2 * np.asarray(got, dtype=np.float64) ** 2, 2 * want ** 2
    resolved = p_want >= floor
    np.fill_diagonal(resolved, False)
    close = [(i, i - 1) for i in range(2, X.shape[0], 3)]
    assert all(resolved[i, j] for i, j in close)  # the close pairs are checked too
    rel = np.abs(p_got - p_want)[resolved] / p_want[resolved]
    assert rel.max() <= 2 * rule.TOLERANCE, rel.max()
    np.testing.assert_array_equal(np.diag(got), 0.0)


@pytest.mark.parametrize("metric", ["manhattan", "sqeuclidean"])
def test_dense_rows_see_no_change(metric):
    """Rows storing every column: γ of the columns, as before (same decision and bound)."""
    rng = np.random.default_rng(0)
    X = sps.csr_matrix(rng.random((60, 30)) + 1e4)
    plan = metric_program(metric).plan
    g = rule.guards(plan)[0]
    stats = accuracy.column_stats(X)
    st = [accuracy.row_stats(g, side, X, stats) for side in ("left", "right")]
    n = accuracy.longest(X)
    assert n == 30
    assert accuracy.ratio(g, st[0], st[1], 30, rule.terms(30, n, n)) == \
        accuracy.ratio(g, st[0], st[1], 30)
