"""The same algebra as gbdist.algorithms, written in python-graphblas (SuiteSparse:GraphBLAS),
for benchmarks/graph.py. Each function mirrors its gbdist twin line by line (same semiring,
same mask, same stopping rule), so the timings compare the engines, not the algorithms."""
from __future__ import annotations

import graphblas as grb
import numpy as np
from graphblas import binary, monoid, semiring

INT64, FP64, BOOL = grb.dtypes.INT64, grb.dtypes.FP64, grb.dtypes.BOOL


def to_grb(A):
    return grb.io.from_scipy_sparse(A)


def bfs_levels(G, s):
    n = G.nrows
    q = grb.Vector(BOOL, n)
    q[s] = True
    v = grb.Vector(INT64, n)
    depth = 0
    while q.nvals:
        v(q.S) << depth
        depth += 1
        q(~v.S, replace=True) << q.vxm(G, semiring.any_pair)  # SuiteSparse picks push/pull
    return v.to_dense(fill_value=-1)


def bfs_parents(G, s):
    n = G.nrows
    q = grb.Vector(INT64, n)
    q[s] = s
    p = q.dup()
    while q.nvals:
        q(~p.S, replace=True) << q.vxm(G, semiring.min_first)
        p(q.S) << q
        q << q.apply(grb.indexunary.index)  # next frontier: own ids
    return p.to_dense(fill_value=-1)


def sssp(G, s):
    n = G.nrows
    d = grb.Vector(FP64, n)
    d[s] = 0.0
    f = d.dup()
    for _ in range(n + 1):
        t = f.vxm(G, semiring.min_plus).new()
        new = d.ewise_add(t, binary.min).new()
        same = grb.select.value(new.ewise_mult(d, binary.eq).new() == True)  # noqa: E712
        f = grb.Vector(FP64, n)
        f(~same.S) << new
        d = new
        if not f.nvals:
            break
    return d.to_dense(fill_value=np.inf)


def pagerank(G, alpha=0.85, tol=1e-6, max_iter=100):
    n = G.nrows
    s = G.reduce_rowwise(monoid.plus).new()
    sd = s.to_dense(fill_value=0.0)
    live = np.flatnonzero(sd != 0)
    inv_s = grb.Vector.from_coo(live, 1.0 / sd[live], size=n)
    dead = np.flatnonzero(sd == 0)
    dangling = grb.Vector.from_coo(dead, np.ones(dead.size), size=n, dtype=FP64)
    x = grb.Vector.from_dense(np.full(n, 1.0 / n))
    tele = grb.Vector.from_dense(np.full(n, (1.0 - alpha) / n))
    GT = G.T.new()  # mirrors gbdist's cached transpose
    for _ in range(max_iter):
        w = x.ewise_mult(inv_s, binary.times).new()
        y = GT.mxv(w, semiring.plus_times).new()
        lost = x.ewise_mult(dangling, binary.times).reduce(monoid.plus).new().value or 0.0
        y << y.apply(binary.times, right=alpha)
        base = tele.apply(binary.plus, right=alpha * lost / n).new()
        new = base.ewise_add(y, binary.plus).new()
        err = new.ewise_add(x, binary.minus).apply(grb.unary.abs).reduce(monoid.plus).new().value
        x = new
        if err < n * tol:
            return x.to_dense(fill_value=0.0)
    raise RuntimeError("pagerank did not converge")


def triangle_count(G, presort_skew=8.0):
    """As gbdist's: vertices renumbered by increasing degree on skewed graphs. (SuiteSparse
    alone is fastest with *decreasing* degree at 10^6 edges; ``presort_skew=None`` turns
    the relabelling off.)"""
    deg = G.reduce_rowwise(grb.agg.count).new().to_dense(fill_value=0)
    if presort_skew is not None and deg.size and deg.max() > presort_skew * max(deg.mean(), 1):
        order = np.argsort(deg, kind="stable")
        G = G[order, order].new()
    L = grb.select.tril(G, -1).new()
    C = grb.Matrix(INT64, G.nrows, G.ncols)
    C(L.S) << L.mxm(L.T, semiring.plus_pair)
    return int(C.reduce_scalar(monoid.plus).new().value or 0)


def connected_components(G):
    n = G.nrows
    ids = np.arange(n, dtype=np.int64)
    f = grb.Vector.from_dense(ids)
    gf = f.dup()
    while True:
        mngf = G.mxv(gf, semiring.min_second[INT64]).new()
        fi = f.to_dense().astype(np.int64)
        idx, vals = mngf.to_coo()
        H = grb.Matrix.from_coo(fi[idx], idx, vals, nrows=n, ncols=n, dup_op=binary.min)
        hooks = H.reduce_rowwise(monoid.min).new()
        f = f.ewise_add(hooks, binary.min).new()
        f = f.ewise_add(mngf, binary.min).new()
        f = f.ewise_add(gf, binary.min).new()
        new_gf = f[f.to_dense().astype(np.int64)].new()
        if new_gf.isequal(gf):
            return f.to_dense()
        gf = new_gf


def ktruss(G, k):
    C = grb.select.offdiag(G).new()
    while True:
        nv = C.nvals
        S = grb.Matrix(INT64, G.nrows, G.ncols)
        S(C.S) << C.mxm(C, semiring.plus_pair)
        C = grb.select.value(S >= k - 2).new()
        if C.nvals == nv:
            return C


def jaccard(G):
    n = G.nrows
    P = G.apply(binary.second, right=1.0).new()
    Z = G.apply(binary.second, right=0.0).new()
    shared = grb.Matrix(FP64, n, n)
    shared(P.S) << P.mxm(P.T, semiring.plus_pair)
    shared = shared.ewise_add(Z, binary.plus).new()
    deg = P.reduce_rowwise(monoid.plus).new().to_dense(fill_value=0.0)
    D = grb.Matrix.from_coo(np.arange(n), np.arange(n), deg, nrows=n, ncols=n)
    d_row = D.mxm(P, semiring.plus_times).new()
    d_col = P.mxm(D, semiring.plus_times).new()
    union = d_row.ewise_mult(d_col, binary.plus).new().ewise_mult(shared, binary.minus).new()
    return shared.ewise_mult(union, binary.truediv).new()


def cosine(G):
    n = G.nrows
    P = G.apply(binary.second, right=1.0).new()
    Z = G.apply(binary.second, right=0.0).new()
    shared = grb.Matrix(FP64, n, n)
    shared(P.S) << P.mxm(P.T, semiring.plus_pair)
    shared = shared.ewise_add(Z, binary.plus).new()
    deg = P.reduce_rowwise(monoid.plus).new().to_dense(fill_value=0.0)
    D = grb.Matrix.from_coo(np.arange(n), np.arange(n), deg, nrows=n, ncols=n)
    norm = D.mxm(P, semiring.plus_times).new().ewise_mult(
        P.mxm(D, semiring.plus_times).new(), binary.times).new().apply(grb.unary.sqrt).new()
    norm = norm.apply(binary.max, right=1.0).new()
    return shared.ewise_mult(norm, binary.truediv).new()
