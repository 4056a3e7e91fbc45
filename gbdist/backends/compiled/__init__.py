"""The compiled CPU backend: kernels generated from the plan, compiled by Numba.

Same plans, same semantics as the NumPy backend (``backends/cpu.py``, which
stays the oracle the tests compare against), but each plan becomes one
generated module (``codegen.py``, printed from the checked IR by
``printer.py``) whose kernels are multithreaded over blocks of output rows and
cached on disk (``cache.py``). Numba is imported on first use only:
``import gbdist`` does not load it.

Why Numba: LLVM in a wheel on every platform (no compiler needed on the user's
machine), an on-disk cache of machine code, kernels that release the GIL, and it
compiles the same kind of expression source the printer emits for CUDA.

It implements the backend protocol (:mod:`gbdist.backends.base`) as a subclass of
:class:`~gbdist.backends.cpu.CPUBackend`: the same memory model and tiling, the runtime's
bound operands (never re-bound or re-checked here), :meth:`CompiledCPUBackend.run_tile`
running the plan's generated kernel on one output tile (left rows ``r0:r1`` read through
a view of the row pointers, right rows ``c0:c1`` per column tile), the proven d(a, a)
written by :func:`gbdist.backends.rows.apply_self_value` as on the NumPy backend, and
:meth:`select_k` / :meth:`merge_k` compiled (``topk.py``).

Threads: each kernel processes a range of output rows ``[r0, r1)`` and is run
over blocks of rows on a thread pool (``threads.py``), about four blocks per
thread. Not ``prange``: ``parallel=True`` made every plan's first compilation
2-4x slower (measured: cosine 4.9 s against 2.5 s, chebyshev 8.3 s against
4.2 s), and the speed is the same for these row-independent loops.

Inputs are taken as they come: float32 values stay float32 (each kernel reads
them and accumulates in float64), int32 indices stay int32. So that each kernel
is compiled once, not once per combination of types, all operands of a call share
one index type (:func:`one_index_type`: int32 whenever it fits, the type SciPy
gives; an int64-indexed operand that fits is copied to int32) and the fused
kernel takes a float64 and a float32 output argument, writing the result's.
"""
from __future__ import annotations


import numpy as np
import scipy.sparse as sps

from ...algebra.evaluate import apply_unary
from ...compiler import exact
from ...compiler.plan import Plan
from ...errors import InputError
from .. import rows as _rows
from ..base import Bound, Tile, shape_output
from ..cpu import CPUBackend, compress_columns
from .threads import run_blocks as _run_blocks
from .threads import threads
from .host import (  # noqa: F401  (public here: the backend's host passes)
    condition_host, hashes_host, mirror_lower, one_index_type, same_host)

_GENERATED: dict = {}


def available() -> bool:
    """True when Numba can be imported."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def generated(plan: Plan):
    """The generated module description for ``plan`` (cached by its structural key)."""
    from .codegen import generate
    key = _plan_key(plan)
    gen = _GENERATED.get(key)
    if gen is None:
        gen = _GENERATED[key] = generate(plan)
    return gen


def generate_source(plan: Plan) -> str:
    """The Python/Numba source the backend compiles for ``plan`` (for explain)."""
    return generated(plan).source


def _plan_key(plan: Plan) -> tuple:
    """The plan's structure: its expression and its lowering (the accuracy rule's direct
    plan has the expression of the plan it replaces, not its steps: keyed by the expression
    alone, a process that had run the rewritten plan reused its kernels for the direct one)."""
    return (plan.expr.key, plan.lowered.key, tuple(sorted(plan.roles.items())))


_LOADED: dict = {}


def _module(plan: Plan):
    """The plan's compiled module (loaded once per process: the cache's key hashes the
    whole source)."""
    key = _plan_key(plan)
    mod = _LOADED.get(key)
    if mod is None:
        from .cache import load
        mod = _LOADED[key] = load(generated(plan).source)
    return mod


def _host(v) -> sps.csr_matrix:
    """A bound operand on the host, its value and index types kept (a CuPy one is copied
    once)."""
    if hasattr(v.data, "get"):
        out = sps.csr_matrix((v.data.get(), v.indices.get(), v.indptr.get()), shape=v.shape)
        out.indices, out.indptr = v.indices.get(), v.indptr.get()
        return out
    return v


_MONOIDS: dict = {}


def _monoid_args(monoid) -> tuple:
    """(identity, kernel code) of a monoid, found once per monoid object (the identity is
    evaluated and the ufunc proved from the algebra: too slow for every call)."""
    hit = _MONOIDS.get(id(monoid))
    if hit is None or hit[0] is not monoid:
        hit = _MONOIDS[id(monoid)] = (monoid, monoid.identity_value, _how(monoid.ufunc))
    return hit[1:]


def _how(ufunc) -> int:
    from . import helpers
    return {np.add: helpers.PLUS, np.multiply: helpers.TIMES, np.maximum: helpers.MAX,
            np.minimum: helpers.MIN}[ufunc]


class CompiledPrepared:
    """A bound plan with its generated module: operand values mapped once (apply chains),
    right rows ordered once (ordered unions), the right side of each column tile (CSC
    by column, row reductions) computed once per column tile. What depends on one operand
    alone is kept in that operand's memo (``Bound.memos``): a prepared operand pays for it
    in its first call only (:mod:`gbdist.runtime.prepared`)."""

    def weights(self) -> np.ndarray:
        """κ(w) of the weighted steps, one row each (the kernels' ``wts``; 1 × 1 when none)."""
        if self._wts is None:
            keys = self.gen.weights
            self._wts = np.stack([np.asarray(self.bound.weights[k], np.float64) for k in keys]) \
                if keys else np.zeros((1, 1))
        return self._wts

    def __init__(self, bound: Bound, exact_pass: bool):
        plan = bound.plan
        self.bound = bound
        self.gen = gen = generated(plan)
        self.mod = mod = _module(plan)
        self.gen_key = _plan_key(plan)
        self.pair = exact.operand_pair(plan) if exact_pass and plan.output_kind == "matrix" else None
        self.value = exact.self_value(plan).value if self.pair is not None else None
        self.K = bound.ncols
        self.Kw = bound.width
        self._wts = None
        data = bound.data
        self.values = {}
        self.chains = {}  # operand index -> the key of its apply chain
        seen: dict = {}  # (values array, chain): mapped once (a self-join's A and B share X)
        for u in gen.operands:
            values = data[u.base].data
            chain = self.chains[u.index] = tuple(op.key for op in u.chain)
            key = (id(values), chain)
            if key not in seen:
                seen[key] = bound.memo(u.base).get(("values", chain))
            if seen[key] is None:
                for op in u.chain:  # the NumPy evaluator, as the oracle's bind_operand maps
                    values = apply_unary(op, values)
                seen[key] = bound.memo(u.base)[("values", chain)] = \
                    np.asarray(values, dtype=np.float64) if u.mapped else values
            self.values[u.index] = seen[key]
        self.sorted = {}  # (operand, step) -> (indices, values) of rows ordered for a union
        for kind, u, s in gen.args:
            if kind == "rsort":
                base = gen.operands[u].base
                memo, mkey = bound.memo(base), ("rsort", self.gen_key, u, s)
                if mkey not in memo:
                    d = data[base]
                    out_i = np.empty_like(d.indices)
                    out_v = np.empty(d.indices.shape[0], dtype=np.float64)
                    _run_blocks(getattr(mod, f"rsort_{s}"),
                                (d.indptr, d.indices, self.values[u], out_i, out_v), d.shape[0],
                                work=d.nnz)
                    memo[mkey] = (out_i, out_v)
                self.sorted[(u, s)] = memo[mkey]
        self.cols = [(st, u) for st, u, kind in gen.reductions if kind == "col"]
        self.rows = [(st, u) for st, u, kind in gen.reductions if kind == "row"]
        self._right = None
        self._split = False  # not yet decided (see split())

    def split(self):
        """The dense columns of a plan whose products are expanded scatters
        (``gen.gemm``), decided once per call, or None.

        A column k stored by a fraction c_l(k)/m of the left rows and c_r(k) right rows
        costs each left row c_l(k)/m · c_r(k) scattered multiply-adds, and n/S as a column
        of a BLAS matrix product, S ≈ 16 times faster per multiply-add: it is *dense*
        when c_l(k)/m · c_r(k) · S > n. When the dense columns carry at least a quarter of
        the work (and the output has at least 2^16 cells), their products are one matrix
        product per tile, Σ_r φ_r(L_d) ψ_r(R_d)ᵀ, which starts the kernel's sums, and the
        left rows are scattered without them. Measured on the 500-query benchmarks: the
        columns stored by a fourth of the rows or more carry most of the work (Newsgroups'
        71 most common words 80%, Tabula Muris' 2,126 most expressed genes 86%); the split is taken only when the scattered multiply-adds it
        removes outweigh the product's cost (``GEMM_CELL`` below): KOS' 20 dense words
        (34% of the work) stay scattered."""
        if self._split is not False:
            return self._split
        self._split = None
        gen, b = self.gen, self.bound
        if not gen.gemm or not gen.fused:
            return None
        (lu, ru), = {(lu, ru) for _st, lu, ru, _how in gen.products}
        L, R = b.data[gen.operands[lu].base], b.data[gen.operands[ru].base]
        m, n, k = L.shape[0], R.shape[0], L.shape[1]
        if m * n < 2**16 or k == 0:
            return None
        cl = np.bincount(L.indices, minlength=k).astype(np.float64)
        cr = cl if R.indices is L.indices else \
            np.bincount(R.indices, minlength=k).astype(np.float64)
        dense = (cl / m) * cr * GEMM_SPEEDUP > n
        cols = np.flatnonzero(dense)
        # the product costs m·n·(width/S) multiply-adds' time, and about 8 per output cell
        # more (its output written and read back; a thin product runs far below the BLAS
        # peak: 2 GFLOPS for 500 × 20 × 3,430 against 20 for 500 × 80 × 18,846, measured)
        if float(cl[dense] @ cr[dense]) <= m * n * (cols.shape[0] / GEMM_SPEEDUP + GEMM_CELL):
            return None
        dpos = np.full(k, -1, dtype=np.int64)
        dpos[cols] = np.arange(cols.shape[0])
        keep = dpos[L.indices] < 0
        csum = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(keep, dtype=np.int64)])
        lptr = csum[L.indptr].astype(L.indptr.dtype)
        self._split = dict(lu=lu, ru=ru, dpos=dpos, width=cols.shape[0], lptr=lptr,
                           lidx=L.indices[keep], lval=self.values[lu][keep], right={})
        return self._split

    def dense_rows(self, u: int, r0: int, r1: int) -> np.ndarray:
        """Rows r0:r1 of operand ``u`` (mapped values) on the dense columns, as a dense
        float64 block (0 where nothing is stored)."""
        sp = self._split
        d = self.bound.data[self.gen.operands[u].base]
        r0, r1 = min(r0, d.shape[0]), min(r1, d.shape[0])
        from . import helpers
        out = np.zeros((r1 - r0, sp["width"]), dtype=np.float64)
        _run_blocks(helpers.dense_rows, (d.indptr[r0:r1 + 1], d.indices, self.values[u],
                                         sp["dpos"], out), r1 - r0,
                    work=int(d.indptr[r1] - d.indptr[r0]) + out.size)
        return out

    def base(self, r0: int, r1: int, c0: int, c1: int):
        """The products over the dense columns for the tile, one plane per product step:
        Σ_r φ_r(L_d) @ ψ_r(R_d)ᵀ (NumPy's matrix product, BLAS)."""
        sp = self._split
        right = sp["right"].get((c0, c1))
        if right is None:
            sp["right"] = {(c0, c1): self.dense_rows(sp["ru"], c0, c1)}
            right = sp["right"][(c0, c1)]
        left = self.dense_rows(sp["lu"], r0, r1)
        out = np.empty((len(self.gen.gemm), r1 - r0, right.shape[0]), dtype=np.float64)
        for s, expansion in enumerate(self.gen.gemm):
            acc = None
            for phi, psi in expansion:
                term = np.matmul(apply_unary(phi, left), apply_unary(psi, right).T)
                acc = term if acc is None else acc + term
            out[s] = acc
        return out

    def reduce(self, group, r0: int, r1: int) -> np.ndarray:
        """The row reductions of ``group`` over rows r0:r1 of their operands."""
        from . import helpers
        buf = np.zeros((max(1, len(group)), max(0, r1 - r0)), dtype=np.float64)
        for c, (st, u) in enumerate(group):
            op = self.gen.operands[u]
            d = self.bound.data[op.base]
            a, b = min(r0, d.shape[0]), min(r1, d.shape[0])
            e, how = _monoid_args(st.node.monoid)
            fill = op.fill
            memo = self.bound.memo(op.base)
            key = ("reduce", self.chains[u], float(fill), float(e), how, self.K, a, b)
            out = memo.get(key)
            if out is None:
                counts = not (fill == e or (np.isnan(fill) and np.isnan(e)))
                out = np.zeros(b - a, dtype=np.float64)
                helpers.reduce_rows(d.indptr[a:b + 1], self.values[u], np.int64(self.K),
                                    np.float64(fill), np.float64(e), how, counts, out)
                memo[key] = out
            buf[c, :b - a] = out
        return buf

    def right(self, c0: int, c1: int):
        """The product kernel's right-side arrays and row reductions for columns c0:c1."""
        if self._right is None or self._right[:2] != (c0, c1):
            b, gen = self.bound, self.gen
            if not b.right_sliceable:
                c0_, c1_ = 0, max((v.shape[0] for k, v in b.data.items() if k not in b.left_keys),
                                  default=1)
            else:
                c0_, c1_ = c0, c1
            arrays = {}
            for kind, u, s in gen.args:
                if kind == "lcsr":
                    continue
                d = b.data[gen.operands[u].base]
                a, e = min(c0_, d.shape[0]), min(c1_, d.shape[0])
                ptr = d.indptr[a:e + 1]
                if kind == "rcsc":
                    memo = b.memo(gen.operands[u].base)
                    mkey = ("rcsc", self.chains[u], a, e)
                    if mkey not in memo:
                        lo, hi = int(ptr[0]), int(ptr[-1])
                        t = sps.csr_matrix((self.values[u][lo:hi], d.indices[lo:hi], ptr - lo),
                                           shape=(e - a, d.shape[1])).tocsc()
                        t.sort_indices()
                        it = d.indices.dtype  # SciPy may shrink int64 indices: keep the input's
                        memo[mkey] = (t.indptr.astype(it, copy=False),
                                      t.indices.astype(it, copy=False), t.data)
                    arrays[(kind, u, s)] = memo[mkey]
                elif kind == "rsort":
                    arrays[(kind, u, s)] = (ptr, *self.sorted[(u, s)])
                else:
                    arrays[(kind, u, s)] = (ptr, d.indices, self.values[u])
            n = c1_ - c0_
            rowred = self.reduce(self.rows, c0_, c1_)
            self._right = (c0, c1, arrays, rowred, n)
        return self._right[2:]


GEMM_SPEEDUP = 16  # a BLAS multiply-add against a scattered one (see CompiledPrepared.split)
GEMM_CELL = 8  # the dense product's cost per output cell beyond its multiply-adds
_NO_BASE = np.zeros((1, 1, 1), dtype=np.float64)
_NO_OUT = np.zeros((1, 1), dtype=np.float64)  # the output argument a kernel does not write
_NO_OUT32 = np.zeros((1, 1), dtype=np.float32)

class CompiledCPUBackend(CPUBackend):
    """The NumPy backend's protocol and memory model, each tile computed by the plan's
    generated, multithreaded Numba kernel (see the module)."""

    name = "compiled"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _rows.register_host_condition(condition_host)  # the runtime's binding, compiled
        _rows.register_host_rows(hashes_host, same_host)  # identical rows, compiled

    def prepare(self, bound: Bound, strategy: str = "auto", exact: bool = True) -> CompiledPrepared:
        if strategy != "auto":
            raise InputError(f"strategy={strategy!r} selects a CUDA kernel; the {self.name} CPU "
                             "backend has one kernel per primitive",
                             hint="use backend='cuda', or strategy='auto'")
        data = one_index_type(compress_columns({k: _host(v) for k, v in bound.data.items()},
                                               bound.ncols, bool(bound.weights)))
        return CompiledPrepared(bound.with_data(data), exact)

    # run_tile(..., upper=True): a diagonal tile's cells on and above its diagonal only
    # (every product kernel of gb_fused, the dense columns' matrix product excepted),
    # the rest mirrored (mirror_lower)
    upper_tiles = True

    def run_tile(self, p: CompiledPrepared, r0: int, r1: int, c0: int, c1: int,
                 upper: bool = False) -> Tile:
        b, gen = p.bound, p.gen
        plan = b.plan
        right, rowred, n = p.right(c0, c1)
        m = r1 - r0
        # left row i is right row i: the local indices agree (a sliced right side)
        upper = bool(upper) and gen.fused and (r0, r1) == (c0, c1) and b.right_sliceable \
            and m == n
        sp = p.split() if m > 0 and n > 0 else None
        arrays = []
        for kind, u, s in gen.args:
            if kind == "lcsr" and sp is not None and u == sp["lu"]:
                arrays += [sp["lptr"][r0:r1 + 1], sp["lidx"], sp["lval"]]
            elif kind == "lcsr":
                d = b.data[gen.operands[u].base]
                arrays += [d.indptr[r0:r1 + 1], d.indices, p.values[u]]
            else:
                arrays += list(right[(kind, u, s)])
        base = p.base(r0, r1, c0, c1) if sp is not None else _NO_BASE
        colred = p.reduce(p.cols, r0, r1)
        o32 = gen.fused and np.dtype(b.dtype) == np.float32
        out32 = np.empty((m, n), dtype=np.float32) if o32 else _NO_OUT32
        if o32:  # written directly in float32, through the kernel's second output argument
            out = _NO_OUT
            kernel = p.mod.gb_fused
        elif gen.fused:  # float64 whatever the result dtype: one signature per kernel
            out = np.empty((m, n), dtype=np.float64)
            kernel = p.mod.gb_fused
        else:
            out = np.empty((max(1, len(gen.products)), m, n), dtype=np.float64)
            kernel = p.mod.gb_planes
        head = (*arrays, p.weights(), colred, rowred, np.int64(p.K), np.int64(p.Kw), np.int64(n), out, base,
                sp is not None, out32, o32, upper)
        # the work: each cell reads about a left row's entries (fewer for a gather)
        lrows = b.data[next(iter(b.left_keys))] if b.left_keys else None
        per_row = 1 + (lrows.nnz // max(1, lrows.shape[0]) if lrows is not None else 0)
        _run_blocks(kernel, head, m, work=m * max(n, 1) * per_row // (2 if upper else 1))
        if upper:
            mirror_lower(out32 if o32 else out)
        if o32:
            out = out32
        elif not gen.fused:
            out = self._planes_epilogue(p, out, colred, rowred, m, n)
        elif out.dtype != b.dtype:
            out = out.astype(b.dtype)
        kind = plan.output_kind
        out = shape_output(out, kind, r1 - r0, c1 - c0)
        if kind == "matrix" and p.pair is not None:
            lk, rk = b.data[p.pair[0]], b.data[p.pair[1]]
            lo = int(lk.indptr[r0])
            left = (lk.indptr[r0:r1 + 1] - lk.indptr[r0], lk.indices[lo:int(lk.indptr[r1])],
                    lk.data[lo:int(lk.indptr[r1])])
            rh = _rows.operand_hashes(b, p.pair[1])
            if b.right_sliceable and (c0, c1) != (0, b.n):
                hi = int(rk.indptr[c1])
                lo2 = int(rk.indptr[c0])
                right_ = (rk.indptr[c0:c1 + 1] - rk.indptr[c0], rk.indices[lo2:hi],
                          rk.data[lo2:hi])
                rh = rh[c0:c1]
            else:
                right_ = (rk.indptr, rk.indices, rk.data)
            out = _rows.apply_self_value(p.value, out, left, right_,
                                         hashes=(_rows.operand_hashes(b, p.pair[0])[r0:r1], rh))
        # a fused kernel keeps no step values: suspect None, the runtime's repair scans
        # the rows large enough to overflow (gbdist.runtime.direct.Repair)
        return Tile(out, None)

    def cell_bytes(self, plan, dtype) -> int:
        """A matrix tile is written once by the fused kernel, in float32 or float64 as the
        result (another dtype: float64, then cast once), plus 8 bytes of slack per cell
        for the repair's masks; other outputs keep one float64 plane per product step and
        the NumPy epilogue's temporaries (3)."""
        if plan.output_kind == "matrix":
            size = np.dtype(dtype).itemsize
            return 8 + size if size in (4, 8) else 16 + size
        return 8 * (len(plan.steps) + 3)

    def row_bytes(self, bound: Bound) -> int:
        """The kernels' per-thread scratch is per tile, not per left row."""
        return 0

    def _planes_epilogue(self, p: CompiledPrepared, planes, colred, rowred, m: int, n: int):
        """The epilogue of a plan whose output is not an (i, j) grid, on the kernel's
        planes (NumPy's, as the oracle evaluates it)."""
        plan, gen = p.bound.plan, p.gen
        results = {}
        for step, *_ in gen.products:
            s = gen.plane_of[step.name]
            results[step.name] = planes[s][:, :1] if step.kind == "col" else planes[s]
        for c, (st, _) in enumerate(p.cols):
            results[st.name] = colred[c][:, None]
        for c, (st, _) in enumerate(p.rows):
            results[st.name] = rowred[c][None, :]
        return np.asarray(self.epilogue(plan.epilogue, results, p.K), dtype=np.float64)

    def select_k(self, D, k: int, offset: int = 0):
        """The k smallest entries of each row of ``D`` by (distance, column), NaN last."""
        from .topk import select_k
        return select_k(D, k, offset)

    def search_k(self, p: CompiledPrepared, k: int, half: bool, budget: int | None):
        """The k nearest of every left row in one fused pass (``topk.search_k``), or None
        where the plan has no such kernel or it would exceed ``budget``: the caller then
        runs the tile loop. The caller checks that no tile would need the runtime's repair."""
        from .topk import search_k
        return search_k(p, k, half, budget)

    def merge_k(self, d1, i1, d2, i2, k: int):
        """Merge two per-row candidate lists into the k best (distance, index)."""
        from .topk import merge_k
        return merge_k(d1, i1, d2, i2, k)


__all__ = ["CompiledCPUBackend", "available", "generate_source", "generated", "threads"]
