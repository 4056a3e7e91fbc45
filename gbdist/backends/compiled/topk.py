"""Top-k selection and merging for kNN, compiled with Numba (imported lazily).

Same semantics as ``gbdist.neighbors.select_k`` / ``merge_k``: the k smallest
entries of each row by (distance, column), NaN after every number, ties kept
by the lowest column. Run over blocks of rows on the backend's thread pool;
each row keeps a sorted list of its k best (insertion, O(width + k · insertions)),
most entries rejected by one comparison with the current k-th.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...algebra.evaluate import apply_unary
from .helpers import gb_insert as _insert
from .helpers import gb_before as _before
from .threads import run_blocks as _run_blocks

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _select(tile, kk, offset, out_d, out_i, r0, r1):
    for r in range(r0, r1):
        bd, bi = out_d[r], out_i[r]
        row = tile[r]
        cnt = 0
        for c in range(row.shape[0]):
            v = row[c]
            idx = np.int64(c) + offset
            if cnt == kk and not _before(v, idx, bd[kk - 1], bi[kk - 1]):
                continue
            cnt = _insert(bd, bi, cnt, kk, v, idx)


@njit(**_OPT)
def _merge(d1, i1, d2, i2, kk, out_d, out_i, r0, r1):
    for r in range(r0, r1):
        bd, bi = out_d[r], out_i[r]
        cnt = 0
        for c in range(d1.shape[1]):
            cnt = _insert(bd, bi, cnt, kk, np.float64(d1[r, c]), i1[r, c])
        for c in range(d2.shape[1]):
            cnt = _insert(bd, bi, cnt, kk, np.float64(d2[r, c]), i2[r, c])


def select_k(tile: np.ndarray, k: int, offset: int = 0):
    """(distances, indices) of the k smallest entries of each row, sorted; indices are
    columns plus ``offset`` (int64), distances in the tile's dtype."""
    tile = np.ascontiguousarray(tile)
    rows, width = tile.shape
    kk = min(int(k), width)
    out_d = np.empty((rows, kk), dtype=tile.dtype)
    out_i = np.empty((rows, kk), dtype=np.int64)
    if kk and rows:
        _run_blocks(_select, (tile, kk, np.int64(offset), out_d, out_i), rows, work=tile.size)
    return out_d, out_i


def merge_k(d1, i1, d2, i2, k: int):
    """The k best of two candidate lists per row, by (distance, index), NaN last."""
    d1, d2 = np.ascontiguousarray(d1, dtype=np.float64), np.ascontiguousarray(d2, dtype=np.float64)
    i1, i2 = np.ascontiguousarray(i1, dtype=np.int64), np.ascontiguousarray(i2, dtype=np.int64)
    rows = d1.shape[0]
    kk = min(int(k), d1.shape[1] + d2.shape[1])
    out_d = np.empty((rows, kk), dtype=np.float64)
    out_i = np.empty((rows, kk), dtype=np.int64)
    if kk and rows:
        _run_blocks(_merge, (d1, i1, d2, i2, kk, out_d, out_i), rows, work=d1.size + d2.size)
    return out_d, out_i


_NO_INDEX = np.iinfo(np.int64).max
_NO_BASE = np.zeros((1, 1, 1), dtype=np.float64)
_BASE_BYTES = 64 * 2**20  # the dense columns' product of a super block of rows, at most
_BASE_MIN_ROWS = 256  # ... unless one row block of this height is more


def _balanced(weights: np.ndarray, parts: int) -> list:
    """Row blocks [r0, r1) of about equal total weight (at least one row each)."""
    m = weights.shape[0]
    cum = np.cumsum(weights, dtype=np.float64)
    total = cum[-1] if m else 0.0
    cuts = {0, m}
    if total > 0:
        cuts.update(int(c) + 1 for c in np.searchsorted(cum, total * np.arange(1, parts) / parts))
    cuts = sorted(c for c in cuts if 0 <= c <= m)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def search_k(p, kk: int, half: bool, budget: int | None):
    """The ``kk`` nearest right rows of every left row of a prepared plan, by (distance,
    index), NaN last, from the plan's ``gb_knn`` kernel (no tile is materialised: the
    products, the epilogue, the proven d(a, a) on equal rows and the selection in one pass
    per row); ``half``: a self-join under a symmetric metric, each pair computed once.
    ``(distances float64, indices int64)``, or None where it does not apply (no ``gb_knn``
    for the plan, a result type other than float32/64, or more memory than ``budget``)."""
    from .. import rows as _rows
    from .threads import run_queue, threads
    b, gen = p.bound, p.gen
    m, n = b.m, b.n
    dt = np.dtype(b.dtype)
    if not gen.knn or dt not in (np.float32, np.float64) or m == 0 or n == 0 or kk <= 0:
        return None
    if half and m != n:
        return None
    workers = threads()
    need = workers * n * (16 + (16 * kk + 8 if half else 0)) + m * kk * 16
    if budget is not None and need > budget:
        return None
    right, rowred, n_ = p.right(0, n)
    if n_ != n:
        return None
    sp = p.split()  # dense columns as a matrix product per block of rows (as run_tile)
    arrays = []
    for kind, u, s in gen.args:
        if kind == "lcsr" and sp is not None and u == sp["lu"]:
            arrays += [sp["lptr"], sp["lidx"], sp["lval"]]
        elif kind == "lcsr":
            d = b.data[gen.operands[u].base]
            arrays += [d.indptr, d.indices, p.values[u]]
        else:
            arrays += list(right[(kind, u, s)])
    colred = p.reduce(p.cols, 0, m)
    value = np.nan
    pi = pj = np.zeros(0, dtype=np.int64)
    if p.pair is not None and p.value is not None:  # as apply_self_value: None, no value
        lk, rk = b.data[p.pair[0]], b.data[p.pair[1]]
        pi, pj = _rows.identical_pairs((lk.indptr, lk.indices, lk.data),
                                       (rk.indptr, rk.indices, rk.data),
                                       hashes=(_rows.operand_hashes(b, p.pair[0]),
                                               _rows.operand_hashes(b, p.pair[1])))
        value = float(dt.type(p.value))  # written as the tile's dtype holds it
    order = np.lexsort((pj, pi))
    ovj = np.ascontiguousarray(pj[order], dtype=np.int64)
    ovp = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(pi, minlength=m), out=ovp[1:])
    bd = np.full((m, kk), np.nan)
    bi = np.full((m, kk), _NO_INDEX, dtype=np.int64)
    rows = n if half else 1
    cols = [(np.full((rows, kk), np.nan), np.full((rows, kk), _NO_INDEX, dtype=np.int64),
             np.zeros(rows, dtype=np.int64)) for _ in range(workers if half else 1)]
    head = (*arrays, colred, rowred, np.int64(p.K), np.int64(p.Kw), np.int64(n), bool(half),
            dt == np.float32, ovp, ovj, value, np.int64(kk), bd, bi)
    kernel = p.mod.gb_knn
    # weights: the pairs a row computes (j >= i when half), and its entries
    lens = np.diff(np.asarray(arrays[0], dtype=np.int64)).astype(np.float64)
    pairs = (n - np.arange(m, dtype=np.float64)) if half else np.full(m, float(n))
    blocks = _balanced(pairs + lens * 8.0, 8 * workers)
    if sp is None:
        supers = [(0, m, blocks)]
    else:  # the dense columns' product, computed per super block of rows (one BLAS call of
        # at most ~64 MiB: thin calls repack the right block each time, 8x slower measured)
        dl = p.dense_rows(sp["lu"], 0, m)
        dr = p.dense_rows(sp["ru"], 0, n)
        mapped = [[(apply_unary(phi, dl), np.ascontiguousarray(apply_unary(psi, dr).T))
                   for phi, psi in e] for e in gen.gemm]
        rows = max(_BASE_MIN_ROWS, _BASE_BYTES // (8 * n * len(mapped)))
        supers = []
        for a in range(0, m, rows):
            b_ = min(m, a + rows)
            supers.append((a, b_, [(max(a, r0), min(b_, r1)) for r0, r1 in blocks
                                   if r0 < b_ and r1 > a]))

    def work_in(base, br0: int, bc0: int):
        def work(w: int, r0: int, r1: int) -> None:
            c = cols[w if half else 0]
            kernel(*head, *c, base, sp is not None, np.int64(br0), np.int64(bc0),
                   np.int64(r0), np.int64(r1))
        return work

    for a, b_, sub in supers:
        base, bc0 = _NO_BASE, 0
        if sp is not None:
            bc0 = a if half else 0  # a self-join needs j >= i only
            base = np.empty((len(mapped), b_ - a, n - bc0), dtype=np.float64)
            for s, terms in enumerate(mapped):
                np.matmul(terms[0][0][a:b_], terms[0][1][:, bc0:], out=base[s])
                for left, right_t in terms[1:]:
                    base[s] += left[a:b_] @ right_t[:, bc0:]
        run_queue(work_in(base, a, bc0), sub, workers)
    if half:
        for cd, ci, _cc in cols:
            bd, bi = merge_k(bd, bi, cd, ci, kk)
    return bd, bi
