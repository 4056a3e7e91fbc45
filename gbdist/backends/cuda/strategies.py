"""The CUDA strategies as ONE table: each names its kernels, launches them and estimates
its cost, so the backend chooses and runs a strategy without a chain of cases.

A strategy computes a whole output tile of the products and the epilogue (row
reductions are computed before it, into ``colbuf`` / ``rowbuf``):

* ``gather``: R left rows dense in shared memory (k-chunked), right rows streamed
  (the paper's hybrid CSR+COO); two launches for a two-pass union;
* ``scatter``: a block per left row walks B's columns for its stored k; atomics in
  shared memory (intersections and union corrections, 32-bit indices);
* ``sorted``: the union by sorted merges (two-pass unions whose ⊗ orders the values);
* ``dense``: densified φ(A), ψ(B) through cuBLAS GEMM, then ``gb_epilogue``;
* ``dense_union``: both sides' raw values densified, ⊕ of ⊗ over every column in a tiled
  GEMM-shaped kernel (one pass for a max/min union); offered by :func:`estimate` only
  while :data:`DENSE_UNION` is on (off until its GPU tests pass), forced always.

The cost model's rates were fitted to H100 runs of every strategy on the five real
data sets (docs/cuda.md, docs/benchmarks.md). To add a strategy: a kernel template in
kernels/, its name in the generated source (codegen), and a :class:`Strategy` here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...errors import InputError
from . import cache
from .kept import Kept, form
from .operands import DevCSR

THREADS = 512
ROWS_CHOICES = (8, 4, 2, 1)
# Rates of the cost model (per second), fitted to H100 runs (docs/benchmarks.md); the sorted
# union's refitted on an H200 (benchmarks/strategy_profile.py, 2,048 query rows: 27.6, 5.7,
# 13.1, 57.2 ms on the 283K power law, SEC names, Newsgroups, 66K x 26K; gather 1,578, 56,
# 81, 643 ms; the old rates sent the last to gather at 11x the sorted union's time).
RATES = {"gather_fixed": 3.5e-4, "gather_pairs": 7.8e11, "gather_rows": 3.2e9,
         "scatter_fixed": 9e-4, "scatter_pairs": 3.5e11, "scatter_cells": 4e10,
         "dense_fixed": 2e-4, "gemm_flops": 3.5e13, "bytes": 1.5e12,
         "sorted_fixed": 1.5e-3, "sort": 1e10, "sorted_pairs": 3e11, "sorted_cells": 3.3e11}
# Cost of an 8-byte shared-memory atomic add over a 4-byte one at 512 threads per block
# (benchmarks/atomics_probe.py, retired: docs/benchmarks.md on an H100). Without it the model priced scatter the same
# under float64 accumulation, and kept it on Tabula Muris manhattan, where gather was
# 22% faster (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md, 2026-11-24).
ATOMIC64 = 1.33


@dataclass
class Job:
    """One tile's work: the generated plan, its operands and buffers."""

    gen: object
    left: DevCSR
    right: DevCSR
    K: int
    dt: np.dtype
    at: np.dtype
    itype_c: str
    rows_per_block: int | None = None
    colbuf: object = None
    rowbuf: object = None
    # κ(w) of the weighted steps (codegen.Generated.weights), NW × K in the accumulator
    # type, read by the gather kernel at each column; None for an unweighted plan
    wts: object = None
    # the memos of the left and right operands when the tile reads them whole (None
    # otherwise): a strategy may keep a per-operand form there (dense: the densified rows)
    memos: tuple = (None, None)
    # forms of the tile's operand slices kept for the rest of the call (:class:`Kept`), and
    # the tile's (left rows, right rows) ranges that key them
    kept: Kept | None = None
    slices: tuple = ((0, 0), (0, 0))

    @property
    def n_left(self) -> int:
        return self.left.shape[0]

    @property
    def n_right(self) -> int:
        return self.right.shape[0]


@dataclass(frozen=True)
class Strategy:
    name: str
    kernels: Callable  # (job) -> tuple of kernel names
    launch: Callable  # (mod, job) -> the tile's values (n_left × n_right, dt)
    estimate: Callable  # (job) -> seconds, or None when it cannot run the job


def _device_attr(name: str, default: int) -> int:
    import cupy
    return int(cache.attributes(cupy.cuda.Device().id).get(name, default))


def _op_weights(gen, per: float) -> float:
    import sympy as sp
    return sum(1.0 + max(0, sp.count_ops(a.mul) - 6) / per for a in gen.accumulators)


def _pairs(job: Job) -> float:
    """Σ over A's entries of B's column degree: the pairs of entries sharing a column."""
    import cupy
    deg = cupy.bincount(job.right.indices, minlength=job.K)
    return float(deg[job.left.indices].sum())


# --- gather -------------------------------------------------------------------------


def gather_config(gen, K: int, dt, rows_per_block: int | None):
    """(R rows per block, k-chunk width, shared-memory budget) for this device.

    R rows of the dense side share each load of a streamed entry, so the largest R
    whose rows fit shared memory whole is taken; when even one row does not fit,
    R = 8 with k-chunks (per-chunk row offsets are precomputed, so chunking costs no
    searches in the kernel)."""
    budget = _device_attr("MaxSharedMemoryPerBlockOptin", 48 * 1024) - 1024
    per_col = dt.itemsize + (1 if gen.masked else 0)
    choices = (rows_per_block,) if rows_per_block else ROWS_CHOICES
    for R in choices:
        if R * max(K, 1) * per_col <= budget:
            return R, max(K, 1), budget
    R = rows_per_block or ROWS_CHOICES[0]
    kchunk = max(32, budget // (R * per_col))
    return R, kchunk, budget


def _group_size(stream: DevCSR, nch: int, R: int) -> int:
    """Lanes per streamed row: about the average stored entries per row and chunk."""
    avg = stream.nnz / max(stream.shape[0], 1) / max(nch, 1)
    G = 32 if avg > 24 else 16 if avg > 12 else 8
    return max(G, R)


def _gather_launches(job: Job):
    R, kchunk, _ = gather_config(job.gen, job.K, job.dt, job.rows_per_block)
    nch = -(-max(job.K, 1) // kchunk)
    out = []
    for mode in ((1, 2) if job.gen.union else (0,)):
        dense, stream = (job.right, job.left) if mode == 2 else (job.left, job.right)
        G = _group_size(stream, nch, R)
        out.append((mode, dense, stream, f"gb_gather<Spec, {R}, {mode}, {G}, {job.itype_c}>"))
    return (R, kchunk, nch), out


def _gather_kernels(job: Job):
    (_, _, nch), launches = _gather_launches(job)
    names = tuple(dict.fromkeys(n for *_, n in launches))
    return names + ((f"gb_chunk_ptr<{job.itype_c}>",) if nch > 1 else ())


def _gather_launch(mod, job: Job):
    import cupy
    (R, kchunk, nch), launches = _gather_launches(job)
    gen, at = job.gen, job.at
    sm = _device_attr("MultiProcessorCount", 132)
    out = cupy.empty((job.n_left, job.n_right), dtype=job.dt)
    need_tmp = gen.union or nch > 1
    nacc = len(gen.accumulators)
    tmp = cupy.empty(nacc * job.n_left * job.n_right, dtype=at) if need_tmp else cupy.zeros(1, dtype=at)
    smem = R * kchunk * (job.dt.itemsize + (1 if gen.masked else 0))
    cps_cache: dict = {}
    wts = job.wts if job.wts is not None else cupy.zeros(1, dtype=at)

    def chunk_ptrs(d: DevCSR):
        if nch == 1:
            return d.indptr  # unused by the kernel
        if id(d) not in cps_cache:
            out_ = cupy.empty(d.shape[0] * (nch + 1), dtype=d.indptr.dtype)
            fn = mod.get_function(f"gb_chunk_ptr<{job.itype_c}>")
            fn((max(1, min(65535, (out_.size + 255) // 256)),), (256,),
               (d.indptr, d.indices, np.int64(d.shape[0]), np.int64(kchunk), np.int32(nch), out_))
            cps_cache[id(d)] = out_
        return cps_cache[id(d)]

    for mode, dense, stream, name in launches:
        fn = mod.get_function(name)
        fn.max_dynamic_shared_size_bytes = smem
        gx = (dense.shape[0] + R - 1) // R
        gy = max(1, min(65535, (4 * sm + gx - 1) // max(gx, 1)))
        gy = min(gy, max(1, stream.shape[0]))
        fn((max(gx, 1), gy), (THREADS,),
           (dense.indptr, dense.indices, dense.data, np.int64(dense.shape[0]),
            stream.indptr, stream.indices, stream.data, np.int64(stream.shape[0]),
            np.int64(job.K), np.int64(kchunk), chunk_ptrs(dense), chunk_ptrs(stream),
            out, tmp, np.int64(job.n_left), np.int64(job.n_right), job.colbuf, job.rowbuf,
            wts), shared_mem=smem)
    return out


def _gather_estimate(job: Job):
    """Every block of R left rows streams all of B's entries: pair work m·nnz(B),
    weighted by the cost of ⊗, plus a cost per (block, streamed row, k-chunk)."""
    R, kchunk, _ = gather_config(job.gen, job.K, job.dt, None)
    nch = -(-max(job.K, 1) // kchunk)
    m, n = job.n_left, job.n_right
    return (RATES["gather_fixed"] + _op_weights(job.gen, 3.0) * m * job.right.nnz / RATES["gather_pairs"]
            + (m / R) * n * nch / RATES["gather_rows"])


# --- scatter and sorted -----------------------------------------------------------


# Most shared-memory bytes of accumulators per scatter block. None: the occupancy rule
# (_scatter_cap); 0: the device's opt-in limit per block (one column tile as wide as
# fits: the rule before 2026-11-23); an int: that many bytes (benchmarks/scatter_tiles_probe.py, retired: docs/benchmarks.md).
SCATTER_SMEM_CAP: int | None = None
# The sorted union's shared memory per block is capped like the scatter's (four blocks an
# SM) when its column bitmask leaves room; False: one tile as wide as fits (the old form).
SORTED_CAPPED = True


def _scatter_cap() -> int:
    """Accumulator bytes per scatter block such that four 512-thread blocks fit on an SM
    (2048 threads, full occupancy), 1 KiB of each block's share kept for the runtime.

    Narrower column tiles walk A's row once per tile, but occupancy matters more: on an
    H100 (228 KiB per SM) capping the tile at 56 KiB made scatter 5-36% faster than one
    tile as wide as fits, in float32 and float64, on Newsgroups, SEC names and a 283K-
    column power-law output, and changed nothing measurable on KOS and Tabula Muris
    (benchmarks/results/h100-2026-11-23c-scatter-tiles*.json)."""
    if SCATTER_SMEM_CAP is not None:
        return SCATTER_SMEM_CAP
    per_sm = _device_attr("MaxSharedMemoryPerMultiprocessor", 228 * 1024)
    return max(per_sm // 4 - 1024, 1024)


def _column_tiles(mod, job: Job, bytes_per_column: int, reserved: int, cap: int = 0):
    """Bᵀ in CSR (row k lists the j storing column k) and, for output tiles of J
    columns sized to shared memory, each k's offsets per tile (gb_chunk_ptr)."""
    import cupy
    import cupyx.scipy.sparse as cps
    right, K = job.right, job.K
    itype = right.indptr.dtype

    def transposed():
        bt = cps.csr_matrix((right.data, right.indices, right.indptr), shape=right.shape).T.tocsr()
        bt.sort_indices()
        return bt.indptr.astype(itype), bt.indices.astype(itype), bt.data

    bt_indptr, bt_indices, bt_data = form(job, 1, ("transposed", job.itype_c), transposed)
    optin = _device_attr("MaxSharedMemoryPerBlockOptin", 48 * 1024)
    limit = optin - 1024 - reserved
    if cap:  # at least 256 columns a tile where the reserved bytes leave less under the cap
        limit = min(limit, max(cap - reserved, 256 * bytes_per_column))
    J = max(1, min(job.n_right, limit // bytes_per_column))
    ntiles = -(-job.n_right // J)
    tptr = cupy.empty(K * (ntiles + 1), dtype=itype)
    fn = mod.get_function(f"gb_chunk_ptr<{job.itype_c}>")
    fn((max(1, min(65535, (tptr.size + 255) // 256)),), (256,),
       (bt_indptr, bt_indices, np.int64(K), np.int64(J), np.int32(ntiles), tptr))
    return bt_indices, bt_data, tptr, J, ntiles


def _scatter_threads(smem: int) -> int:
    """Threads per scatter block: 1024 where a block's accumulator row is so large that
    fewer than four 512-thread blocks fit on an SM (8-byte accumulators on wide outputs),
    so the SM stays fully occupied; else 512 (benchmarks/atomics_probe.py, retired: docs/benchmarks.md)."""
    per_sm = _device_attr("MaxSharedMemoryPerMultiprocessor", 228 * 1024)  # blocks share it
    return 1024 if per_sm // max(smem + 1024, 1) < 4 else THREADS


def _scatter_kernel(job: Job, threads: int) -> str:
    return f"gb_scatter<Spec, {job.itype_c}, {threads}>"


def _scatter_launch(mod, job: Job):
    import cupy
    left = job.left
    nacc = len(job.gen.accumulators)
    bt_idx, bt_val, tptr, J, ntiles = _column_tiles(mod, job, nacc * job.at.itemsize, 0,
                                                    cap=_scatter_cap())
    out = cupy.empty((job.n_left, job.n_right), dtype=job.dt)
    smem = nacc * J * job.at.itemsize
    threads = _scatter_threads(smem)
    fn = mod.get_function(_scatter_kernel(job, threads))
    fn.max_dynamic_shared_size_bytes = smem
    fn((job.n_left, ntiles), (threads,),
       (left.indptr, left.indices, left.data, np.int64(job.n_left),
        bt_idx, bt_val, tptr, np.int32(ntiles), np.int64(J),
        np.int64(job.n_right), np.int64(job.K), out, job.colbuf, job.rowbuf), shared_mem=smem)
    return out


def _scatter_estimate(job: Job):
    """Work per pair of entries sharing a column (one bincount), plus writing the m×n
    output, plus a fixed cost (Bᵀ is built per call). Each pair is a shared-memory
    atomic: an 8-byte one (float64 accumulators) costs ATOMIC64 times a 4-byte one."""
    if job.itype_c != "int" or not job.left.nnz or not job.right.nnz:
        return None
    per_pair = _op_weights(job.gen, 20.0) * (ATOMIC64 if np.dtype(job.at).itemsize == 8 else 1.0)
    return (RATES["scatter_fixed"] + per_pair * _pairs(job) / RATES["scatter_pairs"]
            + job.n_left * job.n_right / RATES["scatter_cells"])


def _sorted_perm(mod, d: DevCSR, key_struct: str, order: str, at):
    """Per-row permutation of d's entries by key (L or R of the value), desc or asc; equal
    keys in any order (the walks read the same value). float32 keys: one radix argsort of
    64-bit words, the row above the key's order-preserving bits (a two-key lexsort is a merge
    sort: 11.9 of a 2,048-row block's 37 ms on the 283K power law, H200); float64: lexsort."""
    import cupy
    import cupyx
    keys = cupy.empty(d.nnz, dtype=at)
    fn = mod.get_function(f"gb_map_values<{key_struct}>")
    fn((max(1, min(65535, (d.nnz + 255) // 256)),), (256,), (d.data, np.int64(d.nnz), keys))
    marker = cupy.zeros(d.nnz + 1, dtype=cupy.int32)
    if d.shape[0] > 1:
        cupyx.scatter_add(marker, d.indptr[1:-1].astype(cupy.int64), 1)
    rows = cupy.cumsum(marker[:-1])
    if np.dtype(at) == np.float32:
        words = _ordered_bits(keys, descending=order == "desc")
        words |= rows.astype(cupy.uint64) << np.uint64(32)
        return cupy.argsort(words).astype(d.indptr.dtype)
    perm = cupy.lexsort(cupy.stack([-keys if order == "desc" else keys, rows.astype(at)]))
    return perm.astype(d.indptr.dtype)


def _ordered_bits(keys, descending: bool):
    """float32 keys (NumPy or CuPy) as uint64 words, in the low 32 bits, whose unsigned
    order is the keys' (ascending, or descending): sign bit clear, the sign bit set; set,
    every bit flipped; -0.0 just before +0.0."""
    b = keys.view(np.uint32)
    u = b ^ (((b >> np.uint32(31)) * np.uint32(0x7FFFFFFF)) | np.uint32(0x80000000))
    if descending:
        u = ~u
    return u.astype(np.uint64)


UNION_TOP = 4  # kernels/union_sorted.cuh GB_UNION_TOP: each row's first entries in a table


def _top_entries(d: DevCSR, perm):
    """Each row's first UNION_TOP entries in ``perm``'s order as two rank-major tables
    (column, stored value; column -1 past the row's end), read by consecutive threads."""
    import cupy
    n = d.shape[0]
    start = d.indptr[:-1]
    count = d.indptr[1:] - start
    topc = cupy.full((UNION_TOP, n), -1, dtype=d.indptr.dtype)
    topv = cupy.zeros((UNION_TOP, n), dtype=d.data.dtype)
    if not d.nnz:
        return topc, topv  # every row past its end
    for r in range(UNION_TOP):
        has = count > r
        e = perm[cupy.where(has, start + r, 0)]
        topc[r] = cupy.where(has, d.indices[e], -1)
        topv[r] = cupy.where(has, d.data[e], 0)
    return topc, topv


def _sorted_launch(mod, job: Job):
    import cupy
    left, right, gen = job.left, job.right, job.gen
    aperm, bperm = (form(job, side, ("order", name, gen.key, gen.sorted_order, job.at.str,
                                      job.itype_c),
                          lambda d=d, name=name: _sorted_perm(mod, d, name, gen.sorted_order, job.at))
                    for side, d, name in ((0, left, "UKeyL"), (1, right, "UKeyR")))
    topc, topv = form(job, 1, ("top", gen.key, gen.sorted_order, job.at.str, job.itype_c),
                       lambda: _top_entries(right, bperm))
    words = (job.K + 31) // 32  # A_i's column bitmask
    # per output column: its accumulator and a byte of flags (A_i's first entries it shares)
    bt_idx, bt_val, tptr, J, ntiles = _column_tiles(mod, job, job.at.itemsize + 1, 4 * words + 4,
                                                    cap=_scatter_cap() if SORTED_CAPPED else 0)
    out = cupy.empty((job.n_left, job.n_right), dtype=job.dt)
    fn = mod.get_function(f"gb_union_sorted<Spec, {job.itype_c}>")
    smem = J * job.at.itemsize + 4 * words + 4 * ((J + 3) // 4)
    fn.max_dynamic_shared_size_bytes = smem
    fn((job.n_left, ntiles), (THREADS,),
       (left.indptr, left.indices, left.data, aperm, np.int64(job.n_left),
        right.indptr, right.indices, right.data, bperm, topc, topv,
        bt_idx, bt_val, tptr, np.int32(ntiles), np.int64(J),
        np.int64(job.n_right), np.int64(job.K), out, job.colbuf, job.rowbuf), shared_mem=smem)
    return out


def _sorted_estimate(job: Job):
    if job.itype_c != "int" or not job.left.nnz or not job.right.nnz:
        return None
    logb = float(np.log2(max(2.0, job.right.nnz / max(job.n_right, 1))))
    return (RATES["sorted_fixed"] + (job.left.nnz + job.right.nnz) / RATES["sort"]
            + _op_weights(job.gen, 20.0) * _pairs(job) / RATES["sorted_pairs"]
            + job.n_left * job.n_right * (logb + 2) / RATES["sorted_cells"])


# --- dense --------------------------------------------------------------------------


def _dense_kernels(job: Job):
    names = ()
    for terms in job.gen.dense_maps:
        for (lname, _), (rname, _) in terms:
            names += (f"gb_densify<{lname}, {job.itype_c}>", f"gb_densify<{rname}, {job.itype_c}>")
    return names + ("gb_epilogue<Spec>",)


DENSE_KEEP_BYTES = 64 << 20  # a whole operand's densified rows kept in its memo up to this


def _densified(mod, job: Job, side: int, terms, width: int):
    """One side's rows densified for the product's terms (each term's map and fill in its
    K-column block); kept in the operand's memo when the tile reads it whole and the copy
    is small (a prepared operand, e.g. a fitted index, is densified once)."""
    import cupy
    d, memo = (job.left, job.memos[0]) if side == 0 else (job.right, job.memos[1])
    maps = tuple(t[side] for t in terms)
    # the maps' names are the generated module's own (DMapL0_0 …): keyed by its key too
    key = ("densified", job.gen.key, maps, job.K, np.dtype(job.at).str, job.itype_c)
    keep = memo is not None and d.shape[0] * width * np.dtype(job.at).itemsize <= DENSE_KEEP_BYTES
    if keep and key in memo:
        return memo[key]
    buf = cupy.empty((d.shape[0], width), dtype=job.at)
    for r, (name, fill) in enumerate(maps):
        buf[:, r * job.K:(r + 1) * job.K] = fill
        fn = mod.get_function(f"gb_densify<{name}, {job.itype_c}>")
        blocks = max(1, min(65535, (d.shape[0] * 32 + 255) // 256))
        fn((blocks,), (256,), (d.indptr, d.indices, d.data, np.int64(d.shape[0]),
                              np.int64(width), np.int64(r * job.K), buf))
    if keep:
        memo[key] = buf
    return buf


def _dense_launch(mod, job: Job):
    import cupy
    K, at, n_left, n_right = job.K, job.at, job.n_left, job.n_right
    accbuf = cupy.empty((len(job.gen.accumulators), n_left, n_right), dtype=at)
    for s, terms in enumerate(job.gen.dense_maps):
        width = len(terms) * K
        dl = _densified(mod, job, 0, terms, width)
        dr = _densified(mod, job, 1, terms, width)
        cupy.matmul(dl, dr.T, out=accbuf[s])
        del dl, dr
    out = cupy.empty((n_left, n_right), dtype=job.dt)
    fn = mod.get_function("gb_epilogue<Spec>")
    total = n_left * n_right
    fn((max(1, min(65535 * 4, (total + 255) // 256)),), (256,),
       (accbuf, np.int64(n_left), np.int64(n_right), np.int64(K), out, job.colbuf, job.rowbuf))
    return out


def _dense_estimate(job: Job):
    """The GEMM's flops plus densifying (when the dense copies fit a quarter of the free
    memory)."""
    import cupy
    m, n = job.n_left, job.n_right
    rk = sum(len(t) for t in job.gen.dense_maps) * job.K
    dense_bytes = (m + n) * rk * job.gen.acc_itemsize  # densified in the accumulator type
    # (small copies fit: asking the driver costs more than a small call's product)
    if dense_bytes > DENSE_KEEP_BYTES and dense_bytes >= cupy.cuda.runtime.memGetInfo()[0] // 4:
        return None
    return (RATES["dense_fixed"] + 2.0 * m * n * rk / RATES["gemm_flops"]
            + (dense_bytes + m * n * job.dt.itemsize * 3) / RATES["bytes"])


# --- dense union -------------------------------------------------------------------

# Off: estimate() never offers the dense union (strategy="dense_union" still runs it). To be
# switched on once tests/backends/test_dense_union_gpu.py passes and its rates are refitted
# (benchmarks/results/2026-11-28-dense_union.py).
DENSE_UNION = False
# Its cost model, per second; guesses to be refitted on a GPU. du_evals: columns a second for
# one output each (one Spec::step) with a cheap ⊗ in float: an H200 issues 132 SMs × 128
# lanes × 1.98 GHz ≈ 3.3e13 FP32 lane-instructions/s, and chebyshev's step is about six
# (|x − y| as one FADD with a modifier, gb_max's two NaN tests and two selects, a quarter of a
# shared-memory load at 8 × 8 outputs a thread): 5e12 with the loads' latency. That prices
# Tabula Muris' kNN (1,067² × 23,433 ≈ 2.7e10 columns) at ~5.5 ms against gather's measured
# 4.4 ms of kernels: not a sure win unless gb_max gets cheaper (PTX max.NaN.f32 on sm_80+).
DU_RATES = {"du_fixed": 1e-4, "du_evals": 5e12}
# A ⊗'s cost over chebyshev's, per division and per transcendental in its formula (a float
# IEEE division is ~10 instructions, a sqrt ~8, a log/exp/pow ~20, against ~6 a column), and
# the accumulators in double (half the FP32 issue rate on an H100/H200, plus the widening).
DU_DIV, DU_TRANSCENDENTAL, DU_DOUBLE = 2.0, 3.0, 2.0
DU_SPLIT_BYTES = 256 << 20  # most bytes of split-K partial accumulators


def _dense_union_tile(job: Job) -> tuple[int, int, int]:
    """(TM, TN, BK) of gb_dense_union: 8 × 8 outputs a thread for one float accumulator,
    else 4 × 4 (registers: TM·TN·NACC accumulators, 8-byte in double)."""
    from .codegen import DENSE_UNION_TILES
    one_float = len(job.gen.accumulators) == 1 and np.dtype(job.at).itemsize == 4
    return DENSE_UNION_TILES[0] if one_float else DENSE_UNION_TILES[1]


def _dense_union_grid(job: Job):
    """(TM, TN, BK), the grid (gx, gy, splits) and the columns of a split: K is split so that
    a small output (a kNN query block) still fills the device, about four blocks an SM, with
    the partial accumulators at most DU_SPLIT_BYTES."""
    tm, tn, bk = _dense_union_tile(job)
    m, n, K = job.n_left, job.n_right, max(job.K, 1)
    gx, gy = -(-n // (16 * tn)), -(-m // (16 * tm))
    nch = -(-K // bk)
    sm = _device_attr("MultiProcessorCount", 132)
    splits = min(nch, 16, max(1, -(-4 * sm // max(gx * gy, 1))))
    cell = len(job.gen.accumulators) * np.dtype(job.at).itemsize * max(m * n, 1)
    splits = max(1, min(splits, DU_SPLIT_BYTES // cell))
    kper = -(-nch // splits) * bk
    return (tm, tn, bk), (gx, gy, -(-K // kper)), kper


def _dense_union_kernels(job: Job):
    tm, tn, bk = _dense_union_tile(job)
    return (f"gb_densify<gb_raw_map<Spec>, {job.itype_c}>", f"gb_dense_union<Spec, {tm}, {tn}, {bk}>",
            "gb_dense_union_finish<Spec>")


def _raw_densified(mod, job: Job, side: int):
    """One side's stored values in a dense rows × K array of the storage type (0 where
    unstored), kept in the operand's memo like the dense strategy's copies."""
    import cupy
    d, memo = (job.left, job.memos[0]) if side == 0 else (job.right, job.memos[1])
    key = ("raw densified", job.K, np.dtype(job.dt).str, job.itype_c)
    keep = memo is not None and d.shape[0] * job.K * np.dtype(job.dt).itemsize <= DENSE_KEEP_BYTES
    if keep and key in memo:
        return memo[key]
    buf = cupy.zeros((d.shape[0], job.K), dtype=job.dt)
    if d.nnz:
        fn = mod.get_function(f"gb_densify<gb_raw_map<Spec>, {job.itype_c}>")
        blocks = max(1, min(65535, (d.shape[0] * 32 + 255) // 256))
        fn((blocks,), (256,), (d.indptr, d.indices, d.data, np.int64(d.shape[0]),
                              np.int64(job.K), np.int64(0), buf))
    if keep:
        memo[key] = buf
    return buf


def _dense_union_launch(mod, job: Job):
    import cupy
    m, n, at = job.n_left, job.n_right, job.at
    out = cupy.empty((m, n), dtype=job.dt)
    if not m or not n:
        return out
    (tm, tn, bk), (gx, gy, gz), kper = _dense_union_grid(job)
    da, db = _raw_densified(mod, job, 0), _raw_densified(mod, job, 1)
    nacc = len(job.gen.accumulators)
    tmp = cupy.empty(gz * nacc * m * n, dtype=at) if gz > 1 else cupy.zeros(1, dtype=at)
    wts = job.wts if job.wts is not None else cupy.zeros(1, dtype=at)
    fn = mod.get_function(f"gb_dense_union<Spec, {tm}, {tn}, {bk}>")
    smem = bk * (16 * tm + 1 + 16 * tn + 1) * np.dtype(job.dt).itemsize
    fn.max_dynamic_shared_size_bytes = smem
    fn((gx, gy, gz), (256,), (da, db, np.int64(m), np.int64(n), np.int64(job.K), np.int64(kper),
                              out, tmp, job.colbuf, job.rowbuf, wts), shared_mem=smem)
    if gz > 1:
        fin = mod.get_function("gb_dense_union_finish<Spec>")
        fin((max(1, min(65535 * 4, (m * n + 255) // 256)),), (256,),
            (tmp, np.int32(gz), np.int64(m), np.int64(n), np.int64(job.K), out, job.colbuf,
             job.rowbuf))
    return out


def _mul_cost(gen) -> float:
    """Each step's ⊗ cost over a cheap one, from its formula: divisions (negative powers) and
    transcendentals (non-integer powers, exp, log, trigonometric ...) counted in the IR."""
    import sympy as sp
    total = 0.0
    for a in gen.accumulators:
        div = trans = 0
        for e in sp.preorder_traversal(a.mul):
            if isinstance(e, sp.Pow):
                if e.exp.is_negative:
                    div += 1
                if not e.exp.is_Integer:
                    trans += 1
            elif isinstance(e, sp.Function) and not isinstance(e, (sp.Abs, sp.Max, sp.Min,
                                                                   sp.Piecewise, sp.sign)):
                trans += 1
        total += 1.0 + DU_DIV * div + DU_TRANSCENDENTAL * trans
    return total


def _dense_union_estimate(job: Job):
    """Densifying both sides (zeros, the values, read back by the tiles) plus m·n·K steps at
    du_evals, weighted by ⊗'s cost (:func:`_mul_cost`) and by DU_DOUBLE for double
    accumulators; None while :data:`DENSE_UNION` is off, or when the dense copies do not fit
    a quarter of the free memory (as the dense strategy)."""
    if not DENSE_UNION:
        return None
    import cupy
    m, n, K = job.n_left, job.n_right, job.K
    dense_bytes = (m + n) * K * np.dtype(job.dt).itemsize
    if dense_bytes > DENSE_KEEP_BYTES and dense_bytes >= cupy.cuda.runtime.memGetInfo()[0] // 4:
        return None
    per = _mul_cost(job.gen) * (DU_DOUBLE if np.dtype(job.at).itemsize == 8 else 1.0)
    return (DU_RATES["du_fixed"] + per * m * n * K / DU_RATES["du_evals"]
            + (3 * dense_bytes + m * n * job.dt.itemsize) / RATES["bytes"])


TABLE = {
    "gather": Strategy("gather", _gather_kernels, _gather_launch, _gather_estimate),
    "scatter": Strategy("scatter", lambda job: (_scatter_kernel(job, THREADS), _scatter_kernel(job, 1024),
                                                f"gb_chunk_ptr<{job.itype_c}>"),
                        _scatter_launch, _scatter_estimate),
    "dense": Strategy("dense", _dense_kernels, _dense_launch, _dense_estimate),
    "sorted": Strategy("sorted", lambda job: (f"gb_union_sorted<Spec, {job.itype_c}>",
                                              f"gb_chunk_ptr<{job.itype_c}>",
                                              "gb_map_values<UKeyL>", "gb_map_values<UKeyR>"),
                       _sorted_launch, _sorted_estimate),
    "dense_union": Strategy("dense_union", _dense_union_kernels, _dense_union_launch,
                            _dense_union_estimate),
}
STRATEGIES = tuple(TABLE)


def estimate(job: Job) -> dict:
    """Estimated seconds of each strategy that can run the job (cheap statistics)."""
    est = {}
    for name in job.gen.strategies:
        s = TABLE.get(name)
        t = s.estimate(job) if s is not None else None
        if t is not None:
            est[name] = t
    return est


def choose(job: Job, forced: str) -> Strategy:
    """The strategy to run: ``forced`` when it can run the job, else the cheapest by
    :func:`estimate` (cached for same-shaped inputs: a performance decision only)."""
    allowed = job.gen.strategies
    if forced not in ("auto",) + STRATEGIES:
        raise InputError("unknown strategy", expected="auto, " + ", ".join(STRATEGIES), got=repr(forced))
    if forced != "auto":
        if forced not in allowed or (forced in ("scatter", "sorted") and job.itype_c != "int"):
            raise InputError(f"strategy {forced!r} cannot run this plan",
                             expected=", ".join(allowed),
                             hint="scatter needs an intersection or union correction (no two-pass "
                                  "union) and 32-bit indices; dense needs a rank expansion; "
                                  "dense_union an idempotent ⊕ over the union whose ⊗(0, 0) is "
                                  "its corner; a product the accuracy rule sums as written runs "
                                  "on gather only")
        return TABLE[forced]
    left, right = job.left, job.right
    key = (job.gen.key, left.shape, right.shape, left.nnz, right.nnz, job.K, job.itype_c,
           DENSE_UNION)
    choice = cache.CHOICES.get(key)
    if choice is None:
        est = estimate(job)
        choice = cache.CHOICES[key] = min(est, key=est.get)
    return TABLE[choice]
