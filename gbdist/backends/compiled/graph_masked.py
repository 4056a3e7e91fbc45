"""The masked product C⟨M⟩ = A ⊕.⊗ B run in blocks of rows (issue 28's first-call memory).

The kernels (:mod:`gbdist.backends.compiled.graph_codegen`'s ``spgemm_masked`` and
``spgemm_dot``) write each (i, j) of the mask into its mask position with a presence flag,
so a product over the whole mask needs a buffer and flags of the mask's size (a 1.87·10⁷-entry
power law: 160 MiB) before the present entries are compacted. Here the rows are cut into
blocks of at most ``BLOCK`` mask entries; each block runs the kernel on views of A's and M's
rows (the kernels index A and M only by row, so a block is the same call on sliced row
pointers) into one block-sized buffer, then its present entries are appended to the result.
The result's arrays are reserved at the mask's size and written in order: pages never
written are never mapped, and the arrays are shrunk in place to their length at the end
(``ndarray.resize``: a ``realloc``, no copy). Peak: the result, one block's buffer, the row
pointers, and the kernel's column map — SuiteSparse's masked saxpy holds about the same.
"""
from __future__ import annotations

import bisect

import numpy as np

# Mask entries a block holds (its buffer: this many values of the work type and flags).
BLOCK = 1 << 19


def blocks(mp: np.ndarray, m: int, block: int = BLOCK):
    """Row ranges [r0, r1) of at most ``block`` mask entries each (a row with more is a
    block alone)."""
    r0 = 0
    while r0 < m:
        # bisect, not np.searchsorted: NumPy copies a read-only array (the matrix's) to search it
        r1 = bisect.bisect_right(mp, int(mp[r0]) + block, r0, m + 1) - 1
        r1 = min(max(r1, r0 + 1), m)
        yield r0, r1
        r0 = r1


def masked_product(kernel, head, extra, mp, mi, m, work, out_dtype, itype, rw, run, ranges,
                   cast):
    """(indptr, indices, values) of the product. ``kernel(*head, mp, mi, *extra, buf,
    pres, r0, r1)`` with ``head[0]`` A's row pointers; ``rw``: per-row work when several
    threads split a block (None: each block on the calling thread); ``ranges(work, rows,
    total)`` splits a block; ``cast(values, out_dtype)`` as the reference casts."""
    total = int(mp[m])
    # the row pointers in the result's index type (``itype`` holds the mask's count): an int64
    # copy here was 2x the peer's own row pointers on a 10⁶-row grid, and SciPy then made an
    # int32 copy of it beside (its CSR keeps the smallest index type that holds the contents)
    cp = np.zeros(m + 1, dtype=itype)
    ci = np.empty(total, dtype=itype)     # reserved: only the written prefix is ever mapped
    cx = np.empty(total, dtype=out_dtype)
    size = min(BLOCK, total)
    buf = np.empty(size, dtype=work)
    pres = np.zeros(size, dtype=np.bool_)
    out = 0
    for r0, r1 in blocks(mp, m):
        lo, hi = int(mp[r0]), int(mp[r1])
        if hi > lo:
            if hi - lo > buf.shape[0]:  # one row longer than a block
                buf, pres = np.empty(hi - lo, dtype=work), np.zeros(hi - lo, dtype=np.bool_)
            out = _block(kernel, head, extra, mp, mi, r0, r1, buf, pres, rw, run, ranges, cast,
                         cp, ci, cx, out, out_dtype)
        else:
            cp[r0 + 1:r1 + 1] = out
    del buf, pres
    ci.resize(out, refcheck=False)  # realloc in place: the reserved tail given back
    cx.resize(out, refcheck=False)
    return cp, ci, cx


def _block(kernel, head, extra, mp, mi, r0, r1, buf, pres, rw, run, ranges, cast, cp, ci, cx,
           out, out_dtype) -> int:
    """Rows [r0, r1) into ``buf``/``pres`` (flags all False on entry and on return), their
    present entries appended to (ci, cx) at ``out``, their row pointers into ``cp``; the
    new length returned."""
    lo, hi = int(mp[r0]), int(mp[r1])
    mpb = mp[r0:r1 + 1] - lo
    b, p = buf[:hi - lo], pres[:hi - lo]
    rows = r1 - r0
    rr = [(0, rows)] if rw is None else ranges(rw[r0:r1], rows, float(rw[r0:r1].sum()))
    run(kernel, (head[0][r0:r1 + 1],) + tuple(head[1:]) + (mpb, mi[lo:hi]) + tuple(extra)
        + (b, p), rr)
    keep = np.flatnonzero(p)
    k = keep.size
    if k == 0:  # no entry: the rows' pointers all ``out`` (no rows-long temporaries)
        cp[r0 + 1:r1 + 1] = out
        return out
    # each row's end: ``out`` + the present entries before its mask end (added in place)
    np.add(np.searchsorted(keep, mpb[1:]), out, out=cp[r0 + 1:r1 + 1], casting="unsafe")
    ci[out:out + k] = mi[lo:hi][keep]
    cx[out:out + k] = cast(b[keep], out_dtype)
    p[keep] = False
    return out + k
