"""CUDA graph kernels (issue 12): :class:`CudaGraphKernels` implements the ``GraphKernels``
interface on CuPy device data.

* :meth:`~CudaGraphKernels.spgemm`: row-binned shared-memory hash SpGEMM. Per row an upper
  bound of its distinct columns (Σ over A(i,k) of deg_B(k), at most n, at most the mask row's
  size for a plain mask); rows binned by it into shared-memory tables of 32 … 16384 slots
  (at least twice the bound: short probe sequences) and a global-memory table for larger
  rows; a symbolic pass (distinct columns per row) → exclusive scan → rows binned again by
  their exact sizes → a numeric pass (insert-or-combine, atomic ⊕; each shared row sorted in
  the kernel, written in order). The global-table rows of a pass get dense tables (n slots
  a row, a column its own slot, written in column order by a block scan) while n and
  rows x n are small (``_DENSE_COLUMNS``, ``_DENSE_SLOTS``); else hashed tables sized from
  each row's bound (one more host read), sorted afterwards by one CuPy sort (another read).
  A pass is one launch for the bins up to 2048 slots (256-thread blocks; issue 30) and one
  a larger non-empty bin; two host reads a call (the bins' sizes; the numeric bins' sizes
  with the output's size) unless hashed global tables add theirs.
  Masks are patterns (CSR); ``complement`` keeps only the (i, j) NOT in the mask.
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
from ...errors import BackendError, InputError
from ..base import DeviceCSR
from . import cache
from . import graph_codegen as gc
from .graph_bins import _bin_module, _binned_rows, _bins, _grid, _spmv_bins  # noqa: F401 (tests: _bins)
from .graph_tiles import full_choice, spmv_tiles

_GLOBAL_SLOTS = 1 << 27  # most global-table slots allocated at once (chunks of rows)
# The global-table rows of a pass get dense tables (n slots each: a column its own slot, rows
# written in order) while rows x n is at most _DENSE_SLOTS (96 MiB of keys and float64
# values) and n at most _DENSE_COLUMNS: no host read to size the tables, no sort afterwards
# (issue 30). A global row's hashed table has at least 32,768 slots (its bound passes 8,192),
# so a dense one is at most 4x that; one block clears and scans a row's table, so a wider n
# would cost a row more than its hashed table and the sort saved (measured at n = 10^5 on an
# H200: the global kernels 0.64 ms with dense tables, 0.67 with hashed ones).
_DENSE_SLOTS = 1 << 23
_DENSE_COLUMNS = 1 << 17


def make_csr(data, indices, indptr, shape):
    """cupyx CSR where cupyx supports the dtype, else :class:`DeviceCSR`."""
    if data.dtype.char in "?fd":
        import cupyx.scipy.sparse as cps
        return cps.csr_matrix((data, indices, indptr), shape=shape)
    return DeviceCSR(data, indices, indptr, tuple(int(s) for s in shape))


def _csr_parts(M, what: str, index=None):
    """(indptr, indices, data) of a device CSR operand, indices in ``index`` dtype if given."""
    import cupy
    try:
        ptr, idx, val = M.indptr, M.indices, M.data
    except AttributeError:
        raise InputError(f"{what} must be a CSR matrix on the device", expected="cupyx csr_matrix",
                         got=type(M).__name__) from None
    if not all(isinstance(a, cupy.ndarray) for a in (ptr, idx, val)):
        raise InputError(f"{what} must live on the device", got=type(ptr).__name__,
                         hint="use the reference or compiled kernels for host data")
    it = np.dtype(index) if index is not None else np.promote_types(ptr.dtype, idx.dtype)
    gc.index_ctype(it)
    gc.ctype(val.dtype, f"values of {what}")
    # kernels read raw memory: a strided or broadcast array (stride 0) must become dense
    c = cupy.ascontiguousarray
    return c(ptr.astype(it, copy=False)), c(idx.astype(it, copy=False)), c(val)


def _ptr(a):
    """A device array, or a null pointer for None."""
    return np.uint64(0) if a is None else a


def _shared_bytes(S: int, rpb: int, numeric: bool, work: np.dtype) -> int:
    """Dynamic shared memory of one block of the shared-table SpGEMM kernel."""
    return rpb * S * (4 + (work.itemsize if numeric else 0))


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
                src = gc.source(gc.functor(mul, monoid, out, self.acc64))
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
        import cupy
        Ap, Aj, Ax = _csr_parts(A, "A")
        it = Ap.dtype
        Bp, Bj, Bx = _csr_parts(B, "B", it)
        m, k = (int(s) for s in A.shape)
        k2, n = (int(s) for s in B.shape)
        if k != k2:
            raise InputError("spgemm: inner dimensions differ", got=f"{A.shape} @ {B.shape}")
        if n >= 2**31 - 1:
            raise BackendError("the CUDA SpGEMM stores column indices as int32",
                               got=f"{n} columns", hint="use the compiled CPU kernels")
        mode = 0
        Mp = Mj = None
        if mask is not None:
            if tuple(int(s) for s in mask.shape) != (m, n):
                raise InputError("spgemm: the mask's shape differs from the result's",
                                 expected=str((m, n)), got=str(tuple(mask.shape)))
            Mp, Mj, _ = _csr_parts(mask, "mask", it)
            mode = 2 if complement else 1
        out = np.dtype(out_dtype)
        work = gc.work_dtype(out, self.acc64)
        # Upper bound of each row's distinct columns (one kernel, a warp a row).
        ub = cupy.empty(m, dtype=cupy.int64)
        if m:
            bound = _bin_module().get_function(f"gb_spgemm_bound<{gc.index_ctype(it)}>")
            bound((_grid(m * 32, 256),), (256,),
                  (Ap, Aj, Bp, Mp if mode == 1 else _ptr(None), np.int64(m), np.int64(n), ub))
        # A bin's table has S slots for rows of at most S / 2 columns (short probe sequences).
        edges = [S // 2 for S, _, _ in gc.SHARED_BINS]
        I, TA, TB = gc.index_ctype(it), gc.ctype(Ax.dtype), gc.ctype(Bx.dtype)
        Mp, Mj = (cupy.zeros(1, dtype=it),) * 2 if Mp is None else (Mp, Mj)
        counts = cupy.zeros(m, dtype=cupy.int64)
        Cp = cupy.zeros(m + 1, dtype=cupy.int64)

        one = gc.ONE_LAUNCH

        def names(offsets, numeric, chunks):
            sizes = np.diff(offsets)
            used = [gc.binned_name(I, TA, TB, numeric, mode)] if sizes[:one].any() else []
            used += [gc.shared_name(I, TA, TB, S, wpr, rpb, numeric, mode)
                     for (S, wpr, rpb), c in zip(gc.SHARED_BINS[one:], sizes[one:-1]) if c]
            return used + sorted({gc.global_name(I, TA, TB, numeric, mode, c[3]) for c in chunks})

        def launch(rows, offsets, chunks, numeric: bool, Cj, Cx):
            sizes = np.diff(offsets)
            args = (Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj, counts, Cp, Cj, Cx)
            if sizes[:one].any():  # the 256-thread bins: one launch (gb_spgemm_binned)
                rpb = np.array([b[2] for b in gc.SHARED_BINS[:one]], dtype=np.int64)
                blocks = -(-sizes[:one] // rpb)
                meta = np.concatenate([offsets[:one + 1], [0], np.cumsum(blocks)[:-1]])
                smem = max(_shared_bytes(S, r, numeric, work)
                           for (S, _, r), c in zip(gc.SHARED_BINS[:one], sizes) if c)
                fn = kernel(gc.binned_name(I, TA, TB, numeric, mode))
                if smem > 32 * 1024:
                    fn.max_dynamic_shared_size_bytes = smem
                fn((int(blocks.sum()),), (256,), (rows, cupy.asarray(meta)) + args, shared_mem=smem)
            for b, (S, wpr, rpb) in enumerate(gc.SHARED_BINS[one:], one):
                if sizes[b] == 0:
                    continue
                fn = kernel(gc.shared_name(I, TA, TB, S, wpr, rpb, numeric, mode))
                smem = _shared_bytes(S, rpb, numeric, work)
                if smem > 32 * 1024:  # above 48 KiB with the static scratch: opt in
                    fn.max_dynamic_shared_size_bytes = smem
                fn((_grid(sizes[b], rpb),), (32 * wpr * rpb,),
                   (rows[offsets[b]:offsets[b + 1]], np.int64(sizes[b])) + args, shared_mem=smem)
            for grows, toff, total, dense in chunks:
                fn = kernel(gc.global_name(I, TA, TB, numeric, mode, dense))
                keys = cupy.empty(total, dtype=cupy.int32)
                vals = cupy.empty(total if numeric else 1, dtype=work)
                fn((grows.size,), (512,), (grows, np.int64(grows.size), _ptr(toff),
                                           np.int64(n if dense else 0), keys, vals) + args)
                del keys, vals

        # Symbolic: rows binned by their bound; each row's distinct columns counted.
        rows, offsets = _binned_rows(ub, edges, skip_zero=True)
        chunks = self._global_chunks(rows[offsets[-2]:], ub, n)
        kernel = self._kernels(sr.mul, sr.add, out, names(offsets, False, chunks)).__getitem__
        launch(rows, offsets, chunks, False, cupy.zeros(0, dtype=cupy.int32),
               cupy.zeros(0, dtype=work))
        del rows
        Cp[1:] = cupy.cumsum(counts)
        # Numeric: rows binned again by their exact size, so a row whose products mostly
        # combine (or fall outside the mask) gets the smaller table its result needs; the
        # bins' sizes and the output's size come back in one read.
        rows, offsets, nnz = _binned_rows(counts, edges, skip_zero=True, extra=Cp[-1:])
        Cj = cupy.empty(nnz, dtype=cupy.int32)
        Cx = cupy.empty(nnz, dtype=work)
        if nnz:
            grows = rows[offsets[-2]:]
            chunks = self._global_chunks(grows, counts, n)
            kernel = self._kernels(sr.mul, sr.add, out, names(offsets, True, chunks)).__getitem__
            launch(rows, offsets, chunks, True, Cj, Cx)
            if grows.size and not chunks[0][3]:  # hashed tables write their rows unsorted
                _sort_rows(Cp, Cj, Cx, grows, n)
        indptr = Cp.astype(cupy.int32) if nnz < 2**31 else Cp
        return make_csr(self._finish(Cx, out), Cj, indptr, (m, n))

    @staticmethod
    def _global_chunks(rows, ub, n: int):
        """Rows of the global-table bin in chunks: [(rows, table offsets, total slots,
        dense)]. Dense: one chunk of n slots a row, while n <= _DENSE_COLUMNS and rows x n
        <= _DENSE_SLOTS (no read of ub). Else hashed: the power of two >= 2 * a row's bound
        ``ub`` slots, chunks of at most _GLOBAL_SLOTS slots (one row may exceed it alone)."""
        import cupy
        if rows.size == 0:
            return []
        if n <= _DENSE_COLUMNS and rows.size * n <= _DENSE_SLOTS:
            return [(rows, None, int(rows.size) * n, True)]
        need = (2 * ub[rows]).get()
        host = (np.int64(1) << np.ceil(np.log2(need)).astype(np.int64)).astype(np.int64)
        out, start = [], 0
        while start < len(host):
            stop, total = start, 0
            while stop < len(host) and (stop == start or total + host[stop] <= _GLOBAL_SLOTS):
                total += int(host[stop])
                stop += 1
            toff = cupy.asarray(np.concatenate([[0], np.cumsum(host[start:stop])]).astype(np.int64))
            out.append((rows[start:stop], toff, total, False))
            start = stop
        return out

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

    def rank_lower_fill(self, A, deg, mode, lp, *, with_values):
        from .graph_algorithms import rank_lower_fill
        return rank_lower_fill(A, deg, mode, lp, with_values=with_values)

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


def _sort_rows(Cp, Cj, Cx, rows, n: int) -> None:
    """Sort the entries of ``rows`` (written unsorted by the global-table kernel) by column."""
    import cupy
    starts = Cp[rows]
    lens = Cp[rows + 1] - starts
    ends = cupy.cumsum(lens)
    total = int(ends[-1])
    if total == 0:
        return
    t = cupy.arange(total, dtype=cupy.int64)
    seg = cupy.searchsorted(ends, t, side="right")
    pos = starts[seg] + (t - (ends[seg] - lens[seg]))
    order = cupy.argsort(seg * np.int64(n) + Cj[pos].astype(cupy.int64))
    Cj[pos] = Cj[pos][order]
    Cx[pos] = Cx[pos][order]
