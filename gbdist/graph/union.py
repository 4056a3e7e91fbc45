"""``ewise_union``: GraphBLAS's eWiseUnion, the union with fill values.

``C = ewise_union(A, B, op, left_default, right_default)``: ``op(a, b)`` where both are
stored, ``op(a, right_default)`` where only A is, ``op(left_default, b)`` where only B
is (python-graphblas's ``A.ewise_union(B, op, left_default, right_default)``). Unlike
``ewise_add`` every result value goes through ``op``. The domain is :mod:`.types`'s rule
over the operands and both defaults, each default typed as python-graphblas types it
(:func:`.types.literal_dtype`: a Python int is int64, a float float64).
"""
from __future__ import annotations

import numpy as np

from ..backends.graph_reference import binary, cast
from ..compiler import graph as rule
from . import memo
from . import sparse as S
from .objects import Matrix
from . import types as T
from .masks import as_mask
from .dispatch import get_kernels


def ewise_union(A, B, op, left_default, right_default, *, mask=None, accum=None, out=None,
                replace=False, dtype=None, backend="auto"):
    """The union of A and B's stored entries, every value ``op(a, b)`` with the missing
    side replaced by its default (``left_default`` for A, ``right_default`` for B)."""
    from .results import _check_out, _device, _pair, _vals, finish
    A, B, kind = _pair(A, B, "ewise_union")
    op = T.binary_arg(op, "ewise_union")
    for d in (left_default, right_default):
        if not np.isscalar(d) and np.ndim(d) != 0:
            raise T.TypeCheckError("ewise_union: the defaults are scalars", got=repr(d))
    mask = as_mask(mask, A.shape, "ewise_union")
    out = _check_out(out, kind, A.shape, "ewise_union")
    if 0 in (A.effective_fill, B.effective_fill):
        raise rule.GraphSemanticsError(
            "ewise_union of fill=0 data: an unstored entry of data is a 0, not a default",
            got=f"fills {A.fill!r}, {B.fill!r}",
            hint="gr.ewise_add (0 stands in for a missing side), or fill='absent' operands")
    dt, rt = memo.memoised(("ewise_union", id(op), A.dtype, B.dtype,
                            memo.scalar_key(left_default), memo.scalar_key(right_default),
                            memo._dtype_key(dtype)), (op,),
                           lambda: _types(op, A, B, left_default, right_default, dtype))
    on_device = _device(A, B, mask and mask.source, out)
    dec = rule.Decision("ewise_union", True, rule.ABSENT,
                        "every operand is a graph: the union of stored entries, a missing side "
                        "replaced by its default")
    if kind is Matrix and mask is None and out is None:
        K = get_kernels(backend, on_device, work=A.nvals + B.nvals)
        C = _union_rows(K, A, B, op, left_default, right_default, dt, on_device)
        if rt != dt:
            C = Matrix._wrap(S.make_csr(cast(C._csr.data, rt, A.xp), C._csr.indices,
                                        C._csr.indptr, A.shape, on_device), rule.ABSENT, on_device)
        C.decision = dec
        return C
    ka, kb, va, vb = A.keys(), B.keys(), _vals(A), _vals(B)
    if mask is not None:
        keep_a, keep_b = mask.allows(ka), mask.allows(kb)
        ka, va, kb, vb = ka[keep_a], va[keep_a], kb[keep_b], vb[keep_b]
    K = get_kernels(backend, on_device, work=ka.size + kb.size)
    space = A.size if kind is not Matrix else None  # vectors: a presence array when dense
    keys, vals = K.union_keys(ka, kb, va, vb, op, left_default, right_default, out_dtype=dt,
                              space=space if S.dense_space(space, ka.size, kb.size) else None)
    return finish(kind, keys, vals, A.shape, rt, dec.result_fill, dec, mask=mask,
                  accum=accum, out=out, replace=replace, on_device=on_device)


def _types(op, A, B, left_default, right_default, dtype):
    """(domain, result type): both defaults typed as python-graphblas types them."""
    operands = [A.dtype, B.dtype, T.literal_dtype(left_default), T.literal_dtype(right_default)]
    dt = T.domain(dtype, operands, [op])
    return dt, T.ewise_result(op, dt, operands, dtype)


def _union_rows(K, A, B, op, left_default, right_default, dt, on_device):
    """``C = A ∪ B`` of two matrices with no mask and no ``out``, row by row from their CSR:
    ``op(a, right_default)`` and ``op(left_default, b)`` over every stored value (vectorised,
    in order), then the kernel set's ``union_merge`` (two sorted rows merged at a time; no
    ``i·n + j`` keys, no search, no division back to rows) writes C's pattern and the values
    of the entries one side stores; ``op(a, b)`` is written where both do."""
    from .results import _vals
    xp = A.xp
    m, n = A.shape
    va, vb = _vals(A), _vals(B)
    xa = cast(binary(op, va, xp.asarray(right_default), dt, xp).reshape(-1), dt, xp)
    xb = cast(binary(op, xp.asarray(left_default), vb, dt, xp).reshape(-1), dt, xp)
    it = S.index_dtype(m, n, A.nvals + B.nvals)
    indptr, indices, vals, at, a_pos, b_pos = K.union_merge(A._csr, B._csr, xa, xb, itype=it)
    if int(at.shape[0]):
        vals[at] = binary(op, va[a_pos], vb[b_pos], dt, xp).reshape(-1)
    return Matrix._wrap(S.make_csr(vals, indices, indptr, A.shape, on_device), rule.ABSENT,
                        on_device)
