"""The pruned kNN on the device: the host search of :mod:`gbdist.backends.pruned`, same
decision, same answer, on CuPy data (kernels/pruned.cuh for the per-row loops).

1. **the overlapping pairs**: the pattern of X·Yᵀ and, per Intersect step, its ⊕ of ⊗
   over the shared columns, by the row-binned hash SpGEMM of the graph kernels
   (:meth:`gbdist.backends.cuda.graph.CudaGraphKernels.spgemm`, ⊗ and ⊕ the step's own,
   float64); the epilogue over those entries (one kernel printed from the plan,
   :mod:`.pruned_values`, the row summaries read in place), rounded to the result dtype;
   the proven d(a, a) written at the identical
   rows (:func:`gbdist.backends.rows.identical_pairs` on the device);
2. **the best pairs with no shared column**: the regular index rows ordered once by
   (r_j, j) (by j for order ``"index"``); ``gb_prune_free`` finds each query's first kk
   positions of that order outside its overlap row. Ties across keys are found as on the
   host (the chosen ones at the k-th value span keys, or the first free row after the
   k-th key's run is at that value too); for such rows the tie's key range comes from two
   binary searches along the order and ``gb_prune_tie`` scans the index rows in index
   order for its lowest free members (the host's ``_tie_members``). The non-empty queries
   outside the proof's domain (and a NaN k-th value) are evaluated against every index
   row (dense rows in chunks, the device top-k). Irregular index rows are grouped by their summaries (each group's first
   kk free members); an empty query's row of values is computed once;
3. ``gb_prune_merge``: each row's kk best of its overlap row and its extra candidates by
   (distance, index), NaN last.

The row summaries, the apply chains of the overlap pass's operands and the two-pass
unions (chebyshev's max over the union of stored columns) at overlapping pairs run in
kernels generated from the plan (:mod:`gbdist.backends.cuda.pruned_plan`), on the device
operands.

Declines (returns None: the fused device search runs instead) for a column-weighted plan
(its row summaries would need the weights: compiler/pruning.py declines it first), operands
beyond the plan's pair, stored values other than float32/float64, kk > 32, more than MAX_GROUPS
distinct summaries of irregular index rows, a column count far above the stored entries,
a formula the CUDA printer cannot print, and more than DENSE_LIMIT cells of rows
evaluated against every index row (many non-empty queries outside the proof's domain).
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from ...compiler import exact, ir
from ...resources import read
from .. import rows as host_rows
from ...errors import BackendError
from ..cpu import POINTWISE_NUMPY
from ..pruned import HUGE, MAX_GROUPS, TINY
from . import cache, pruned_plan, pruned_ties, pruned_values, topk

MAX_K = 32  # the merge kernel's per-lane list
PROFILE: dict = {}  # seconds per stage of the last search when profiling (benchmarks)
_profiling = False


def profile(on: bool = True) -> None:
    """Record :data:`PROFILE` (each stage synchronised: slower, for the benchmarks)."""
    global _profiling
    _profiling = bool(on)


class _Stages:
    def __init__(self):
        import time
        self.clock, self.t = time.perf_counter, None
        if _profiling:
            PROFILE.clear()
            self.t = self.clock()

    def __call__(self, name: str) -> None:
        if self.t is None:
            return
        import cupy
        cupy.cuda.runtime.deviceSynchronize()
        now = self.clock()
        PROFILE[name] = PROFILE.get(name, 0.0) + now - self.t
        self.t = now


DENSE_CELLS = 1 << 26  # cells of one chunk of dense rows (queries evaluated against all)
DENSE_LIMIT = 1 << 32  # cells of all dense rows (more: the search declines)
TIE_SHIFTS = (5, 10)  # gb_prune_tie's blocks: 32 and 1024 positions
_NAMES = tuple(f"gb_prune_{w}<{p}{', 32' if w == 'merge' else ''}>"
               for w in ("free", "tie", "merge") for p in ("int", "long long"))


@functools.lru_cache(maxsize=1)
def source() -> str:
    return read("kernels", "topk.cuh") + "\n" + read("kernels", "pruned.cuh")


def names() -> tuple[str, ...]:
    return _NAMES


def _fn(name: str):
    return cache.module("pruned", source(), _NAMES).get_function(name)


def _ptype(a) -> str:
    return "int" if a.dtype == np.int32 else "long long"


def _pointwise(cp):
    """POINTWISE_NUMPY's functions on CuPy arrays (same names, same NumPy semantics)."""
    out = {k: getattr(cp, f.__name__) for k, f in POINTWISE_NUMPY.items()
           if isinstance(f, np.ufunc)}
    out["where"] = lambda c, a, b: cp.where(cp.asarray(c) != 0, a, b)
    for name, f in (("eq", cp.equal), ("ne", cp.not_equal), ("lt", cp.less),
                    ("le", cp.less_equal), ("gt", cp.greater), ("ge", cp.greater_equal)):
        out[name] = (lambda g: lambda a, b: g(a, b).astype(cp.float64))(f)
    return out


class _Device:
    """The bound plan's pieces the device search reads: the row summaries (computed on the
    device operands, :mod:`gbdist.backends.cuda.pruned_plan`), the product steps, the
    overlap pattern and values."""

    def __init__(self, bound, dtype, pk):
        import cupy as cp
        self.cp, self.plan, self.dtype, self.pk = cp, bound.plan, np.dtype(dtype), pk
        self.lkey, self.rkey = exact.operand_pair(self.plan)
        self.ncols = bound.ncols
        self.data = bound.data
        self.lsum, self.rsum = pruned_plan.summaries(pk, bound.data, self.ncols)
        self.col = {st.name: self.lsum[st.name] for st in self.plan.steps if st.kind == "col"}
        self.row = {st.name: self.rsum[st.name] for st in self.plan.steps if st.kind == "row"}
        self.mats = [st for st in self.plan.steps
                     if isinstance(st.node, (ir.Intersect, ir.TwoPassUnion))]
        L, R = bound.data[self.lkey], bound.data[self.rkey]
        self.m, self.n = int(L.shape[0]), int(R.shape[0])
        self.lnnz = cp.diff(L.indptr).astype(cp.int64)
        self.rnnz = cp.diff(R.indptr).astype(cp.int64)
        self.value = exact.self_value(self.plan).value
        self.fns = _pointwise(cp)

    # -- the overlap pass ------------------------------------------------------

    def overlaps(self):
        """(Cp int64, Cj int32, row of each entry int64, values float64) of every pair that
        shares a column, rows sorted, values through the epilogue and the self value. An
        Intersect step's values are the SpGEMM's; a two-pass union's are taken over the
        union of the pair's columns (``gb_prune_union``; for max / min with
        pruned_plan.UNION_TOP, ``gb_prune_union_top`` from the SpGEMM's values of the
        first product step), its corner added."""
        cp = self.cp
        mats, Cp, Cj, unions = {}, None, None, []
        for st in self.mats:
            node = st.node
            A, B = self.data[pruned_plan._key(node.left)], self.data[pruned_plan._key(node.right)]
            if Cp is None or not isinstance(node, ir.TwoPassUnion):
                C = _spgemm(A, pruned_plan.mapped(self.pk, st.name, "left", A),
                            B, pruned_plan.mapped(self.pk, st.name, "right", B), node)
                if Cp is None:  # the same pattern for every step (the operands' rows)
                    Cp, Cj = C.indptr.astype(cp.int64), C.indices
                mats[st.name] = C.data
            if isinstance(node, ir.TwoPassUnion):
                unions.append((st, A, B))
        if Cp is None:  # no product step: no pair is known to overlap
            Cp, Cj = cp.zeros(self.m + 1, dtype=cp.int64), cp.zeros(0, dtype=cp.int32)
        nnz = int(Cj.size)
        ri = cp.searchsorted(Cp, cp.arange(nnz, dtype=cp.int64), side="right") - 1
        cj = Cj.astype(cp.int64)
        for st, A, B in unions:
            if pruned_plan.UNION_TOP and st.name in self.pk.tops and st.name in mats:
                # max / min: the SpGEMM's ∩ part and each row's best one-sided entry
                # (issue 29); the corner needs no shared count there (top_union)
                v = pruned_plan.union_top(cp, self.pk, st.name, A, B, ri, cj, mats[st.name])
                mats[st.name] = pruned_plan.corner(cp, st.node, v, None, self.ncols)
                continue
            v, shared = pruned_plan.union_pairs(self.pk, st.name, A, B, ri, cj)
            union = self.lnnz[ri] + self.rnnz[cj] - shared
            mats[st.name] = pruned_plan.corner(cp, st.node, v, union, self.ncols)
        v = self.values(ri, cj, mats)
        if self.value is not None and nnz:
            v = self._self_value(Cp, Cj, ri, v)
        return Cp, Cj, ri, v

    def _self_value(self, Cp, Cj, ri, v):
        cp = self.cp
        L, R = self.data[self.lkey], self.data[self.rkey]
        si, sj = host_rows.identical_pairs((L.indptr, L.indices, L.data),
                                           (R.indptr, R.indices, R.data), cp)
        if si.size == 0:
            return v
        si, sj = cp.asarray(si, dtype=cp.int64), cp.asarray(sj, dtype=cp.int64)
        key = ri * np.int64(self.n) + Cj
        want = si * np.int64(self.n) + sj
        pos = cp.minimum(cp.searchsorted(key, want), max(key.size - 1, 0))
        pos = pos[key[pos] == want]  # identical non-empty rows share every column
        pos = pos[cp.isfinite(v[pos])]
        v[pos] = self.value
        return v

    # -- the plan at pairs -----------------------------------------------------

    def values(self, pi, pj, mats: dict | None = None):
        """The epilogue at pairs (pi, pj) (CuPy, broadcastable, in range); ``mats``: the Intersect
        steps' values there (None: no shared column, each its ⊕'s identity); rounded to
        the result dtype and back to float64."""
        fused = pruned_values.evaluate(self, pi, pj, mats)  # one generated kernel
        if fused is not None:
            return fused
        cp = self.cp
        res = {}
        for st in self.mats:
            node = st.node
            if mats:
                res[st.name] = mats[st.name]
            elif isinstance(node, ir.TwoPassUnion):  # each row's entries meet the other's fill
                u = getattr(cp, node.add.ufunc.__name__)(self.lsum[st.name + "a"][pi],
                                                         self.rsum[st.name + "b"][pj])
                res[st.name] = pruned_plan.corner(cp, node, u, self.lnnz[pi] + self.rnnz[pj],
                                                  self.ncols)
            else:
                res[st.name] = cp.float64(node.add.identity_value)
        for name, v in self.col.items():
            res[name] = v[pi]
        for name, v in self.row.items():
            res[name] = v[pj]
        vals: dict = {}
        for node in ir.walk(self.plan.epilogue):
            if isinstance(node, ir.Ref):
                vals[node.key] = res[node.name]
            elif isinstance(node, ir.Const):
                vals[node.key] = cp.float64(node.value)
            elif isinstance(node, ir.NCols):
                vals[node.key] = cp.float64(self.ncols)
            elif isinstance(node, ir.Pointwise):
                vals[node.key] = self.fns[node.fn](*(vals[a.key] for a in node.args))
        shape = np.broadcast_shapes(np.shape(pi), np.shape(pj))
        out = cp.broadcast_to(cp.asarray(vals[self.plan.epilogue.key], dtype=cp.float64), shape)
        return out.astype(self.dtype).astype(cp.float64)


def _spgemm(A, av, B, bv, node):
    """The product step ``node`` at every pair of rows of the device CSR operands A and B
    (values ``av``, ``bv``: through the apply chains, float64) sharing a column: the graph
    kernels' hash SpGEMM of A · Bᵀ under the step's ⊗ and ⊕, in float64 (a device CSR,
    rows sorted)."""
    import cupyx.scipy.sparse as cps
    from .graph import CudaGraphKernels
    a = cps.csr_matrix((av, A.indices, A.indptr), shape=A.shape)
    b = cps.csr_matrix((bv, B.indices, B.indptr), shape=B.shape).T.tocsr()
    return CudaGraphKernels().spgemm(a, b, SimpleNamespace(mul=node.mul, add=node.add),
                                     out_dtype=np.float64)


def _regular(cp, values: list, size: int):
    ok = cp.ones(size, dtype=bool)
    for v in values:
        a = cp.abs(v)
        ok &= cp.isfinite(v) & (a >= TINY) & (a <= HUGE)
    return ok


def _free(Cp, Cj, rows, Q, count: int, start=None):
    """gb_prune_free: rows × count positions of Q (−1: none)."""
    import cupy as cp
    out = cp.empty((int(rows.size), count), dtype=cp.int64)
    if rows.size and count:
        _fn(f"gb_prune_free<{_ptype(Cp)}>")(
            (-(-int(rows.size) // 256),), (256,),
            (rows, np.int64(rows.size), Cp, Cj, Q, np.int64(Q.size),
             np.uint64(0) if start is None else cp.ascontiguousarray(start, dtype=cp.int64),
             np.int32(count), out))
    return out


def _tie_scan(Cp, Cj, rows, J, keyJ, lo, hi, want, count: int):
    """gb_prune_tie: rows × count index rows J[p] (ascending) with lo ≤ keyJ[p] ≤ hi outside
    each row's overlaps, the first ``want`` of each row (−1: none)."""
    import cupy as cp
    out = cp.full((int(rows.size), count), -1, dtype=cp.int64)
    if not (rows.size and count and J.size):
        return out
    bounds = []
    for shift in TIE_SHIFTS:  # each block's least and greatest key
        B = 1 << shift
        nb = -(-int(J.size) // B)
        pad = nb * B - int(J.size)
        bounds.append(cp.concatenate([keyJ, cp.full(pad, cp.inf)]).reshape(nb, B).min(axis=1))
        bounds.append(cp.concatenate([keyJ, cp.full(pad, -cp.inf)]).reshape(nb, B).max(axis=1))
    f64 = lambda a: cp.ascontiguousarray(a, dtype=cp.float64)  # noqa: E731
    _fn(f"gb_prune_tie<{_ptype(Cp)}>")(
        (-(-int(rows.size) // 256),), (256,),
        (rows, np.int64(rows.size), Cp, Cj, J, f64(keyJ), np.int64(J.size),
         f64(bounds[0]), f64(bounds[1]), np.int32(TIE_SHIFTS[0]),
         f64(bounds[2]), f64(bounds[3]), np.int32(TIE_SHIFTS[1]), f64(lo), f64(hi),
         cp.ascontiguousarray(want, dtype=cp.int32), np.int32(count), out))
    return out


def _ordered(cp, reg, key):
    """reg (ascending) ordered by (key, index): (P, the keys along P)."""
    img = topk._order_key(key[reg])
    o = cp.argsort(img)
    sk = img[o]
    grp = cp.zeros(reg.size, dtype=cp.int64)
    if reg.size > 1:
        grp[1:] = cp.cumsum(sk[1:] != sk[:-1])
    comb = cp.sort(grp * np.int64(reg.size) + o.astype(cp.int64))
    P = reg[comb % np.int64(reg.size)]
    return P, key[P]


def search_pruned_device(bound, decision, kk: int, dtype):
    """(distances, indices) as CuPy arrays, the same as :func:`gbdist.backends.pruned.search_pruned`,
    or None where the device search declines (module docstring)."""
    plan = bound.plan
    if getattr(bound, "weights", None) or any(getattr(st.node, "weight", None) is not None
                                              for st in plan.steps):
        # κ(w) read at each column (compiler/colfactor.py): the pruning decision declines
        # these plans (compiler/pruning.py: the row summaries would need the weights), and
        # the kernels here read no weights: the fused device search (the weighted gather) runs
        return None
    import cupy as cp
    if kk > MAX_K:
        return None
    lkey, rkey = exact.operand_pair(plan)
    if {k[0] for k in bound.data} != {lkey[0], rkey[0]}:  # operands beyond the pair
        return None
    storage = {np.dtype(bound.data[k].data.dtype) for k in bound.data}
    if len(storage) != 1 or not storage <= {np.dtype(np.float32), np.dtype(np.float64)}:
        return None
    nnz = sum(int(bound.data[k].indices.size) for k in {lkey, rkey})
    if bound.ncols > 64 * nnz + (1 << 24):
        return None
    try:  # a formula the CUDA printer cannot print: the fused search reports it
        pk = pruned_plan.kernels(plan, storage.pop())
    except BackendError:
        return None
    stage = _Stages()
    ev = _Device(bound, dtype, pk)
    m, n = ev.m, ev.n
    stage("summaries")
    qreg = _regular(cp, list(ev.lsum.values()), m) & (ev.lnnz > 0)
    ireg = _regular(cp, list(ev.rsum.values()), n)
    irr = cp.flatnonzero(~ireg)
    groups = []
    if irr.size:
        summ = cp.stack([v[irr] for v in ev.rsum.values()], axis=1) if ev.rsum else \
            cp.zeros((irr.size, 0))
        hs = cp.asnumpy(summ)
        _, gid = np.unique(hs, axis=0, return_inverse=True)  # irregular rows: few
        gid = np.asarray(gid).reshape(-1)
        if gid.max() + 1 > MAX_GROUPS:
            return None
        irr_h = cp.asnumpy(irr)
        groups = [cp.asarray(irr_h[gid == g]) for g in range(int(gid.max()) + 1)]
    reg = cp.flatnonzero(ireg)
    if decision.order == "key":
        P, pkey = _ordered(cp, reg, ev.rsum[decision.key])
        change = cp.flatnonzero(pkey[1:] != pkey[:-1]) + 1
        ends = cp.concatenate([change, cp.asarray([P.size], dtype=change.dtype)]).astype(cp.int64)
        # the position after each one's run of equal keys
        run_end = ends[cp.searchsorted(ends, cp.arange(P.size, dtype=cp.int64), side="right")]
    else:
        P = reg
    stage("order")
    Cp, Cj, ri, cv = ev.overlaps()
    stage("overlaps")
    PROFILE["overlap_pairs"] = int(Cj.size)
    E = kk * (1 + len(groups))
    Ei = cp.full((m, E), -1, dtype=cp.int64)
    Ev = cp.zeros((m, E), dtype=cp.float64)
    live = cp.flatnonzero(qreg)
    dense = [cp.flatnonzero(~qreg & (ev.lnnz > 0))]  # outside the proof's domain
    if live.size and P.size:
        pos = _free(Cp, Cj, live, P, kk)
        valid = pos >= 0
        tj = P[cp.maximum(pos, 0)]
        tv = ev.values(live[:, None], tj)
        Ei[live, :kk] = cp.where(valid, tj, -1)
        Ev[live, :kk] = tv
        stage("free")
        if decision.order == "key":
            slow, at, t = pruned_ties.ties(ev, _free, Cp, Cj, live, pos, valid, tv, P, pkey,
                                           run_end)
            stage("ties_found")
            odd = cp.isnan(t)  # a NaN k-th value: no order to search, every index row
            dense.append(slow[odd])
            slow, at, t = slow[~odd], at[~odd], t[~odd]
            if slow.size:  # a tie across keys: the lowest free indices of the tie
                Ei[slow, :kk], Ev[slow, :kk] = pruned_ties.members(
                    ev, _tie_scan, Cp, Cj, slow, Ei[slow, :kk], tv[at], t, P, pkey, reg,
                    ev.rsum[decision.key][reg], kk, stage)
            PROFILE["tie_rows"] = int(slow.size)
            stage("ties_members")
    for g, members in enumerate(groups):  # the lowest free members of each group
        if live.size:
            pos = _free(Cp, Cj, live, members, kk)
            gj = members[cp.maximum(pos, 0)]
            Ei[live, kk * (g + 1):kk * (g + 2)] = cp.where(pos >= 0, gj, -1)
            Ev[live, kk * (g + 1):kk * (g + 2)] = ev.values(live[:, None], gj)
    stage("free")
    rows_ = cp.concatenate(dense)
    if int(rows_.size) * n > DENSE_LIMIT:  # many queries outside the domain: the full search
        return None
    if rows_.size:
        _dense_rows(ev, Cp, Cj, ri, rows_, kk, Ei, Ev)
    PROFILE["dense_rows"] = int(rows_.size)
    stage("dense")
    empty = cp.flatnonzero(ev.lnnz == 0)
    if empty.size:  # an empty query shares no column: one row of values for all
        q = int(empty[0])
        v = ev.values(cp.full(n, q, dtype=cp.int64), cp.arange(n, dtype=cp.int64))
        if ev.value is not None:  # identical to the empty index rows
            v = cp.where((ev.rnnz == 0) & cp.isfinite(v), ev.value, v)
        d, i = topk.select_k(v[None, :], kk)
        if E > d.shape[1]:
            d = cp.concatenate([d, cp.zeros((1, E - d.shape[1]))], axis=1)
            i = cp.concatenate([i, cp.full((1, E - i.shape[1]), -1, cp.int64)], axis=1)
        Ei[empty], Ev[empty] = i[:, :E], d[:, :E]
    out_d, out_i = _merge(Cp, Cj, cv, Ei, Ev, m, kk)
    stage("merge")
    return out_d.astype(dtype), out_i


def _merge(Cp, Cj, cv, Ei, Ev, m: int, kk: int):
    """gb_prune_merge: each row's kk best of its overlap row and its extra candidates."""
    import cupy as cp
    out_d = cp.empty((m, kk), dtype=cp.float64)
    out_i = cp.empty((m, kk), dtype=cp.int64)
    if m:
        _fn(f"gb_prune_merge<{_ptype(Cp)}, 32>")(
            (-(-m * 32 // 256),), (256,),
            (Cp, Cj, cp.ascontiguousarray(cv), Ei, Ev, np.int32(Ei.shape[1]), np.int64(m),
             np.int32(kk), out_d, out_i))
    return out_d, out_i


def _dense_rows(ev, Cp, Cj, ri, rows_, kk, Ei, Ev):
    """Rows evaluated against every index row with no shared column (the others come from
    the overlap pass): dense rows of h in chunks, the overlapping cells set to NaN, the
    best kk + (most overlaps of the chunk) selected, the overlapping ones dropped."""
    cp = ev.cp
    n = ev.n
    rows_ = cp.unique(rows_)
    deg = (Cp[rows_ + 1] - Cp[rows_]).astype(cp.int64)
    key = ri * np.int64(n) + Cj
    step = max(1, DENSE_CELLS // max(n, 1))
    allj = cp.arange(n, dtype=cp.int64)
    for c0 in range(0, int(rows_.size), step):
        rs = rows_[c0:c0 + step]
        H = ev.values(rs[:, None], allj[None, :])  # a new array on either path: written below
        # overlapping cells: NaN placeholders (dropped after the selection)
        cnt = deg[c0:c0 + step]
        starts = Cp[rs]
        tot = int(cnt.sum())
        if tot:
            first = cp.cumsum(cnt) - cnt
            at = cp.arange(tot, dtype=cp.int64)
            seg = cp.searchsorted(first, at, side="right") - 1  # rows without overlaps skipped
            off = at - first[seg]
            H[seg, Cj[starts[seg] + off].astype(cp.int64)] = cp.nan
        want = min(n, kk + int(cnt.max()) if cnt.size else kk)
        d, i = topk.select_k(H, want)
        del H
        fk = rs[:, None] * np.int64(n) + i
        p = cp.minimum(cp.searchsorted(key, fk), max(key.size - 1, 0))
        hit = (key[p] == fk) if key.size else cp.zeros(fk.shape, dtype=bool)
        # the first kk of each row that do not overlap
        keep = ~hit
        rank = cp.cumsum(keep, axis=1)
        keep &= rank <= kk
        r_, c_ = cp.nonzero(keep)
        slot = (rank[r_, c_] - 1)
        Ei[rs] = -1
        Ei[rs[r_], slot] = i[r_, c_]
        Ev[rs[r_], slot] = d[r_, c_]
