"""The in-order symmetric SpMV (issue 30, ``kernels/graph_symmetric.cuh``): y = A x for the
symmetric A whose upper triangle (diagonal included) is U, reading U once, unmasked and with
every x entry present (the general case stays ``gb_spmv_symmetric``).

* plain (:func:`spmv_rows`): rows in order, G lanes a row (from U's mean row length); each
  stored U(i,j) adds to the row's register sum and, off the diagonal, to y[j]. With
  ``tile`` a block's consecutive rows accumulate in shared memory (a band's near diagonals
  never reach global memory) and are flushed with one atomic a row.
* offsets (``method="offsets"``): where U lies on at most :data:`MAX_OFFSETS` diagonals
  (a stencil, a band) and its rows are sorted: no atomics, a thread per row in a fixed
  order (its own row, then U(j - d, j) for each diagonal d found in the row above).
* diagonals (``method="dia"``, the default where it applies, plain and reproducible): the
  offsets kernel's terms in its order on U stored by diagonals (:func:`diagonals`, built once
  per matrix and cached on it): float values on at most :data:`MAX_OFFSETS` diagonals
  filling at least 1 / :data:`DIA_FILL` of their slots. No row pointers, columns or
  searches: each load coalesced and independent, the same bits as the offsets kernel.
* reproducible (``compensated=True``, plus_times on floats): the diagonals or the offsets
  kernel with compensated (Neumaier) sums where they apply; else every term summed exactly
  in fixed point with integer atomics (associative: the same bits whatever order the
  atomics land in), then rounded once; see the kernel file for the bound.

Per matrix (cached on U, keyed by its buffers): which rows of A have entries (U's row or
column non-empty: the result's presence without a mask), the longest row of A (bounds the
fixed-point words), max|U| (as double bits on the device) and U's diagonals.
"""
from __future__ import annotations

import numpy as np

from ..base import MISS, keep, recall
from . import graph_codegen as gc
from . import graph_dia
from .graph_dia import form, offsets

TILE = True
"""Default of :func:`spmv_rows`'s ``tile``."""
PASSES = 4
"""Passes a block makes over its lanes' rows with ``tile``: 256 / G * PASSES rows a block."""

MAX_OFFSETS, DIA_FILL, DIA_HOLE = graph_dia.MAX_OFFSETS, graph_dia.DIA_FILL, graph_dia.DIA_HOLE
"""The form's limits (:mod:`.graph_dia`): most distinct diagonals of U for the offsets and
diagonals kernels, most slots a stored entry, the hole's bits."""
OFFSETS_WIN = 8
"""Most diagonals of U (the main one included) for which the reproducible product takes the
offsets kernel rather than fixed-point atomics, where U by diagonals does not apply (integer
values, holes past :data:`DIA_FILL`): measured on one H200, 2026-11-27, the offsets kernel
was 0.62-0.82x cuSPARSE on 7-point Poisson (4 diagonals) and 1.8-2.4x on a 27-point stencil
(14 diagonals, each a dependent walk), where fixed-point took 1.01-1.05x. By diagonals the
same sums took 0.43-0.44x and 0.39-0.42x (2026-11-28 (h))."""
DIA = True
"""Take the diagonals kernel (``method="dia"``) where it applies (plain and reproducible)."""
PLAIN = "tile"
"""Default kernel of a plain product: "tile" / "atomic" (:func:`spmv_rows`'s ``tile``) or
"offsets" (no atomics; where U lies on few diagonals)."""

_WORK: dict = {}  # (device, n) -> (hi, lo): the fixed-point words, kept at 0 between calls


def lanes(avg_degree: float) -> int:
    """Lanes a row for U's mean row length: a thread a row for a 7-point stencil's 4."""
    for g in (1, 2, 4, 8, 16):
        if avg_degree <= 6 * g:
            return g
    return 32


def exact_eligible(sr, out_dtype) -> bool:
    """The reproducible kernel applies: ⊕ = plus, ⊗ = times, a floating-point result."""
    return (np.dtype(out_dtype).kind == "f" and gc.monoid_kind(sr.add) == 1
            and sr.mul is not None and sr.mul.key[2] == gc._formula_text("times"))  # x*y, no sympy


def structure(U, Up, Uj, Ux) -> dict:
    """The per-matrix facts (module docstring), computed once and cached on ``U``."""
    import cupy
    key = (int(Up.data.ptr), int(Uj.data.ptr), int(Ux.data.ptr), int(Uj.size), tuple(U.shape))
    hit = recall(U, "_gbdist_sym_rows", key)
    if hit is not MISS:
        return hit
    n = int(U.shape[0])
    deg = cupy.diff(Up).astype(cupy.int64)
    col = cupy.bincount(Uj.astype(cupy.int64), minlength=n)[:n] if Uj.size else cupy.zeros(n, cupy.int64)
    present = (deg > 0) | (col > 0)
    ma = cupy.abs(Ux.astype(cupy.float64)).max() if Ux.size else cupy.zeros((), cupy.float64)
    info = {"present": present, "dmax": int((deg + col).max()) if n else 0,
            "G": lanes(Uj.size / max(n, 1)),
            "maxabs": cupy.ascontiguousarray(ma.reshape(1)).view(cupy.uint64),
            "offsets": _diagonals(Up, Uj)}
    return keep(U, "_gbdist_sym_rows", key, info)


def _diagonals(Up, Uj):
    """The distinct j - i of U's entries (device int64, ascending) when there are at most
    :data:`MAX_OFFSETS`, none negative, and every row's columns strictly ascend (the
    offsets kernel's binary search); else None (:func:`.graph_dia.offsets`)."""
    return offsets(Up, Uj, lowest=0)


def spmv_rows(K, U, Up, Uj, Ux, x, sr, out, work, *, tile=None, compensated=False, method=None):
    """(y in the accumulator dtype, presence) of the symmetric product. ``compensated``
    (the caller checked :func:`exact_eligible`): reproducible, by the diagonals or the offsets
    kernel with compensated sums where U lies on few diagonals, else by fixed-point atomics.
    ``method``: "dia", "offsets", "atomic" or "fixed" forces one (None: :data:`DIA` where
    it applies, else :data:`PLAIN` or the rule above)."""
    import cupy
    n = int(U.shape[0])
    info = structure(U, Up, Uj, Ux)
    offs = info["offsets"]
    if method is None:
        few = offs is not None and len(offs) <= OFFSETS_WIN
        if DIA and diagonals(K, U, Up, Uj, Ux, sr, out) is not None:
            method = "dia"
        else:
            method = ("offsets" if few else "fixed") if compensated else \
                ("offsets" if PLAIN == "offsets" and offs is not None else "atomic")
        if method == "atomic" and tile is None:
            tile = PLAIN == "tile"
    if method == "dia":
        dia = diagonals(K, U, Up, Uj, Ux, sr, out)
        if dia is None:
            raise ValueError("the diagonals kernel needs float values on few diagonals, rows sorted")
        name = gc.sym_dia_names(gc.index_ctype(Up.dtype), gc.ctype(Ux.dtype),
                                gc.ctype(x.dtype, "values of x"), bool(compensated))[1]
        fn = K._kernels(sr.mul, sr.add, out, (name,))[name]
        y = cupy.empty(n, dtype=work)
        if n:
            fn((-(-n // 256),), (256,), (np.int64(n), dia, offs, np.int32(offs.size), x, y))
        return y, info["present"]
    if method == "offsets":
        if offs is None:
            raise ValueError("the offsets kernel needs U on few diagonals, rows sorted")
        name = gc.sym_offsets_name(gc.index_ctype(Up.dtype), gc.ctype(Ux.dtype),
                                   gc.ctype(x.dtype, "values of x"), bool(compensated))
        fn = K._kernels(sr.mul, sr.add, out, (name,))[name]
        y = cupy.empty(n, dtype=work)
        if n:
            fn((-(-n // 256),), (256,), (np.int64(n), Up, Uj, Ux, x, offs, np.int32(offs.size), y))
        return y, info["present"]
    compensated = method == "fixed"
    G = info["G"]
    tile = TILE if tile is None else bool(tile)
    passes = PASSES if tile else 1
    rows_per_block = 256 // G * passes
    blocks = -(-n // rows_per_block)
    I, TA, TX = gc.index_ctype(Up.dtype), gc.ctype(Ux.dtype), gc.ctype(x.dtype, "values of x")
    if not compensated:
        ident = _identity(sr.add, np.dtype(work), np.dtype(out))
        y = cupy.zeros(n, dtype=work) if ident == 0 and not np.isnan(ident) else cupy.full(n, ident, dtype=work)
        name = gc.sym_rows_name(I, TA, TX, G, tile, passes)
        fn = K._kernels(sr.mul, sr.add, out, (name,))[name]
        if blocks:
            fn((blocks,), (256,), (np.int64(n), Up, Uj, Ux, x, y))
        return y, info["present"]
    D = max(int(info["dmax"]), 1).bit_length()  # 2^D > the longest row of A
    S, L = 52 - D, min(52, 62 - D)
    TY = gc.CTYPES[np.dtype(work)]
    names = gc.sym_fixed_names(I, TA, TX, G, tile, passes, TY)
    kern = K._kernels(sr.mul, sr.add, out, names)
    dev = cupy.cuda.Device().id
    ws = _WORK.get((dev, n))
    if ws is None:
        ws = _WORK[(dev, n)] = (cupy.zeros(n, cupy.int64), cupy.zeros(n, cupy.int64))
    hi, lo = ws
    bx = cupy.zeros(1, cupy.uint64)
    if n:
        kern[names[2]]((min(1024, -(-n // 256)),), (256,), (x, np.int64(n), bx))
    y = cupy.empty(n, dtype=work)
    if blocks:
        kern[names[0]]((blocks,), (256,), (np.int64(n), Up, Uj, Ux, x, info["maxabs"], bx,
                                           np.int32(S), np.int32(L), hi, lo))
        kern[names[1]]((min(2048, -(-n // 256)),), (256,), (np.int64(n), info["maxabs"], bx,
                                                           np.int32(S), np.int32(L), hi, lo, y))
    return y, info["present"]


def diagonals(K, U, Up, Uj, Ux, sr, out):
    """U by diagonals for the diagonals kernel (the module docstring), or None where it does
    not apply (or no device memory is left for it): :func:`.graph_dia.form` (built on the
    first call, cached on U), kept with :func:`structure`'s facts."""
    info = structure(U, Up, Uj, Ux)
    if "dia" not in info:
        got = form(K, U, sr, out, lowest=0, offs=info["offsets"]) if info["offsets"] is not None else None
        info["dia"] = None if got is None else got[2]
    return info["dia"]


def _identity(monoid, work: np.dtype, out: np.dtype):
    """⊕'s identity in the accumulator dtype (as ``graph._identity``: NaN for float min/max)."""
    from ..graph_reference import identity_value
    if out != np.bool_ and gc.nan_identity(monoid, work):
        return work.type(np.nan)
    return work.type(identity_value(monoid, out))
