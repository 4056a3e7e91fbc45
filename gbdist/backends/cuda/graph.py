"""CUDA graph kernels (issue 12): :class:`CudaGraphKernels` implements the ``GraphKernels``
interface on CuPy device data.

* :meth:`~CudaGraphKernels.spgemm`: the row-binned shared-memory hash SpGEMM of
  :mod:`.graph_spgemm` (symbolic then numeric pass, rows binned by size, dense or hashed
  global tables for the largest rows).
* :meth:`~CudaGraphKernels.spmv` (pull, issue 30): the planner rule
  (``compiler/spmv_choice.choose_full``, row statistics once per matrix) takes regular rows
  (stencils, bands) to the in-order kernel (G lanes a row, rows in order); others to row
  tiles of SPMV_TILE merge coordinates
  (Ap[i] + i; computed once per matrix, cached on it), a 256-thread block a tile: the tile's
  entries loaded coalesced and their products staged in shared memory, a thread per row of
  ≤ 32 entries, a warp per longer row, the whole block for a row too long to stage — one
  launch, no row ids. With every x present and no mask, the present flags returned are the
  matrix's cached non-empty rows (shared, read only). ``spmv_kernel = "binned"`` runs issue
  12's degree bins instead (rows binned by degree, row ids read; kept for comparison).
* :meth:`~CudaGraphKernels.spmspv` (push): a warp per frontier entry, atomic ⊕ into y.
* :meth:`~CudaGraphKernels.segment_reduce`: a warp per segment.

Results: ``cupyx.scipy.sparse.csr_matrix`` for bool/float32/float64 results; cupyx has no
integer sparse matrices, so int32/int64 results are a :class:`gbdist.backends.base.DeviceCSR` (the same
``data``/``indices``/``indptr``/``shape`` attributes and ``get()``). Operands may be either.
Output column indices are int32 (cupyx's index type).
"""
from __future__ import annotations


import numpy as np

from ...compiler.spmv_choice import lanes_for
from ...errors import InputError
from . import cache
from . import graph_codegen as gc
from .graph_functor import stored_functor
from . import graph_spgemm
from .graph_arrays import _csr_parts, _ptr
from .graph_bins import _grid, _spmv_bins
from .graph_tiles import full_choice, spmv_tiles


class CudaGraphKernels:
    """GraphKernels on CuPy data. ``acc64``: float32 results accumulate in float64."""

    name = "cuda"
    # The SpMV kernel: "auto" (the planner rule spmv_choice.choose_full: "rows" for regular
    # rows, else "stream"), "rows" (in order, gb_spmv_rows; spmv_group lanes a row, None: the
    # rule's), "stream" (row tiles, gb_spmv_stream) or "binned" (issue 12's degree bins, kept
    # so that benchmarks/graph_gpu.py can time them in one run); the tile size.
    spmv_kernel = "auto"
    spmv_group = None
    spmv_tile = gc.SPMV_TILE

    def __init__(self, acc64: bool = False):
        import cupy
        self.xp = cupy
        self.acc64 = bool(acc64)
        self._sources: dict = {}  # (id(mul), id(monoid), dtype) -> (mul, monoid, source, key)

    # -- compilation ------------------------------------------------------------------------

    def _kernels(self, mul, monoid, out_dtype, names) -> dict:
        """{name: compiled kernel} for ⊗ = ``mul``, ⊕ = ``monoid``: one module holding just
        the instantiations a call launches (the bins its input uses), cached by that set."""
        out = np.dtype(out_dtype)
        fast = (id(mul), id(monoid), out.str)
        hit = self._sources.get(fast)
        if hit is None or hit[0] is not mul or hit[1] is not monoid:
            fkey = ("graph", None if mul is None else mul.key, monoid.key, out.str, self.acc64)

            def make():
                src = gc.source(stored_functor(mul, monoid, out, self.acc64))
                return src, gc.key(src)

            hit = self._sources[fast] = (mul, monoid) + cache.generated(fkey, make)
        names = tuple(names)
        if not names:
            return {}
        mod = cache.module(hit[3], hit[2], names)
        return {n: mod.get_function(n) for n in names}

    def _finish(self, values, out_dtype):
        """Accumulator values → ``out_dtype`` (bool: nonzero)."""
        out = np.dtype(out_dtype)
        return values if values.dtype == out else values.astype(out)

    # -- SpGEMM -----------------------------------------------------------------------------

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype, symmetric=None):
        return graph_spgemm.spgemm(self, A, B, sr, mask=mask, complement=complement,
                                   out_dtype=out_dtype)

    # -- SpMV / SpMSpV ----------------------------------------------------------------------

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False):
        import cupy
        Ap, Aj, Ax = _csr_parts(A, "A")
        m, n = (int(s) for s in A.shape)
        x, xp, ym = _spmv_vectors(x, x_present, mask, m, n)
        out = np.dtype(out_dtype)
        work = gc.work_dtype(out, self.acc64)
        I, TA, TX = gc.index_ctype(Ap.dtype), gc.ctype(Ax.dtype), gc.ctype(x.dtype, "values of x")
        y = cupy.empty(m, dtype=work)
        if m == 0:
            return self._finish(y, out), cupy.empty(0, dtype=cupy.bool_)
        shared = None  # the matrix's cached non-empty rows, where they are the flags
        kernel, group = self.spmv_kernel, self.spmv_group
        if kernel in ("auto", "rows"):
            choice, nonempty = full_choice(A, Ap)  # the planner rule, once per matrix
            if kernel == "auto":
                kernel, group = choice.kernel, choice.group
            group = group or choice.group or lanes_for(dict(choice.stats)["mean"])
        if kernel == "binned":
            rows, meta, blocks = _spmv_bins(A, Ap)
            name = gc.spmv_binned_name(I, TA, TX, bool(complement), bool(compensated))
            head = (rows, meta)
        else:
            if kernel == "rows":
                name = gc.spmv_rows_name(I, TA, TX, bool(complement), bool(compensated), group)
                blocks, head = _grid(m * group, 256), (np.int64(m),)
            else:
                starts, blocks, nonempty = spmv_tiles(A, Ap, self.spmv_tile)
                name = gc.spmv_name(I, TA, TX, bool(complement), bool(compensated), self.spmv_tile)
                head = (starts,)
            if xp is None and ym is None:
                # every x present, no mask: the present rows are the non-empty ones, built
                # once per matrix and shared (read only); the kernel writes no flags
                shared = nonempty()
        yp = cupy.empty(m, dtype=cupy.bool_) if shared is None else None
        fn = self._kernels(sr.mul, sr.add, out, (name,))[name]
        if blocks:
            fn((blocks,), (256,), head + (Ap, Aj, Ax, x, _ptr(xp), _ptr(ym), y, _ptr(yp)))
        return self._finish(y, out), (yp if shared is None else shared)

    def spmv_symmetric(self, U, x, x_present, sr, *, mask=None, complement=False, out_dtype,
                       compensated=False):
        """``spmv`` of the symmetric matrix whose upper triangle (diagonal included) is ``U``,
        reading U only: each off-diagonal entry also pushes into y[j] with an atomic ⊕.
        Unmasked with every x present: rows in order (:mod:`.graph_symmetric`);
        ``compensated`` (plus_times, float results): exact fixed-point sums, bitwise
        reproducible. The returned presence may be a cached array: do not write to it."""
        import cupy
        from . import graph_symmetric as gs
        Up, Uj, Ux = _csr_parts(U, "U")
        m, n = (int(s) for s in U.shape)
        if m != n:
            raise InputError("spmv_symmetric: U must be square", got=str(U.shape))
        x, xp, ym = _spmv_vectors(x, x_present, mask, m, n)
        out = np.dtype(out_dtype)
        work = gc.work_dtype(out, self.acc64)
        csum = bool(compensated) and gs.exact_eligible(sr, out)
        if ym is None and xp is None and (csum or gc.monoid_kind(sr.add, out) != 4):
            y, present = gs.spmv_rows(self, U, Up, Uj, Ux, x, sr, out, work, compensated=csum)
            return self._finish(y, out), present
        y = cupy.full(m, _identity(sr.add, work, out), dtype=work)
        yp = cupy.zeros(m, dtype=cupy.int32)
        if m:
            rows, meta, blocks = _spmv_bins(U, Up)
            name = gc.spmv_symmetric_name(gc.index_ctype(Up.dtype), gc.ctype(Ux.dtype),
                                          gc.ctype(x.dtype, "values of x"), bool(complement))
            fn = self._kernels(sr.mul, sr.add, out, (name,))[name]
            if blocks:
                fn((blocks,), (256,), (rows, meta, Up, Uj, Ux, x, _ptr(xp), _ptr(ym), y, yp))
        return self._finish(y, out), yp.astype(cupy.bool_)

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype):
        import cupy
        Ap, Aj, Ax = _csr_parts(A, "A")
        m, n = (int(s) for s in A.shape)
        ui = cupy.ascontiguousarray(cupy.asarray(u_idx))
        uv = cupy.ascontiguousarray(cupy.asarray(u_val))
        if ui.ndim != 1 or uv.shape != ui.shape:
            raise InputError("spmspv: u_idx and u_val must be 1-D of one length",
                             got=f"{ui.shape} and {uv.shape}")
        if ui.dtype not in (np.int32, np.int64):
            ui = ui.astype(cupy.int64)
        ym = None if mask is None else cupy.ascontiguousarray(cupy.asarray(mask, dtype=cupy.bool_))
        if ym is not None and ym.shape != (n,):
            raise InputError("spmspv: the mask has the wrong length", expected=f"({n},)", got=str(ym.shape))
        out = np.dtype(out_dtype)
        work = gc.work_dtype(out, self.acc64)
        name = gc.spmspv_name(gc.index_ctype(Ap.dtype), gc.ctype(Ax.dtype), gc.ctype(uv.dtype, "values of u"),
                              gc.index_ctype(ui.dtype), bool(complement))
        ident = _identity(sr.add, work, out)
        y = cupy.full(n, ident, dtype=work)
        yp = cupy.zeros(n, dtype=cupy.int32)
        if ui.size:
            self._kernels(sr.mul, sr.add, out, (name,))[name]((_grid(ui.size * 32, 256),), (256,),
                                   (ui, uv, np.int64(ui.size), Ap, Aj, Ax, _ptr(ym), y, yp))
        return self._finish(y, out), yp.astype(cupy.bool_)

    def spmspv_update(self, A, u_idx, u_val, sr, d, p, *, only_new, out_dtype):
        """The reference's array form on CuPy (sorts of the frontier's size, no n-wide
        work; BFS/SSSP on the device call it once a level)."""
        import cupy
        from ..graph_reference_kernels import spmspv_update
        return spmspv_update(A, cupy.asarray(u_idx, dtype=cupy.int64), u_val, sr, d, p,
                             only_new, out_dtype, cupy)

    # -- triangle counting's L: kernels/graph_algorithms.cuh (a warp a row) -------------------

    def rank_lower_counts(self, A, deg, *, only_none=False):
        from .graph_algorithms import rank_lower_counts
        return rank_lower_counts(A, deg, only_none=only_none)

    def rank_lower_fill(self, A, deg, mode, lp, *, with_values, nnz=None):
        from .graph_algorithms import rank_lower_fill
        return rank_lower_fill(A, deg, mode, lp, with_values=with_values, nnz=nnz)

    def rank_lower_sums(self, deg, counts):
        """Triangle counting's device ordering rule's sums (``triangles.device_sums``) in
        one launch; an optional method of the set (the rule falls back to array work)."""
        from .graph_algorithms import rank_lower_sums
        return rank_lower_sums(deg, counts)

    # -- eWiseUnion's merge: the NumPy form on CuPy arrays -------------------------------

    def pattern_symmetric(self, A):
        import cupy
        from ..graph_fast import pattern_symmetric
        return pattern_symmetric(cupy.asarray(A.indptr), cupy.asarray(A.indices), cupy)

    def union_merge(self, A, B, xa, xb, *, itype):
        import cupy
        from ..graph_fast import union_merge
        return union_merge(cupy.asarray(A.indptr), cupy.asarray(A.indices),
                           cupy.asarray(B.indptr), cupy.asarray(B.indices), cupy.asarray(xa),
                           cupy.asarray(xb), int(A.shape[1]), itype, cupy)

    def intersect_merge(self, A, B, *, itype):
        import cupy
        from ..graph_fast import intersect_merge
        return intersect_merge(cupy.asarray(A.indptr), cupy.asarray(A.indices),
                               cupy.asarray(B.indptr), cupy.asarray(B.indices),
                               int(A.shape[1]), itype, cupy)

    def union_keys(self, ka, kb, va, vb, op, left_default, right_default, *, out_dtype,
                   space=None):
        import cupy
        from ..graph_reference import union_values
        return union_values(cupy.asarray(ka), cupy.asarray(kb), cupy.asarray(va),
                            cupy.asarray(vb), op, left_default, right_default, out_dtype,
                            cupy, space)

    # -- reductions -------------------------------------------------------------------------

    def segment_reduce(self, indptr, values, monoid, *, out_dtype):
        import cupy
        ptr = cupy.ascontiguousarray(cupy.asarray(indptr))
        vals = cupy.ascontiguousarray(cupy.asarray(values))
        P = gc.index_ctype(ptr.dtype)
        out = np.dtype(out_dtype)
        work = gc.work_dtype(out, self.acc64)
        name = gc.segment_name(P, gc.ctype(vals.dtype))
        nseg = max(int(ptr.size) - 1, 0)
        res = cupy.empty(nseg, dtype=work)
        present = cupy.empty(nseg, dtype=cupy.bool_)
        if nseg:
            self._kernels(None, monoid, out, (name,))[name]((_grid(nseg * 32, 256),), (256,), (ptr, np.int64(nseg), vals, res, present))
        return self._finish(res, out), present

    # -- whole algorithms (issue 30): graph_algorithms.py, kernels/graph_algorithms.cuh ------

    def components(self, A, *, half: bool):
        """Connected-component labels (int64: the smallest vertex of each component) of the
        graph of A's stored entries, directions ignored; ``half``: A is symmetric."""
        from .graph_algorithms import components
        Ap = _csr_parts(A, "A")[0]
        return components(A, _spmv_bins(A, Ap), half=half)  # the bins: cached on A

    def power_rank(self, AT, inv_s, dangling, x, alpha, thresh, max_iter, sr):
        """PageRank's power iteration (graph_algorithms.power_rank): (rank or None, steps,
        last L1 change); ``thresh`` None: exactly ``max_iter`` steps."""
        from .graph_algorithms import power_rank
        return power_rank(self, AT, inv_s, dangling, x, alpha, thresh, max_iter, sr)

    def count_triangles(self, L) -> int:
        """Σ over L's entries (v, u) of |L(v,:) ∩ L(u,:)| (graph_algorithms.count_triangles)."""
        from .graph_algorithms import count_triangles
        return count_triangles(L)


def _identity(monoid, work: np.dtype, out: np.dtype):
    """⊕'s identity in the domain ``out`` (the reference's
    :func:`~gbdist.backends.graph_reference.identity_value`: ±inf is an integer type's
    max/min; on bool, max's identity is false and min's true), as a NumPy scalar of the
    accumulator dtype ``work``."""
    from ..graph_reference import identity_value
    if out != np.bool_ and gc.nan_identity(monoid, work):
        return work.type(np.nan)
    return work.type(identity_value(monoid, out))


def _spmv_vectors(x, x_present, mask, m: int, n: int):
    """x, its present flags and the row mask of an SpMV as contiguous device arrays (the
    flags and mask None when not given), their lengths checked."""
    import cupy
    x = cupy.ascontiguousarray(cupy.asarray(x))
    if x.shape != (n,):
        raise InputError("spmv: x has the wrong length", expected=f"({n},)", got=str(x.shape))
    xp = None if x_present is None else cupy.ascontiguousarray(cupy.asarray(x_present, dtype=cupy.bool_))
    ym = None if mask is None else cupy.ascontiguousarray(cupy.asarray(mask, dtype=cupy.bool_))
    if ym is not None and ym.shape != (m,):
        raise InputError("spmv: the mask has the wrong length", expected=f"({m},)", got=str(ym.shape))
    return x, xp, ym
