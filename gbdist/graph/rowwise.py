"""``ewise_add`` and ``ewise_mult`` of two matrices with no mask, accumulator or ``out``,
row by row from their CSR (the planner's choice in :func:`.operations._ewise` for that
case; every other case merges sorted ``i·n + j`` keys), and ``apply`` on a matrix in that
case (:func:`with_pattern`: C's pattern is A's).

Two canonical CSR rows are two sorted column lists: the kernel set merges them
(``union_merge`` / ``intersect_merge``: one pass over both rows on the compiled CPU set, no
keys to build, no search, no division back into rows and columns), and ``op(a, b)`` is
evaluated once, vectorised, over the pairs both store, as the key path evaluates it
(:func:`gbdist.backends.graph_reference.binary` in the domain, then cast to the result
type), so the two paths give the same entries and the same values. Where the
intersection's pattern is one operand's (a mask-like operand, or two matrices of one
pattern: jaccard's and cosine's degree products), that operand's values are used in place
(no gather); a union where one pattern lies within the other is that intersection with
the larger pattern (:func:`_nested_union`).
"""
from __future__ import annotations

from ..backends.graph_reference import binary, cast
from . import sparse as S
from .objects import Matrix


def ewise_rows(K, A, B, op, union: bool, dt, rt, decision, on_device: bool) -> Matrix:
    """C = A ∪ B (``union``) or A ∩ B on the kernel set ``K``, ``op(a, b)`` computed in
    ``dt`` where both store an entry, every value in ``rt``; a lone entry of the union is
    its own value cast to ``rt`` (GraphBLAS's eWiseAdd). ``decision``: the fill rule's,
    kept on C."""
    xp = A.xp
    m, n = A.shape
    va, vb = A._csr.data, B._csr.data
    it = S.index_dtype(m, n, A.nvals + B.nvals)
    if union:
        nested = _nested_union(K, A, B, op, dt, rt, it, decision, on_device)
        if nested is not None:
            return nested
        xa, xb = cast(va, rt, xp), cast(vb, rt, xp)
        indptr, indices, vals, at, a_pos, b_pos = K.union_merge(A._csr, B._csr, xa, xb,
                                                                itype=it)
        if int(at.shape[0]):
            vals[at] = cast(binary(op, va[a_pos], vb[b_pos], dt, xp).reshape(-1), rt, xp)
        return _wrap(indptr, indices, vals, A.shape, decision, on_device)
    indptr, indices, a_pos, b_pos = K.intersect_merge(A._csr, B._csr, itype=it)
    a = va if a_pos is None else va[a_pos]
    b = vb if b_pos is None else vb[b_pos]
    vals = cast(binary(op, a, b, dt, xp).reshape(-1), rt, xp)
    if xp.may_share_memory(vals, va) or xp.may_share_memory(vals, vb):
        vals = vals.copy()  # never an operand's own value array (an op like ``first``)
    return _wrap(indptr, indices, vals, A.shape, decision, on_device)


def _nested_union(K, A, B, op, dt, rt, it, decision, on_device):
    """The union when one operand's pattern lies within the other's (no row of it is
    longer, and the intersection is all of it: filling a pattern with zeros, two matrices
    of one pattern), else None: C is the larger operand's pattern with its values, and
    ``op(a, b)`` where the other stores an entry too, from the intersection's positions (no
    union merge, no three position arrays of every shared entry)."""
    xp = A.xp
    la, lb = xp.diff(A._csr.indptr), xp.diff(B._csr.indptr)
    a_in, b_in = bool((la <= lb).all()), bool((lb <= la).all())
    if not (a_in or b_in):
        return None
    _, _, a_pos, b_pos = K.intersect_merge(A._csr, B._csr, itype=it)
    va, vb = A._csr.data, B._csr.data
    if a_in and a_pos is None:  # A within B: C has B's pattern
        big, vals = B._csr, cast(vb, rt, xp)
        at = slice(None) if b_pos is None else b_pos
        both = binary(op, va, vb[at], dt, xp)
    elif b_in and b_pos is None:  # B within A
        big, vals = A._csr, cast(va, rt, xp)
        at = slice(None) if a_pos is None else a_pos
        both = binary(op, va[at], vb, dt, xp)
    else:
        return None
    if xp.may_share_memory(vals, va) or xp.may_share_memory(vals, vb):
        vals = vals.copy()
    vals[at] = cast(both.reshape(-1), rt, xp)
    return _wrap(big.indptr.astype(it, copy=True), big.indices.astype(it, copy=True), vals,
                 A.shape, decision, on_device)


def with_pattern(A, vals, dtype, decision) -> Matrix:
    """A matrix of A's pattern with ``vals`` (one per stored entry, in order) cast to
    ``dtype``: ``apply`` with no mask or ``out`` (A's row pointers and columns copied, no
    keys built and split back)."""
    xp, c = A.xp, A._csr
    vals = cast(vals, dtype, xp)
    if xp.may_share_memory(vals, c.data):
        vals = vals.copy()
    return _wrap(c.indptr.copy(), c.indices.copy(), vals, A.shape, decision, A.on_device)


def _wrap(indptr, indices, vals, shape, decision, on_device) -> Matrix:
    C = Matrix._wrap(S.make_csr(vals, indices, indptr, shape, on_device),
                     decision.result_fill, on_device)
    C.decision = decision
    return C
