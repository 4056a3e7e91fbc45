"""Running a Plan on concrete data: binding, validation, tiling, dispatch.

The runtime owns everything between the user's arrays and a backend's
kernels: it canonicalises inputs (any SciPy sparse format, dense arrays,
int32/int64 indices, unsorted indices, duplicates), checks shapes and the ops'
domains, splits the output into row blocks sized by a memory budget, runs the
plan's steps per block and evaluates the epilogue.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sps

from . import ir
from .errors import BackendError, InputError
from .ops import apply_unary
from .plan import Plan
from .typecheck import row_operand

DEFAULT_WORKING_MEMORY = 512 * 2**20


def is_cupy(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("cupy") or mod.startswith("cupyx")


def to_csr(x, name: str, drop_zeros: bool = False) -> sps.csr_matrix:
    """A canonical float64 CSR copy: sorted indices, duplicates summed."""
    if is_cupy(x):
        x = x.get()
    index_dtype = None
    if sps.issparse(x):
        if x.ndim != 2:
            raise InputError(f"{name} must be a 2-D matrix", got=f"{x.ndim}-D sparse")
        _check_real(x.dtype, name)
        index_dtype = _index_dtype(x)
        csr = sps.csr_matrix(x, dtype=np.float64, copy=True)
    else:
        arr = np.asarray(x)
        if arr.dtype == object:
            raise InputError(f"{name} must be numeric", got="an object array",
                             hint="pass a NumPy array or a SciPy sparse matrix")
        _check_real(arr.dtype, name)
        if arr.ndim != 2:
            raise InputError(f"{name} must be a 2-D matrix", got=f"shape {arr.shape}",
                             hint="reshape a single sample with x.reshape(1, -1)")
        csr = sps.csr_matrix(arr.astype(np.float64))
    if not np.issubdtype(csr.indices.dtype, np.integer):
        raise InputError(f"{name} has non-integer indices", got=str(csr.indices.dtype))
    csr.sum_duplicates()  # also sorts the indices
    if drop_zeros:
        csr.eliminate_zeros()
    if index_dtype == np.int64 and csr.indices.dtype != np.int64:
        # SciPy shrinks int64 indices to int32 when they fit; keep the user's width.
        csr.indices = csr.indices.astype(np.int64)
        csr.indptr = csr.indptr.astype(np.int64)
    return csr


def _check_real(dtype, name: str) -> None:
    """Only booleans, integers and real floats are data; complex or text is refused."""
    if np.dtype(dtype).kind not in "biuf":
        raise InputError(f"{name} must hold real numbers", expected="bool, int or float values",
                         got=f"dtype {np.dtype(dtype)}",
                         hint="convert the data first, e.g. X.real or X.astype(np.float64)")


def _index_dtype(x):
    for attr in ("indices", "row", "col"):
        v = getattr(x, attr, None)
        if v is not None:
            return np.dtype(v.dtype)
    return None


def vector_to_row(x, name: str) -> sps.csr_matrix:
    """A dense vector as a 1×k row in which every entry is stored (zeros too)."""
    if sps.issparse(x):
        v = sps.csr_matrix(x, dtype=np.float64)
        if v.shape[0] != 1:
            v = v.T.tocsr() if v.shape[1] == 1 else None
        if v is None:
            raise InputError(f"{name} must be a vector", got=f"shape {x.shape}")
        v.sum_duplicates()
        return v
    arr = np.asarray(x.get() if is_cupy(x) else x, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D vector", got=f"shape {arr.shape}")
    k = arr.shape[0]
    return sps.csr_matrix((arr, np.arange(k), np.array([0, k])), shape=(1, k))


def result_dtype(inputs: dict, dtype=None) -> np.dtype:
    """float32 when every input is float32 (or asked for), else float64."""
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt not in (np.float32, np.float64):
            raise InputError("dtype must be float32 or float64", got=str(dt))
        return dt
    dts = [np.dtype(getattr(v, "dtype", np.float64)) for v in inputs.values()]
    return np.dtype(np.float32) if dts and all(d == np.float32 for d in dts) else np.dtype(np.float64)


@dataclass
class Bound:
    """A plan with its data: full operands, sizes and which keys are row-sliced."""

    plan: Plan
    data: dict  # (name, transposed) -> csr
    m: int
    n: int
    ncols: int
    left_keys: frozenset
    dtype: np.dtype


def bind(plan: Plan, inputs: dict, drop_zeros: bool = False, dtype=None) -> Bound:
    """Check and canonicalise the inputs of a plan."""
    needed = {}
    for s in ir.symbols(plan.expr):
        needed[s.name] = s
    missing = sorted(set(needed) - set(inputs))
    if missing:
        raise InputError("the program needs more inputs", expected=", ".join(sorted(needed)),
                         got=", ".join(sorted(inputs)) or "none",
                         hint=f"call program({', '.join(f'{m}=...' for m in missing)})")
    extra = sorted(set(inputs) - set(needed))
    if extra:
        raise InputError("unknown input name(s)", expected=", ".join(sorted(needed)),
                         got=", ".join(extra))
    base = {}
    for name, sym in needed.items():
        if isinstance(sym, ir.Vector):
            base[name] = vector_to_row(inputs[name], name)
        else:
            base[name] = to_csr(inputs[name], name, drop_zeros)
    data = {}
    left_keys = set()
    for step in plan.steps:
        for side, key in step.sides:
            name, flipped = key
            if key not in data:
                data[key] = base[name].T.tocsr() if flipped else base[name]
                if flipped:
                    data[key].sort_indices()
            if side == "left":
                left_keys.add(key)
    widths = {k: v.shape[1] for k, v in data.items()}
    if len(set(widths.values())) > 1:
        desc = ", ".join(f"{k[0]}{'.T' if k[1] else ''}: {w} columns" for k, w in sorted(widths.items()))
        raise InputError("the operands of a product must have the same number of columns (k)",
                         got=desc, hint="for mxm(A, B.T), A and B need the same number of columns")
    ncols = next(iter(widths.values())) if widths else next(
        (v.shape[1] for v in base.values()), 0)
    m = max((data[k].shape[0] for k in left_keys), default=1)
    right_rows = [data[key].shape[0] for step in plan.steps for side, key in step.sides
                  if side == "right"]
    n = max(right_rows, default=1)
    _check_domains(plan, data)
    return Bound(plan, data, m, n, ncols, frozenset(left_keys), result_dtype(inputs, dtype))


def _check_domains(plan: Plan, data: dict) -> None:
    """Every op sees only inputs of its domain (e.g. hellinger: nonnegative)."""
    checked = set()
    for p in plan.products:
        op = p.analysis.semiring.mul
        node = p.node
        sides = ((node.left, False), (node.right, True)) if isinstance(node, ir.MxM) else \
            ((node.matrix, False), (node.vector, False))
        for operand, flip in sides:
            name, flipped, chain = row_operand(operand, flip)
            key = (op.key, name, flipped, chain)
            if (name, flipped) not in data or key in checked:
                continue
            checked.add(key)
            if all(c.domain != "nonnegative" for c in chain + (op,)):
                continue  # nothing to check: no need to evaluate the chain on the data
            values = data[(name, flipped)].data
            for c in chain:
                c.check_domain(values, f"input {name} (before {c.name})")
                values = apply_unary(c, values)
            op.check_domain(values, f"input {name}")


def _block_rows(b: Bound, budget: int) -> int:
    nmat = sum(1 for s in b.plan.steps if s.kind == "matrix") + 3
    per_row = 8 * max(b.n, 1) * nmat
    # A two-pass union densifies its block of left rows over all k columns.
    per_row += 8 * b.ncols * sum(1 for s in b.plan.steps if isinstance(s.node, ir.TwoPassUnion))
    return int(max(1, min(b.m, budget // per_row)))


def iter_blocks(b: Bound, backend, working_memory: int | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield (row_start, row_stop, result rows) blocks of the output."""
    budget = int(working_memory or DEFAULT_WORKING_MEMORY)
    plan = b.plan
    fixed = {}  # steps that read right-side operands only: computed once
    for step in plan.steps:
        if all(side == "right" for side, _ in step.sides):
            fixed[step.name] = backend.run_step(step, {}, b.data, b.ncols)
    rows = _block_rows(b, budget)
    for r0 in range(0, b.m, rows):
        r1 = min(b.m, r0 + rows)
        left = {k: b.data[k][r0:r1] for k in b.left_keys}
        results = dict(fixed)
        for step in plan.steps:
            if step.name not in results:
                results[step.name] = backend.run_step(step, left, b.data, b.ncols)
        out = backend.epilogue(plan.epilogue, results, b.ncols)
        yield r0, r1, _shape_block(out, plan.output_kind, r1 - r0, b.n)


def _shape_block(out, kind: str, rows: int, n: int) -> np.ndarray:
    out = np.asarray(out, dtype=np.float64)
    if kind == "matrix":
        return np.broadcast_to(out, (rows, n))
    if kind == "col":
        return np.broadcast_to(out, (rows, 1)).reshape(rows)
    if kind == "row":
        return np.broadcast_to(out, (1, n)).reshape(n)
    return out.reshape(())


def get_backend(name: str, working_memory: int | None = None):
    """Resolve ``backend=`` ("auto", "cpu", "cuda") to a backend object."""
    if name == "cpu":
        from .backends.cpu import CPUBackend
        return CPUBackend(working_memory)
    if name in ("cuda", "auto"):
        try:
            from .backends.cuda import CUDABackend, available
        except ImportError:
            available = None
        if available is not None and available():
            return CUDABackend(working_memory)
        if name == "cuda":
            raise BackendError("backend='cuda' needs CuPy and an NVIDIA GPU",
                               got="no usable GPU", hint="pip install 'gbdist[cuda]', or backend='cpu'")
        from .backends.cpu import CPUBackend
        return CPUBackend(working_memory)
    raise InputError("unknown backend", expected="'auto', 'cpu' or 'cuda'", got=repr(name))


STRATEGIES = ("auto", "gather", "scatter", "dense", "sorted")


def run(plan: Plan, inputs: dict, backend: str = "auto", working_memory: int | None = None,
        drop_zeros: bool = False, dtype=None, strategy: str = "auto"):
    """Execute ``plan`` on ``inputs`` and return the whole result.

    ``strategy`` forces a CUDA kernel strategy ("gather", "scatter", "dense");
    the CPU backend has one implementation per primitive and accepts "auto" only.
    """
    if strategy not in STRATEGIES:
        raise InputError("unknown strategy", expected=", ".join(STRATEGIES), got=repr(strategy))
    if backend == "auto" and any(isinstance(s.node, ir.TwoPassUnion) and not s.node.add.idempotent
                                 for s in plan.steps):
        backend = "cpu"  # a union summed directly (steep ops with plus): no CUDA kernel yet
    be = get_backend(backend, working_memory)
    if hasattr(be, "run"):
        return be.run(plan, inputs, working_memory=working_memory, drop_zeros=drop_zeros, dtype=dtype,
                      strategy=strategy)
    if strategy != "auto":
        raise InputError(f"strategy={strategy!r} selects a CUDA kernel; the {be.name} backend has none",
                         hint="use backend='cuda', or strategy='auto'")
    b = bind(plan, inputs, drop_zeros, dtype)
    if plan.output_kind == "matrix":
        out = np.empty((b.m, b.n), dtype=b.dtype)
    elif plan.output_kind == "col":
        out = np.empty(b.m, dtype=b.dtype)
    else:
        out = None
    for r0, r1, block in iter_blocks(b, be, working_memory):
        if out is None:
            return block.astype(b.dtype) if block.ndim else b.dtype.type(block)
        out[r0:r1] = block
    return out
