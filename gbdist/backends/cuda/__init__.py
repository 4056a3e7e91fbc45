"""The CUDA backend: generated, fused kernels compiled by NVRTC through CuPy.

A plan becomes one generated source (``codegen.generate``): row reductions
run as ``gb_row_reduce`` (a warp per row); every product step of the plan is
fused into one ``gb_gather`` kernel (two launches for a two-pass union) whose
epilogue writes the final value of each output entry, so the m×n result is
written once and no intermediate m×n matrix exists (except partial sums when
the columns do not fit shared memory in one chunk, or between a union's two
passes).

Inputs: CuPy (cupyx sparse or dense) inputs give CuPy outputs; SciPy/NumPy
inputs are moved to the device and the result comes back as NumPy.

Accuracy: float32 data is stored and read as float32, but accumulated, reduced
and finished (the epilogue) in float64 (``accumulate="auto"``, the default; the
dense strategy then multiplies with DGEMM); the result is rounded to float32
once. ``accumulate="float32"`` keeps every step in float32 (faster, and ~1e-3
errors where sums cancel). Identical rows get the value of d(a, a) the algebra
proves (``gbdist.exact``), written on the device.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from dataclasses import dataclass

import numpy as np

from ... import exact
from ...compiler import ir
from ...errors import InputError
from ...compiler.plan import Plan
from ...runtime import is_cupy, result_dtype, to_csr, vector_to_row
from ...compiler.typecheck import row_operand
from .codegen import Generated, generate

_LOCK = threading.Lock()
THREADS = 512
ROWS_CHOICES = (8, 4, 2, 1)
ACCUMULATE = ("auto", "float32", "float64")
_DEFAULT = {"accumulate": "auto"}


def accumulator_dtype(dtype, accumulate: str | None = None) -> np.dtype:
    """The type sums, reductions and the epilogue are computed in for ``dtype`` data:
    float64 unless ``accumulate="float32"`` (and float32 data)."""
    mode = accumulate or _DEFAULT["accumulate"]
    if mode not in ACCUMULATE:
        raise InputError("unknown accumulate mode", expected=", ".join(ACCUMULATE), got=repr(mode))
    if mode == "float32" and np.dtype(dtype) == np.float32:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


@contextlib.contextmanager
def accumulate(mode: str):
    """Within the block, CUDA runs accumulate in ``mode`` ("auto", "float32", "float64"),
    e.g. to measure what float64 accumulation costs (benchmarks/accuracy.py)."""
    accumulator_dtype(np.float32, mode)  # validates
    old = _DEFAULT["accumulate"]
    _DEFAULT["accumulate"] = mode
    try:
        yield
    finally:
        _DEFAULT["accumulate"] = old


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, CUDARuntimeError: no usable GPU
        return False


def generate_source(plan: Plan, dtype=np.float32, accumulate: str | None = None) -> str:
    """The CUDA source the backend compiles for ``plan`` (for ``gbdist explain --cuda``),
    headed by the strategies that can run it and how the runtime chooses."""
    gen = _generated(plan, np.dtype(dtype).name, accumulator_dtype(dtype, accumulate).name)
    if gen.strategies:
        head = [
            f"// strategies for this plan: {', '.join(gen.strategies)}",
            "//   gather : R left rows dense in shared memory (k-chunked), right rows streamed",
            "//   scatter: a block per left row walks B's columns for its stored k; atomics in shared memory",
            "//   dense  : densified phi(A), psi(B) through cuBLAS GEMM, then gb_epilogue",
            "// chosen per call from cheap statistics (rows, nonzeros, shared-column pairs, columns,",
            "// shared memory per block, cost of the op); force one with strategy='gather'|'scatter'|'dense'",
        ]
        if "scatter" not in gen.strategies:
            head.append("// (no scatter: a two-pass union needs both operands' columns walked)")
    else:
        head = ["// no product step: row reductions, then the epilogue on the reductions"]
    return "\n".join(head) + "\n" + gen.source


_GENERATED: dict = {}


def _generated(plan: Plan, dtype_name: str, acc_name: str | None = None) -> Generated:
    """Generated source, cached by the plan's structural key, the dtype and the
    accumulator type (default: :func:`accumulator_dtype` of the dtype)."""
    acc_name = acc_name or accumulator_dtype(dtype_name).name
    key = (plan.expr.key, tuple(sorted(plan.roles.items())), dtype_name, acc_name)
    gen = _GENERATED.get(key)
    if gen is None:
        gen = _GENERATED[key] = generate(plan, np.dtype(dtype_name), np.dtype(acc_name))
    return gen


# --- compile cache ----------------------------------------------------------------

_MODULES: dict = {}
COMPILE_LOG: list = []  # (key, seconds) of each compilation in this process


def _cache_dir() -> str | None:
    return os.environ.get("GBDIST_CACHE_DIR")


def _module(gen: Generated, names: tuple[str, ...]):
    """Compile (once per process and device) and return the RawModule."""
    import cupy
    dev = cupy.cuda.Device().id
    key = (gen.key, names, dev)
    with _LOCK:
        mod = _MODULES.get(key)
        if mod is None:
            if _cache_dir():
                os.environ.setdefault("CUPY_CACHE_DIR", _cache_dir())
            t0 = time.perf_counter()
            mod = cupy.RawModule(code=gen.source, options=("-std=c++17",), name_expressions=names)
            for n in names:
                mod.get_function(n)  # compile now, not inside a timed launch
            COMPILE_LOG.append((gen.key, time.perf_counter() - t0))
            _MODULES[key] = mod
    return mod


@functools.lru_cache(maxsize=None)
def _attributes(device_id: int) -> dict:
    """The device's attributes, read once per process (``Device.attributes`` queries every
    attribute from the driver on each access)."""
    import cupy
    return dict(cupy.cuda.Device(device_id).attributes)


# --- device operands ----------------------------------------------------------------


@dataclass
class DevCSR:
    indptr: object
    indices: object
    data: object
    shape: tuple

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])


def _device_csr(x, name: str, dtype, drop_zeros: bool) -> DevCSR:
    """Canonical CSR on the device (sorted indices, no duplicates), in ``dtype``.

    Device inputs already in canonical form are used as they are (no copy).
    Explicit zeros are dropped only when ``drop_zeros`` (structural products,
    where a stored 0 is an entry); for data semantics a stored 0 equals the
    fill, which the analysis has shown to be harmless.
    """
    import cupy
    import cupyx.scipy.sparse as cps
    if is_cupy(x):
        if cps.issparse(x):
            m = x if x.format == "csr" else x.tocsr()
        else:
            if x.ndim != 2:
                raise InputError(f"{name} must be a 2-D matrix", got=f"shape {x.shape}")
            m = cps.csr_matrix(x)
        if m.dtype != dtype:
            m = m.astype(dtype)
        if not m.has_canonical_format:
            m = m.copy() if m is x else m
            m.sum_duplicates()
        dev = DevCSR(m.indptr, m.indices, m.data, m.shape)
        return _drop_zeros_device(dev) if drop_zeros else dev
    host = to_csr(x, name, drop_zeros, ensure_all_finite=False)  # validated by runtime.run
    return DevCSR(cupy.asarray(host.indptr), cupy.asarray(host.indices),
                  cupy.asarray(host.data.astype(dtype)), host.shape)


def _transposed(d: DevCSR) -> DevCSR:
    """The transpose of a canonical device CSR, canonical (sorted, no duplicates)."""
    import cupyx.scipy.sparse as cps
    t = cps.csr_matrix((d.data, d.indices, d.indptr), shape=d.shape).T.tocsr()
    if not t.has_canonical_format:
        t.sum_duplicates()
    return DevCSR(t.indptr, t.indices, t.data, t.shape)


def _drop_zeros_device(d: DevCSR) -> DevCSR:
    """Remove explicitly stored zeros (a new CSR; the input is not modified)."""
    import cupy
    keep = d.data != 0
    if bool(keep.all()):
        return d
    counts = cupy.diff(d.indptr)
    rows = cupy.repeat(cupy.arange(d.shape[0]), counts.get().tolist()) if d.shape[0] else counts
    kept = cupy.bincount(rows[keep], minlength=d.shape[0])
    indptr = cupy.concatenate([cupy.zeros(1, dtype=d.indptr.dtype),
                               cupy.cumsum(kept).astype(d.indptr.dtype)])
    return DevCSR(indptr, d.indices[keep], d.data[keep], d.shape)


def _device_vector(x, name: str, dtype) -> DevCSR:
    import cupy
    host = vector_to_row(x.get() if is_cupy(x) else x, name, ensure_all_finite=False)
    return DevCSR(cupy.asarray(host.indptr), cupy.asarray(host.indices),
                  cupy.asarray(host.data.astype(dtype)), host.shape)


def _index_type(ops: list[DevCSR]) -> tuple[str, object]:
    import cupy
    big = any(o.nnz >= 2**31 - 1 or o.shape[1] >= 2**31 - 1 for o in ops)
    return ("long long", cupy.int64) if big else ("int", cupy.int32)


class CUDABackend:
    name = "cuda"

    def __init__(self, working_memory: int | None = None, accumulate: str | None = None):
        self.working_memory = working_memory
        self.accumulate = accumulate

    def run(self, plan: Plan, inputs: dict, working_memory=None, drop_zeros=False, dtype=None,
            rows_per_block: int | None = None, strategy: str = "auto", accumulate: str | None = None):
        import cupy
        on_device = any(is_cupy(v) for v in inputs.values())
        dt = result_dtype({k: (v if hasattr(v, "dtype") else np.zeros(0)) for k, v in inputs.items()}, dtype)
        at = accumulator_dtype(dt, accumulate or self.accumulate)
        gen = _generated(plan, dt.name, at.name)
        syms = {s.name: s for s in ir.symbols(plan.expr)}
        missing = sorted(set(syms) - set(inputs))
        if missing or set(inputs) - set(syms):
            raise InputError("the program's inputs do not match", expected=", ".join(sorted(syms)),
                             got=", ".join(sorted(inputs)))
        # Bind every (name, transposed) operand the steps read, on the device. Each operand
        # is made canonical once, as given; its rows are shifted / scaled as the metric is
        # proven invariant under (gbdist.exact), then apply(normalize, ·) divides them by
        # their sums (new value arrays: the caller's CuPy arrays are never modified); a
        # transposed operand is the transpose of that conditioned operand.
        inv, conditioned = exact.conditioned_names(plan)
        normalised = exact.normalised_names(plan)
        base: dict = {}
        bound: dict = {}  # one binding per input object and treatment (X and Y the same array)

        def operand(name: str) -> DevCSR:
            if name not in base:
                how = (id(inputs[name]), name in conditioned, name in normalised)
                if how in bound:
                    base[name] = bound[how]
                    return base[name]
                d = _device_csr(inputs[name], name, dt, drop_zeros and gen.structural)
                if name in conditioned:
                    d = DevCSR(d.indptr, d.indices,
                               exact.condition_rows(d.indptr, d.data, d.shape[1], inv, cupy), d.shape)
                if name in normalised:
                    d = DevCSR(d.indptr, d.indices,
                               exact.normalise_rows(d.indptr, d.data, name, cupy), d.shape)
                base[name] = bound[how] = d
            return base[name]

        data: dict = {}
        sides: dict = {}
        for step in plan.steps:
            for side, key in step.sides:
                if key not in data:
                    name, flipped = key
                    if isinstance(syms[name], ir.Vector):
                        data[key] = _device_vector(inputs[name], name, dt)
                    else:
                        data[key] = _transposed(operand(name)) if flipped else operand(name)
                sides.setdefault(side, key)
        _check_domains_device(plan, data)
        widths = {d.shape[1] for d in data.values()}
        if len(widths) > 1:
            raise InputError("the operands of a product must have the same number of columns (k)",
                             got=", ".join(f"{k[0]}: {d.shape[1]}" for k, d in data.items()))
        K = widths.pop() if widths else 0
        left = data.get(sides.get("left"))
        right = data.get(sides.get("right"))
        n_left = left.shape[0] if left is not None else 1
        n_right = right.shape[0] if right is not None else 1
        itype_c, itype = _index_type(list(data.values()))
        for d in data.values():
            d.indptr = d.indptr.astype(itype, copy=False)
            d.indices = d.indices.astype(itype, copy=False)

        names = tuple(f"gb_row_reduce<RSpec{r}, {itype_c}>" for r in range(len(gen.reductions)))
        gather_plan = None
        launches = []
        strat = None
        if gen.gather:
            strat = self.choose_strategy(gen, left, right, K, dt, strategy, itype_c)
        LAST_RUN["strategy"] = strat
        if strat == "scatter":
            names += (f"gb_scatter<Spec, {itype_c}>", f"gb_chunk_ptr<{itype_c}>")
        elif strat == "sorted":
            names += (f"gb_union_sorted<Spec, {itype_c}>", f"gb_chunk_ptr<{itype_c}>",
                      "gb_map_values<UKeyL>", "gb_map_values<UKeyR>")
        elif strat == "dense":
            for terms in gen.dense_maps:
                for (lname, _), (rname, _) in terms:
                    names += (f"gb_densify<{lname}, {itype_c}>", f"gb_densify<{rname}, {itype_c}>")
            names += ("gb_epilogue<Spec>",)
        elif gen.gather:
            gather_plan = self._gather_config(gen, K, dt, rows_per_block)
            R, kchunk = gather_plan[0], gather_plan[1]
            nch = -(-max(K, 1) // kchunk)
            modes = (1, 2) if gen.union else (0,)
            for mode in modes:
                dense, stream = (right, left) if mode == 2 else (left, right)
                G = _group_size(stream, nch, R)
                launches.append((mode, dense, stream, G, f"gb_gather<Spec, {R}, {mode}, {G}, {itype_c}>"))
            names += tuple(dict.fromkeys(n for *_, n in launches))
            if nch > 1:
                names += (f"gb_chunk_ptr<{itype_c}>",)
        mod = _module(gen, names)

        # Row reductions.
        # Row reductions, each written into its slice of one buffer per side
        # (colred: reductions indexed by the left rows, rowred: by the right rows).
        cols = [r for r in gen.reductions if r.kind == "col"]
        rows = [r for r in gen.reductions if r.kind == "row"]
        colbuf = cupy.empty(max(1, len(cols) * n_left), dtype=at)
        rowbuf = cupy.empty(max(1, len(rows) * n_right), dtype=at)
        outs = {}
        for r, red in enumerate(gen.reductions):
            d = data[row_operand(red.step.node.arg)[:2]]
            side, buf = (cols, colbuf) if red.kind == "col" else (rows, rowbuf)
            off = side.index(red) * d.shape[0]
            out = buf[off:off + d.shape[0]]
            fn = mod.get_function(names[r])
            blocks = max(1, min(65535, (d.shape[0] * 32 + 255) // 256))
            fn((blocks,), (256,), (d.indptr, d.data, np.int64(d.shape[0]), np.int64(K), out))
            outs[red.step.name] = out

        if strat == "scatter":
            result = self._launch_scatter(mod, gen, left, right, K, dt, at, colbuf, rowbuf, itype_c)
        elif strat == "sorted":
            result = self._launch_sorted(mod, gen, left, right, K, dt, at, colbuf, rowbuf, itype_c)
        elif strat == "dense":
            result = self._launch_dense(mod, gen, left, right, K, dt, at, colbuf, rowbuf, itype_c)
        elif gen.gather:
            result = self._launch_gather(mod, gen, gather_plan, launches, n_left, n_right, K,
                                         dt, at, colbuf, rowbuf, itype_c)
        else:
            result = _epilogue_arrays(plan, outs, K, n_left, n_right)
        result = _shape(result, plan.output_kind, n_left, n_right).astype(dt, copy=False)
        pair = exact.operand_pair(plan)
        if pair is not None and plan.output_kind == "matrix" and left is not None and right is not None:
            result = exact.apply_self_value(plan, result, (left.indptr, left.indices, left.data),
                                            (right.indptr, right.indices, right.data), cupy)
        return result if on_device else cupy.asnumpy(result)

    # -- gather ------------------------------------------------------------------

    def _gather_config(self, gen: Generated, K: int, dt, rows_per_block: int | None):
        """(R rows per block, k-chunk width, shared-memory budget) for this device.

        R rows of the dense side share each load of a streamed entry, so the
        largest R whose rows fit shared memory whole is taken; when even one
        row does not fit, R = 8 with k-chunks (per-chunk row offsets are
        precomputed, so chunking costs no searches in the kernel).
        """
        import cupy
        dev = cupy.cuda.Device()
        optin = int(_attributes(dev.id).get("MaxSharedMemoryPerBlockOptin", 48 * 1024))
        budget = optin - 1024
        per_col = dt.itemsize + (1 if gen.structural else 0)
        choices = (rows_per_block,) if rows_per_block else ROWS_CHOICES
        for R in choices:
            if R * max(K, 1) * per_col <= budget:
                return R, max(K, 1), budget
        R = rows_per_block or ROWS_CHOICES[0]
        kchunk = max(32, budget // (R * per_col))
        return R, kchunk, budget

    def _launch_gather(self, mod, gen, cfg, launches, n_left, n_right, K, dt, at, colbuf, rowbuf,
                       itype_c):
        import cupy
        R, kchunk, _ = cfg
        nch = -(-max(K, 1) // kchunk)
        sm = _attributes(cupy.cuda.Device().id)["MultiProcessorCount"]
        out = cupy.empty((n_left, n_right), dtype=dt)
        need_tmp = gen.union or nch > 1
        nacc = len(gen.accumulators)
        tmp = cupy.empty(nacc * n_left * n_right, dtype=at) if need_tmp else cupy.zeros(1, dtype=at)
        smem = R * kchunk * (dt.itemsize + (1 if gen.structural else 0))
        cps_cache: dict = {}

        def chunk_ptrs(d: DevCSR):
            if nch == 1:
                return d.indptr  # unused by the kernel
            key = id(d)
            if key not in cps_cache:
                out_ = cupy.empty(d.shape[0] * (nch + 1), dtype=d.indptr.dtype)
                fn = mod.get_function(f"gb_chunk_ptr<{itype_c}>")
                total = out_.size
                fn((max(1, min(65535, (total + 255) // 256)),), (256,),
                   (d.indptr, d.indices, np.int64(d.shape[0]), np.int64(kchunk), np.int32(nch), out_))
                cps_cache[key] = out_
            return cps_cache[key]

        for mode, dense, stream, G, name in launches:
            fn = mod.get_function(name)
            fn.max_dynamic_shared_size_bytes = smem
            gx = (dense.shape[0] + R - 1) // R
            gy = max(1, min(65535, (4 * sm + gx - 1) // max(gx, 1)))
            gy = min(gy, max(1, stream.shape[0]))
            fn((max(gx, 1), gy), (THREADS,),
               (dense.indptr, dense.indices, dense.data, np.int64(dense.shape[0]),
                stream.indptr, stream.indices, stream.data, np.int64(stream.shape[0]),
                np.int64(K), np.int64(kchunk), chunk_ptrs(dense), chunk_ptrs(stream),
                out, tmp, np.int64(n_left), np.int64(n_right), colbuf, rowbuf), shared_mem=smem)
        return out


    # -- strategy choice ---------------------------------------------------------

    def estimate(self, gen: Generated, left: DevCSR, right: DevCSR, K: int, dt, itype_c: str) -> dict:
        """Estimated seconds of each applicable strategy, from cheap statistics.

        gather: every block of R left rows streams all of B's entries: pair work
        m·nnz(B), weighted by the cost of ⊗, plus a cost per (block, streamed
        row, k-chunk). scatter: work per pair of entries sharing a column
        (Σ over A's entries of B's column degree; one bincount), plus writing
        the m×n output, plus a fixed cost (Bᵀ is built per call). dense: the
        GEMM's flops plus densifying. Rates fitted to H100 measurements of all
        three strategies on the five real data sets (docs/cuda.md).
        """
        import cupy
        import sympy as sp
        m, n = left.shape[0], right.shape[0]
        R, kchunk, _ = self._gather_config(gen, K, dt, None)
        nch = -(-max(K, 1) // kchunk)
        ops = [sp.count_ops(a.mul) for a in gen.accumulators]
        w_gather = sum(1.0 + max(0, o - 6) / 3.0 for o in ops)
        w_scatter = sum(1.0 + max(0, o - 6) / 20.0 for o in ops)
        est = {"gather": RATES["gather_fixed"] + w_gather * m * right.nnz / RATES["gather_pairs"]
               + (m / R) * n * nch / RATES["gather_rows"]}
        if "scatter" in gen.strategies and itype_c == "int" and left.nnz and right.nnz:
            deg = cupy.bincount(right.indices, minlength=K)
            inter = float(deg[left.indices].sum())
            est["scatter"] = (RATES["scatter_fixed"] + w_scatter * inter / RATES["scatter_pairs"]
                              + m * n / RATES["scatter_cells"])
        if "sorted" in gen.strategies and itype_c == "int" and left.nnz and right.nnz:
            deg = cupy.bincount(right.indices, minlength=K)
            inter = float(deg[left.indices].sum())
            logb = float(np.log2(max(2.0, right.nnz / max(n, 1))))
            est["sorted"] = (RATES["sorted_fixed"] + (left.nnz + right.nnz) / RATES["sort"]
                             + w_scatter * inter / RATES["sorted_pairs"]
                             + m * n * (logb + 2) / RATES["sorted_cells"])
        if "dense" in gen.strategies:
            rk = sum(len(t) for t in gen.dense_maps) * K
            dense_bytes = (m + n) * rk * gen.acc_itemsize  # densified in the accumulator type
            free = cupy.cuda.runtime.memGetInfo()[0]
            if dense_bytes < free // 4:
                est["dense"] = (RATES["dense_fixed"] + 2.0 * m * n * rk / RATES["gemm_flops"]
                                + (dense_bytes + m * n * dt.itemsize * 3) / RATES["bytes"])
        return est

    def choose_strategy(self, gen: Generated, left, right, K, dt, forced: str, itype_c: str) -> str:
        allowed = gen.strategies
        if forced not in ("auto",) + STRATEGIES:
            raise InputError("unknown strategy", expected="auto, " + ", ".join(STRATEGIES), got=repr(forced))
        if forced != "auto":
            if forced not in allowed or (forced in ("scatter", "sorted") and itype_c != "int"):
                raise InputError(f"strategy {forced!r} cannot run this plan",
                                 expected=", ".join(allowed),
                                 hint="scatter needs an intersection or union correction (no two-pass "
                                      "union) and 32-bit indices; dense needs a rank expansion")
            return forced
        key = (gen.key, left.shape, right.shape, left.nnz, right.nnz, K, itype_c)
        choice = _CHOICES.get(key)
        if choice is None:  # a performance decision only: reused for same-shaped inputs
            est = self.estimate(gen, left, right, K, dt, itype_c)
            choice = _CHOICES[key] = min(est, key=est.get)
        return choice

    def _column_tiles(self, mod, right: DevCSR, K: int, bytes_per_column: int, reserved: int,
                      itype_c: str):
        """Bᵀ in CSR (row k lists the j storing column k) and, for output tiles of J
        columns sized to shared memory, each k's offsets per tile (gb_chunk_ptr)."""
        import cupy
        import cupyx.scipy.sparse as cps
        n_right = right.shape[0]
        bt = cps.csr_matrix((right.data, right.indices, right.indptr), shape=right.shape).T.tocsr()
        bt.sort_indices()
        itype = right.indptr.dtype
        optin = int(_attributes(cupy.cuda.Device().id).get("MaxSharedMemoryPerBlockOptin", 48 * 1024))
        J = max(1, min(n_right, (optin - 1024 - reserved) // bytes_per_column))
        ntiles = -(-n_right // J)
        tptr = cupy.empty(K * (ntiles + 1), dtype=itype)
        bt_indices = bt.indices.astype(itype)
        fn = mod.get_function(f"gb_chunk_ptr<{itype_c}>")
        fn((max(1, min(65535, (tptr.size + 255) // 256)),), (256,),
           (bt.indptr.astype(itype), bt_indices, np.int64(K), np.int64(J), np.int32(ntiles), tptr))
        return bt_indices, bt.data, tptr, J, ntiles

    def _launch_scatter(self, mod, gen, left: DevCSR, right: DevCSR, K, dt, at, colbuf, rowbuf,
                        itype_c):
        import cupy
        n_left, n_right = left.shape[0], right.shape[0]
        nacc = len(gen.accumulators)
        bt_idx, bt_val, tptr, J, ntiles = self._column_tiles(mod, right, K, nacc * at.itemsize, 0, itype_c)
        out = cupy.empty((n_left, n_right), dtype=dt)
        fn = mod.get_function(f"gb_scatter<Spec, {itype_c}>")
        smem = nacc * J * at.itemsize
        fn.max_dynamic_shared_size_bytes = smem
        fn((n_left, ntiles), (THREADS,),
           (left.indptr, left.indices, left.data, np.int64(n_left),
            bt_idx, bt_val, tptr, np.int32(ntiles), np.int64(J),
            np.int64(n_right), np.int64(K), out, colbuf, rowbuf), shared_mem=smem)
        return out

    def _sorted_perm(self, mod, d: DevCSR, key_struct: str, order: str, at):
        """Per-row permutation of d's entries by key (L or R of the value), desc or asc."""
        import cupy
        import cupyx
        keys = cupy.empty(d.nnz, dtype=at)
        fn = mod.get_function(f"gb_map_values<{key_struct}>")
        fn((max(1, min(65535, (d.nnz + 255) // 256)),), (256,), (d.data, np.int64(d.nnz), keys))
        marker = cupy.zeros(d.nnz + 1, dtype=cupy.int32)
        if d.shape[0] > 1:
            cupyx.scatter_add(marker, d.indptr[1:-1].astype(cupy.int64), 1)
        rows = cupy.cumsum(marker[:-1])
        perm = cupy.lexsort(cupy.stack([-keys if order == "desc" else keys, rows.astype(at)]))
        return perm.astype(d.indptr.dtype)

    def _launch_sorted(self, mod, gen, left: DevCSR, right: DevCSR, K, dt, at, colbuf, rowbuf,
                       itype_c):
        import cupy
        n_left, n_right = left.shape[0], right.shape[0]
        aperm = self._sorted_perm(mod, left, "UKeyL", gen.sorted_order, at)
        bperm = self._sorted_perm(mod, right, "UKeyR", gen.sorted_order, at)
        words = (K + 31) // 32  # A_i's column bitmask
        bt_idx, bt_val, tptr, J, ntiles = self._column_tiles(mod, right, K, at.itemsize, 4 * words, itype_c)
        out = cupy.empty((n_left, n_right), dtype=dt)
        fn = mod.get_function(f"gb_union_sorted<Spec, {itype_c}>")
        smem = J * at.itemsize + 4 * words
        fn.max_dynamic_shared_size_bytes = smem
        fn((n_left, ntiles), (THREADS,),
           (left.indptr, left.indices, left.data, aperm, np.int64(n_left),
            right.indptr, right.indices, right.data, bperm,
            bt_idx, bt_val, tptr, np.int32(ntiles), np.int64(J),
            np.int64(n_right), np.int64(K), out, colbuf, rowbuf), shared_mem=smem)
        return out

    def _launch_dense(self, mod, gen, left: DevCSR, right: DevCSR, K, dt, at, colbuf, rowbuf,
                      itype_c):
        import cupy
        n_left, n_right = left.shape[0], right.shape[0]
        accbuf = cupy.empty((len(gen.accumulators), n_left, n_right), dtype=at)
        for s, terms in enumerate(gen.dense_maps):
            width = len(terms) * K
            dl = cupy.empty((n_left, width), dtype=at)
            dr = cupy.empty((n_right, width), dtype=at)
            for r, ((lname, lfill), (rname, rfill)) in enumerate(terms):
                for d, buf, name, fill in ((left, dl, lname, lfill), (right, dr, rname, rfill)):
                    buf[:, r * K:(r + 1) * K] = fill
                    fn = mod.get_function(f"gb_densify<{name}, {itype_c}>")
                    blocks = max(1, min(65535, (d.shape[0] * 32 + 255) // 256))
                    fn((blocks,), (256,), (d.indptr, d.indices, d.data, np.int64(d.shape[0]),
                                          np.int64(width), np.int64(r * K), buf))
            cupy.matmul(dl, dr.T, out=accbuf[s])
            del dl, dr
        out = cupy.empty((n_left, n_right), dtype=dt)
        fn = mod.get_function("gb_epilogue<Spec>")
        total = n_left * n_right
        fn((max(1, min(65535 * 4, (total + 255) // 256)),), (256,),
           (accbuf, np.int64(n_left), np.int64(n_right), np.int64(K), out, colbuf, rowbuf))
        return out


STRATEGIES = ("gather", "scatter", "dense", "sorted")
LAST_RUN: dict = {"strategy": None}  # the strategy the latest run in this process used
# Rates of the cost model (per second), fitted to H100 runs; see docs/benchmarks.md.
RATES = {"gather_fixed": 3.5e-4, "gather_pairs": 7.8e11, "gather_rows": 3.2e9,
         "scatter_fixed": 9e-4, "scatter_pairs": 3.5e11, "scatter_cells": 4e10,
         "dense_fixed": 2e-4, "gemm_flops": 3.5e13, "bytes": 1.5e12,
         "sorted_fixed": 1.5e-3, "sort": 2e9, "sorted_pairs": 6e10, "sorted_cells": 5e10}
_CHOICES: dict = {}


def _group_size(stream: DevCSR, nch: int, R: int) -> int:
    """Lanes per streamed row: about the average stored entries per row and chunk."""
    avg = stream.nnz / max(stream.shape[0], 1) / max(nch, 1)
    G = 32 if avg > 24 else 16 if avg > 12 else 8
    return max(G, R)


def _check_domains_device(plan: Plan, data: dict) -> None:
    """Nonnegative-domain ops see no negative input (checked on the device)."""
    import cupy
    for p in plan.products:
        op = p.analysis.semiring.mul
        node = p.node
        operands = (node.left, node.right) if isinstance(node, ir.MxM) else (node.matrix, node.vector)
        flips = (False, True) if isinstance(node, ir.MxM) else (False, False)
        for operand, flip in zip(operands, flips):
            name, flipped, chain = row_operand(operand, flip)
            d = data.get((name, flipped))
            if d is None or d.nnz == 0:
                continue
            needs = [c for c in chain if c.domain == "nonnegative"] or (
                [op] if op.domain == "nonnegative" else [])
            if not needs:
                continue
            if chain:  # rare: check on the host through the reference evaluator
                from ...runtime import _check_domains
                import scipy.sparse as sps
                host = {(name, flipped): sps.csr_matrix(
                    (cupy.asnumpy(d.data).astype(np.float64), cupy.asnumpy(d.indices),
                     cupy.asnumpy(d.indptr)), shape=d.shape)}
                _check_domains(plan, host)
                continue
            lo = float(cupy.min(d.data))
            if lo < 0:
                op.check_domain(np.array([lo]), f"input {name}")


def _epilogue_arrays(plan: Plan, outs: dict, K: int, n_left: int, n_right: int):
    """Plans without products: the epilogue over reductions, with CuPy array math."""
    import cupy
    from ..cpu import POINTWISE_NUMPY
    vals: dict = {}
    for node in ir.walk(plan.epilogue):
        if isinstance(node, ir.Ref):
            v = outs[node.name]
            vals[node.key] = v[:, None] if node.kind == "col" else v[None, :]
        elif isinstance(node, ir.Const):
            vals[node.key] = node.value
        elif isinstance(node, ir.NCols):
            vals[node.key] = float(K)
        elif isinstance(node, ir.Pointwise):
            args = [vals[a.key] for a in node.args]
            fn = POINTWISE_NUMPY[node.fn]
            vals[node.key] = fn(*[cupy.asarray(a) if not np.isscalar(a) else a for a in args])
    return cupy.asarray(vals[plan.epilogue.key])


def _shape(result, kind: str, n_left: int, n_right: int):
    """The result in the output kind's shape (broadcasting a scalar or vector epilogue)."""
    import cupy
    shape = {"matrix": (n_left, n_right), "col": (n_left,), "row": (n_right,)}.get(kind, ())
    if kind == "col" and result.ndim == 2:
        result = result.reshape(-1)
    if result.shape == shape:
        return result
    return cupy.broadcast_to(result.reshape(-1) if kind == "row" else result, shape).copy()
