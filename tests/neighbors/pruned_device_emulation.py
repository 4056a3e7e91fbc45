"""The device pruned search's array logic on the host (run as a script, in its own process).

``gbdist.backends.cuda.pruned`` is CuPy array code around three kernels and the graph
SpGEMM. Here ``cupy`` is NumPy (a module standing in for it, in this process only), the
kernels and the SpGEMM are replaced by plain Python loops written from their
specifications (kernels/pruned.cuh's header; gb_prune_tie is also transcribed line by
line behind its real wrapper, with small blocks, and checked against its
specification at every call), and the device search is compared with the
host pruned search (gbdist.backends.pruned, itself checked against brute force) and with
brute force over the full float64 distance matrix, for the metrics named on the command
line, on very sparse data with ties, empty rows and duplicate rows, float64 and float32.
Prints one line per mismatch, the count of queries whose k-th value was a tie across keys
(``tie rows N``) and ``mismatches N`` last; with ``--no-dense`` any row evaluated against
every index row makes the search decline (a mismatch); with ``--union-top`` the max / min
unions take pruned_plan.UNION_TOP's path (gb_prune_union_keys / gb_prune_union_top
replaced by loops from their specification, the sort and the glue as written). Used by
tests/neighbors/test_pruning_device_logic.py; no GPU needed.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import scipy.sparse as sps

fake = types.ModuleType("cupy")
fake.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
fake.asnumpy = np.asarray
sys.modules["cupy"] = fake

from gbdist.algebra.evaluate import apply_binary  # noqa: E402
from gbdist.backends import cpu, rows as host_rows  # noqa: E402
from gbdist.algebra.evaluate import apply_unary  # noqa: E402
from gbdist.backends.cuda import pruned as P  # noqa: E402
from gbdist.backends.cuda import pruned_plan as PP  # noqa: E402
from gbdist.backends.cuda import pruned_values  # noqa: E402

pruned_values.FUSED = False  # the epilogue as array math (its kernel: test_pruned_values.py)
from gbdist.compiler.typecheck import row_operand  # noqa: E402


def spgemm(A, av, B, bv, node):
    """Every pair of rows sharing a stored column: ⊕ of ⊗ over the shared columns (the
    values av, bv: through the apply chains)."""
    a = sps.csr_matrix((av, A.indices, A.indptr), shape=A.shape)
    b = sps.csr_matrix((bv, B.indices, B.indptr), shape=B.shape)
    pat = (abs(a).astype(bool).astype(float) @ abs(b).astype(bool).astype(float).T).tocsr()
    pat.sort_indices()
    out = []
    for i in range(a.shape[0]):
        ai, av_ = a.indices[a.indptr[i]:a.indptr[i + 1]], a.data[a.indptr[i]:a.indptr[i + 1]]
        for j in pat.indices[pat.indptr[i]:pat.indptr[i + 1]]:
            bj, bv_ = b.indices[b.indptr[j]:b.indptr[j + 1]], b.data[b.indptr[j]:b.indptr[j + 1]]
            _, ia, ib = np.intersect1d(ai, bj, return_indices=True)
            acc = node.add.identity_value
            for v in apply_binary(node.mul, av_[ia], bv_[ib]):
                acc = node.add.ufunc(acc, v)
            out.append(acc)
    return types.SimpleNamespace(indptr=pat.indptr.astype(np.int32),
                                 indices=pat.indices.astype(np.int32),
                                 data=np.array(out, dtype=np.float64))


def _chain(chain, values):
    for op in chain:
        values = apply_unary(op, values)
    return np.asarray(values, dtype=np.float64)


def summary(pk, s, d, ncols):
    """gb_row_reduce with a PSum struct: ⊕ over each row's stored entries of the summary's
    element, then the fill of the columns the row does not store (a plain reduction)."""
    what = s[4]
    x = np.asarray(d.data, dtype=np.float64)
    if what[0] == "reduce":
        _, chain, monoid = what
        vals, fill = _chain(chain, x), float(_chain(chain, np.zeros(1))[0])
    else:  # a two-pass union's side: f(x, z_B) over A's entries, f(z_A, y) over B's
        _, node, side, chain, z = what
        monoid, fill = node.add, node.add.identity_value
        cx, zz = _chain(chain, x), np.full(x.size, z)
        vals = apply_binary(node.mul, cx, zz) if side == "a" else apply_binary(node.mul, zz, cx)
    e, f = monoid.identity_value, monoid.ufunc
    out = np.empty(d.shape[0])
    for r in range(d.shape[0]):
        acc = e
        for v in vals[d.indptr[r]:d.indptr[r + 1]]:
            acc = f(acc, v)
        missing = ncols - (d.indptr[r + 1] - d.indptr[r])
        if missing > 0 and fill != e:
            acc = acc + missing * fill if f is np.add else \
                acc * fill ** missing if f is np.multiply else f(acc, fill)
        out[r] = acc
    return out


def mapped(pk, step, side, d):
    """gb_prune_map: the side's apply chain on the stored values."""
    plan_node = pk.steps[step]
    _, _, chain = row_operand(plan_node.left if side == "left" else plan_node.right)
    return _chain(chain, np.asarray(d.data, dtype=np.float64))


def union_pairs(pk, step, A, B, pi, pj):
    """gb_prune_union: ⊕ over the union of the pair's columns (no corner), shared count."""
    node = pk.steps[step]
    _, za, zb = pk.unions[step][2:]
    lchain, rchain = row_operand(node.left)[2], row_operand(node.right)[2]
    out, shared = np.empty(pi.size), np.zeros(pi.size, dtype=np.int64)
    for t, (i, j) in enumerate(zip(pi, pj)):
        a = dict(zip(A.indices[A.indptr[i]:A.indptr[i + 1]],
                     _chain(lchain, A.data[A.indptr[i]:A.indptr[i + 1]])))
        b = dict(zip(B.indices[B.indptr[j]:B.indptr[j + 1]],
                     _chain(rchain, B.data[B.indptr[j]:B.indptr[j + 1]])))
        acc = node.add.identity_value
        for c in sorted(set(a) | set(b)):
            acc = node.add.ufunc(acc, apply_binary(node.mul, np.array([a.get(c, za)]),
                                                   np.array([b.get(c, zb)]))[0])
        out[t], shared[t] = acc, len(set(a) & set(b))
    return out, shared


def union_keys(pk, step, side, d):
    """gb_prune_union_keys: each entry's one-sided term f(x, z_B) (side 0) or f(z_A, y)
    (side 1), and bad where the value through its chain is not finite or the key is NaN."""
    node = pk.steps[step]
    _, za, zb = pk.unions[step][2:]
    x = _chain(row_operand(node.left if side == 0 else node.right)[2],
               np.asarray(d.data, dtype=np.float64))
    z = np.full(x.size, zb if side == 0 else za)
    with np.errstate(all="ignore"):
        key = np.asarray(apply_binary(node.mul, x, z) if side == 0 else
                         apply_binary(node.mul, z, x), dtype=np.float64)
    return key, (~np.isfinite(x) | np.isnan(key)).astype(np.uint8)


TOP_PAIRS = [0]


def union_top_pairs(pk, step, A, a, B, b, pi, pj, inter):
    """gb_prune_union_top: ⊕(the SpGEMM's value, row i's first entry in its key order whose
    column row j lacks, row j's likewise); a pair with a bad row: the full union."""
    node = pk.steps[step]
    f, e = node.add.ufunc, node.add.identity_value
    out = np.empty(pi.size)
    TOP_PAIRS[0] += int(pi.size)
    for t, (i, j) in enumerate(zip(pi, pj)):
        if a.bad[i] or b.bad[j]:
            out[t] = union_pairs(pk, step, A, B, pi[t:t + 1], pj[t:t + 1])[0][0]
            continue
        acc = f(e, inter[t])
        for S, s, O, o in ((a, A.indptr[i:i + 2], B, B.indptr[j:j + 2]),
                           (b, B.indptr[j:j + 2], A, A.indptr[i:i + 2])):
            other = set(O.indices[o[0]:o[1]].tolist())
            lacks = [k for c, k in zip(S.cols[s[0]:s[1]], S.keys[s[0]:s[1]]) if c not in other]
            acc = f(acc, lacks[0] if lacks else e)
        out[t] = acc
    return out


def free(Cp, Cj, rows, Q, count, start=None):
    """gb_prune_free: the first ``count`` positions of Q from start not in the row's overlaps."""
    out = np.full((rows.size, count), -1, dtype=np.int64)
    for t, r in enumerate(rows):
        hits = set(Cj[Cp[r]:Cp[r + 1]].tolist())
        p, c = (0 if start is None else int(start[t])), 0
        while c < count and p < Q.size:
            if int(Q[p]) not in hits:
                out[t, c] = p
                c += 1
            p += 1
    return out


def tie_scan(Cp, Cj, rows, J, keyJ, lo, hi, want, count):
    """gb_prune_tie: the first want[t] index rows of J (ascending) with lo ≤ key ≤ hi that
    are not in the row's overlaps."""
    out = np.full((rows.size, count), -1, dtype=np.int64)
    for t, r in enumerate(rows):
        hits = set(Cj[Cp[r]:Cp[r + 1]].tolist())
        got = [int(j) for j, k in zip(J, keyJ) if lo[t] <= k <= hi[t] and int(j) not in hits]
        got = got[:min(int(want[t]), count)]
        out[t, :len(got)] = got
    return out


def merge(Cp, Cj, cv, Ei, Ev, m, kk):
    """gb_prune_merge: each row's kk best by (value, index), NaN last; no pair twice."""
    d = np.full((m, kk), np.nan)
    i = np.full((m, kk), np.iinfo(np.int64).max)
    for r in range(m):
        cand = [(cv[p], int(Cj[p])) for p in range(Cp[r], Cp[r + 1])]
        cand += [(Ev[r, e], int(Ei[r, e])) for e in range(Ei.shape[1]) if Ei[r, e] >= 0]
        assert len({c[1] for c in cand}) == len(cand), f"row {r}: a candidate twice"
        cand.sort(key=lambda x: (bool(np.isnan(x[0])), 0.0 if np.isnan(x[0]) else x[0], x[1]))
        for s, (v, j) in enumerate(cand[:kk]):
            d[r, s], i[r, s] = v, j
    return d, i


def tie_kernel(grid, block, args):
    """gb_prune_tie transcribed line by line (its block skips included), for the real
    wrapper ``_tie_scan`` (its blocks' key bounds) with small blocks; checked against the
    specification ``tie_scan`` at every call."""
    (rows, nrows, Cp, Cj, J, key, jlen, bmin, bmax, bshift, smin, smax, sshift, lo, hi,
     want, count, out) = args
    bmask, smask = (1 << int(bshift)) - 1, (1 << int(sshift)) - 1
    for t in range(int(nrows)):
        r, p, c = rows[t], 0, 0
        hits = set(Cj[Cp[r]:Cp[r + 1]].tolist())
        w = min(int(want[t]), int(count))
        while c < w and p < jlen:
            if (p & smask) == 0 and (smax[p >> sshift] < lo[t] or smin[p >> sshift] > hi[t]):
                p += smask + 1
                continue
            if (p & bmask) == 0 and (bmax[p >> bshift] < lo[t] or bmin[p >> bshift] > hi[t]):
                p += bmask + 1
                continue
            if lo[t] <= key[p] <= hi[t] and int(J[p]) not in hits:
                out[t, c] = J[p]
                c += 1
            p += 1
        out[t, c:] = -1


def checked_tie_scan(Cp, Cj, rows, J, keyJ, lo, hi, want, count):
    got = real_tie_scan(Cp, Cj, rows, J, keyJ, lo, hi, want, count)
    assert np.array_equal(got, tie_scan(Cp, Cj, rows, J, keyJ, lo, hi, want, count))
    return got


real_tie_scan = P._tie_scan
P._spgemm, P._free, P._merge, P._tie_scan = spgemm, free, merge, checked_tie_scan
P._fn = lambda name: tie_kernel if name.startswith("gb_prune_tie<") else None
P.TIE_SHIFTS = (1, 3)  # blocks of 2 and 8 positions: the skips run on these small sets
PP.summary, PP.mapped, PP.union_pairs = summary, mapped, union_pairs
PP.union_keys, PP.union_top_pairs = union_keys, union_top_pairs
P.topk.select_k = lambda D, k, offset=0: cpu.select_k(np.asarray(D), k, offset)
P.host_rows = types.SimpleNamespace(
    identical_pairs=lambda left, right, xp: host_rows.identical_pairs(left, right, np))


def data(seed, m, ncols, dtype, kind):
    rng = np.random.default_rng(seed)
    X = np.zeros((m, ncols))
    for r in range(m):
        c = rng.choice(ncols, size=int(rng.integers(1, 5)), replace=False)
        X[r, c] = (np.round(rng.normal(size=c.size) * 2) / 4 + 0.125 if dtype == np.float64
                   else rng.random(c.size) + 1e-3)
    if kind == "binary":
        X = (X != 0).astype(float)
    elif kind in ("nonneg", "prob"):
        X = np.abs(X)
    X[[2, 7]] = 0.0  # empty rows
    X[[5, 11, 12]] = X[4]  # duplicate rows
    if kind == "prob":
        X = X / np.maximum(X.sum(axis=1, keepdims=True), 1e-300)
    return sps.csr_matrix(X.astype(dtype))


KINDS = {"jaccard": "binary", "dice": "binary", "russellrao": "binary", "sokalsneath": "binary",
         "yule": "binary", "jensenshannon": "prob", "hellinger": "prob", "kl_divergence": "prob",
         "canberra": "nonneg", "braycurtis": "nonneg"}


ROUNDED = {"jensenshannon", "jensenshannon_unnormalized", "hellinger", "kl_divergence",
           "minkowski", "seuclidean", "gower", "weighted_minkowski"}  # as test_pruning.py


NEGMIN_METRIC = ("op prune_negabs(x, y) = -abs(x - y)\n"
                 "metric prune_negmin_m(A, B) = mxm(A, B.T, semiring(prune_negabs, min))")


def main(names) -> int:
    import gbdist as gb
    from gbdist.backends.pruned import search_pruned
    from gbdist.compiler import ir
    from gbdist.compiler.pruning import pruning
    from gbdist.pairwise import metric_program
    from gbdist.runtime import bind
    bad = ties = 0
    if "--no-dense" in names:  # no row may be evaluated densely: ties by gb_prune_tie only
        names = [n for n in names if n != "--no-dense"]
        P.DENSE_LIMIT = 0
    if "--union-top" in names:  # max / min unions by gb_prune_union_top's glue (issue 29)
        names = [n for n in names if n != "--union-top"]
        PP.UNION_TOP = True
    if "prune_maxw_m" in names:  # a user-defined max metric (tests/neighbors/test_pruning.py)
        gb.define("op prune_maxw(x, y) = abs(2 * x - y)\n"
                  "metric prune_maxw_m(A, B) = mxm(A, B.T, semiring(prune_maxw, max))")
    if "prune_negmin_m" in names:  # a min union: minus chebyshev (-0.0 at equal values)
        gb.define(NEGMIN_METRIC)
    for name in names:
        plan = metric_program(name).plan
        dec = pruning(plan)
        two = {s.name for s in ir.symbols(plan.expr)} >= {"A", "B"}
        for seed, dtype in ((0, np.float64), (1, np.float32)):
            X = data(seed, 60, 40, dtype, KINDS.get(name, "real"))
            Y = data(seed + 10, 45, 40, dtype, KINDS.get(name, "real"))
            for Yv in (X, Y):
                inputs = {"A": X, "B": Yv} if two else {"A": X}
                b = bind(plan, inputs, drop_zeros=True, labels={"A": "X", "B": "Y"}, xp=np)
                R = np.asarray(gb.cdist(X, Yv, metric=name, backend="cpu"), dtype=np.float64)
                for kk in (1, 4, 9):
                    P.PROFILE.pop("tie_rows", None)
                    got = P.search_pruned_device(b, dec, kk, b.dtype)
                    ties += P.PROFILE.get("tie_rows", 0)
                    if got is None:
                        print(name, "declined")
                        bad += 1
                        continue
                    ref = search_pruned(b, dec, kk, b.dtype)
                    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else \
                        dict(rtol=1e-12, atol=1e-12)
                    same = np.isclose(got[0], ref[0], equal_nan=True, **tol)
                    # the very indices; where the sums are rounded (the device's summaries
                    # are added in a warp's order, the host's in the row's), a tie may
                    # fall either way within that rounding
                    same &= (got[1] == ref[1]) | (name in ROUNDED)
                    # brute force: the values at the returned indices, and the k-th best
                    order = np.argsort(R, axis=1, kind="stable")[:, :kk]
                    want = np.take_along_axis(R, order, axis=1).astype(b.dtype)
                    ok_b = np.isclose(got[0], want, equal_nan=True, rtol=2e-6, atol=1e-6)
                    if not (same.all() and ok_b.all()):
                        bad += 1
                        r = int(np.flatnonzero(~(same & ok_b).all(axis=1))[0])
                        print("mismatch", name, np.dtype(dtype).name, "XX" if Yv is X else "XY",
                              kk, r, got[0][r], got[1][r], ref[0][r], ref[1][r])
    print("union top pairs", TOP_PAIRS[0])
    print("tie rows", ties)
    print("mismatches", bad)
    return 0


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    raise SystemExit(main(sys.argv[1:]))
