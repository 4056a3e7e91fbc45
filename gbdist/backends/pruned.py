"""The pruned kNN on the host (NumPy/SciPy): overlapping pairs only, plus the best of the rest.

For a plan whose pruning is proven (:mod:`gbdist.compiler.pruning`), a pair of rows that
share no stored column is at h(L_i, R_j), a function of the row summaries that is either
the same for every index row (order ``"index"``) or non-decreasing in one summary r of
the index row (order ``"key"``). Per block of query rows:

1. **the overlapping pairs**, the pattern of X·Yᵀ: one triplet pass (i, j, k) over the
   columns k the two rows share (X in CSR, Y in CSC), each Intersect step ⊕-reduced per
   pair; the epilogue and the proven d(a, a) over those pairs (:class:`Pairs`);
2. **the k best pairs with no shared column**: the index rows ordered once by (r_j, j)
   (by j for ``"index"``); for row i, the first k positions of that order that are not
   among its overlapping rows. With ties (a value at the k-th place that another index
   row with a different r reaches too), the row is evaluated against every regular index
   row instead, so ties always go to the lower index;
3. the union of both candidate lists, each row's k best by (distance, index), NaN last.

Rows whose summaries are not *regular* (finite, 1e-100 ≤ |s| ≤ 1e100: empty rows, zero
norms, underflow) fall outside the proof's domain: such an index row is a candidate of
every query (grouped by equal summaries: a group's rows have one value per query, so its
lowest k indices suffice), and such a query row (an empty one: one row of values shared
by all) is evaluated against every index row. Values are rounded to the result dtype
before they are compared, as the tiles are. Exact: the same answer as the full search
up to the rounding of the sums (the overlap sums are taken in another order).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..algebra.evaluate import apply_binary
from ..compiler import exact, ir
from . import rows
from .cpu import CPUBackend, _host, _segment_reduce, _triplets, bind_operand, compress_columns

TINY, HUGE = 1e-100, 1e100  # regular summaries: products of three stay normal floats
MAX_GROUPS = 64  # distinct summaries of irregular index rows (else: no pruning)
TRIPLETS_PER_BLOCK = 1 << 22  # without a budget
MAX_DIRECT = 1 << 26  # pairs of non-empty irregular query rows evaluated one by one


def products(left, right, ncols: int) -> int:
    """Σ_c deg_left(c)·deg_right(c): the triplets of the overlap pass (the statistic the
    planner rule :func:`gbdist.compiler.pruning.pays` reads); ``left``, ``right``: CSR."""
    if ncols <= 4 * (left.nnz + right.nnz) + 1024:
        a = np.bincount(left.indices, minlength=ncols).astype(np.float64)
        b = a if right is left else np.bincount(right.indices, minlength=ncols).astype(np.float64)
        return int(np.dot(a, b))
    ca, na = np.unique(left.indices, return_counts=True)
    cb, nb = np.unique(right.indices, return_counts=True)
    _, ia, ib = np.intersect1d(ca, cb, assume_unique=True, return_indices=True)
    return int(np.dot(na[ia].astype(np.float64), nb[ib].astype(np.float64)))


class Pairs:
    """A bound plan evaluated at chosen (i, j) pairs, through the plan's own steps: the row
    reductions once per operand, the Intersect steps by a triplet pass, the epilogue by
    the NumPy backend's evaluator, the proven d(a, a) at identical rows."""

    def __init__(self, bound, dtype):
        plan = bound.plan
        self.b, self.plan, self.dtype = bound, plan, np.dtype(dtype)
        self.be = be = CPUBackend()
        self.lkey, self.rkey = exact.operand_pair(plan)
        data = compress_columns({k: _host(v) for k, v in bound.data.items()}, bound.ncols,
                                  bool(bound.weights))
        self.data, self.ncols = data, bound.ncols
        self.left, self.right = data[self.lkey], data[self.rkey]
        self.m, self.n = self.left.shape[0], self.right.shape[0]
        self.col, self.row, self.mats = {}, {}, []
        for st in plan.steps:
            if st.kind == "col":
                self.col[st.name] = be.run_step(st, data, data, self.ncols)[:, 0]
            elif st.kind == "row":
                self.row[st.name] = be.run_step(st, data, data, self.ncols)[0, :]
            else:
                self.mats.append(st)
        # the right rows' values per Intersect step (apply chains mapped once), and the
        # right operand by column with positions into its stored values
        self.rvals = {st.name: bind_operand(st.node.right, data).csr.data for st in self.mats}
        # the summaries the proof reads: the plan's row reductions, and for a two-pass
        # union ⊕_A f(x, z_B) ("<step>a") and ⊕_B f(z_A, y) ("<step>b") over stored entries
        self.lsum, self.rsum, self.fills = dict(self.col), dict(self.row), {}
        for st in self.mats:
            node = st.node
            if isinstance(node, ir.TwoPassUnion):
                A, B = bind_operand(node.left, data), bind_operand(node.right, data)
                self.fills[st.name] = (A.fill, B.fill)
                e = node.add.identity_value
                fa = apply_binary(node.mul, A.csr.data, np.full(A.csr.nnz, B.fill))
                fb = apply_binary(node.mul, np.full(B.csr.nnz, A.fill), B.csr.data)
                self.lsum[st.name + "a"] = _segment_reduce(node.add.ufunc, fa, A.csr.indptr, e, 0)
                self.rsum[st.name + "b"] = _segment_reduce(node.add.ufunc, fb, B.csr.indptr, e, 0)
        self.lnnz, self.rnnz = np.diff(self.left.indptr), np.diff(self.right.indptr)
        r = self.right
        self.rpos = sps.csr_matrix((np.arange(r.nnz, dtype=np.float64), r.indices, r.indptr),
                                   shape=r.shape).tocsc()
        self.value = exact.self_value(plan).value
        if self.value is not None:
            self.hashes = (rows.operand_hashes(bound, self.lkey), rows.operand_hashes(bound, self.rkey))

    # -- the overlap pass ------------------------------------------------------

    def overlaps(self, r0: int, r1: int):
        """(i, j, values) of every pair of rows i in r0:r1 and j that share a column,
        sorted by (i, j), values already through the epilogue."""
        blk = self.left[r0:r1]
        pos = sps.csr_matrix((np.arange(blk.nnz, dtype=np.float64), blk.indices, blk.indptr),
                             shape=blk.shape)
        parts = list(_triplets(pos, self.rpos, 48 * TRIPLETS_PER_BLOCK))
        if not parts:
            e = np.zeros(0, dtype=np.int64)
            return e, e, np.zeros(0)
        i = np.concatenate([p[0] for p in parts])
        j = np.concatenate([p[1] for p in parts])
        pa = np.concatenate([p[2] for p in parts]).astype(np.int64)
        pb = np.concatenate([p[3] for p in parts]).astype(np.int64)
        flat, inv = np.unique(i * self.n + j, return_inverse=True)
        pi, pj = flat // self.n + r0, flat % self.n
        mats = {}
        ldata = {self.lkey: blk}
        for st in self.mats:
            node = st.node
            va = bind_operand(node.left, ldata).csr.data[pa]
            vals = apply_binary(node.mul, va, self.rvals[st.name][pb])
            ufunc, e = node.add.ufunc, node.add.identity_value
            if isinstance(node, ir.TwoPassUnion):
                a = bind_operand(node.left, ldata).csr
                mats[st.name] = self._union(st.name, node, a, pi, pj, r0, inv, pa, pb, vals)
            elif ufunc is np.add:
                mats[st.name] = np.bincount(inv, weights=vals, minlength=flat.size)
            else:
                out = np.full(flat.size, e, dtype=np.float64)
                ufunc.at(out, inv, vals)
                mats[st.name] = out
        return pi, pj, self.values(pi, pj, mats)

    def _union(self, name, node, a, pi, pj, r0, inv, pa, pb, shared):
        """A two-pass union at overlapping pairs: ⊕ of f over the shared columns (the
        triplets), of f(x, z_B) over the columns only row i stores, of f(z_A, y) over those
        only row j stores, and the corner for the columns neither stores."""
        za, zb = self.fills[name]
        ufunc = node.add.ufunc
        out = np.full(pi.size, node.add.identity_value, dtype=np.float64)
        ufunc.at(out, inv, shared)
        rvals = self.rvals[name]
        for ip, ptr, vals, pos, other, left in ((pi - r0, a.indptr, a.data, pa, zb, True),
                                                (pj, self.right.indptr, rvals, pb, za, False)):
            cnt = (ptr[ip + 1] - ptr[ip]).astype(np.int64)
            ent = np.repeat(np.arange(pi.size, dtype=np.int64), cnt)
            at = np.repeat(ptr[ip].astype(np.int64), cnt) + np.arange(ent.size) - \
                np.repeat(np.cumsum(cnt) - cnt, cnt)
            stride = np.int64(vals.size + 1)
            alone = ~np.isin(ent * stride + at, inv * stride + pos)
            x = vals[at[alone]]
            z = np.full(x.size, other)
            ufunc.at(out, ent[alone], apply_binary(node.mul, x, z) if left else
                     apply_binary(node.mul, z, x))
        union = self.lnnz[pi] + self.rnnz[pj] - np.bincount(inv, minlength=pi.size)
        return _corner(node, out, union, self.ncols)

    # -- the plan at pairs -----------------------------------------------------

    def values(self, pi: np.ndarray, pj: np.ndarray, mats: dict | None = None,
               same: bool = True) -> np.ndarray:
        """The plan's value at pairs (pi, pj); ``mats``: the Intersect steps' values at those
        pairs (None: the pairs share no column, so each is its ⊕'s identity); ``same``:
        write the proven d(a, a) at identical rows (False: h itself)."""
        results = {}
        for st in self.mats:
            node = st.node
            if mats:
                results[st.name] = mats[st.name]
            elif isinstance(node, ir.TwoPassUnion):  # each row's entries meet the other's fill
                u = node.add.ufunc(self.lsum[st.name + "a"][pi], self.rsum[st.name + "b"][pj])
                results[st.name] = _corner(node, u, self.lnnz[pi] + self.rnnz[pj], self.ncols)
            else:
                results[st.name] = np.float64(node.add.identity_value)
        for name, v in self.col.items():
            results[name] = v[pi]
        for name, v in self.row.items():
            results[name] = v[pj]
        out = np.asarray(self.be.epilogue(self.plan.epilogue, results, self.ncols), dtype=np.float64)
        out = np.array(np.broadcast_to(out, pi.shape), dtype=np.float64)
        if same and self.value is not None and pi.size:
            out = self._self_value(pi, pj, out)
        return out.astype(self.dtype).astype(np.float64)

    def _self_value(self, pi, pj, out):
        """The proven d(a, a) where row pi equals row pj and the value is finite."""
        lh, rh = self.hashes
        cand = np.flatnonzero(lh[pi] == rh[pj])
        if cand.size == 0:
            return out
        ui, iu = np.unique(pi[cand], return_inverse=True)
        uj, ju = np.unique(pj[cand], return_inverse=True)
        L, R = self.b.data[self.lkey][ui], self.b.data[self.rkey][uj]
        si, sj = rows.identical_pairs((L.indptr, L.indices, L.data), (R.indptr, R.indices, R.data),
                                      hashes=(lh[ui], rh[uj]))
        same = np.isin(iu * uj.size + ju, si * uj.size + sj)
        hit = cand[same & np.isfinite(out[cand])]
        out[hit] = self.value
        return out


# ---------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------


def _corner(node, out, union, ncols: int):
    """⊕ the corner f(z_A, z_B) of the columns stored in neither row, as the union kernels do."""
    C, ufunc = node.corner, node.add.ufunc
    if node.corner_absorbed:  # every output starts at C
        return ufunc(out, C)
    if C == node.add.identity_value:
        return out
    if ufunc is np.add:
        return out + (ncols - union) * C
    if ufunc is np.multiply:
        return out * np.power(C, ncols - union)
    return np.where(union < ncols, ufunc(out, C), out)


def _regular(values: list, size: int) -> np.ndarray:
    ok = np.ones(size, dtype=bool)
    for v in values:
        a = np.abs(v)
        ok &= np.isfinite(v) & (a >= TINY) & (a <= HUGE)
    return ok


def _first_free(P_len: int, start: np.ndarray, hits_row, hits_pos, count: int):
    """For each row r, the first ``count`` positions ≥ start[r] (of an order of length
    P_len) that are not among its hits (hits_row, hits_pos: the positions to skip), as a
    rows × count array (−1 where the order runs out).

    The t-th free position is the least fixed point of c = start + t + H(c), H(c) the
    row's hits in [start, c]: iterated from c = start + t, each step a binary search in
    the sorted hits, so a row with thousands of hits costs no more than its window."""
    nrows = start.shape[0]
    stride = np.int64(P_len + 1)
    key = np.sort(hits_row.astype(np.int64) * stride + hits_pos)
    base = np.arange(nrows, dtype=np.int64) * stride
    lo = np.searchsorted(key, base + start)[:, None]
    first = start[:, None] + np.arange(count, dtype=np.int64)[None, :]
    c = first
    while True:
        nxt = first + np.searchsorted(key, base[:, None] + np.minimum(c, P_len), side="right") - lo
        if np.array_equal(nxt, c):
            break
        c = nxt
    return np.where(c < P_len, c, -1)


def search_pruned(bound, decision, kk: int, dtype, budget: int | None = None):
    """(distances, indices) of the kk best index rows of every query row (module
    docstring), or None where the irregular index rows are too varied to group. Row
    blocks hold at most ``budget`` / 64 bytes of triplets (about 64 bytes of temporaries
    each)."""
    ev = Pairs(bound, dtype)
    m, n = ev.m, ev.n
    lnnz, rnnz = np.diff(ev.left.indptr), np.diff(ev.right.indptr)
    qreg = _regular(list(ev.lsum.values()), m) & (lnnz > 0)
    ireg = _regular(list(ev.rsum.values()), n)
    # irregular index rows, grouped by their summaries (one value per query and group)
    irr = np.flatnonzero(~ireg)
    groups: list = []
    if irr.size:
        summ = np.stack([v[irr] for v in ev.rsum.values()], axis=1) if ev.rsum else \
            np.zeros((irr.size, 0))
        _, gid = np.unique(summ, axis=0, return_inverse=True)
        gid = np.asarray(gid).reshape(-1)
        if gid.max() + 1 > MAX_GROUPS:
            return None
        groups = [irr[gid == g] for g in range(int(gid.max()) + 1)]  # ascending indices
    reg = np.flatnonzero(ireg)
    if decision.order == "key":
        key = ev.rsum[decision.key][reg]
        P = reg[np.lexsort((reg, key))]
        pkey = ev.rsum[decision.key][P]
        run_end = np.empty(P.size, dtype=np.int64)  # the position after each run of equal keys
        if P.size:
            change = np.flatnonzero(np.diff(pkey) != 0) + 1
            ends = np.append(change, P.size)
            run_end = np.repeat(ends, np.diff(np.insert(ends, 0, 0)))
    else:
        P = reg
    where = np.full(n, -1, dtype=np.int64)
    where[P] = np.arange(P.size, dtype=np.int64)

    odd = np.flatnonzero(~qreg & (lnnz > 0))
    if odd.size * n > MAX_DIRECT:  # too many queries outside the proof's domain
        return None
    best_d = np.full((m, kk), np.nan)
    best_i = np.full((m, kk), np.iinfo(np.int64).max, dtype=np.int64)
    empty_rows = np.flatnonzero(lnnz == 0)
    if empty_rows.size:  # an empty query shares no column: one row of values for all
        q = empty_rows[0]
        j = np.arange(n, dtype=np.int64)
        d, i = _select(np.full(n, q), j, ev.values(np.full(n, q), j), m, kk, q, q + 1)
        best_d[empty_rows], best_i[empty_rows] = d[0], i[0]
    weight = _row_products(ev)
    limit = TRIPLETS_PER_BLOCK if budget is None else max(1 << 16, int(budget) // 64)
    for r0, r1 in _blocks(weight, limit):
        oi, oj, ov = ev.overlaps(r0, r1)
        ci, cj, cv = [oi], [oj], [ov]
        rows_ = np.arange(r0, r1, dtype=np.int64)
        reg_rows = rows_[qreg[r0:r1]]
        if reg_rows.size and P.size:
            ok = np.isin(oi, reg_rows)
            hp = where[oj[ok]]
            keep = hp >= 0
            loc = np.searchsorted(reg_rows, oi[ok][keep])
            pos = _first_free(P.size, np.zeros(reg_rows.size, np.int64), loc, hp[keep], kk)
            valid = pos >= 0
            ti = np.repeat(reg_rows, kk).reshape(-1, kk)[valid]
            tj = P[pos[valid]]
            tv = ev.values(ti, tj)
            ci.append(ti), cj.append(tj), cv.append(tv)
            if decision.order == "key":
                slow, t = _ties(ev, reg_rows, pos, valid, tv, P, pkey, run_end, loc, hp[keep])
                if slow.size:  # a tie across keys: the lowest free indices of the tie
                    gi, gj = _tie_members(ev, slow, t, P, pkey, ireg, oi, oj, kk, decision.key)
                    new = ~np.isin(gi * n + gj, ti * n + tj)  # not already a candidate
                    gi, gj = gi[new], gj[new]
                    ci.append(gi), cj.append(gj), cv.append(ev.values(gi, gj))
        nonempty_irr = rows_[~qreg[r0:r1] & (lnnz[r0:r1] > 0)]
        for q in nonempty_irr:  # outside the proof's domain: every index row
            free = np.setdiff1d(np.arange(n), oj[oi == q])
            ci.append(np.full(free.size, q)), cj.append(free)
            cv.append(ev.values(np.full(free.size, q), free))
        live = reg_rows  # the others evaluate every index row already
        oflat = None
        for g in groups:  # each group of irregular index rows: its lowest free indices
            take = g[:kk + 1 + int(np.bincount(oi - r0, minlength=r1 - r0).max(initial=0))]
            gi = np.repeat(live, take.size)
            gj = np.tile(take, live.size)
            if oflat is None:
                oflat = oi * n + oj  # sorted (the overlaps are)
            free = ~np.isin(gi * n + gj, oflat, assume_unique=False)
            gi, gj = gi[free], gj[free]
            if gi.size:
                ci.append(gi), cj.append(gj), cv.append(ev.values(gi, gj))
        i_all, j_all, v_all = (np.concatenate(x) for x in (ci, cj, cv))
        d, i = _select(i_all, j_all, v_all, m, kk, r0, r1)
        sel = rows_[lnnz[r0:r1] > 0]
        best_d[sel], best_i[sel] = d[sel - r0], i[sel - r0]
    return best_d.astype(dtype), best_i


def _ties(ev, reg_rows, pos, valid, tv, P, pkey, run_end, loc, hits):
    """Rows whose k-th value is reached by an index row of another key: the chosen ones at
    the k-th value span several keys, or the first free row after the k-th key's run is at
    that value too (h is non-decreasing, so nothing later can be less)."""
    vals = np.full(pos.shape, np.nan)
    vals[valid] = tv
    full = valid.all(axis=1)
    last = pos[np.arange(pos.shape[0]), pos.shape[1] - 1]
    t = vals[:, -1]
    kth_key = np.where(full, pkey[np.maximum(last, 0)], np.nan)
    at_t = (vals == t[:, None]) & valid
    spans = (at_t & (pkey[np.maximum(pos, 0)] != kth_key[:, None])).any(axis=1)
    nxt = _first_free(P.size, np.where(full, run_end[np.maximum(last, 0)], P.size), loc, hits, 1)[:, 0]
    has = full & (nxt >= 0)
    tie = np.zeros(reg_rows.size, dtype=bool)
    if has.any():
        q = reg_rows[has]
        v = ev.values(q, P[nxt[has]])
        tie[has] = ~(v > t[has])
    slow = (spans | tie) & full
    return reg_rows[slow], t[slow]


def _tie_members(ev, rows_, t, P, pkey, ireg, oi, oj, kk: int, key: str):
    """(i, j) of up to kk lowest free index rows j at value t[i] for each row i of ``rows_``.

    h is non-decreasing along P, so the positions at h < t and at h ≤ t are prefixes
    [0, a) and [0, e) (binary searches); [a, e) is the tie, the index rows whose key lies
    in [pkey[a], pkey[e − 1]] (a run of equal keys is never split: equal keys give equal
    values). A short tie is sorted; a long one is scanned in index order, in windows that
    grow until each row has kk free members."""
    def h(pos):
        return ev.values(rows_, P[np.minimum(pos, P.size - 1)], same=False)

    def first(pred):  # the least position p with pred(h(p)), P.size when there is none
        lo, hi = np.zeros(rows_.size, np.int64), np.full(rows_.size, P.size, np.int64)
        while (lo < hi).any():
            mid = (lo + hi) // 2
            ok = pred(h(mid)) & (lo < hi)
            hi = np.where(ok, mid, hi)
            lo = np.where(~ok & (lo < hi), mid + 1, lo)
        return lo
    a, e = first(lambda v: v >= t), first(lambda v: v > t)
    lo_key, hi_key = pkey[np.minimum(a, P.size - 1)], pkey[np.maximum(e - 1, 0)]
    r, rk = ev.rsum[key], np.flatnonzero(ireg)
    hit = np.zeros(0, dtype=np.int64)
    if oi.size:
        hit = np.sort(np.searchsorted(rows_, oi[np.isin(oi, rows_)]) * np.int64(ev.n)
                      + oj[np.isin(oi, rows_)])
    out_i, out_j = [], []
    W, todo = 4 * kk, np.arange(rows_.size)
    while todo.size:
        W = min(W, rk.size)
        win = rk[:W]
        inside = (r[win][None, :] >= lo_key[todo, None]) & (r[win][None, :] <= hi_key[todo, None])
        flat = todo[:, None] * np.int64(ev.n) + win[None, :]
        inside &= ~np.isin(flat, hit)
        rank = np.cumsum(inside, axis=1)
        done = (rank[:, -1] >= kk) | (W == rk.size)
        take = inside & (rank <= kk) & done[:, None]
        ri, ci = np.nonzero(take)
        out_i.append(rows_[todo[ri]]), out_j.append(win[ci])
        todo, W = todo[~done], W * 4
    return np.concatenate(out_i), np.concatenate(out_j)


def _select(pi, pj, v, m, kk, r0=0, r1=None):
    """Each row's kk best of the candidates (pi, pj, v) (no pair twice) by (value, index),
    NaN last, as (rows × kk) arrays over rows r0:r1 (placeholders: NaN, the largest
    index): Numba's per-row k-lists where it imports, else two stable sorts (by (row,
    index), by value, then by row — a radix sort of the block's 16-bit row numbers)."""
    r1 = m if r1 is None else r1
    from . import compiled
    if compiled.available():
        from .compiled.ragged import select_ragged
        return select_ragged(pi - r0, pj, v, r1 - r0, kk)
    first = np.lexsort((pj, pi))
    pi, pj, v = pi[first], pj[first], v[first]
    order = np.argsort(v, kind="stable")
    local = (pi[order] - r0).astype(np.int16 if r1 - r0 <= 2**15 else np.int64)
    order = order[np.argsort(local, kind="stable")]
    pi, pj, v = pi[order], pj[order], v[order]
    starts = np.searchsorted(pi, np.arange(r0, r1))
    rank = np.arange(pi.size) - np.repeat(starts, np.diff(np.append(starts, pi.size)))
    keep = rank < kk
    d = np.full((r1 - r0, kk), np.nan)
    i = np.full((r1 - r0, kk), np.iinfo(np.int64).max, dtype=np.int64)
    d[pi[keep] - r0, rank[keep]] = v[keep]
    i[pi[keep] - r0, rank[keep]] = pj[keep]
    return d, i


def _row_products(ev) -> np.ndarray:
    """Per query row, its triplets in the overlap pass (Σ over its columns of their degree)."""
    deg = np.diff(ev.rpos.indptr)
    cs = np.concatenate([[0], np.cumsum(deg[ev.left.indices].astype(np.int64))])
    return cs[ev.left.indptr[1:]] - cs[ev.left.indptr[:-1]]


def _blocks(weight: np.ndarray, limit: int):
    """Row ranges of at most ``limit`` triplets (and at most 4096 rows) each."""
    m = weight.shape[0]
    cum = np.concatenate([[0], np.cumsum(weight)])
    r = 0
    while r < m:
        e = int(np.searchsorted(cum, cum[r] + limit, side="right")) - 1
        e = min(m, r + 4096, max(e, r + 1))
        yield r, e
        r = e
