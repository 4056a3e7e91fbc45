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

**Half the product when it is symmetric** (:func:`half_product`): C⟨A⟩ = A ⊕.⊗ A with A
symmetric (pattern, and values unless ⊗ reads none) and a commutative ⊗ is symmetric,
C(j, i) = ⊕_k A(j, k) ⊗ A(k, i) = ⊕_k A(k, j) ⊗ A(i, k) = C(i, j), the terms ⊕-ed in the
same increasing k on both sides, so equal bit for bit. Jaccard's and cosine's shared
neighbours, ktruss's support and the ``A·A⟨A⟩`` of a user on an undirected graph are such
products. The kernels then compute only the mask's entries with j ≥ i (``off``: reading
each row of B from its first column ≥ the row's first such mask column, by bisection: about
half the ⊗ terms), and :func:`_mirror` fills each entry below the diagonal from its mirror:
in the block's own buffer when row j is in the block, else found by bisection in row j of
the result already compacted. Rows are processed in increasing order, so every mirror is
computed before it is read.
"""
from __future__ import annotations

import bisect

import numpy as np
from numba import njit

from .graph_helpers import gb_lower_bound
from .graph_prep import _prepared

# Mask entries a block holds (its buffer: this many values of the work type and flags).
BLOCK = 1 << 19
# ⊗ terms per mask entry from which a product is checked for symmetry (the check, kept per
# matrix, costs about one bisection per entry; halving saves half the terms). A symmetry the
# caller already knows (``gr.Matrix.known_symmetry``, passed as ``known``) is not checked.
HALF_MIN_TERMS = 8


def half_product(mod, A, B, mask, work, out_dtype, terms: int, ranges, run,
                 known=None) -> bool:
    """Whether C⟨mask⟩ = A ⊕.⊗ B is computed as its upper half and mirrored: B is A (the
    same CSR), the mask is A's pattern, A is square and symmetric (its values too when ⊗
    reads them), ⊗ commutes by its formula's form (``mod.MUL_COMMUTES``), the product's
    domain is its output type (the mirror copies output values back into the domain's
    buffer), and the product has at least ``HALF_MIN_TERMS`` ⊗ terms per mask entry.
    ``ranges(indptr, m)``: the symmetry check's row ranges. ``known``: what the caller
    already knows of A's symmetry (``gr.Matrix.known_symmetry``: ``"values"``,
    ``"pattern"``, False, None): the check runs only where it does not answer."""
    ap, ai, ax = A.indptr, A.indices, A.data
    mp, mi = mask.indptr, mask.indices
    m = ap.shape[0] - 1
    if (not mod.MUL_COMMUTES or np.dtype(work) != np.dtype(out_dtype) or A.shape[0] != A.shape[1]
            or terms < HALF_MIN_TERMS * max(int(mi.shape[0]), 1)):
        return False
    if not (B is A or (B.indptr is ap and B.indices is ai and B.data is ax)):
        return False
    if not ((mp is ap or np.array_equal(mp, ap)) and (mi is ai or np.array_equal(mi, ai))):
        return False
    reads = bool(mod.MUL_READS)
    if known is not None and (known is False or known == "values" or not reads):
        return known is not False  # known: no check ("pattern" answers when ⊗ reads none)
    from . import graph_symmetry
    return _prepared(A, ("symmetric", reads), lambda: graph_symmetry.symmetric(
        ap, ai, ranges(ap, m), run, ax if reads else None))


@njit(cache=True, nogil=True)
def _mirror(mp, mi, cp, ci, cx, row0, lo, buf, pres, r0, r1):
    """Rows row0 + [r0, r1) of a half product: each mask entry (i, j) with j < i takes
    C(j, i): from ``buf``/``pres`` (positions from ``lo``) when row j is in the block (j ≥
    row0), else from the compacted result (cp, ci, cx) by bisection in its row j."""
    for r in range(r0, r1):
        i = row0 + r
        for q in range(mp[i], mp[i + 1]):
            j = mi[q]
            if j >= i:
                break
            if j >= row0:
                a = gb_lower_bound(mi, mp[j], mp[j + 1], i)
                if a < mp[j + 1] and mi[a] == i and pres[a - lo]:
                    buf[q - lo] = buf[a - lo]
                    pres[q - lo] = True
            else:
                a = gb_lower_bound(ci, cp[j], cp[j + 1], i)
                if a < cp[j + 1] and ci[a] == i:
                    buf[q - lo] = cx[a]
                    pres[q - lo] = True


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
                   cast, half=False):
    """(indptr, indices, values) of the product. ``kernel(*head, mp, mi, *extra, off, buf,
    pres, r0, r1)`` with ``head[0]`` A's row pointers; ``rw``: per-row work when several
    threads split a block (None: each block on the calling thread); ``ranges(work, rows,
    total)`` splits a block; ``cast(values, out_dtype)`` as the reference casts; ``half``:
    the upper half computed and mirrored (:func:`half_product` said yes)."""
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
    for r0, r1 in blocks(mp, m, BLOCK):  # the global read here: tests set a smaller BLOCK
        lo, hi = int(mp[r0]), int(mp[r1])
        if hi > lo:
            if hi - lo > buf.shape[0]:  # one row longer than a block
                buf, pres = np.empty(hi - lo, dtype=work), np.zeros(hi - lo, dtype=np.bool_)
            out = _block(kernel, head, extra, mp, mi, r0, r1, buf, pres, rw, run, ranges, cast,
                         cp, ci, cx, out, out_dtype, half)
        else:
            cp[r0 + 1:r1 + 1] = out
    del buf, pres
    ci.resize(out, refcheck=False)  # realloc in place: the reserved tail given back
    cx.resize(out, refcheck=False)
    return cp, ci, cx


def _block(kernel, head, extra, mp, mi, r0, r1, buf, pres, rw, run, ranges, cast, cp, ci, cx,
           out, out_dtype, half) -> int:
    """Rows [r0, r1) into ``buf``/``pres`` (flags all False on entry and on return), their
    present entries appended to (ci, cx) at ``out``, their row pointers into ``cp``; the
    new length returned."""
    lo, hi = int(mp[r0]), int(mp[r1])
    mpb = mp[r0:r1 + 1] - lo
    b, p = buf[:hi - lo], pres[:hi - lo]
    rows = r1 - r0
    rr = [(0, rows)] if rw is None else ranges(rw[r0:r1], rows, float(rw[r0:r1].sum()))
    run(kernel, (head[0][r0:r1 + 1],) + tuple(head[1:]) + (mpb, mi[lo:hi]) + tuple(extra)
        + (np.int64(r0 if half else -1), b, p), rr)
    if half:  # the entries below the diagonal from their mirrors (all computed by now)
        run(_mirror, (mp, mi, cp, ci, cx, np.int64(r0), np.int64(lo), b, p), rr)
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
