"""Matrices stored by diagonals on the device (issue 30): the form, and the SpGEMM of two
matrices in it (``kernels/graph_symmetric.cuh``: ``gb_sym_dia_build``, ``gb_spgemm_dia``).

A stencil's or a band's CSR spends most of its bytes on columns and row pointers that its
diagonals say once. Stored by diagonals, ``dia[k * m + i]`` is M(i, i + offs[k]) as its bits,
or a signalling NaN's bits where M has no entry (:data:`DIA_HOLE`), so every
kernel reads shifted contiguous runs: coalesced, no searches. :func:`form` builds it once per
matrix (cached on the CSR object, keyed by its buffers; its arrays must not be written in
place after) where it applies: float values, rows sorted, at most :data:`MAX_OFFSETS`
diagonals at least 1 / :data:`DIA_FILL` filled, no stored value with the hole's bits, room on
the device.

The SpGEMM (:func:`spgemm`, the planner rule :func:`applies`): C's diagonals are the sums of
A's and B's offsets, C(i, i + c) = ⊕ over a + b = c of A(i, i + a) ⊗ B(i + a, i + c), summed in
ascending a. One pass counts each row's entries, one writes them in column order (a warp a
row, a lane a result diagonal): the products of a 7-point stencil (7 × 7 pairs, 25 result
diagonals) cost a few loads a pair from the caches and the result's bytes.
"""
from __future__ import annotations

import numpy as np

from ..base import MISS, keep, recall
from . import graph_codegen as gc

MAX_OFFSETS = 128
"""Most distinct diagonals of a matrix stored by diagonals."""
DIA_FILL = 2.0
"""Most slots of a matrix's diagonals (m a diagonal) per stored entry for the form: past this
the holes cost more bytes than the CSR's columns save."""
DIA_HOLE = {np.dtype(np.float64): np.uint64(0x7ff4d1a90e5f0001),
            np.dtype(np.float32): np.uint32(0x7fa1d1a9)}
"""The bits of an absent slot (``gb_dia_hole``): a signalling NaN; a matrix storing those
bits has no form."""
SPGEMM = True
"""The SpGEMM of two matrices by diagonals where :func:`applies` (else the binned SpGEMM)."""
SPGEMM_MIN_ROWS = 1 << 16
"""Fewest rows of A for the diagonals' SpGEMM to be considered: below, the first product of
each matrix would pay the form's check (reads) where the binned product is host-bound."""
MAX_RESULT_DIAGONALS = 1024
MAX_PAIRS = 16384

_PAIRS: dict = {}  # (A's offsets, B's offsets, device) -> the pairs' device arrays


def offsets(Mp, Mj, lowest=None):
    """The distinct column - row of a CSR's entries (device int64, ascending) when there are
    at most :data:`MAX_OFFSETS`, none below ``lowest`` (None: any), and every row's columns
    strictly ascend (the build's walk); else None. The longest row first (one read: a row
    longer than :data:`MAX_OFFSETS` cannot lie on so few diagonals, so a power law's hubs
    end it there), then two reads more."""
    import cupy
    if Mj.size == 0 or int(cupy.diff(Mp).max()) > MAX_OFFSETS:
        return None
    # each entry's row: the last row starting at or before it (empty rows start there too)
    rows = cupy.searchsorted(Mp, cupy.arange(Mj.size, dtype=cupy.int64), side="right") - 1
    d = Mj.astype(cupy.int64) - rows
    lo, hi = (int(v) for v in cupy.stack([d.min(), d.max()]).get())
    if lowest is not None and lo < lowest:
        return None
    same_row = rows[1:] == rows[:-1]
    if bool(cupy.any(same_row & (d[1:] <= d[:-1]))):
        return None
    if hi - lo < 1 << 24:
        offs = cupy.flatnonzero(cupy.bincount(d - lo, minlength=hi - lo + 1)).astype(cupy.int64) + lo
    else:
        offs = cupy.unique(d)
    return offs if offs.size <= MAX_OFFSETS else None


def form(K, M, sr, out, *, lowest=None, offs=None):
    """``(offsets on the device, offsets on the host, the diagonals)`` of the CSR ``M``, or
    None where the form does not apply (module docstring); built on the first call and
    cached on ``M``. ``offs``: :func:`offsets` of M (with ``lowest``) where the caller has
    them already."""
    import cupy

    from .graph_arrays import _csr_parts
    key = (int(M.indptr.data.ptr), int(M.indices.data.ptr), int(M.data.data.ptr), int(M.indices.size),
           tuple(M.shape), lowest)  # M's own buffers (its parts below may be converted copies)
    hit = recall(M, "_gbdist_dia", key)
    if hit is not MISS:
        return hit
    Mp, Mj, Mx = _csr_parts(M, "M")
    got = None
    m = int(M.shape[0])
    vt = np.dtype(Mx.dtype)
    if not (vt in DIA_HOLE and m and Mj.size):
        offs = None
    elif offs is None:
        offs = offsets(Mp, Mj, lowest)
    if (offs is not None and offs.size * m <= DIA_FILL * int(Mj.size)
            and not bool((Mx.view(DIA_HOLE[vt].dtype) == DIA_HOLE[vt]).any())):
        try:
            dia = cupy.full(int(offs.size) * m, DIA_HOLE[vt], dtype=DIA_HOLE[vt].dtype)
        except cupy.cuda.memory.OutOfMemoryError:  # no room: the CSR kernels run
            dia = None
        if dia is not None:
            name = gc.sym_dia_names(gc.index_ctype(Mp.dtype), gc.ctype(vt), "double", False)[0]
            fn = K._kernels(sr.mul, sr.add, out, (name,))[name]
            fn((min(4096, -(-m // 256)),), (256,), (np.int64(m), Mp, Mj, Mx, offs, dia))
            got = (offs, offs.get(), dia)
    return keep(M, "_gbdist_dia", key, got)


def pair_plan(a, b):
    """(result offsets int64, each one's first pair int32 (one more: the end), the pairs' A
    and B diagonals int32) for A's offsets ``a`` and B's ``b`` (host arrays, ascending): the
    pairs grouped by a + b ascending, each group in ascending a. None past
    :data:`MAX_PAIRS` or :data:`MAX_RESULT_DIAGONALS`."""
    if a.size * b.size > MAX_PAIRS:
        return None
    ka, kb = np.meshgrid(np.arange(a.size), np.arange(b.size), indexing="ij")
    ka, kb = ka.ravel(), kb.ravel()
    c = a[ka] + b[kb]
    order = np.lexsort((a[ka], c))  # by result offset, then ascending a: a fixed order
    c, ka, kb = c[order], ka[order], kb[order]
    cofs, first = np.unique(c, return_index=True)
    if cofs.size > MAX_RESULT_DIAGONALS:
        return None
    return (cofs.astype(np.int64), np.append(first, c.size).astype(np.int32), ka.astype(np.int32),
            kb.astype(np.int32))


def _pairs(fa, fb):
    """:func:`pair_plan` of two forms on the device, with the number of result diagonals;
    cached by the two offset lists (the plan depends on nothing else: no form is held)."""
    import cupy
    key = (fa[1].tobytes(), fb[1].tobytes(), cupy.cuda.Device().id)
    if key not in _PAIRS:
        plan = pair_plan(fa[1], fb[1])
        if len(_PAIRS) > 64:
            _PAIRS.clear()
        _PAIRS[key] = None if plan is None else tuple(cupy.asarray(v) for v in plan) + (int(plan[0].size),)
    return _PAIRS[key]


def applies(A, B, mask) -> bool:
    """The planner rule's cheap part (no read): unmasked, :data:`SPGEMM` on, A tall enough
    (:data:`SPGEMM_MIN_ROWS`), float values in both. :func:`spgemm` then needs both forms."""
    return (SPGEMM and mask is None and int(A.shape[0]) >= SPGEMM_MIN_ROWS
            and np.dtype(A.dtype).kind == "f" and np.dtype(B.dtype).kind == "f")


def spgemm(K, A, B, sr, out, work):
    """C = A ⊕.⊗ B by diagonals (module docstring) as (data in ``work``, int32 columns, int64
    row pointers), or None where A or B has no form or the pairs are too many."""
    import cupy

    from .graph_bins import inclusive_sum
    fa = form(K, A, sr, out)
    fb = form(K, B, sr, out) if fa is not None else None
    if fb is None:
        return None
    pairs = _pairs(fa, fb)
    if pairs is None:
        return None
    cofs, pstart, pa, pb, KC = pairs
    m, kd, n = int(A.shape[0]), int(B.shape[0]), int(B.shape[1])
    names = gc.spgemm_dia_names(gc.ctype(np.dtype(A.dtype)), gc.ctype(np.dtype(B.dtype)))
    kern = K._kernels(sr.mul, sr.add, out, names)
    grid = (min(1 << 20, -(-m // 8)),)  # a warp a row, eight a block
    counts = cupy.empty(m, dtype=cupy.int64)
    Cp = cupy.zeros(m + 1, dtype=cupy.int64)
    head = (np.int64(m), np.int64(kd), np.int64(n), fa[2], fa[0], fb[2], fb[0], cofs, pstart, pa, pb,
            np.int32(KC))
    kern[names[0]](grid, (256,), head + (counts, Cp, _none(cupy.int32), _none(work)))
    inclusive_sum(counts, Cp[1:])
    nnz = int(Cp[-1].get())
    Cj = cupy.empty(nnz, dtype=cupy.int32)
    Cx = cupy.empty(nnz, dtype=work)
    if nnz:
        kern[names[1]](grid, (256,), head + (counts, Cp, Cj, Cx))
    return Cx, Cj, Cp


def _none(dtype):
    import cupy
    return cupy.empty(1, dtype=dtype)
