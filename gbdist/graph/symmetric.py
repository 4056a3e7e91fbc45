"""``gr.mxv(A, u, sr, symmetric=...)`` (issue 30): the product of a matrix the user declares
symmetric, on the kernel :mod:`gbdist.compiler.spmv_choice` picks from the matrix's row
statistics — the symmetric kernel reading the upper triangle once, or the full CSR.

``symmetric="upper"``: A holds the upper triangle (diagonal included) of a symmetric
matrix S; the product is S u. ``symmetric=True``: A is the full symmetric matrix (checked
once per version: an InputError if it is not). The forms each needs (the checks, the row
statistics, S built from U, U cut from A) are cached on A per version. The choice is on
the result as ``result.spmv_choice`` and in ``gr.explain(result)``.
"""
from __future__ import annotations

import numpy as np

from ..compiler import spmv_choice as rule
from ..errors import InputError
from . import memo
from . import sparse as S
from .dispatch import get_kernels
from .objects import Matrix, Vector
from .results import _device, dense_result

def _parts(A):
    keys = S.csr_keys(A._csr, A.xp)
    n = A.ncols
    rows = keys // n if n else keys
    return keys, rows, keys - rows * n


def _check(A, symmetric):
    if not (symmetric is True or (isinstance(symmetric, str) and symmetric == "upper")):
        raise InputError("mxv: symmetric must be None, 'upper' or True", got=repr(symmetric))
    if A.nrows != A.ncols:
        raise InputError("mxv: a symmetric matrix is square", got=str(A.shape))

    def upper_ok():
        _, r, c = _parts(A)
        return not bool((c < r).any())

    def symmetric_ok():
        keys, r, c = _parts(A)
        t = c * A.ncols + r
        order = A.xp.argsort(t)
        return bool(A.xp.array_equal(t[order], keys)) and bool(
            A.xp.array_equal(A._csr.data[order], A._csr.data))

    if symmetric == "upper" and not A.prepared("sym-upper-ok", upper_ok):
        raise InputError("mxv: symmetric='upper' needs the upper triangle (no entry below the diagonal)",
                         hint="pass gr.select(A, 'triu') or symmetric=True for the full matrix")
    if symmetric is True and not A.prepared("sym-ok", symmetric_ok):
        raise InputError("mxv: symmetric=True, but the matrix differs from its transpose",
                         hint="leave symmetric=None")


def _full_of_upper(A) -> Matrix:
    """S = U + Uᵀ with the diagonal once (stored zeros kept)."""
    def build():
        keys, r, c = _parts(A)
        off = r != c
        xp = A.xp
        allk = xp.concatenate([keys, c[off] * A.ncols + r[off]])
        vals = xp.concatenate([A._csr.data, A._csr.data[off]])
        order = xp.argsort(allk)
        csr = S.keys_csr(allk[order], vals[order], A.shape, A._on_device)
        return Matrix(fill=A.fill, _csr=csr)
    return A.prepared("sym-full", build)


def _upper_of(A) -> Matrix:
    def build():
        keys, r, c = _parts(A)
        keep = c >= r
        return Matrix(fill=A.fill, _csr=S.keys_csr(keys[keep], A._csr.data[keep], A.shape, A._on_device))
    return A.prepared("sym-upper", build)


def _stats(A, symmetric) -> dict:
    def build():
        xp = A.xp
        deg = xp.diff(A._csr.indptr).astype(np.int64)
        if symmetric == "upper":
            _, r, c = _parts(A)
            deg = deg + xp.bincount(c[r != c], minlength=A.nrows)[:A.nrows]
        return rule.row_statistics(deg, xp)
    return A.prepared(f"sym-stats-{symmetric}", build)


def mxv(A, u, sr, symmetric, *, full_product, mask, accum, out, replace, dtype, backend, compensated):
    """The product (module docstring); ``full_product``: ``gr.mxv`` for the full-CSR path."""
    _check(A, symmetric)
    on_device = _device(A, u, mask and mask.source, out)
    choice = rule.choose(_stats(A, symmetric), on_device=on_device and backend in ("auto", "cuda"),
                         masked=mask is not None, u_full=u.nvals == u.size,
                         any_monoid=sr.add.op.name == "any")
    if choice.kernel == "full":
        M = A if symmetric is True else _full_of_upper(A)
        res = full_product(M, u, sr, mask=mask, accum=accum, out=out, replace=replace, dtype=dtype,
                           backend=backend, compensated=compensated)
    else:
        U = A if symmetric == "upper" else _upper_of(A)
        dec, dt = memo.product("mxv", sr, A, u, dtype)
        K = get_kernels(backend, True)
        x = u.dense_values()[0]
        csum = bool(compensated) and sr.add.invertible and dt.kind == "f"
        y, present = K.spmv_symmetric(U._csr, x, None, sr, out_dtype=dt, compensated=csum)
        res = dense_result(y, present, dt, dec, mask=None, accum=accum, out=out, replace=replace,
                           on_device=True)
    res.spmv_choice = choice
    return res
