"""The CUDA backend: generated, fused kernels compiled by NVRTC through CuPy.

A plan becomes one generated source (``codegen.generate``): row reductions
run as ``gb_row_reduce`` (a warp per row); every product step of the plan is
fused into one ``gb_gather`` kernel (two launches for a two-pass union) whose
epilogue writes the final value of each output entry, so the m×n result is
written once and no intermediate m×n matrix exists (except partial sums when
the columns do not fit shared memory in one chunk, or between a union's two
passes).

The backend implements :class:`gbdist.backends.base.Backend`: the runtime binds and
checks the inputs once (:func:`gbdist.runtime.bind`); :meth:`CUDABackend.prepare`
uploads the canonical operands once (:mod:`~gbdist.backends.cuda.operands`);
:meth:`CUDABackend.run_tile` runs the row reductions and the chosen strategy
(:mod:`~gbdist.backends.cuda.strategies`, a table) on one output tile and writes the
proven d(a, a) there; :meth:`~CUDABackend.select_k` / :meth:`~CUDABackend.merge_k`
are the top-k kernels (:mod:`~gbdist.backends.cuda.topk`). Every process-wide cache
is in :mod:`~gbdist.backends.cuda.cache` (:func:`clear_caches`, :func:`last_run`).
CuPy inputs give CuPy outputs; SciPy/NumPy inputs are moved to the device once and
the result comes back as NumPy (the runtime copies it).

Accuracy: float32 data is stored and read as float32, but accumulated, reduced
and finished (the epilogue) in float64 (``accumulate="auto"``, the default; the
dense strategy then multiplies with DGEMM); the result is rounded to float32
once. "auto" keeps float32 where the plan proves it loses nothing the result can
see (``Plan.float32``: chebyshev's max of |x − y|). ``accumulate="float32"`` keeps
every step in float32 (faster, and ~1e-3 errors where sums cancel). Identical rows get the value of d(a, a) the algebra
proves (``gbdist.exact``), written on the device.
"""
from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING

import numpy as np

from ...compiler import exact, ir
from ...errors import BackendError, InputError
from ...compiler.plan import Plan
from ...compiler.typecheck import row_operand
from .. import rows as host_rows
from ..base import Bound, CallMemo, Tile, shape_output
from . import cache, operands, strategies, topk
from . import rows as dev_rows
from .cache import compile_log, last_run
from .kept import Kept
from .operands import DevCSR, index_type, upload

if TYPE_CHECKING:
    from .genstore import Generated
from .strategies import STRATEGIES, Job

ACCUMULATE = ("auto", "float32", "float64")
_DEFAULT = {"accumulate": "auto"}


def accumulator_dtype(dtype, accumulate: str | None = None, plan: Plan | None = None) -> np.dtype:
    """The type sums, reductions and the epilogue are computed in for ``dtype`` data:
    float64 unless ``accumulate="float32"`` (and float32 data), or unless the mode is
    "auto" and ``plan`` may run in float32 whole (``plan.float32``: max/min products of
    one-rounding terms, such as chebyshev; the caller checks the input range)."""
    mode = accumulate or _DEFAULT["accumulate"]
    if mode not in ACCUMULATE:
        raise InputError("unknown accumulate mode", expected=", ".join(ACCUMULATE), got=repr(mode))
    if np.dtype(dtype) == np.float32 and (
            mode == "float32" or (mode == "auto" and getattr(plan, "float32", None) is not None)):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def set_accumulate(mode: str) -> None:
    """The accumulation mode of CUDA runs from now on ("auto", "float32", "float64")."""
    accumulator_dtype(np.float32, mode)  # validates
    _DEFAULT["accumulate"] = mode


@contextlib.contextmanager
def accumulate(mode: str):
    """Within the block, CUDA runs accumulate in ``mode`` ("auto", "float32", "float64"),
    e.g. to measure what float64 accumulation costs (benchmarks/run.py distances --accuracy)."""
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
    return unavailable_reason() is None


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here (None when it can); asked once per process (a
    failed ``import cupy`` is not remembered by Python: it searched the path on every
    call, about a fifth of a millisecond of each small call on a machine without CuPy)."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
        return "CuPy sees no CUDA device"
    except Exception as e:  # CUDARuntimeError: no driver, no device
        return f"CuPy sees no CUDA device ({str(e).splitlines()[0] if str(e) else type(e).__name__})"


def generate_source(plan: Plan, dtype=np.float32, accumulate: str | None = None) -> str:
    """The CUDA source the backend compiles for ``plan`` (for ``gbdist explain --cuda``),
    headed by the strategies that can run it and how the runtime chooses."""
    gen = _generated(plan, np.dtype(dtype).name, accumulator_dtype(dtype, accumulate, plan).name)
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
        if "dense_union" in gen.strategies:
            head.append("//   dense_union: both sides densified, the op over every column in tiles "
                        "(forced only while dense_strategies.DENSE_UNION is off)")
    else:
        head = ["// no product step: row reductions, then the epilogue on the reductions"]
    return "\n".join(head) + "\n" + gen.source


def _generated(plan: Plan, dtype_name: str, acc_name: str | None = None,
               split: bool = True) -> "Generated":
    """Generated source, cached by the plan's structural key, the dtype, the
    accumulator type (default: :func:`accumulator_dtype` of the dtype) and whether
    float splits are used (``codegen.generate``)."""
    from . import genstore
    acc_name = acc_name or accumulator_dtype(dtype_name).name
    key = (plan.expr.key, plan.lowered.key, tuple(sorted(plan.roles.items())), dtype_name,
           acc_name, split, genstore.knobs())  # the lowering too: a direct plan shares expr

    def make():
        gen = genstore.load(key, plan)  # made by an earlier process: no sympy imported
        if gen is None:
            from . import codegen  # sympy: imported when a kernel is first generated
            gen = codegen.generate(plan, np.dtype(dtype_name), np.dtype(acc_name), split)
            genstore.store(key, gen)
        return gen
    return cache.generated(key, make)


generated = _generated  # the public name


def clear_caches() -> None:
    """Forget every compiled module, generated source and strategy choice of this process."""
    cache.clear()


class CUDAPrepared:
    """A bound plan on the device: its generated source, uploaded operands (one per key,
    one upload per distinct operand), the output sides and the proven d(a, a)."""

    def __init__(self, bound: Bound, gen: "Generated", at, strategy: str, exact_pass: bool,
                 rows_per_block: int | None, float32_range: int | None = None):
        import cupy
        self.bound = bound
        self.gen = gen
        self.dt = np.dtype(bound.dtype)
        self.at = at
        self.strategy = strategy
        self.rows_per_block = rows_per_block
        uploaded: dict = {}
        self.data = {}
        for key, v in bound.data.items():  # kept in the operand's memo (Bound.memos)
            if id(v) not in uploaded:
                uploaded[id(v)] = bound.remember(key, ("device csr", self.dt.str),
                                                 lambda v=v: upload(v, self.dt))
            self.data[key] = uploaded[id(v)]
        sides: dict = {}
        for step in bound.plan.steps:
            for side, key in step.sides:
                sides.setdefault(side, key)
        self.left_key, self.right_key = sides.get("left"), sides.get("right")
        keys = [k for k in (self.left_key, self.right_key) if k in self.data]
        if float32_range is not None and not self._within(keys, float32_range):
            # a value outside the range where the plan's float32 bound holds: float64
            self.at = at = np.dtype(np.float64)
            self.gen = gen = _generated(bound.plan, self.dt.name, at.name)
        if gen.split_exponent is not None and not self._within(keys, gen.split_exponent):
            # a value outside the range the float split's bound covers: ⊗ in double
            self.gen = _generated(bound.plan, self.dt.name, at.name, split=False)
        plan = bound.plan
        pair = exact.operand_pair(plan) if exact_pass and plan.output_kind == "matrix" else None
        self.value = exact.self_value(plan).value if pair is not None else None
        self.K = next((d.shape[1] for d in self.data.values()), 0)
        self.wts = _weights(bound, self.gen, self.at, self.K)
        self.cupy = cupy
        self.kept = Kept()  # slices' forms for the call's other tiles

    def _within(self, keys, e: int) -> bool:
        """:func:`operands.within_exponent` of each operand, read once per operand (its
        memo): the read synchronises the host with the device."""
        return all(self.bound.remember(k, ("within exponent", e),
                                       lambda k=k: operands.within_exponent([self.data[k]], e))
                   for k in keys)

    def tile_data(self, r0: int, r1: int, c0: int, c1: int) -> tuple[dict, dict]:
        """(left operands: rows r0:r1, right operands: rows c0:c1) of a tile; an operand
        read on both sides (mxm(A, A.T)) appears in both, sliced each way."""
        b = self.bound
        right_cut = (c0, c1) != (0, b.n) and b.right_sliceable
        left = {k: d.rows(r0, r1) for k, d in self.data.items() if k in b.left_keys}
        right = {k: (d.rows(c0, c1) if right_cut and k not in b.left_keys else d)
                 for k, d in self.data.items()}
        return left, right


def _weights(bound: Bound, gen: "Generated", at, K: int):
    """κ(w) of the plan's weighted steps (``bound.weights``, float64 host or device vectors
    over the K columns) as one device matrix, NW × K in the accumulator type, rows in the
    order the generated kernel reads them (``gen.weights``); None for an unweighted plan."""
    if not gen.weights:
        return None
    import cupy
    rows_ = [cupy.asarray(bound.weights[key], dtype=np.float64).reshape(-1) for key in gen.weights]
    if any(r.shape[0] != K for r in rows_):
        raise BackendError("a column weight vector does not match the operands' columns",
                           got=", ".join(str(r.shape[0]) for r in rows_), expected=f"{K} each")
    return cupy.ascontiguousarray(cupy.stack(rows_).astype(at, copy=False).reshape(-1))


def _reductions(p, mod, names, gen, kind: str, data: dict, n: int, at, K: int, outs: dict,
                whole: bool):
    """The buffer of the row reductions of ``kind`` ("col": indexed by the left rows, "row":
    by the right rows), each in its slice; ``outs`` gets each reduction's slice. When the
    side is a whole operand, the buffer is kept in that operand's memo."""
    import cupy
    reds = [r for r in gen.reductions if r.kind == kind]
    keys = {row_operand(r.step.node.arg)[:2] for r in reds}
    memo = p.bound.memo(next(iter(keys))) if whole and len(keys) == 1 else None
    what = ("reductions", kind, gen.key, np.dtype(at).str, n)
    buf = memo.get(what) if memo is not None else None
    fresh = buf is None
    if fresh:
        buf = cupy.empty(max(1, len(reds) * n), dtype=at)
    for red in reds:
        d = data[row_operand(red.step.node.arg)[:2]]
        off = reds.index(red) * d.shape[0]
        out = buf[off:off + d.shape[0]]
        if fresh:
            fn = mod.get_function(names[gen.reductions.index(red)])
            blocks = max(1, min(65535, (d.shape[0] * 32 + 255) // 256))
            fn((blocks,), (256,), (d.indptr, d.data, np.int64(d.shape[0]), np.int64(K), out))
        outs[red.step.name] = out
    if fresh and memo is not None:
        memo[what] = buf
    return buf


def _identical_rows(p, left, right):
    """(i, j) of the equal rows of the whole left and right operands: found once per pair
    (kept in the left operand's memo with the right one's memo, which it names)."""
    lm, rm = p.bound.memo(p.left_key), p.bound.memo(p.right_key)
    what = ("identical rows", id(rm), left.data.dtype.str)
    hit = lm.get(what)
    if hit is None or hit[0] is not rm:
        found = host_rows.identical_pairs((left.indptr, left.indices, left.data),
                                          (right.indptr, right.indices, right.data), p.cupy)
        hit = lm[what] = (rm, found)
    return hit[1]


class CUDABackend:
    """Generated, fused CUDA kernels through CuPy (see the module)."""

    name = "cuda"

    def __init__(self, working_memory: int | None = None, accumulate: str | None = None,
                 rows_per_block: int | None = None):
        self.working_memory = working_memory
        self.accumulate = accumulate
        self.rows_per_block = rows_per_block

    @property
    def xp(self):
        import cupy
        return cupy

    # -- the protocol (gbdist.backends.base.Backend) -----------------------------

    def prepare(self, bound: Bound, strategy: str = "auto", exact: bool = True) -> CUDAPrepared:
        if strategy not in ("auto",) + STRATEGIES:
            raise InputError("unknown strategy", expected="auto, " + ", ".join(STRATEGIES),
                             got=repr(strategy))
        at = accumulator_dtype(bound.dtype, self.accumulate, bound.plan)
        gen = _generated(bound.plan, np.dtype(bound.dtype).name, at.name)
        # float32 chosen for the plan (Plan.float32), not asked for: its range is checked
        by_plan = at != accumulator_dtype(bound.dtype, self.accumulate)
        return CUDAPrepared(bound, gen, at, strategy, exact, self.rows_per_block,
                            bound.plan.float32.exponent if by_plan else None)

    # run_tile(..., upper=True): a strategy with Strategy.upper computes a diagonal tile's
    # cells on and above the diagonal only; gb_mirror_lower completes it
    upper_tiles = True

    def run_tile(self, p: CUDAPrepared, r0: int, r1: int, c0: int, c1: int,
                 upper: bool = False) -> Tile:
        import cupy
        gen, dt, at, plan = p.gen, p.dt, p.at, p.bound.plan
        ldata, rdata = p.tile_data(r0, r1, c0, c1)
        itype_c, itype = index_type(list(ldata.values()) + list(rdata.values()))
        ldata = {k: d.with_index_type(itype) for k, d in ldata.items()}
        rdata = {k: d.with_index_type(itype) for k, d in rdata.items()}
        K = p.K
        left, right = ldata.get(p.left_key), rdata.get(p.right_key)
        n_left = left.shape[0] if left is not None else 1
        n_right = right.shape[0] if right is not None else 1
        names = tuple(f"gb_row_reduce<RSpec{r}, {itype_c}>" for r in range(len(gen.reductions)))
        job = strat = None
        b = p.bound
        whole_right = (c0, c1) == (0, b.n) or not b.right_sliceable
        if gen.gather:
            job = Job(gen, left, right, K, dt, at, itype_c, p.rows_per_block)
            job.wts = p.wts
            job.memos = (b.memo(p.left_key) if (r0, r1) == (0, b.m) else None,
                         b.memo(p.right_key) if whole_right else None)
            job.kept, job.slices = p.kept, ((r0, r1), (c0, c1) if (c0, c1) != (0, b.n) and
                                            b.right_sliceable else (0, b.n))
            job.upper = (upper and plan.output_kind == "matrix" and (r0, r1) == (c0, c1)
                         and n_left == n_right)  # a square tile: the right side was cut too
            strat = strategies.choose(job, p.strategy)
            job.upper = job.upper and strat.upper
            names += strat.kernels(job)
        cache.LAST_RUN["strategy"] = strat.name if strat is not None else None
        cache.LAST_RUN["float_split"] = gen.float_split
        cache.LAST_RUN["accumulate"] = np.dtype(at).name
        mod = cache.module(gen.key, gen.source, names)
        # Row reductions, each written into its slice of one buffer per side
        # (colred: reductions indexed by the left rows, rowred: by the right rows); a whole
        # side's buffer is kept in its operand's memo (a prepared operand's norms are
        # computed once).
        outs = {}
        colbuf = _reductions(p, mod, names, gen, "col", ldata, n_left, at, K, outs,
                             whole=(r0, r1) == (0, b.m))
        rowbuf = _reductions(p, mod, names, gen, "row", rdata, n_right, at, K, outs,
                             whole=whole_right)
        if strat is not None:
            job.colbuf, job.rowbuf = colbuf, rowbuf
            result = strat.launch(mod, job)
            if job.upper:
                strategies.mirror_lower(mod, result)
        else:
            result = _epilogue_arrays(plan, outs, K, n_left, n_right)
        result = shape_output(result, plan.output_kind, n_left, n_right, cupy).astype(dt, copy=False)
        if p.value is not None and left is not None and right is not None:
            if (r0, r1) == (0, b.m) and whole_right and result.ndim == 2 \
                    and result.dtype == left.data.dtype \
                    and not isinstance(b.memo(p.left_key), CallMemo):
                # the whole grid: the equal rows of the two operands, found once per pair of
                # operands (their memos), written with no transfer
                i, j = _identical_rows(p, left, right)
                result = dev_rows.write_at(result, i, j, p.value)
            else:
                result = host_rows.apply_self_value(
                    p.value, result, (left.indptr, left.indices, left.data),
                    (right.indptr, right.indices, right.data), cupy)
        return Tile(result, None)

    def select_k(self, D, k: int, offset: int = 0):
        return topk.select_k(D, k, offset)

    def merge_k(self, d1, i1, d2, i2, k: int):
        return topk.merge_k(d1, i1, d2, i2, k)

    def select_k_columns(self, D, k: int, offset: int = 0):
        return topk.select_k_columns(D, k, offset)

    select_bytes = 0  # the top-k kernels keep their candidates in shared memory

    def cell_bytes(self, plan, dtype) -> int:
        """Device bytes per cell of a tile: the output, one partial per product step
        (k-chunked or two-pass products keep them), the broadcast copy of a non-matrix
        output, slack."""
        nmat = sum(1 for s in plan.steps if s.kind == "matrix")
        return int(np.dtype(dtype).itemsize * (3 + nmat))

    def row_bytes(self, bound: Bound) -> int:
        return 0

    def default_budget(self, result: bool = False) -> int | None:
        """None for a materialised result (it runs as one tile, shrinking on
        out-of-memory); else half the free device memory (CuPy's cached free blocks
        counted), at most 8 GiB, at least 64 MiB."""
        if result:
            return None
        import cupy
        free, _ = cupy.cuda.runtime.memGetInfo()
        free += cupy.get_default_memory_pool().free_bytes()
        return int(max(64 * 2**20, min(8 * 2**30, free // 2)))

    def is_out_of_memory(self, e: BaseException) -> bool:
        return type(e).__name__ == "OutOfMemoryError" or isinstance(e, MemoryError)

    def release(self) -> None:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()

    def to_host(self, x):
        import cupy
        return cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else x


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
