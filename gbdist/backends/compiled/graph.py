"""Compiled CPU graph kernels: the ``GraphKernels`` interface (sparse-output products,
SpMV, SpMSpV, segmented reductions) with Numba, for any semiring the algebra checks.

Each semiring gets one generated module (:mod:`.graph_codegen`: ``gb_mul``/``gb_add``
printed from the ops' formulas by the compiled backend's printer, user monoids
included), cached on disk like the plan kernels (:mod:`.cache`). Kernels work on ranges
of rows and release the GIL; ranges are balanced by work (Σ of the row's ⊗ terms) and
taken from a shared queue by the calling thread and the backend's pool threads
(:mod:`.threads`), about four ranges per thread. Not ``prange``: see
:mod:`gbdist.backends.compiled` (``parallel=True`` doubles every first compilation, and
the speed is the same for these row-independent loops).

Types: operands' value and index types are taken as they come (int32 indices stay int32;
Numba specialises). ``out_dtype`` is the op's domain: operand values are cast to it as they
are loaded and ⊗/⊕ are evaluated in it (:mod:`.graph_codegen`), as the reference
(:mod:`gbdist.backends.graph_reference`) does: bool ops are GraphBLAS's, int32/int64 wrap
like C, float32 stays float32 (only the compensated SpMV sums in float64). The ⊕ identity
appears only where an output is not present, written as the reference writes it.

Strategies (``spgemm``):

* no mask (:mod:`.graph_spgemm`): symbolic Gustavson (row sizes) then numeric Gustavson
  into the exact CSR, with a dense accumulator row per range, or, when the output is
  wider than :data:`HASH_MIN_N` and most rows' ⊗ terms are under n/:data:`HASH_RATIO`, a
  hash accumulator per row; rows of at most :data:`SMALL_ROW` terms sort them instead;
* mask: the cost of the dot-product form (Σ over the mask's (i, j) of
  deg A(i,:) + deg B(:,j), times :data:`DOT_WEIGHT`) against Gustavson filtered by the mask
  (Σ of A(i,:)'s B-row degrees; each B row walked only up to the mask row's last column);
  the cheaper one runs (a dot merge of a row 32x shorter than the other bisects
  instead) (:data:`MASKED_FORM` forces one), both writing into the mask's pattern with
  a presence flag, compacted once. The dot form needs B's transpose: built once per B and
  kept while B lives (a weak reference, checked by identity and buffers). A symmetric
  C⟨A⟩ = A ⊕.⊗ A is computed as its upper half, mirrored (:mod:`.graph_masked`); over
  plus_pair on a graph without self loops it is each edge's triangle count, found once per
  triangle under a degree ranking (:mod:`.graph_support`) when that walk is cheaper;
* complemented mask: Gustavson (symbolic and numeric) skipping the mask's columns;

``spmspv_update`` pushes a frontier into a state the caller keeps (values and a uint8
presence array, updated in place) and returns only the entries that entered or changed:
no n-wide array is allocated or scanned, so a BFS/SSSP level costs the frontier's edges.

``spmv`` pulls (one row per output entry); plus_times with float64/int64 values and
vector, no mask and every x present is SciPy's ``A @ x`` (the same loop) below
:data:`SCIPY_SPMV` stored entries. ``spmspv`` pushes the rows named by ``u_idx`` into a
dense accumulator and presence array, on one thread below :data:`SPMSPV_PARALLEL_WORK`
terms, else split by output column blocks (measured slower on 2 shared cores at every
frontier tried).
"""
from __future__ import annotations

import os
import threading

import numpy as np
import scipy.sparse as sps

from ..graph_reference import cast as _ref_cast
from ..graph_reference import identity_value
from .graph_prep import _check_state, _prepared, _transpose
from .threads import _pool
from .threads import threads as _threads_now

# plus_times SpMV, float64/int64, no mask, every x present, below this many entries: SciPy's
# A @ x (the same sums in C++; faster at 1.8M entries, the 2-thread kernel at 18.7M: 2 cores).
SCIPY_SPMV = 1 << 22
# Rows whose upper bound is at most n / HASH_RATIO use the hash accumulator when the
# output is wider than HASH_MIN_N columns (a dense row of n would miss the cache).
HASH_MIN_N = 1 << 16
HASH_RATIO = 64
# Rows of at most this many ⊗ terms take the small-row form (:mod:`.graph_spgemm`).
SMALL_ROW = 32
# The masked product's form: "auto" (the cheaper by the counts above), "dot" or "gustavson".
MASKED_FORM = "auto"
# A dot-form merge step costs this many Gustavson terms (branchy merges against a streaming
# scatter; 1.1e6-entry power-law products on the 2 shared cores: C<L> = L·Lᵀ 8-27 ns a merge
# step, 3-5 ns a Gustavson term; C<A> = A·A dot 4.0-5.7 s, Gustavson 1.0-1.6 s).
DOT_WEIGHT = 3.0
# Below this many ⊗ terms a kernel runs on the calling thread.
SERIAL_WORK = 1 << 15
# SpMV below this many stored entries (plus rows) runs on one thread.
SPMV_SERIAL = 1 << 18
# SpMSpV below this many ⊗ terms runs on one thread (the column split bisects every row).
SPMSPV_PARALLEL_WORK = 1 << 23

_SCIPY_TYPES = (np.dtype(np.float64), np.dtype(np.int64))
_MODULES: dict = {}
_LOCK = threading.Lock()
_THREADS: dict = {}


def threads() -> int:
    """:func:`.threads.threads`, remembered per process and thread-count variables (it asks
    the OS for the affinity mask, ~1 ms: too slow for every call of a small product)."""
    key = (os.getpid(), os.environ.get("GBDIST_NUM_THREADS"), os.environ.get("NUMBA_NUM_THREADS"))
    t = _THREADS.get(key)
    if t is None:
        t = _THREADS[key] = _threads_now()
    return t


_WORK: dict = {}


def _work_type(out_dtype, *dtypes) -> str:
    """The generated module's domain: ``out_dtype`` (operands are cast to it on load)."""
    w = _WORK.get(out_dtype)
    if w is None:
        w = _WORK[out_dtype] = np.dtype(out_dtype).name
    return w


_BY_ID: dict = {}


def _module(sr_mul, sr_add_op, work: str):
    """The generated module of (⊗, ⊕, domain): found by the ops' ids first (an Op's key is
    a tuple of its formula, slow to hash on every call), checked by identity."""
    hit = _BY_ID.get((id(sr_mul), id(sr_add_op), work))
    if hit is not None and hit[0] is sr_mul and hit[1] is sr_add_op:
        return hit[2]
    key = (sr_mul.key, sr_add_op.key, work)
    mod = _MODULES.get(key)
    if mod is None:
        from .cache import GRAPH_CODE, load_recipe  # a stored record: no sympy to print it again
        with _LOCK:
            mod = _MODULES.get(key)
            if mod is None:
                def make():
                    from .graph_codegen import generate
                    return generate(sr_mul.formula, sr_add_op.formula, work)
                mod = _MODULES[key] = load_recipe(key, GRAPH_CODE, make)
    if len(_BY_ID) > 4096:
        _BY_ID.clear()
    _BY_ID[(id(sr_mul), id(sr_add_op), work)] = (sr_mul, sr_add_op, mod)
    return mod


def _identity(monoid, dtype) -> object:
    """⊕'s identity in ``dtype`` as the reference writes it (±inf: an int's max/min)."""
    key = (id(monoid), dtype)  # Monoid.key prints the identity: too slow per call
    hit = _IDENTITIES.get(key)
    if hit is None or hit[0] is not monoid:
        hit = _IDENTITIES[key] = (monoid, identity_value(monoid, dtype))
    return hit[1]


_IDENTITIES: dict = {}


def _ranges(work: np.ndarray | None, m: int, total: float) -> list:
    """Row ranges of about equal work (``work``: per-row cost, or None: equal rows),
    about four per thread; one range when the job is small."""
    if m <= 1 or total < SERIAL_WORK:  # small work: the calling thread, no pool
        return [(0, m)]
    t = threads()
    if t == 1:
        return [(0, m)]
    nb = min(m, 4 * t)
    if work is None:
        cuts = np.linspace(0, m, nb + 1).astype(np.int64)
    else:
        cum = np.cumsum(work, dtype=np.float64)
        cuts = np.searchsorted(cum, np.linspace(0, cum[-1], nb + 1)[1:-1], side="right")
        cuts = np.concatenate(([0], cuts, [m])).astype(np.int64)
    cuts = np.unique(cuts)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _nnz_ranges(indptr: np.ndarray, m: int) -> list:
    """About four ranges of rows per thread with equal stored entries (SpMV); one range
    below SPMV_SERIAL entries (the pool's dispatch would cost more than it saves)."""
    nnz = int(indptr[m]) if m else 0
    if m <= 1 or nnz + m < SPMV_SERIAL:
        return [(0, m)]
    t = threads()
    if t == 1:
        return [(0, m)]
    targets = np.linspace(0, nnz, 4 * t + 1)[1:-1]
    cuts = np.concatenate(([0], np.searchsorted(indptr, targets), [m])).astype(np.int64)
    cuts = np.unique(np.clip(cuts, 0, m))
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _run(kernel, head: tuple, ranges: list, tail: tuple = ()) -> None:
    """``kernel(*head, r0, r1, *tail)`` for every range: the calling thread and up to
    threads() − 1 pool threads take ranges from a shared queue until none is left (the
    caller works instead of waiting, so a pool thread that starts late on a busy machine
    costs nothing but its share)."""
    if len(ranges) == 1:
        r0, r1 = ranges[0]
        kernel(*head, np.int64(r0), np.int64(r1), *tail)
        return
    todo = iter(ranges)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                r = next(todo, None)
            if r is None:
                return
            kernel(*head, np.int64(r[0]), np.int64(r[1]), *tail)

    t = threads()
    pool = _pool(t)
    futures = [pool.submit(worker) for _ in range(min(t, len(ranges)) - 1)]
    worker()
    for f in futures:
        f.result()


def _merge_ranges(A, B) -> list:
    """Row ranges of about equal entries of A and B together (the row merges)."""
    ap, bp = np.asarray(A.indptr), np.asarray(B.indptr)
    m, work = ap.shape[0] - 1, np.diff(ap) + np.diff(bp) + 1 if threads() > 1 else None
    return _ranges(work, m, float(A.nnz + B.nnz + m))


def _csr(A):
    """indptr, indices, data, shape of a canonical CSR (SciPy matrix or array)."""
    return A.indptr, A.indices, A.data, A.shape


def _index_dtype(nnz: int, *arrays) -> np.dtype:
    wide = any(a.dtype == np.int64 for a in arrays) or nnz >= 2 ** 31 - 1
    return np.dtype(np.int64 if wide else np.int32)


def _make_csr(indptr, indices, data, shape, itype) -> sps.csr_matrix:
    out = sps.csr_matrix((data, indices, indptr), shape=shape)
    out.indices = indices.astype(itype, copy=False)  # SciPy may change the index type
    out.indptr = indptr.astype(itype, copy=False)
    out.has_sorted_indices = True
    return out


def _cast(values: np.ndarray, out_dtype) -> np.ndarray:
    """``values`` in ``out_dtype`` as the reference casts (a no-op for kernel results,
    which are in the domain already)."""
    if values.dtype == np.dtype(out_dtype):
        return values
    return _ref_cast(values, out_dtype)


_PLUS_MUL: dict = {}


def _is_plus_times(sr) -> bool:
    return _is(sr, "times")


def _is(sr, mul: str) -> bool:
    hit = _PLUS_MUL.get((id(sr), mul))
    if hit is not None and hit[0] is sr:
        return hit[1]
    from ...algebra import ops
    yes = sr.mul.key == getattr(ops, mul).key and sr.add.op.key == ops.plus.key
    if len(_PLUS_MUL) > 1024:
        _PLUS_MUL.clear()
    _PLUS_MUL[(id(sr), mul)] = (sr, yes)
    return yes


try:  # SciPy's SpMV loop itself (A @ x adds checks and conversions around it)
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - a SciPy without it: A @ x
    _csr_matvec = None


def _scipy_matvec(A, x):
    """``A @ x`` as a 1-D array: SciPy's ``csr_matvec`` into zeros (it adds to y)."""
    m, n = A.shape
    if _csr_matvec is not None and A.indices.dtype == A.indptr.dtype:
        y = np.zeros(m, dtype=A.data.dtype)
        _csr_matvec(m, n, A.indptr, A.indices, A.data, np.ascontiguousarray(x), y)
        return y
    return np.asarray(A @ x).reshape(-1)


class CompiledGraphKernels:
    """The graph kernels of the ``GraphKernels`` protocol, compiled with Numba (see the
    module)."""

    name = "compiled"
    xp = np

    def components(self, A, *, half: bool):
        """Connected-component labels by union-find (:mod:`.graph_algorithms`)."""
        from .graph_algorithms import components
        return components(A, half=half)

    def count_triangles(self, L, *, below: bool = False) -> int:
        """Σ over L's (c, b) of |L(c,:) ∩ L(b,:)|; ``below``: L read in A (.graph_algorithms)."""
        from .graph_algorithms import count_triangles
        return count_triangles(L, _nnz_ranges(np.asarray(L.indptr), L.shape[0]), _run, below=below)

    # -- sparse × sparse -> sparse ---------------------------------------------------

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype, symmetric=None):
        ap, ai, ax, (m, ka) = _csr(A)
        bp, bi, bx, (kb, n) = _csr(B)
        if ka != kb:
            from ...errors import InputError
            raise InputError("spgemm operands do not conform", expected=f"B with {ka} rows",
                             got=f"A {A.shape}, B {B.shape}")
        work = _work_type(out_dtype, ax.dtype, bx.dtype)
        mod = _module(sr.mul, sr.add.op, work)
        if mask is not None and not complement:
            return self._masked(mod, A, B, mask, work, out_dtype, symmetric,
                                counts=_is(sr, "pair"))  # plus_pair counts: .graph_support
        from .graph_spgemm import gustavson
        cp, ci, cx = gustavson(mod, A, B, mask, (HASH_MIN_N, HASH_RATIO, SMALL_ROW), _ranges, _run)
        itype = _index_dtype(int(cp[-1]), ai, bi)
        return _make_csr(cp, ci.astype(itype, copy=False), _cast(cx, out_dtype), (m, n), itype)

    def _masked(self, mod, A, B, mask, work, out_dtype, symmetric=None, counts=False):
        ap, ai, ax, (m, _) = _csr(A)
        bp, bi, bx, (_, n) = _csr(B)
        mp, mi = mask.indptr, mask.indices
        # ⊗ terms vs the dot form's merge steps, totals: its lower bound, exact if it may win
        none = bcol = np.zeros(0, np.int64)
        tt, dd = mod.masked_work(ap, ai, bp, bi, mp, mi, bcol, 0, none)
        if MASKED_FORM == "auto" and DOT_WEIGHT * dd < tt:
            bcol = np.zeros(n, np.int32 if bi.shape[0] < 2 ** 31 else np.int64)
            tt, dd = mod.masked_work(ap, ai, bp, bi, mp, mi, bcol, 0, none)
        use_dot = MASKED_FORM == "dot" or MASKED_FORM == "auto" and DOT_WEIGHT * dd < tt
        total = float(dd if use_dot else tt) + float(mi.shape[0]) + m
        rw = None
        if len(_ranges(None, m, total)) > 1:  # several threads: a per-row pass for the splits
            # each row's work is at most the total: int32 unless the total is not (m of them)
            rw = np.empty(m, dtype=np.int32 if total < 2 ** 31 - 1 else np.int64)
            mod.masked_work(ap, ai, bp, bi, mp, mi, bcol, 2 if use_dot else 1, rw)
        # in blocks of rows, compacted block by block (.graph_masked): no mask-sized buffer;
        # a symmetric product as its upper half, mirrored
        from .graph_masked import half_product, masked_product
        half = half_product(mod, A, B, mask, work, out_dtype, int(tt), _nnz_ranges, _run,
                            known=symmetric)
        itype = _index_dtype(int(mi.shape[0]), ai, bi, mi)
        if half and counts and np.dtype(work).kind in "iuf":
            # C⟨A⟩ = A plus.pair A, A symmetric: each edge's triangles (.graph_support) when
            # A has no self loop and that walk is cheaper than the half product
            from . import graph_support as gsu
            planned = gsu.plan(ap, ai, m, min(float(tt), DOT_WEIGHT * float(dd)) / 2, _ranges,
                               _run)
            if planned is not None:
                cp, ci, cx = gsu.support(ap, ai, m, planned, np.dtype(work), itype, _ranges,
                                         _nnz_ranges, _run, _pool, threads)
                return _make_csr(cp, ci, _cast(cx, out_dtype), (m, n), itype)
        if use_dot:
            T = B if half else _transpose(B)  # B = A symmetric: its own transpose
            kernel, head, extra = mod.spgemm_dot, (ap, ai, ax, T.indptr, T.indices, T.data), ()
        else:
            kernel, head, extra = mod.spgemm_masked, (ap, ai, ax, bp, bi, bx), (np.int64(n),)
        cp, ci, cx = masked_product(kernel, head, extra, mp, mi, m, np.dtype(work),
                                    np.dtype(out_dtype), itype, rw, _run, _ranges, _cast, half)
        return _make_csr(cp, ci, cx, (m, n), itype)

    # -- matrix × dense vector (pull) -----------------------------------------------

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False):
        ap, ai, ax, (m, k) = _csr(A)
        x = np.asarray(x)
        csum = bool(compensated) and sr.add.invertible and np.dtype(out_dtype).kind == "f"
        if (not csum and ai.shape[0] < SCIPY_SPMV and mask is None and x_present is None
                and ax.dtype == x.dtype == out_dtype and ax.dtype in _SCIPY_TYPES
                and _is_plus_times(sr)):
            # SciPy's csr_matvec is this very loop (same order of summation), in C++
            y = _scipy_matvec(A, x)
            return y, _prepared(A, "nonempty-rows", lambda: ap[1:] > ap[:-1])  # shared: read only
        work = _work_type(out_dtype, ax.dtype, x.dtype)
        mod = _module(sr.mul, sr.add.op, work)
        wt = np.dtype(work)
        y = np.empty(m, dtype=wt)
        yp = np.empty(m, dtype=np.bool_)
        has_xp = x_present is not None
        xp = np.asarray(x_present, dtype=np.bool_) if has_xp else np.ones(1, np.bool_)
        mk = np.asarray(mask, dtype=np.bool_) if mask is not None else np.ones(1, np.bool_)
        mmode = np.int64(0 if mask is None else 2 if complement else 1)
        ident = _identity(sr.add, wt)
        if ai.shape[0] + m < SPMV_SERIAL:  # small: the calling thread (no pool, no split)
            ranges = [(0, m)]
        else:
            ranges = _prepared(A, ("nnz-ranges", threads()), lambda: _nnz_ranges(ap, m))
        if csum:
            _run(mod.spmv_csum, (ap, ai, ax, x, xp, has_xp, mk, mmode, ident, y, yp), ranges)
        elif has_xp or mask is not None:
            _run(mod.spmv, (ap, ai, ax, x, xp, has_xp, mk, mmode, ident, y, yp), ranges)
        else:
            _run(mod.spmv_all, (ap, ai, ax, x, ident, y, yp), ranges)
        return self._finish(y, yp, sr.add, out_dtype)

    # -- sparse vector × matrix (push) ----------------------------------------------

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype):
        ap, ai, ax, (m, n) = _csr(A)
        u_idx = np.asarray(u_idx)
        u_val = np.asarray(u_val)
        work = _work_type(out_dtype, ax.dtype, u_val.dtype)
        mod = _module(sr.mul, sr.add.op, work)
        wt = np.dtype(work)
        y = np.full(n, _identity(sr.add, wt), dtype=wt)
        yp = np.zeros(n, dtype=np.bool_)
        mk = np.asarray(mask, dtype=np.bool_) if mask is not None else np.ones(1, np.bool_)
        mmode = np.int64(0 if mask is None else 2 if complement else 1)
        if (ai.shape[0] < SPMSPV_PARALLEL_WORK  # the whole matrix is less work: serial
                or float((ap[u_idx + 1] - ap[u_idx]).sum()) < SPMSPV_PARALLEL_WORK
                or threads() == 1):
            mod.spmspv(ap, ai, ax, u_idx, u_val, mk, mmode, False, y, yp,
                       np.int64(0), np.int64(n))
        else:  # the output split into column blocks, one per thread
            t = threads()
            cuts = np.linspace(0, n, t + 1).astype(np.int64)
            ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
            pool = _pool(t)
            fs = [pool.submit(mod.spmspv, ap, ai, ax, u_idx, u_val, mk, mmode, True, y, yp,
                              np.int64(a), np.int64(b)) for a, b in ranges]
            for f in fs:
                f.result()
        return self._finish(y, yp, sr.add, out_dtype)

    def spmspv_update(self, A, u_idx, u_val, sr, d, p, *, only_new, out_dtype):
        ap, ai, ax, (_, n) = _csr(A)
        work = _work_type(out_dtype)
        _check_state(d, p, n, work)
        mod = _module(sr.mul, sr.add.op, work)
        u_idx = np.asarray(u_idx, dtype=np.int64)
        bound = min(int((ap[u_idx + 1] - ap[u_idx]).sum()), n) if u_idx.size else 0
        out = np.empty(bound, dtype=np.int64)  # never n-wide unless the frontier's rows are
        cnt = mod.spmspv_update(ap, ai, ax, u_idx, np.asarray(u_val), d, p, bool(only_new), out)
        idx = np.sort(out[:cnt])
        return idx, d[idx]

    # -- segmented reduction ----------------------------------------------------------

    def segment_reduce(self, indptr, values, monoid, *, out_dtype):
        values = np.asarray(values)
        indptr = np.asarray(indptr)
        work = _work_type(out_dtype, values.dtype)
        from ...algebra.ops import pair
        mod = _module(pair, monoid.op, work)
        wt = np.dtype(work)
        s = indptr.shape[0] - 1
        out = np.empty(max(s, 0), dtype=wt)
        pres = np.empty(max(s, 0), dtype=np.bool_)
        if s > 0:
            ranges = _ranges(None, s, float(values.shape[0]))
            _run(mod.segment_reduce, (indptr, values, _identity(monoid, wt), out, pres), ranges)
        return self._finish(out, pres, monoid, out_dtype)

    # -- triangle counting's L (graph_rank) ----------------------------------------------

    def rank_lower_counts(self, A, deg, *, only_none=False):
        from . import graph_rank
        m = A.shape[0]
        return graph_rank.counts(A.indptr, A.indices, deg, only_none,
                                 _ranges(deg, m, float(A.nnz) + m), _run)

    def rank_lower_fill(self, A, deg, mode, lp, *, with_values, nnz=None):
        from . import graph_rank
        m = A.shape[0]
        return graph_rank.fill(A.indptr, A.indices, A.data, deg, mode, lp, with_values,
                               _ranges(deg, m, float(A.nnz) + m), _run)

    def pattern_symmetric(self, A):
        from . import graph_symmetry
        ap = np.asarray(A.indptr)
        m = ap.shape[0] - 1
        return graph_symmetry.symmetric(ap, A.indices, _nnz_ranges(ap, m), _run)

    def union_merge(self, A, B, xa, xb, *, itype):
        from .graph_union import merge
        return merge(A.indptr, A.indices, B.indptr, B.indices, xa, xb, np.dtype(itype),
                     _merge_ranges(A, B), _run)

    def intersect_merge(self, A, B, *, itype):
        from .graph_union import intersect
        return intersect(A.indptr, A.indices, B.indptr, B.indices, np.dtype(itype),
                         _merge_ranges(A, B), _run)

    def union_keys(self, ka, kb, va, vb, op, left_default, right_default, *, out_dtype,
                   space=None):
        from .graph_union import PARALLEL_KEYS, merge_keys
        t = threads() if ka.shape[0] + kb.shape[0] >= PARALLEL_KEYS else 1
        return merge_keys(ka, kb, va, vb, op, (left_default, right_default), out_dtype, t, _run)

    @staticmethod
    def _finish(y, yp, monoid, out_dtype):
        """Cast as the reference casts; where nothing is present the kernels wrote the work
        type's identity, rewritten as ``out_dtype``'s (an int64 extreme is not int32's)."""
        out = _cast(y, out_dtype)
        if out is not y and not yp.all():
            out[~yp] = _identity(monoid, out_dtype)
        return out, yp


__all__ = ["CompiledGraphKernels"]
