"""The CUDA strategies that densify their operands (:mod:`.strategies`' table holds them):
``dense``, φ(A) and ψ(B) densified through cuBLAS GEMM then ``gb_epilogue``; and
``dense_union``, both sides' raw values densified and ⊕ of ⊗ over every column in a tiled
GEMM-shaped kernel (kernels/dense_union.cuh; one pass for a max/min union), offered by the
planner only while :data:`DENSE_UNION` is on (off: measured slower than gather, DU_RATES),
forced always."""
from __future__ import annotations

import numpy as np

from .jobs import RATES, Job, _device_attr

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
    maps = tuple(t[side] for t in terms)
    # the maps' names are the generated module's own (DMapL0_0 …): keyed by its key too
    key = ("densified", job.gen.key, maps, job.K, np.dtype(job.at).str, job.itype_c)
    return _densify(mod, job, side, maps, width, job.at, key)


def _densify(mod, job: Job, side: int, maps, width: int, dtype, key):
    """One side's rows as a dense rows × ``width`` array of ``dtype``: K-column block r
    filled with ``maps[r]``'s fill, then its stored entries written through the map
    (``gb_densify``); kept in the operand's memo under ``key`` when the tile reads it whole
    and the copy is at most :data:`DENSE_KEEP_BYTES`."""
    import cupy
    d, memo = (job.left, job.memos[0]) if side == 0 else (job.right, job.memos[1])
    keep = memo is not None and d.shape[0] * width * np.dtype(dtype).itemsize <= DENSE_KEEP_BYTES
    if keep and key in memo:
        return memo[key]
    buf = cupy.empty((d.shape[0], width), dtype=dtype)
    for r, (name, fill) in enumerate(maps):
        buf[:, r * job.K:(r + 1) * job.K] = fill
        if d.nnz:
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
# Its cost model, per second, refitted on an H200 (2026-11-28, benchmarks/results/
# 2026-11-28-dense_union.py, chebyshev's whole self-join forced to each strategy): Tabula
# Muris (1,067² × 23,433 ≈ 2.7e10 columns) 11.3 ms against gather's 5.1, KOS (3,430² × 6,906
# ≈ 8.1e10) 24.1 ms against gather's 7.3 and the sorted union's 8.5; answers identical. So
# 2.4-3.4e12 columns a second (the guess was 5e12: an H200 issues ~3.3e13 FP32 lane-
# instructions a second and chebyshev's step is about six, with gb_max's NaN tests and
# selects), and on these sets it loses to gather by 2.2-3.3x: it stays off.
DU_RATES = {"du_fixed": 1e-4, "du_evals": 2.5e12}
# A ⊗'s cost over chebyshev's, per division and per transcendental in its formula (a float
# IEEE division is ~10 instructions, a sqrt ~8, a log/exp/pow ~20, against ~6 a column), and
# the accumulators in double (half the FP32 issue rate on an H100/H200, plus the widening).
DU_DIV, DU_TRANSCENDENTAL, DU_DOUBLE = 2.0, 3.0, 2.0
DU_SPLIT_BYTES = 256 << 20  # most bytes of split-K partial accumulators


def _dense_union_tile(job: Job) -> tuple[int, int, int]:
    """(TM, TN, BK) of gb_dense_union: 8 × 8 outputs a thread for one float accumulator,
    else 4 × 4 (registers: TM·TN·NACC accumulators, 8-byte in double)."""
    from .genstore import DENSE_UNION_TILES
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
    key = ("raw densified", job.K, np.dtype(job.dt).str, job.itype_c)
    return _densify(mod, job, side, (("gb_raw_map<Spec>", 0),), job.K, job.dt, key)


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
    transcendentals (non-integer powers, exp, log, trigonometric ...) counted in the IR when
    the code was generated (``Accumulator.divs``, ``.trans``: ``codegen.mul_counts``)."""
    return sum(1.0 + DU_DIV * a.divs + DU_TRANSCENDENTAL * a.trans for a in gen.accumulators)


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
