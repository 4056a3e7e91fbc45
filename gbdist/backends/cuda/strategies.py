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
  while ``dense_strategies.DENSE_UNION`` is on (off: 2.2-3.3x slower than gather where
  measured), forced always.

The two densifying strategies live in :mod:`.dense_strategies`, the shared :class:`Job`,
:class:`Strategy` and rates in :mod:`.jobs`.

The cost model's rates were fitted to H100 runs of every strategy on the five real
data sets (docs/cuda.md, docs/benchmarks.md). To add a strategy: a kernel template in
kernels/, its name in the generated source (codegen), and a :class:`Strategy` here.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from . import cache
from . import dense_strategies
from .jobs import RATES, Job, Strategy, _device_attr  # noqa: F401 (RATES, Job: re-exported)
from .kept import form
from .operands import DevCSR

THREADS = 512
MIRROR = "gb_mirror_lower<Spec>"  # completes a diagonal tile computed on and above it (Job.upper)
UPPER_SHARE = 0.55  # an upper-honouring strategy's estimate on a diagonal tile: half, + fixed costs
ROWS_CHOICES = (8, 4, 2, 1)
# Cost of an 8-byte shared-memory atomic add over a 4-byte one at 512 threads per block
# (benchmarks/atomics_probe.py, retired: docs/benchmarks.md on an H100). Without it the model priced scatter the same
# under float64 accumulation, and kept it on Tabula Muris manhattan, where gather was
# 22% faster (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md, 2026-11-24).
ATOMIC64 = 1.33


def _op_weights(gen, per: float) -> float:
    """Each accumulator's ⊗ weighed by its formula's operations past six (sympy's count_ops,
    counted when the code was generated: ``Accumulator.ops``)."""
    return sum(1.0 + max(0, a.ops - 6) / per for a in gen.accumulators)


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
    names = tuple(dict.fromkeys(n for *_, n in launches)) + (MIRROR,)
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
            wts, np.int32(job.upper)), shared_mem=smem)
    return out


def _gather_estimate(job: Job):
    """Every block of R left rows streams all of B's entries: pair work m·nnz(B),
    weighted by the cost of ⊗, plus a cost per (block, streamed row, k-chunk)."""
    R, kchunk, _ = gather_config(job.gen, job.K, job.dt, None)
    nch = -(-max(job.K, 1) // kchunk)
    m, n = job.n_left, job.n_right
    return (RATES["gather_fixed"] + _op_weights(job.gen, 3.0) * m * job.right.nnz / RATES["gather_pairs"]
            + (m / R) * n * nch / RATES["gather_rows"])


def mirror_lower(mod, out) -> None:
    """Complete a square tile computed on and above its diagonal (``Job.upper``) in place:
    every cell below it from its mirror image (``gb_mirror_lower``)."""
    n = out.shape[0]
    if n > 1:
        nb = -(-n // 32)
        mod.get_function(MIRROR)((nb, nb), (32, 8), (out, np.int64(n)))


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
        np.int64(job.n_right), np.int64(job.K), out, job.colbuf, job.rowbuf,
        np.int32(job.upper)), shared_mem=smem)
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
        np.int64(job.n_right), np.int64(job.K), out, job.colbuf, job.rowbuf,
        np.int32(job.upper)), shared_mem=smem)
    return out


def _sorted_estimate(job: Job):
    if job.itype_c != "int" or not job.left.nnz or not job.right.nnz:
        return None
    logb = float(np.log2(max(2.0, job.right.nnz / max(job.n_right, 1))))
    return (RATES["sorted_fixed"] + (job.left.nnz + job.right.nnz) / RATES["sort"]
            + _op_weights(job.gen, 20.0) * _pairs(job) / RATES["sorted_pairs"]
            + job.n_left * job.n_right * (logb + 2) / RATES["sorted_cells"])


TABLE = {
    "gather": Strategy("gather", _gather_kernels, _gather_launch, _gather_estimate, upper=True),
    "scatter": Strategy("scatter", lambda job: (_scatter_kernel(job, THREADS), _scatter_kernel(job, 1024),
                                                f"gb_chunk_ptr<{job.itype_c}>", MIRROR),
                        _scatter_launch, _scatter_estimate, upper=True),
    "dense": Strategy("dense", dense_strategies._dense_kernels, dense_strategies._dense_launch,
                      dense_strategies._dense_estimate),
    "sorted": Strategy("sorted", lambda job: (f"gb_union_sorted<Spec, {job.itype_c}>",
                                              f"gb_chunk_ptr<{job.itype_c}>",
                                              "gb_map_values<UKeyL>", "gb_map_values<UKeyR>", MIRROR),
                       _sorted_launch, _sorted_estimate, upper=True),
    "dense_union": Strategy("dense_union", dense_strategies._dense_union_kernels,
                            dense_strategies._dense_union_launch,
                            dense_strategies._dense_union_estimate),
}
STRATEGIES = tuple(TABLE)


def estimate(job: Job) -> dict:
    """Estimated seconds of each strategy that can run the job (cheap statistics)."""
    est = {}
    for name in job.gen.strategies:
        s = TABLE.get(name)
        t = s.estimate(job) if s is not None else None
        if t is not None:
            # on a diagonal tile (Job.upper) a strategy that honours it visits about half
            # the pairs and writes half the cells
            est[name] = t * UPPER_SHARE if job.upper and s.upper else t
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
           dense_strategies.DENSE_UNION, job.upper)
    choice = cache.CHOICES.get(key)
    if choice is None:
        est = estimate(job)
        choice = cache.CHOICES[key] = min(est, key=est.get)
    return TABLE[choice]
