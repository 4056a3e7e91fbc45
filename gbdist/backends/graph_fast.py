"""The graph reference's shortcuts: built-in ops as NumPy ufuncs in their domain, and the
folds whose result does not depend on the grouping of their terms as one ``reduceat``.

The formula walk in :mod:`gbdist.backends.graph_reference` stays the definition; these give
the same values faster; :func:`owners`, the segment of every element (tests/graph/test_value_paths.py compares every entry with the walk
on every domain, extreme values and NaN included). Each returns a new array.
"""
from __future__ import annotations

import functools

import numpy as np

_BOOL = np.dtype(np.bool_)


_LOUD = (np.add, np.subtract, np.multiply)  # the ufuncs below that can warn (on floats)


def _kind(dtype) -> str:
    return "b" if dtype == _BOOL else "i" if dtype.kind in "iu" else "f"


def _copy_first(a, b):
    return np.array(np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)))


def _copy_second(a, b):
    return np.array(np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape)))


def _one_or_zero(fn):
    """A truth-valued op (lor, land, eq, ne) kept in the operands' type: 1 or 0."""
    return lambda a, b: fn(a, b).astype(a.dtype)


@functools.lru_cache(maxsize=1)
def _binary_table() -> dict:
    from ..algebra import ops as o
    orr, andd = np.logical_or, np.logical_and

    def pair(a, b):
        return np.ones(np.broadcast_shapes(a.shape, b.shape), dtype=a.dtype)

    def lor(a, b):
        return orr(a != 0, b != 0)

    def land(a, b):
        return andd(a != 0, b != 0)

    table = (
        (o.plus, {"f": np.add, "i": np.add, "b": orr}),
        (o.minus, {"f": np.subtract, "i": np.subtract, "b": np.logical_xor}),
        (o.times, {"f": np.multiply, "i": np.multiply, "b": andd}),
        (o.min, {"f": np.fmin, "i": np.minimum, "b": andd}),
        (o.max, {"f": np.fmax, "i": np.maximum, "b": orr}),
        (o.first, dict.fromkeys("fib", _copy_first)),
        (o.any, dict.fromkeys("fib", _copy_first)),
        (o.second, dict.fromkeys("fib", _copy_second)),
        (o.pair, dict.fromkeys("fib", pair)),
        (o.lor, dict.fromkeys("fib", _one_or_zero(lor))),
        (o.land, dict.fromkeys("fib", _one_or_zero(land))),
        (o.eq, dict.fromkeys("fib", _one_or_zero(np.equal))),
        (o.ne, dict.fromkeys("fib", _one_or_zero(np.not_equal))),
    )
    return {op.key: fns for op, fns in table}


@functools.lru_cache(maxsize=1)
def _unary_table() -> dict:
    from ..algebra import ops as o
    copy = np.array
    table = (
        (o.abs, {"f": np.abs, "i": np.abs, "b": copy}),
        (o.neg, {"f": np.negative, "i": np.negative, "b": copy}),
        (o.identity, dict.fromkeys("fib", copy)),
        (o.nonzero, dict.fromkeys("fib", lambda a: (a != 0).astype(a.dtype))),
    )
    return {op.key: fns for op, fns in table}


_FAST: dict = {}


def _fast(table, op, dtype, kinds=False):
    """The ufunc form of ``op`` in ``dtype`` or None (``kinds``: the table's entry, every
    kind), memoised by the op object (its key is a tuple of the formula: hashed once per
    op, not per call)."""
    key = (table, id(op), dtype)
    hit = _FAST.get(key)
    if hit is not None and hit[0] is op:
        return hit[1]
    fns = table().get(op.key)
    fn = fns if kinds or fns is None else fns[_kind(dtype)]
    if len(_FAST) > 4096:
        _FAST.clear()
    _FAST[key] = (op, fn)
    return fn


def _fast_binary(op, dtype):
    return _fast(_binary_table, op, dtype)


def _fast_unary(op, dtype):
    return _fast(_unary_table, op, dtype)



@functools.lru_cache(maxsize=1)
def _fold_table() -> dict:
    """op key → {domain kind: fold(values, segment starts)} for the monoids whose fold does
    not depend on the grouping of its terms (:func:`fold_segments`)."""
    from ..algebra import ops as o

    def reduceat(ufunc):
        return lambda v, at: ufunc.reduceat(v, at, dtype=v.dtype)

    def first(v, at):
        return v[at]

    orr, andd = reduceat(np.logical_or), reduceat(np.logical_and)
    table = (
        # not on floats: fmin(0.0, -0.0) is either zero, so the grouping shows in the sign
        (o.min, {"i": reduceat(np.minimum), "b": andd}),
        (o.max, {"i": reduceat(np.maximum), "b": orr}),
        (o.any, dict.fromkeys("fib", first)),
        (o.first, dict.fromkeys("fib", first)),
        (o.plus, {"i": reduceat(np.add), "b": orr}),
        (o.times, {"i": reduceat(np.multiply), "b": andd}),
        (o.lor, {"b": orr}),
        (o.land, {"b": andd}),
    )
    return {op.key: fns for op, fns in table}


def _fast_fold(op, dtype):
    fns = _fast(_fold_table, op, dtype, kinds=True)
    return None if fns is None else fns.get(_kind(dtype))


def owners(counts, xp=np):
    """``repeat(arange(len(counts)), counts)``: for every element of the concatenated
    segments, the segment it belongs to (CuPy's repeat takes no array of counts)."""
    counts = xp.asarray(counts).astype(np.int64)
    if xp is np:
        return np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if counts.size else 0
    return xp.searchsorted(ends, xp.arange(total, dtype=np.int64), side="right").astype(np.int64)


def rank_lower_counts(indptr, indices, deg, xp=np, only_none=False):
    """(3, m) in ``deg``'s type: per row i, its entries j ranked below i with no ranking (j < i), by
    increasing degree ((deg j, j) < (deg i, i)) and by decreasing degree (deg j > deg i,
    ties by index); ``only_none``: the first only (the others 0). The compiled form is
    :mod:`gbdist.backends.compiled.graph_rank`."""
    m = indptr.shape[0] - 1
    rows, cols = owners(xp.diff(indptr), xp), indices.astype(np.int64)
    flags = _rank_flags(rows, cols, deg)
    out = xp.zeros((3, m), dtype=deg.dtype)
    for o, keep in enumerate(flags[:1] if only_none else flags):
        out[o] = xp.bincount(rows[keep], minlength=m)
    return out


def rank_lower_fill(indptr, indices, data, deg, mode: int, with_values: bool, xp=np):
    """(columns, values or None) of the entries kept under ordering ``mode`` (0 none,
    1 increasing, 2 decreasing degree), in A's order (each row's stay sorted)."""
    rows, cols = owners(xp.diff(indptr), xp), indices.astype(np.int64)
    at = xp.flatnonzero(_rank_flags(rows, cols, deg)[mode])
    return indices[at], (data[at] if with_values else None)


def pattern_symmetric(indptr, indices, xp=np) -> bool:
    """Whether a square canonical CSR pattern is symmetric: every key ``j * n + i`` of a
    mirrored entry found among the sorted keys ``i * n + j`` (no transpose is built; two
    key arrays and the search's positions). The compiled form bisects rows in place
    (:mod:`gbdist.backends.compiled.graph_symmetry`)."""
    n = indptr.shape[0] - 1
    rows, cols = owners(xp.diff(indptr), xp), indices.astype(np.int64)
    keys = rows * n + cols
    mirror = cols * n + rows
    del rows, cols
    pos = xp.searchsorted(keys, mirror)
    xp.minimum(pos, max(int(keys.size) - 1, 0), out=pos)
    return bool(keys.size == 0 or (keys[pos] == mirror).all())


def union_merge(ap, ai, bp, bi, xa, xb, ncols: int, itype, xp=np):
    """``(indptr, indices, values, at, a_pos, b_pos)``: the union of two canonical CSR
    matrices of one shape, C's pattern with ``xa[p]`` where only A stores (A's entry p),
    ``xb[q]`` where only B does; the (i, j) both store are C's entries ``at`` (left
    unwritten), from A's entries ``a_pos`` and B's ``b_pos``. Keys ``i * n + j`` of B
    located in A's by search; the compiled form merges row by row
    (:mod:`gbdist.backends.compiled.graph_union`)."""
    ra, rb = owners(xp.diff(ap), xp), owners(xp.diff(bp), xp)
    ka, kb = ra * ncols + ai.astype(np.int64), rb * ncols + bi.astype(np.int64)
    na = int(ka.size)
    pos, found, lone, out_a, out_b = _merge_positions(ka, kb, xp)
    ins = pos[lone]
    m = ap.shape[0] - 1
    indptr = xp.zeros(m + 1, dtype=itype)
    if m:
        per_row = xp.diff(ap).astype(np.int64) + xp.bincount(rb[lone], minlength=m)
        indptr[1:] = xp.cumsum(per_row).astype(itype)
    indices = xp.empty(na + int(ins.size), dtype=itype)
    values = xp.empty(na + int(ins.size), dtype=xa.dtype)
    indices[out_a], indices[out_b] = ai, bi[lone]
    values[out_a], values[out_b] = xa, xb[lone]
    b_pos = xp.flatnonzero(found).astype(np.int64)
    a_pos = pos[b_pos].astype(np.int64)
    return indptr, indices, values, out_a[a_pos], a_pos, b_pos


def intersect_merge(ap, ai, bp, bi, ncols: int, itype, xp=np):
    """``(indptr, indices, a_pos, b_pos)``: the (i, j) two canonical CSR matrices of one
    shape both store, C's row pointers and columns (``itype``) and the A and B entries each
    comes from (int64, in C's order). Keys ``i * n + j`` of A located in B's by search; the
    compiled form merges row by row (:mod:`gbdist.backends.compiled.graph_union`)."""
    ra, rb = owners(xp.diff(ap), xp), owners(xp.diff(bp), xp)
    ka, kb = ra * ncols + ai.astype(np.int64), rb * ncols + bi.astype(np.int64)
    m = ap.shape[0] - 1
    if int(kb.size):
        pos = xp.minimum(xp.searchsorted(kb, ka), int(kb.size) - 1)
        a_pos = xp.flatnonzero(kb[pos] == ka).astype(np.int64)
        b_pos = pos[a_pos].astype(np.int64)
    else:
        a_pos = b_pos = xp.zeros(0, dtype=np.int64)
    indptr = xp.zeros(m + 1, dtype=itype)
    if m:
        indptr[1:] = xp.cumsum(xp.bincount(ra[a_pos], minlength=m)).astype(itype)
    return indptr, ai[a_pos].astype(itype), a_pos, b_pos


def _merge_positions(ka, kb, xp):
    """The merge of two sorted unique int64 key arrays, B's keys located in A's by search:
    ``(pos, found, lone, out_a, out_b)``: each B key's insertion point in A, whether A
    holds it, its negation, and where A's keys and B's lone keys land in the union."""
    na = int(ka.size)
    pos = xp.searchsorted(ka, kb)
    found = xp.zeros(int(kb.size), dtype=bool)
    inside = pos < na
    found[inside] = ka[pos[inside]] == kb[inside]
    lone = ~found
    ins = pos[lone]  # insertion points of B's lone keys in A (nondecreasing)
    out_a = xp.arange(na, dtype=np.int64) + xp.cumsum(xp.bincount(ins, minlength=na + 1)[:na])
    out_b = ins + xp.arange(int(ins.size), dtype=np.int64)
    return pos, found, lone, out_a, out_b


def union_keys(ka, kb, xa, xb, xp=np, space=None):
    """``(keys, values, at, a_pos, b_pos)``: the union of two sorted unique int64 key
    arrays, ``xa[p]`` where only A holds the key (A's entry p), ``xb[q]`` where only B does;
    the keys both hold are the output's entries ``at`` (their values left for the
    caller), A's entries ``a_pos`` and B's ``b_pos``. B's keys located in A's by search, or,
    with ``space`` (the key space's size, given when the caller finds the keys dense:
    :func:`gbdist.graph.sparse.dense_space`), through a presence array of it; the compiled
    form is one branch-free merge
    (:func:`gbdist.backends.compiled.graph_union.merge_keys`)."""
    na = int(ka.size)
    if space:
        present = xp.zeros(space, dtype=bool)
        present[ka] = True
        found = present[kb]
        present[kb] = True
        keys = xp.flatnonzero(present).astype(np.int64, copy=False)
        dense = xp.empty(space, dtype=xa.dtype)  # read only where present
        dense[ka], dense[kb] = xa, xb
        b_pos = xp.flatnonzero(found).astype(np.int64, copy=False)
        shared = kb[b_pos]
        return (keys, dense[keys], xp.searchsorted(keys, shared).astype(np.int64),
                xp.searchsorted(ka, shared).astype(np.int64), b_pos)
    pos, found, lone, out_a, out_b = _merge_positions(ka, kb, xp)
    ins = pos[lone]
    keys = xp.empty(na + int(ins.size), dtype=np.int64)
    values = xp.empty(na + int(ins.size), dtype=xa.dtype)
    keys[out_a], keys[out_b] = ka, kb[lone]
    values[out_a], values[out_b] = xa, xb[lone]
    b_pos = xp.flatnonzero(found).astype(np.int64)
    a_pos = pos[b_pos].astype(np.int64)
    return keys, values, out_a[a_pos], a_pos, b_pos


def _rank_flags(rows, cols, deg):
    lt = cols < rows
    dc, dr = deg[cols], deg[rows]
    tie = lt & (dc == dr)
    return lt, (dc < dr) | tie, (dc > dr) | tie
