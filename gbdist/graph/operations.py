"""The GraphBLAS operations: products, element-wise, apply, select, reductions.

Every operation takes ``mask=None, accum=None, out=None, replace=False, dtype=None,
backend="auto"`` and follows the GraphBLAS C API: ``T = op(...)`` (computed only
inside the mask when one is given), then ``C<mask, replace> = accum(C, T)``
(:func:`.masks.write_back`). Products run on a kernel set
(:mod:`.dispatch`), and so do ``ewise_add`` / ``ewise_mult`` of two matrices with no mask or
``out`` (:mod:`.rowwise`); the other operations are plain sorted-key array work on the
operands' ``xp`` (NumPy or CuPy). The fill rule (:mod:`gbdist.compiler.graph`) decides,
from the algebra, whether fill-0 operands may be computed structurally; its decision is
on every result as ``result.decision``. Extract/assign live in :mod:`.indexing`.
"""
from __future__ import annotations

import numpy as np

from ..backends.graph_reference import binary, cast, fold_segments, identity_value, unary
from ..compiler import graph as rule
from ..errors import InputError
from . import dispatch
from . import memo
from .dispatch import get_kernels
from .masks import Mask, as_mask, space_of
from .objects import Matrix, Vector, as_matrix, as_vector, square_symmetry
from .results import _check_out, _device, _pair, _vals, dense_result, finish  # noqa: F401
from . import sparse as S
from . import types as T
from . import indexunary as IU
from .rowwise import ewise_rows, with_pattern

PUSH_FRACTION = 1 / 16
"""mxv/vxm walk the stored rows of the vector's entries (push) when the vector stores
fewer than this fraction of its entries; else every row pulls from a dense vector."""
PUSH_EDGE_SHARE = 1 / 2
"""On the host, an unmasked product with a vector that is not full also pushes when the
rows it walks hold under this share of the matrix's entries: a pull reads every stored
entry (and tests x's presence for each), a push only the vector's rows (min_plus at 11M
entries on 2 shared cores, benchmarks/graph_cpu_kernels.py, retired: docs/benchmarks.md: push/pull 0.25x, 0.65x,
0.76x, 1.03x for vectors of 2%, 10%, 40%, 70% of the vertices). A masked pull skips the
masked rows, so masked products keep the vertex share alone."""


def _push_by_edges(A, u, name, mask, on_device) -> bool:
    if mask is not None or on_device or u.nvals == u.size:
        return False
    if name == "mxv" and not A.has_transpose():  # pushing mxv needs Aᵀ: not built for this
        return False
    M = A if name == "vxm" else A.T
    deg = M.prepared("row-degrees", lambda: np.diff(M._csr.indptr))
    return float(deg[u._idx].sum()) < PUSH_EDGE_SHARE * M.nvals


def _mirror(x):
    """The device copy of a host operand, kept on the object as a prepared form (built once,
    rebuilt after the object changes): products that move to the GPU under
    ``backend="auto"`` move each operand once, not once a call."""
    if x is None:
        return None
    if isinstance(x, Mask):
        return Mask(_mirror(x.source), x.structural, x.complement)
    return x.prepared("device-mirror", x.to_device)


def _moved_result(res, dec):
    host = res.to_host()
    host.decision = dec
    return host


# --- products --------------------------------------------------------------------------


def mxm(A, B, sr, *, mask=None, accum=None, out=None, replace=False, dtype=None, backend="auto"):
    """``C(i,j) = ⊕_k mul(A(i,k), B(k,j))`` over stored entries; a sparse Matrix."""
    A, B, sr = as_matrix(A), as_matrix(B), T.semiring_arg(sr, "mxm")
    if IU.is_positional(sr.mul):  # the algebra's rewrite to a value ⊗ (.indexunary)
        return IU.product("mxm", mxm, A, B, sr, dict(mask=mask, accum=accum, out=out,
                          replace=replace, dtype=dtype, backend=backend))
    if A.ncols != B.nrows:
        raise InputError("mxm: inner dimensions differ", expected=f"B with {A.ncols} rows",
                         got=f"A {A.shape}, B {B.shape}")
    shape = (A.nrows, B.ncols)
    mask = as_mask(mask, shape, "mxm")
    out = _check_out(out, Matrix, shape, "mxm")
    dec, dt = memo.product("mxm", sr, A, B, dtype)
    on_device = _device(A, B, mask and mask.source, out)
    if backend == "auto" and not on_device and out is None and A.nvals >= 1000:
        if mask is not None and not mask.complement:
            kind, work = "mxm-masked", A.nvals + B.nvals
        else:  # the products, counted only where a device could take them
            kind = "mxm"

            def work():
                degB = B.prepared("row-degrees", lambda: np.diff(B._csr.indptr))
                return int(degB[A._csr.indices].sum())
        if dispatch.device_pays(kind, work):
            return _moved_result(mxm(_mirror(A), _mirror(B), sr, mask=_mirror(mask), accum=accum,
                                     dtype=dt, backend="cuda"), dec)
    K = get_kernels(backend, on_device, work=A.nvals + B.nvals)
    C = K.spgemm(A._csr, B._csr, sr, mask=None if mask is None else mask.pattern_csr(),
                 complement=bool(mask and mask.complement), out_dtype=dt,
                 symmetric=A.known_symmetry())  # a symmetric C<A> = A.A: its check skipped
    if out is None:  # the kernel applied the mask already: C is the result (accum has no C)
        if accum is not None:
            T.binary_arg(accum, "accum")
        res = Matrix(fill=dec.result_fill, _csr=C)
        res.decision = dec
        square_symmetry(res, A, B, sr, mask, dt)
        return res
    return finish(Matrix, S.csr_keys(C, A.xp), C.data, shape, dt, dec.result_fill, dec,
                  mask=mask, accum=accum, out=out, replace=replace, on_device=on_device)


def mxv(A, u, sr, *, mask=None, accum=None, out=None, replace=False, dtype=None, backend="auto",
        compensated=False, symmetric=None):
    """``w(i) = ⊕_k mul(A(i,k), u(k))`` over stored entries; a sparse Vector.
    ``compensated=True``: with ⊕ = plus and a floating-point result, each entry's terms are
    summed with a compensated (Neumaier) sum (about one rounding of error, whatever the
    number of terms; the pull kernel always); no effect for other monoids or integers.
    ``symmetric="upper"`` (A holds the upper triangle of a symmetric matrix) or ``True``
    (A is symmetric): the kernel is chosen from A's rows (:mod:`.symmetric`)."""
    A, u, sr = as_matrix(A), as_vector(u), T.semiring_arg(sr, "mxv")
    if symmetric is not None and not IU.is_positional(sr.mul) and A.ncols == u.size:
        from . import symmetric as SY
        return SY.mxv(A, u, sr, symmetric, full_product=mxv, mask=as_mask(mask, (A.nrows,), "mxv"),
                      accum=accum, out=out, replace=replace, dtype=dtype, backend=backend,
                      compensated=compensated)
    if IU.is_positional(sr.mul):
        return IU.product("mxv", mxv, A, u, sr, dict(mask=mask, accum=accum, out=out,
                          replace=replace, dtype=dtype, backend=backend))
    if A.ncols != u.size:
        raise InputError("mxv: the vector's size differs from the matrix's columns",
                         expected=f"size {A.ncols}", got=f"A {A.shape}, u size {u.size}")
    return _matvec("mxv", A, u, sr, pull_matrix=A, push_matrix=lambda: A.T, flip_for_push=True,
                   mask=mask, accum=accum, out=out, replace=replace, dtype=dtype, backend=backend,
                   compensated=compensated)


def vxm(u, A, sr, *, mask=None, accum=None, out=None, replace=False, dtype=None, backend="auto",
        compensated=False):
    """``w(j) = ⊕_k mul(u(k), A(k,j))`` over stored entries; a sparse Vector (``compensated``
    as for :func:`mxv`)."""
    u, A, sr = as_vector(u), as_matrix(A), T.semiring_arg(sr, "vxm")
    if IU.is_positional(sr.mul):
        return IU.product("vxm", vxm, u, A, sr, dict(mask=mask, accum=accum, out=out,
                          replace=replace, dtype=dtype, backend=backend))
    if A.nrows != u.size:
        raise InputError("vxm: the vector's size differs from the matrix's rows",
                         expected=f"size {A.nrows}", got=f"u size {u.size}, A {A.shape}")
    return _matvec("vxm", A, u, sr, pull_matrix=None, push_matrix=lambda: A, flip_for_push=False,
                   mask=mask, accum=accum, out=out, replace=replace, dtype=dtype, backend=backend,
                   compensated=compensated)


def _matvec(name, A, u, sr, *, pull_matrix, push_matrix, flip_for_push, mask, accum, out,
            replace, dtype, backend, compensated=False):
    size = A.nrows if name == "mxv" else A.ncols
    mask = as_mask(mask, (size,), name)
    out = _check_out(out, Vector, (size,), name)
    dec, dt = memo.product(name, sr, A, u, dtype)
    on_device = _device(A, u, mask and mask.source, out)
    if (backend == "auto" and not on_device and out is None
            and dispatch.device_pays("mxv", A.nvals)):
        fn = mxv if name == "mxv" else vxm
        args = (_mirror(A), _mirror(u)) if name == "mxv" else (_mirror(u), _mirror(A))
        return _moved_result(fn(*args, sr, mask=_mirror(mask), accum=accum, dtype=dt,
                                backend="cuda", compensated=compensated), dec)
    K = get_kernels(backend, on_device, work=A.nvals)
    kmask = None if mask is None else mask.dense()
    comp = bool(mask and mask.complement)
    csum = bool(compensated) and sr.add.invertible and dt.kind == "f"
    if not csum and (u.nvals < PUSH_FRACTION * u.size or _push_by_edges(A, u, name, mask, on_device)):
        M = push_matrix()
        s = T.flipped(sr) if flip_for_push else sr
        y, present = K.spmspv(M._csr, u._idx, u._vals, s, mask=kmask, complement=comp,
                              out_dtype=dt)
    else:
        M = pull_matrix if pull_matrix is not None else A.T
        s = sr if pull_matrix is not None else T.flipped(sr)
        x, xp_ = u.dense_values()  # no presence flags when u is full
        y, present = K.spmv(M._csr, x, xp_, s, mask=kmask, complement=comp, out_dtype=dt,
                            **({"compensated": True} if csum else {}))
    # the kernels computed T inside the mask only: without out= (C empty) the result is T
    return dense_result(y, present, dt, dec, mask=None if out is None else mask, accum=accum,
                        out=out, replace=replace, on_device=on_device)


# --- element-wise ----------------------------------------------------------------------


def ewise_add(A, B, op, *, mask=None, accum=None, out=None, replace=False, dtype=None,
              backend="auto"):
    """Union: ``op(a, b)`` where both are stored, the stored one elsewhere."""
    return _ewise("ewise_add", A, B, op, True, mask, accum, out, replace, dtype, backend)


def ewise_mult(A, B, op, *, mask=None, accum=None, out=None, replace=False, dtype=None,
               backend="auto"):
    """Intersection: ``op(a, b)`` where both are stored."""
    return _ewise("ewise_mult", A, B, op, False, mask, accum, out, replace, dtype, backend)


def _ewise(name, A, B, op, union, mask, accum, out, replace, dtype, backend="auto"):
    A, B, kind = _pair(A, B, name)
    op = T.binary_arg(op, name)
    mask = as_mask(mask, A.shape, name)
    out = _check_out(out, kind, A.shape, name)
    dec, dt, rt = memo.ewise(name, op, union, A, B, dtype)
    on_device = _device(A, B, mask and mask.source, out)
    if kind is Matrix and mask is None and out is None:  # two CSR merged row by row
        K = get_kernels(backend, on_device, work=A.nvals + B.nvals)
        return ewise_rows(K, A, B, op, union, dt, rt, dec, on_device)
    xp = A.xp
    ka, kb = A.keys(), B.keys()
    va, vb = _vals(A), _vals(B)
    space = space_of(A)
    if mask is not None:  # T outside the mask is never written: compute only inside it
        ka_keep, kb_keep = mask.allows(ka), mask.allows(kb)
        ka, va, kb, vb = ka[ka_keep], va[ka_keep], kb[kb_keep], vb[kb_keep]
    both = lambda a, b: binary(op, a, b, dt, xp)  # noqa: E731
    if union:  # full or dense operands merge through dense arrays (sparse.DENSE_SHARE)
        if rt != dt:  # op(a, b) computed in D, then cast to the result type; a lone entry
            both = lambda a, b: cast(binary(op, a, b, dt, xp), rt, xp)  # noqa: E731
            lone = (cast(va, rt, xp), cast(vb, rt, xp))  # cast to it directly (GraphBLAS)
        else:  # a lone entry too is T's value, in D
            va, vb = cast(va, dt, xp), cast(vb, dt, xp)
            lone = None
        keys, vals = S.merge_union(ka, va, kb, vb, both, rt, xp, space=space, lone=lone)
    else:
        keys, vals = S.merge_intersection(ka, va, kb, vb, both, xp, space=space)
    return finish(kind, keys, vals, A.shape, rt, dec.result_fill, dec, mask=mask, accum=accum,
                  out=out, replace=replace, on_device=on_device)


# --- apply / select --------------------------------------------------------------------


def apply(op, A, *, left=None, right=None, mask=None, accum=None, out=None, replace=False,
          dtype=None, backend="auto", thunk=None):
    """A unary op on the stored values; a binary op with a bound scalar: ``right=s`` gives
    ``op(a, s)``, ``left=s`` gives ``op(s, a)``; an index-unary op (``"rowindex"``,
    ``gr.index_unary(...)``) with ``thunk=`` (or ``right=``)."""
    if IU.is_index_unary(op):
        return IU.apply(op, A, right if thunk is None else thunk, mask=mask, accum=accum,
                        out=out, replace=replace, dtype=dtype)
    A = A if isinstance(A, (Matrix, Vector)) else (
        as_vector(A) if getattr(A, "ndim", 2) == 1 else as_matrix(A))
    kind = Matrix if isinstance(A, Matrix) else Vector
    mask = as_mask(mask, A.shape, "apply")
    out = _check_out(out, kind, A.shape, "apply")
    xp = A.xp
    if left is not None and right is not None:
        raise InputError("apply: give left= or right=, not both")
    if left is None and right is None:
        op = T.unary_arg(op, "apply")
        dt = memo.domain(op, A.dtype, dtype)
        fn = lambda v: unary(op, v, dt, xp)  # noqa: E731
    else:
        op = T.binary_arg(op, "apply")
        s = right if right is not None else left
        dt = memo.domain(op, A.dtype, dtype, scalar=s)
        if right is not None:
            fn = lambda v: binary(op, v, np.asarray(s), dt, xp)  # noqa: E731
        else:
            fn = lambda v: binary(op, np.asarray(s), v, dt, xp)  # noqa: E731
    at_zero = 0.0
    if A.effective_fill == 0:
        at_zero = float(fn(xp.zeros(1, dtype=A.dtype)).astype(np.float64)[0])
    dec = _apply_decision(at_zero, A)
    if kind is Matrix and mask is None and out is None:  # C has A's pattern: no keys
        # A's pattern, each value f(A's value): A's known symmetry holds
        return with_pattern(A, fn(_vals(A)), dt, dec)._inherit_symmetry(A, values=True)
    keys, vals = A.keys(), _vals(A)
    if mask is not None:
        keep = mask.allows(keys)
        keys, vals = keys[keep], vals[keep]
    return finish(kind, keys, fn(vals), A.shape, dt, dec.result_fill, dec, mask=mask, accum=accum,
                  out=out, replace=replace, on_device=A.on_device)


def _apply_decision(at_zero, A):
    if A.effective_fill == 0:  # depends on the value op(0): not memoised
        return rule.apply_value("apply", at_zero, (A.effective_fill,), (A.fill,))
    key = ("apply-decision", A.effective_fill, A.fill)
    return memo.memoised(key, (), lambda: rule.apply_value(
        "apply", at_zero, (A.effective_fill,), (A.fill,)))


SELECTORS = ("tril", "triu", "diag", "offdiag", "==", "!=", ">", ">=", "<", "<=", "nonzero")


def select(A, op, k=0, *, mask=None, accum=None, out=None, replace=False, dtype=None,
           backend="auto"):
    """The stored entries that pass ``op``: positional ``"tril"`` (j <= i + k), ``"triu"``
    (j >= i + k), ``"diag"`` (j == i + k), ``"offdiag"`` (j != i + k); value predicates
    ``"==" "!=" ">" ">=" "<" "<="`` against ``k``; ``"nonzero"`` (value != 0); any
    index-unary op (``"rowle"``, ``"colgt"``, ``"valuelt"`` …, ``gr.index_unary(...)``)
    with ``k`` its thunk."""
    if op not in SELECTORS:  # an index-unary op (or an unknown name: refused there)
        return IU.select(A, op, k, mask=mask, accum=accum, out=out, replace=replace, dtype=dtype)
    A = A if isinstance(A, (Matrix, Vector)) else (
        as_vector(A) if getattr(A, "ndim", 2) == 1 else as_matrix(A))
    kind = Matrix if isinstance(A, Matrix) else Vector
    if op not in SELECTORS:
        raise InputError("select: unknown selector", got=repr(op), expected=" ".join(SELECTORS))
    mask = as_mask(mask, A.shape, "select")
    out = _check_out(out, kind, A.shape, "select")
    dt = memo.domain(None, A.dtype, dtype)
    dec = rule.Decision("select", True, A.fill,
                        "select keeps or drops stored entries; an unstored entry stays unstored "
                        "(for fill=0 data a dropped entry becomes a 0)")
    if kind is Matrix and mask is None and out is None:
        res = _select_csr(A, op, k, dt, dec) if not A.on_device else finish(
            kind, *_selected(A, op, k), A.shape, dt, dec.result_fill, dec, mask=None,
            accum=accum, out=None, replace=replace, on_device=True)
        # (i, j) and (j, i) kept together: the diagonal or what is off it, or a value
        # predicate on values known symmetric
        if (op in ("diag", "offdiag") and k == 0) or (
                op not in ("tril", "triu", "diag", "offdiag") and A.known_symmetry() == "values"):
            res._inherit_symmetry(A, values=True, subset=True)
        return res
    keys, vals = _selected(A, op, k, kind)
    return finish(kind, keys, vals, A.shape, dt, dec.result_fill, dec, mask=mask,
                  accum=accum, out=out, replace=replace, on_device=A.on_device)


def _selected(A, op, k, kind=Matrix):
    """The keys and values of A's stored entries that pass ``op``."""
    keys, vals = A.keys(), _vals(A)
    if op in ("tril", "triu", "diag", "offdiag"):
        if kind is Vector:
            raise InputError(f"select: {op!r} is positional and needs a Matrix",
                             hint="value predicates work on vectors")
        n = max(A.ncols, 1)
        i, j = keys // n, keys % n
        d = j - i
        keep = {"tril": d <= k, "triu": d >= k, "diag": d == k, "offdiag": d != k}[op]
    elif op == "nonzero":
        keep = vals != 0
    else:
        keep = _value_keep(op, vals, k)
    return keys[keep], vals[keep]


def _value_keep(op, vals, k):
    t = k.item() if hasattr(k, "item") else k
    return {"==": vals == t, "!=": vals != t, ">": vals > t, ">=": vals >= t,
            "<": vals < t, "<=": vals <= t}[op]


def _select_csr(A, op, k, dt, dec):
    """``C = select(A)`` of a host matrix with no mask and no ``out``, straight from A's CSR:
    one flag per entry (positional ops compare each entry's column with its row, never through ``i * n + j`` keys and their division), the kept positions,
    and the new row pointers from the running count of kept flags read at A's row
    pointers. The entries keep A's order, so the result is canonical without a sort."""
    csr = A._csr
    ptr, cols = csr.indptr, csr.indices
    if op in ("tril", "triu", "diag", "offdiag"):
        rows = np.repeat(np.arange(A.nrows, dtype=cols.dtype), np.diff(ptr))
        if k == 0:  # the diagonal itself: compare the columns with the rows directly
            keep = {"tril": cols <= rows, "triu": cols >= rows, "diag": cols == rows,
                    "offdiag": cols != rows}[op]
        else:
            d = cols - rows
            keep = {"tril": d <= k, "triu": d >= k, "diag": d == k, "offdiag": d != k}[op]
    elif op == "nonzero":
        keep = csr.data != 0
    else:
        keep = _value_keep(op, csr.data, k)
    m, n = A.shape
    nnz = int(cols.shape[0])
    if bool(keep.all()):  # nothing dropped (offdiag of a graph without self loops): copies
        it = S.index_dtype(m, n, nnz)
        vals = cast(csr.data, dt, np)
        C = S.make_csr(vals.copy() if vals is csr.data else vals, cols.astype(it, copy=True),
                       ptr.astype(it, copy=True), A.shape, False)
    else:
        at = np.flatnonzero(keep)
        it = S.index_dtype(m, n, int(at.size))
        running = np.zeros(nnz + 1, dtype=S.index_dtype(nnz))
        np.cumsum(keep, out=running[1:])
        indptr = running[ptr].astype(it, copy=False)
        C = S.make_csr(cast(csr.data[at], dt, np), cols[at].astype(it, copy=False), indptr,
                       A.shape, False)
    res = Matrix._wrap(C, dec.result_fill, False)
    res.decision = dec
    return res


# --- reductions ------------------------------------------------------------------------


def _zeros_folded(monoid, counts, dt, xp):
    """``0 ⊕ 0 ⊕ ... (counts times)`` per entry, by doubling (the monoid is associative)."""
    acc = xp.full(counts.shape, identity_value(monoid, dt), dtype=dt)
    base = xp.zeros(counts.shape, dtype=dt)
    c = counts.astype(np.int64).copy()
    while bool((c > 0).any()):
        odd = (c & 1) == 1
        if bool(odd.any()):
            acc[odd] = binary(monoid.op, acc[odd], base[odd], dt, xp)
        c >>= 1
        if bool((c > 0).any()):
            base = binary(monoid.op, base, base, dt, xp)
    return acc


def _reduce_segments(name, A_csr, nzero_per_seg, monoid, dt, fill, K, on_device):
    vals, present = K.segment_reduce(A_csr.indptr, A_csr.data, monoid, out_dtype=dt)
    xp = S.xp_of(on_device)
    if fill == 0:
        zeros = _zeros_folded(monoid, nzero_per_seg, dt, xp)
        has_z = nzero_per_seg > 0
        both = present & has_z
        vals = xp.where(present, vals, zeros)
        if bool(both.any()):
            vals[both] = binary(monoid.op, vals[both], zeros[both], dt, xp)
        present = xp.ones(present.shape, dtype=bool)
    return vals, present


def reduce_rows(A, monoid, *, mask=None, accum=None, out=None, replace=False, dtype=None,
                backend="auto"):
    """``w(i) = ⊕_j A(i, j)`` over stored entries (a graph: present where the row has
    entries) or over every entry (fill=0 data: the zeros count)."""
    return _reduce_axis("reduce_rows", as_matrix(A), monoid, mask, accum, out, replace, dtype,
                        backend, transpose=False)


def reduce_cols(A, monoid, *, mask=None, accum=None, out=None, replace=False, dtype=None,
                backend="auto"):
    """``w(j) = ⊕_i A(i, j)``."""
    return _reduce_axis("reduce_cols", as_matrix(A), monoid, mask, accum, out, replace, dtype,
                        backend, transpose=True)


def _reduce_axis(name, A, monoid, mask, accum, out, replace, dtype, backend, transpose):
    monoid = T.monoid_arg(monoid, name)
    M = A.T if transpose else A
    size = M.nrows
    mask = as_mask(mask, (size,), name)
    out = _check_out(out, Vector, (size,), name)
    dec, dt = memo.reduction(name, monoid, A, dtype)
    K = get_kernels(backend, A.on_device, work=A.nvals)
    xp = A.xp
    nzero = None
    if A.fill == 0:
        nzero = M.ncols - xp.diff(M._csr.indptr).astype(np.int64)
    vals, present = _reduce_segments(name, M._csr, nzero, monoid, dt, A.fill, K, A.on_device)
    # the kernel's dense result in its smallest form (full where every row has an entry: no
    # keys made), as mxv's (:func:`.results.dense_result`)
    return dense_result(vals, present, dt, dec, mask=mask, accum=accum, out=out,
                        replace=replace, on_device=A.on_device)


def reduce_scalar(A, monoid, *, dtype=None, backend="auto"):
    """``⊕`` of every stored value (and of the zeros, for fill=0 data); the identity when
    nothing is stored. A NumPy scalar."""
    A = A if isinstance(A, (Matrix, Vector)) else (
        as_vector(A) if getattr(A, "ndim", 2) == 1 else as_matrix(A))
    monoid = T.monoid_arg(monoid, "reduce_scalar")
    dt = memo.domain(monoid.op, A.dtype, dtype, monoid=monoid)
    xp = A.xp
    vals = _vals(A)
    total = A.nrows * A.ncols if isinstance(A, Matrix) else A.size
    K = get_kernels(backend, A.on_device, work=vals.size)
    indptr = xp.asarray([0, vals.size], dtype=np.int64)
    nzero = None
    if A.fill == 0:
        nzero = xp.asarray([total - vals.size], dtype=np.int64)
    v, present = _reduce_segments("reduce_scalar", _Seg(indptr, vals), nzero, monoid, dt,
                                  0 if A.fill == 0 else rule.ABSENT, K, A.on_device)
    if not bool(present[0]):  # nothing stored: the identity (a kernel's value there is unset)
        return dt.type(identity_value(monoid, dt))
    return dt.type(v[0].item() if hasattr(v[0], "item") else v[0])


class _Seg:
    def __init__(self, indptr, data):
        self.indptr, self.data = indptr, data


def nvals(x) -> int:
    """Number of stored entries of a Matrix or Vector (or SciPy / NumPy input)."""
    if isinstance(x, (Matrix, Vector)):
        return x.nvals
    return (as_vector(x) if getattr(x, "ndim", 2) == 1 else as_matrix(x)).nvals


__all__ = ["mxm", "mxv", "vxm", "ewise_add", "ewise_mult", "apply", "select", "reduce_rows",
           "reduce_cols", "reduce_scalar", "nvals", "fold_segments"]
