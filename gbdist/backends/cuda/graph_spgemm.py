"""The CUDA SpGEMM (issue 12, issue 30): row-binned shared-memory hash tables
(``kernels/graph_kernels.cuh``), for :meth:`gbdist.backends.cuda.graph.CudaGraphKernels.spgemm`.

Per row an upper bound of its distinct columns: the smallest of its products (Σ over A(i,k)
of deg_B(k)), n, the span of columns those B rows reach (``gb_row_span``: a band's product row
is its width; not for a plain mask) and, for a plain mask, the mask row's size. Rows are binned by it into
shared-memory tables of 32 … 16384 slots (at least twice the bound: short probe sequences)
and global-memory tables for larger rows. Each table takes its row's products
(insert-or-combine, atomic ⊕); a shared row is sorted in the kernel and written in order.
Short rows skip the table (:data:`SHORT_ROWS`): a numeric row of at most 64 products in the
bins of at most 128 slots is expanded two products a lane, sorted by a warp's bitonic network
and its equal columns combined by a segmented scan (``gb_esc_row``; 7-point Poisson 128³ on one
H200: 8.82 → 5.46 ms).
The global-table rows get dense tables (n slots a row, a column its own slot, written in
column order by a block scan) while n and rows x n are small (``_DENSE_COLUMNS``,
``_DENSE_SLOTS``); else hashed tables sized from each row's bound (one more host read),
sorted afterwards by one CuPy sort (another read).

One pass (:data:`ONE_PASS`, where the bounds' slots fit a share of the device's memory): the
numeric pass runs on the bounds' bins, each row written at the sum of the bounds before it
with its size counted, and ``gb_compact_rows`` moves the rows together. On power-law graphs the
bounds are within 1-4% of the rows' sizes, so a symbolic pass was almost all overhead
(2026-11-28 (f), one H200: 10⁵ vertices 1.12× → 1.01× cuSPARSE, 10⁶ 0.99× → 0.90×). Else two
passes: a symbolic pass counts each row's distinct columns, the rows are binned again by those
exact sizes and the numeric pass writes them at their exclusive scan.

A pass is one launch for the bins up to 2048 slots (256-thread blocks), which finds each
block's bin from the binning's running sums on the device, and one a larger non-empty bin or
global-table chunk. Those few-row launches run on side streams beside the one launch
(:func:`_beside`). Two host reads a call either way (the bins' sizes with the bounds' sum;
the output's size) unless hashed global tables add theirs. A one-pass product of at most
:data:`_EARLY_BYTES` of slots allocates its compacted copy with them, so its compaction follows
the numeric kernels and the output's size is read last (the result's arrays are views of that
copy, or copies where it would hold much more than the result). Each B row's column span is
kept on B (a fact of the operand, DESIGN section 6).
Masks are patterns (CSR); ``complement`` keeps only the (i, j) NOT in the mask.
"""
from __future__ import annotations

import functools

import numpy as np

from ...errors import BackendError, InputError
from . import graph_codegen as gc
from . import graph_dia
from .graph_arrays import _csr_parts, _ptr, make_csr
from ..base import MISS, keep, recall
from .graph_bins import _bin_module, _grid, binned, inclusive_sum

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
ONE_PASS = True
"""The product in one numeric pass where the rows' bounds fit: each row written at its place
by its bound (the sum of the bounds before it), its size counted, then the rows compacted:
no symbolic pass, one binning, one read fewer (module docstring)."""
SHORT_ROWS = True
"""A numeric row of at most 64 products (in the bins of at most 128 slots) sorted in a warp's
registers and its equal columns combined by a segmented scan (``gb_esc_row``), no table."""
_ONE_PASS_FRACTION = 0.25  # the bounds' slots may take this share of the device's memory
# ... or, past it, with the compacted copy this share of the memory free: 10^7 power-law
# vertices (4·10^9 products, 48 GB of slots) on one H200 then took one pass, 550 -> 500 ms
# (cuSPARSE by row panels 507 ms), 2026-11-28 (g)
_ONE_PASS_FREE = 0.9
_WORDS = {4: "unsigned int", 8: "unsigned long long"}  # gb_compact_rows moves values as words


def _shared_bytes(S: int, rpb: int, numeric: bool, work: np.dtype) -> int:
    """Dynamic shared memory of one block of the shared-table SpGEMM kernel."""
    return rpb * S * (4 + (work.itemsize if numeric else 0))


@functools.lru_cache(maxsize=None)
def _device_bytes(device: int) -> int:
    import cupy
    return int(cupy.cuda.runtime.getDeviceProperties(device)["totalGlobalMem"])


def _one_pass_fits(slots: int, work: np.dtype) -> bool:
    """Whether ``slots`` keys and values (the rows' bounds summed) fit the one-pass product's
    share of the device's memory (no driver query), or, past it, whether they and the
    compacted copy beside them (as large, at worst) fit :data:`_ONE_PASS_FREE` of the memory
    free now (the driver's and the pool's: one query, for products this large only). An
    allocation that fails falls back to two passes."""
    import cupy
    need = slots * (4 + work.itemsize)
    if need <= _ONE_PASS_FRACTION * _device_bytes(cupy.cuda.Device().id):
        return True
    free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    return 2 * need <= _ONE_PASS_FREE * free


def _buffers(size: int, work: np.dtype):
    """(columns, values) buffers of ``size`` entries for the one-pass product (the bounds'
    slots, then the compacted result), or (None, None) where they do not fit."""
    import cupy
    try:
        return cupy.empty(size, dtype=cupy.int32), cupy.empty(size, dtype=work)
    except cupy.cuda.memory.OutOfMemoryError:
        return None, None


def spgemm(K, A, B, sr, *, mask=None, complement=False, out_dtype):
    """C = A ⊕.⊗ B on the device by the kernel set ``K`` (its compiled kernels, ``acc64``),
    optionally under a mask's pattern (``complement``: the pattern's complement)."""
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
    work = gc.work_dtype(out, K.acc64)
    if graph_dia.applies(A, B, mask):  # both operands on few diagonals: their offsets' sums
        got = graph_dia.spgemm(K, A, B, sr, out, work)
        if got is not None:
            Cx, Cj, Cp = got
            return _result(K, Cx, Cj, Cp, out, (m, n))
    # Upper bound of each row's distinct columns (g lanes a row): its products, n, the span
    # of the B rows it reaches (each B row's column range, kept on B), the mask row's size;
    # written twice: the keys of the bins (ub) and, for the running sum in place, Up[1:].
    both = cupy.empty(2 * m + 1, dtype=cupy.int64) if m else cupy.zeros(1, dtype=cupy.int64)
    ub, Up = both[:m], both[m:]
    if m:
        # a masked product's rows are bounded by its mask's rows: no span (issue 30: a triangle
        # count's L·L at 10^6 vertices spent 0.14 ms on L's spans and 0.34 on the bounds, 96%
        # of the memory's throughput, each a fresh L; ncu, one H200, 2026-11-28 (i))
        blo, bhi = (_ptr(None),) * 2 if mode == 1 else _spans(B, Bp, Bj, k, n)
        g = lanes(Aj.size, m)
        _bin_module().get_function(f"gb_spgemm_bound<{gc.index_ctype(it)}>")(
            (_grid(m * g, 256),), (256,),
            (Ap, Aj, Bp, blo, bhi, Mp if mode == 1 else _ptr(None), np.int64(m), np.int64(n), ub, Up,
             np.int32(g)))
        up = Up[1:]
        inclusive_sum(up, up)
    # A bin's table has S slots for rows of at most S / 2 columns (short probe sequences).
    edges = [S // 2 for S, _, _ in gc.SHARED_BINS]
    I, TA, TB = gc.index_ctype(it), gc.ctype(Ax.dtype), gc.ctype(Bx.dtype)
    Mp, Mj = (_zero(it),) * 2 if Mp is None else (Mp, Mj)
    Cp = cupy.zeros(m + 1, dtype=cupy.int64)

    one = gc.ONE_LAUNCH

    def names(offsets, numeric, chunks):
        sizes = np.diff(offsets)
        esc = numeric and SHORT_ROWS
        used = [gc.binned_name(I, TA, TB, numeric, mode, esc)] if sizes[:one].any() else []
        used += [gc.shared_name(I, TA, TB, S, wpr, rpb, numeric, mode)
                 for (S, wpr, rpb), c in zip(gc.SHARED_BINS[one:], sizes[one:-1]) if c]
        return used + sorted({gc.global_name(I, TA, TB, numeric, mode, c[3]) for c in chunks})

    def launch(bins, chunks, numeric: bool, Cj, Cx, base, counts):
        """Every kernel of a pass on the rows ``bins``: the one launch of the 256-thread bins
        on the caller's stream, and beside it the larger bins' and the global tables' rows on
        side streams of a higher priority (their blocks taken first as SMs free up), which the
        caller's stream then waits for (a bin of a few long rows holds a few SMs: alone after
        the others it left the device idle, 0.31 of 0.70 ms of kernels at 10^4 vertices).
        ``base``: the rows' places in Cj/Cx; ``counts``: each row's size, counted."""
        sizes = np.diff(bins.offsets)
        args = (Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj, counts, base, Cj, Cx)
        rows, offsets = bins.rows, bins.offsets
        big = []  # (side stream, launch) of the larger bins, the slowest rows first

        def tables(grows, toff, total, dense):  # the global tables' chunks, one after another
            def go():  # allocated on the side stream (its pool's memory, freed in its order)
                keys = cupy.empty(total, dtype=cupy.int32)
                vals = cupy.empty(total if numeric else 1, dtype=work)
                kernel(gc.global_name(I, TA, TB, numeric, mode, dense))(
                    (grows.size,), (512,),
                    (grows, np.int64(grows.size), _ptr(toff), np.int64(n if dense else 0), keys, vals) + args)
            return go
        big += [(0, tables(*c)) for c in chunks]
        for b in range(len(gc.SHARED_BINS) - 1, one - 1, -1):
            if sizes[b] == 0:
                continue
            S, wpr, rpb = gc.SHARED_BINS[b]
            smem = _shared_bytes(S, rpb, numeric, work)
            fn = opted(gc.shared_name(I, TA, TB, S, wpr, rpb, numeric, mode), smem)
            big.append((1 + (b - one) % (_SIDE_STREAMS - 1), functools.partial(
                fn, (_grid(sizes[b], rpb),), (32 * wpr * rpb,),
                (rows[offsets[b]:offsets[b + 1]], np.int64(sizes[b])) + args, shared_mem=smem)))

        def binned_launch():  # the 256-thread bins: one launch (gb_spgemm_binned)
            if not sizes[:one].any():
                return
            rpb = [b[2] for b in gc.SHARED_BINS[:one]]
            blocks = sum(-(-int(c) // r) for c, r in zip(sizes[:one], rpb))
            smem = max(_shared_bytes(S, r, numeric, work)
                       for (S, _, r), c in zip(gc.SHARED_BINS[:one], sizes) if c)
            fn = opted(gc.binned_name(I, TA, TB, numeric, mode, numeric and SHORT_ROWS), smem)
            fn((blocks,), (256,), (rows, bins.ends, np.int64(bins.nblocks)) + args, shared_mem=smem)
        _beside(binned_launch, big)

    def opted(name: str, smem: int):
        """The kernel ``name``, opted in to ``smem`` bytes of dynamic shared memory (above
        48 KiB with the static scratch)."""
        fn = kernel(name)
        if smem > 32 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        return fn

    # Rows binned by their bound; in one pass the numeric pass straight away, else the
    # symbolic pass counts each row's distinct columns. The bins' sizes and the bounds' sum
    # (Up's last entry) come back in one read.
    bins = binned(ub, edges, skip_zero=True, extra=Up[-1:])
    total = bins.extra
    grows = bins.rows[bins.offsets[-2]:]
    chunks = global_chunks(grows, ub, n)
    Tx = None
    if ONE_PASS and total and _one_pass_fits(total, work):
        Tj, Tx = _buffers(total, work)
    if Tx is not None:  # one pass: row i written at the sum of the bounds before it (Up)
        # Small products: the compacted copy allocated now, at the bounds' size, so the
        # compaction follows the numeric kernels with no read between (the result's size is
        # read at the end); larger ones read the size first and allocate it exactly.
        early = total * (4 + work.itemsize) <= _EARLY_BYTES and _one_pass_fits(2 * total, work)
        Cj, Cx = _buffers(total, work) if early else (None, None)
        kernel = K._kernels(sr.mul, sr.add, out, names(bins.offsets, True, chunks)).__getitem__
        counts = Cp[1:]  # the kernels count each row's entries into Cp[1:], scanned in place
        launch(bins, chunks, True, Tj, Tx, Up, counts)
        del bins
        inclusive_sum(counts, counts)

        def compact(Cj, Cx, g):  # each row from its bound's place (Up) to its place (Cp)
            _bin_module().get_function(f"gb_compact_rows<{_WORDS[work.itemsize]}>")(
                (_grid(m * g, 256),), (256,), (Up, Cp, np.int64(m), Tj, Tx, Cj, Cx, np.int32(g)))
        ptr = None
        if Cx is not None:
            compact(Cj, Cx, lanes(total, m))
            ptr = Cp.astype(cupy.int32) if total < 2**31 else Cp  # the result's, queued before the read
            nnz = int(Cp[-1].get())
            Cj, Cx = _trimmed(Cj, nnz), _trimmed(Cx, nnz)
        else:
            nnz = int(Cp[-1].get())
            if nnz == total:  # no row's products combined: every row fills its bound
                Cj, Cx = Tj, Tx
            else:
                Cj, Cx = _buffers(nnz, work)
                if Cj is not None:
                    compact(Cj, Cx, lanes(nnz, m))
        del Tj, Tx
        if Cj is not None:
            if grows.size and not chunks[0][3]:  # hashed tables write their rows unsorted
                sort_rows(Cp, Cj, Cx, grows, n)
            return _result(K, Cx, Cj, Cp, out, (m, n), ptr)
        # the compacted copy did not fit beside the bounds' slots: the counts are exact now,
        # so the two passes' numeric step runs (no symbolic pass)
        counts = cupy.diff(Cp)
    else:
        nothing = cupy.zeros(0, dtype=cupy.int32), cupy.zeros(0, dtype=work)
        kernel = K._kernels(sr.mul, sr.add, out, names(bins.offsets, False, chunks)).__getitem__
        counts = cupy.zeros(m, dtype=cupy.int64)
        launch(bins, chunks, False, *nothing, Cp, counts)
        del bins
        inclusive_sum(counts, Cp[1:])
    # Numeric: rows binned again by their exact size, so a row whose products mostly
    # combine (or fall outside the mask) gets the smaller table its result needs; the
    # bins' sizes and the output's size come back in one read.
    bins = binned(counts, edges, skip_zero=True, extra=Cp[-1:])
    nnz = bins.extra
    Cj = cupy.empty(nnz, dtype=cupy.int32)
    Cx = cupy.empty(nnz, dtype=work)
    if nnz:
        grows = bins.rows[bins.offsets[-2]:]
        chunks = global_chunks(grows, counts, n)
        kernel = K._kernels(sr.mul, sr.add, out, names(bins.offsets, True, chunks)).__getitem__
        launch(bins, chunks, True, Cj, Cx, Cp, counts)
        if grows.size and not chunks[0][3]:  # hashed tables write their rows unsorted
            sort_rows(Cp, Cj, Cx, grows, n)
    return _result(K, Cx, Cj, Cp, out, (m, n))


def _beside(main, big) -> None:
    """``main()`` (its launches on the caller's stream) and, beside it, ``big`` [(side stream
    number, launch())] on side streams that start after the work the caller's stream held
    before ``main``; then the caller's stream waits for them. ``big``'s arrays are the caller's
    until this returns (the pool hands memory freed on the caller's stream to its later work
    only, which the wait orders after the side streams')."""
    if not big:
        main()
        return
    import cupy
    caller = cupy.cuda.get_current_stream()
    ready = cupy.cuda.Event(disable_timing=True)
    ready.record(caller)
    main()
    streams = _side_streams(1 + max(i for i, _ in big))
    used = [streams[i] for i in sorted({i for i, _ in big})]
    for s in used:
        s.wait_event(ready)
    for i, go in big:
        with streams[i]:
            go()
    for s in used:
        done = cupy.cuda.Event(disable_timing=True)
        done.record(s)
        caller.wait_event(done)


_SIDE_STREAMS = 4
_STREAMS: dict = {}


def _side_streams(count: int):
    """``count`` (at most :data:`_SIDE_STREAMS`) non-blocking streams of the current device at
    its highest priority, made once: the global tables' chunks take the first, the larger
    shared bins the others."""
    import cupy
    dev = cupy.cuda.Device().id
    have = _STREAMS.setdefault(dev, [])
    while len(have) < count:
        try:
            high = cupy.cuda.runtime.deviceGetStreamPriorityRange()[1]
            have.append(cupy.cuda.Stream(non_blocking=True, priority=high))
        except (AttributeError, TypeError):  # a CuPy without stream priorities
            have.append(cupy.cuda.Stream(non_blocking=True))
    return have[:count]


def _spans(B, Bp, Bj, k: int, n: int):
    """(lo, hi): each B row's smallest and largest column (``gb_row_span``; lo = n, hi = -1 for
    an empty row), kept on B (a fact of B alone, reused by every product with it). Keyed by B's
    own buffers: ``Bp``/``Bj`` may be index-type copies made for this call, whose addresses
    the memory pool hands out again."""
    import cupy
    key = (int(B.indptr.data.ptr), int(B.indices.data.ptr), int(B.indices.size), k, n)
    hit = recall(B, "_gbdist_row_span", key)
    if hit is not MISS:
        return hit
    blo, bhi = cupy.empty(max(k, 1), dtype=cupy.int32), cupy.empty(max(k, 1), dtype=cupy.int32)
    if k:
        g = lanes(Bj.size, k)
        _bin_module().get_function(f"gb_row_span<{gc.index_ctype(Bp.dtype)}>")(
            (_grid(k * g, 256),), (256,), (Bp, Bj, np.int64(k), np.int64(n), blo, bhi, np.int32(g)))
    return keep(B, "_gbdist_row_span", key, (blo, bhi))


_EARLY_BYTES = 1 << 30
"""One-pass products whose bounds' slots take at most this many bytes allocate the compacted
copy with them (:func:`spgemm`): no read between the numeric kernels and the compaction."""


def _trimmed(a, size: int):
    """``a[:size]``: a view while the slack past it is at most an eighth of it (or 1 MiB),
    else a copy (a result should not hold much more memory than its entries)."""
    if (a.size - size) * a.itemsize * 8 <= max(size * a.itemsize, 1 << 23):
        return a[:size]
    return a[:size].copy()


def _result(K, Cx, Cj, Cp, out, shape, indptr=None):
    """The product as a CSR: values in ``out`` (from the accumulator's), int32 row pointers
    where the entries fit (``indptr``: those pointers, made already)."""
    import cupy
    if indptr is None:
        indptr = Cp.astype(cupy.int32) if Cj.size < 2**31 else Cp
    return make_csr(K._finish(Cx, out), Cj, indptr, shape)


_ZEROS: dict = {}


def _zero(dtype):
    """A one-element zero index array of ``dtype`` on the current device (an absent mask's
    pointers: read by no kernel), made once."""
    import cupy
    key = (np.dtype(dtype).str, cupy.cuda.Device().id)
    z = _ZEROS.get(key)
    if z is None:
        z = _ZEROS[key] = cupy.zeros(1, dtype=dtype)
    return z


def lanes(entries: int, rows: int) -> int:
    """Lanes a row for the bounds' and the compaction's kernels: the power of two at or above
    the rows' mean length, 1 to 32 (a warp a 7-entry row left 25 lanes idle: on 7-point
    Poisson 128³ the span and bound kernels took 0.42 and 0.63 ms of a 5.7 ms product, one
    H200, 2026-11-28 (g))."""
    mean = -(-int(entries) // max(int(rows), 1))
    return 1 << min(5, max(0, (mean - 1).bit_length()))


def global_chunks(rows, ub, n: int):
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


def sort_rows(Cp, Cj, Cx, rows, n: int) -> None:
    """Sort the entries of ``rows`` (written unsorted by the hashed global tables) by column."""
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
