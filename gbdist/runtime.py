"""Running a Plan on concrete data: binding, validation, tiling, dispatch.

The runtime owns everything between the user's arrays and a backend's
kernels: it canonicalises inputs (any SciPy sparse format, dense arrays,
int32/int64 indices, unsorted indices, duplicates) after :mod:`gbdist.inputs`
has validated them (memory safety, finiteness, domains), checks shapes,
compresses a very wide column space, splits the output into row blocks sized
by a memory budget, runs the plan's steps per block, evaluates the epilogue,
and has :mod:`gbdist.direct` recompute the entries a rewrite cannot get right
(non-finite rows when allowed, overflow). See docs/inputs.md.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sps

from .compiler import ir
from .errors import BackendError, InputError, ParameterError, ResultTooLargeError
from .direct import DirectFix, fix_result
from .inputs import (
    _guarded_bases, check_device_operand, check_domains, check_finite, check_non_empty, check_real,
    ensure_all_finite_value, host_csr, physical_memory, is_cupy)
from .compiler.plan import Plan

DEFAULT_WORKING_MEMORY = 512 * 2**20


def to_csr(x, name: str, drop_zeros: bool = False, ensure_all_finite=True,
           label: str | None = None) -> sps.csr_matrix:
    """A canonical float64 CSR copy: validated, sorted indices, duplicates summed.

    ``x`` is checked (:mod:`gbdist.inputs`) before SciPy's C++ routines read it;
    ``ensure_all_finite`` (True, False or "allow-nan") decides whether NaN and
    ±inf are refused; ``label`` is the name errors use (default ``name``).
    """
    label = label or name
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    index_dtype = _index_dtype(x) if (sps.issparse(x) or is_cupy(x)) else None
    csr = host_csr(x, label)
    csr.sum_duplicates()  # also sorts the indices
    if drop_zeros:
        csr.eliminate_zeros()
    check_finite(csr, label, ensure_all_finite)
    if index_dtype == np.int64 and csr.indices.dtype != np.int64:
        # SciPy shrinks int64 indices to int32 when they fit; keep the user's width.
        csr.indices = csr.indices.astype(np.int64)
        csr.indptr = csr.indptr.astype(np.int64)
    return csr


def _check_real(dtype, name: str) -> None:
    check_real(dtype, name)


def _index_dtype(x):
    for attr in ("indices", "row", "col"):
        v = getattr(x, attr, None)
        if v is not None and hasattr(v, "dtype"):
            return np.dtype(v.dtype)
    return None


def vector_to_row(x, name: str, ensure_all_finite=True, label: str | None = None) -> sps.csr_matrix:
    """A dense vector as a 1×k row in which every entry is stored (zeros too)."""
    label = label or name
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    if sps.issparse(x) or (is_cupy(x) and hasattr(x, "format")):
        v = host_csr(x, label)
        if v.shape[0] != 1:
            if v.shape[1] != 1:
                raise InputError(f"{label} must be a vector", got=f"shape {v.shape}")
            v = v.T.tocsr()
        v.sum_duplicates()
        check_finite(v, label, ensure_all_finite)
        return v
    try:
        arr = np.asarray(x.get() if is_cupy(x) else x)
    except (ValueError, TypeError) as e:
        raise InputError(f"{label} is not a vector of numbers", got=str(e).split("\n")[0]) from None
    check_real(arr.dtype, label)
    if arr.ndim != 1:
        raise InputError(f"{label} must be a 1-D vector", got=f"shape {arr.shape}")
    arr = arr.astype(np.float64)
    k = arr.shape[0]
    v = sps.csr_matrix((arr, np.arange(k), np.array([0, k])), shape=(1, k))
    check_finite(v, label, ensure_all_finite)
    return v


def result_dtype(inputs: dict, dtype=None) -> np.dtype:
    """float32 when every input is float32 (or asked for), else float64."""
    if dtype is not None:
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            dt = None
        if dt not in (np.float32, np.float64):
            raise InputError("dtype must be float32 or float64", got=repr(dtype),
                             hint="dtype=np.float32, dtype=np.float64 or None (from the inputs)")
        return dt
    dts = [np.dtype(getattr(v, "dtype", np.float64)) for v in inputs.values()]
    return np.dtype(np.float32) if dts and all(d == np.float32 for d in dts) else np.dtype(np.float64)


MIB = 2**20


def working_memory_bytes(working_memory) -> int | None:
    """A ``working_memory`` given in MiB (scikit-learn's unit) as bytes; None stays None
    (the caller's default). Any positive number is honoured, fractions too
    (``working_memory=1500 / 2**20`` is 1500 bytes)."""
    if working_memory is None:
        return None
    if isinstance(working_memory, (bool, np.bool_)) or not isinstance(working_memory, numbers.Real) \
            or not working_memory > 0 or not np.isfinite(working_memory):
        raise ParameterError("working_memory must be a positive number of MiB",
                             got=repr(working_memory),
                             hint="e.g. working_memory=256 (MiB, as scikit-learn counts it)")
    return max(1, int(working_memory * MIB))


def check_working_memory(working_memory) -> int | None:
    """``working_memory`` in bytes: None (the default) or a positive integer."""
    if working_memory is None:
        return None
    if isinstance(working_memory, (bool, np.bool_)) or not isinstance(working_memory, numbers.Real) \
            or not working_memory >= 1 or working_memory != working_memory:
        raise InputError("working_memory must be a positive number of bytes", got=repr(working_memory),
                         hint="e.g. working_memory=256 * 2**20 (a number, not a string like '16M')")
    if isinstance(working_memory, numbers.Integral):
        return int(working_memory)
    if not np.isfinite(working_memory):
        raise InputError("working_memory must be a finite number of bytes", got=repr(working_memory))
    return int(working_memory)


@dataclass
class Bound:
    """A plan with its data: full operands, sizes and which keys are row-sliced.

    ``ncols`` is the number of columns k the formula sees (fills of unstored
    columns count k times); the data matrices may be narrower when their column
    space was compressed to the columns actually stored (:func:`compress_columns`).
    ``finite`` is the ``ensure_all_finite`` the data was checked with.
    """

    plan: Plan
    data: dict  # (name, transposed) -> csr
    m: int
    n: int
    ncols: int
    left_keys: frozenset
    dtype: np.dtype
    finite: object = True

    @property
    def width(self) -> int:
        """Columns of the stored data (<= ncols after compression)."""
        return next((v.shape[1] for v in self.data.values()), 0)


# Compress the column space when it is this much wider than the stored entries.
COMPRESS_FACTOR = 4
COMPRESS_MIN_COLUMNS = 1 << 16


def compress_columns(data: dict, ncols: int) -> dict:
    """The operands over only the columns some operand stores, renumbered in order.

    Unstored columns hold the fill in every row, so dropping them changes no
    product as long as the count of columns k stays ``ncols`` (the backends
    take it separately). Done when k is much larger than the number of stored
    entries, so that nothing sized by k (a CSC pointer array, a dense row) is
    ever allocated for a 3 × 10⁸ input with three nonzeros.
    """
    total = sum(v.nnz for v in {id(v): v for v in data.values()}.values())
    if ncols <= max(COMPRESS_FACTOR * total, COMPRESS_MIN_COLUMNS):
        return data
    cols = np.unique(np.concatenate([v.indices for v in data.values()] or [np.zeros(0, np.int64)]))
    itype = np.int32 if cols.size < 2**31 - 1 else np.int64
    out, done = {}, {}
    for key, v in data.items():
        if id(v) not in done:
            idx = np.searchsorted(cols, v.indices).astype(itype)
            done[id(v)] = sps.csr_matrix((v.data, idx, v.indptr), shape=(v.shape[0], cols.size))
        out[key] = done[id(v)]
    return out


def bind(plan: Plan, inputs: dict, drop_zeros: bool = False, dtype=None, ensure_all_finite=True,
         labels: dict | None = None, ensure_non_empty: bool = False, condition: bool = True) -> Bound:
    """Check and canonicalise the inputs of a plan.

    Every operand is validated (memory safety, real dtype, finiteness as
    ``ensure_all_finite`` says) before anything reads it. ``labels`` maps input
    names to the names errors use (``{"A": "X", "B": "Y"}`` for
    ``pairwise_distances``); ``ensure_non_empty`` refuses 0 rows or 0 columns
    with scikit-learn's message. The same object passed under two names is
    canonicalised once. ``condition``: rows are shifted / scaled as the metric is
    proven invariant under (``gbdist.exact.condition_rows``), so that expanded sums
    do not cancel or overflow.
    """
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    labels = labels or {}
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
    seen: dict = {}
    for name, sym in sorted(needed.items()):
        label = labels.get(name, name)
        vector = isinstance(sym, ir.Vector)
        key = (id(inputs[name]), vector)
        if key not in seen:
            seen[key] = (vector_to_row(inputs[name], name, ensure_all_finite, label) if vector
                         else to_csr(inputs[name], name, drop_zeros, ensure_all_finite, label))
        base[name] = seen[key]
        if ensure_non_empty:
            check_non_empty(base[name].shape, label)
    from . import exact
    # Conditioning acts on the rows as given (the proven invariance is of the metric as a
    # function of its inputs), then apply(normalize, ·) divides rows by their sums.
    if condition:
        inv, names = exact.conditioned_names(plan)
        for name in names:
            m = base[name]
            base[name] = sps.csr_matrix((exact.condition_rows(m.indptr, m.data, m.shape[1], inv),
                                         m.indices, m.indptr), shape=m.shape)
    for name in exact.normalised_names(plan):  # apply(normalize, ·): rows divided by their sum
        m = base[name]
        base[name] = sps.csr_matrix((exact.normalise_rows(m.indptr, m.data, name), m.indices,
                                     m.indptr), shape=m.shape)
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
        desc = ", ".join(f"{labels.get(k[0], k[0])}{'.T' if k[1] else ''}: {w} columns"
                         for k, w in sorted(widths.items()))
        raise InputError("the operands of a product must have the same number of columns (k)",
                         got=desc, hint="for mxm(A, B.T), A and B need the same number of columns")
    ncols = next(iter(widths.values())) if widths else next(
        (v.shape[1] for v in base.values()), 0)
    m = max((data[k].shape[0] for k in left_keys), default=1)
    right_rows = [data[key].shape[0] for step in plan.steps for side, key in step.sides
                  if side == "right"]
    n = max(right_rows, default=1)
    check_domains(plan, data)
    data = compress_columns(data, ncols)
    return Bound(plan, data, m, n, ncols, frozenset(left_keys), result_dtype(inputs, dtype),
                 ensure_all_finite)


def _block_rows(b: Bound, budget: int) -> int:
    nmat = sum(1 for s in b.plan.steps if s.kind == "matrix") + 3
    per_row = 8 * max(b.n, 1) * nmat
    # A two-pass union densifies its block of left rows over the stored columns.
    per_row += 8 * b.width * sum(1 for s in b.plan.steps if isinstance(s.node, ir.TwoPassUnion))
    return int(max(1, min(b.m, budget // per_row)))


def iter_blocks(b: Bound, backend, working_memory: int | None = None, exact: bool = True
                ) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield (row_start, row_stop, result rows) blocks of the output.

    ``exact``: where a left row equals a right row, write the value of d(a, a) the
    algebra proves (``gbdist.exact``) instead of the rounded cancellation."""
    from . import exact as exact_mod
    plan = b.plan
    pair = exact_mod.operand_pair(plan) if exact else None
    budget = check_working_memory(working_memory) or DEFAULT_WORKING_MEMORY
    fixed = {}  # steps that read right-side operands only: computed once
    for step in plan.steps:
        if all(side == "right" for side, _ in step.sides):
            fixed[step.name] = backend.run_step(step, {}, b.data, b.ncols)
    rows = _block_rows(b, budget)
    fix = DirectFix(b, fixed, budget) if plan.output_kind == "matrix" else None
    for r0 in range(0, b.m, rows):
        r1 = min(b.m, r0 + rows)
        left = {k: b.data[k][r0:r1] for k in b.left_keys}
        results = dict(fixed)
        for step in plan.steps:
            if step.name not in results:
                results[step.name] = backend.run_step(step, left, b.data, b.ncols)
        out = backend.epilogue(plan.epilogue, results, b.ncols)
        out = _shape_block(out, plan.output_kind, r1 - r0, b.n)
        if pair is not None and plan.output_kind == "matrix":
            lk, rk = left[pair[0]], b.data[pair[1]]
            out = exact_mod.apply_self_value(plan, out, (lk.indptr, lk.indices, lk.data),
                                             (rk.indptr, rk.indices, rk.data))
        if fix is not None:  # after the exact pass: non-finite rows keep their IEEE value
            out = fix(out, r0, r1, results)
        yield r0, r1, out


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
    working_memory = check_working_memory(working_memory)
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
_TOO_LARGE_HINT = ("compute it in pieces: gbdist.pairwise_distances_chunked(X, Y, ...) yields row "
                   "blocks within working_memory, gbdist.knn(X, Y, k) keeps only the nearest "
                   "neighbours; or pass fewer rows")


def allocate_result(shape: tuple, dtype, xp=np):
    """``xp.empty(shape, dtype)``, refused with a typed error before allocating when it
    cannot fit in memory, and a typed error when the allocation fails anyway."""
    dtype = np.dtype(dtype)
    cells = 1
    for d in shape:
        cells *= int(d)
    nbytes = cells * dtype.itemsize
    limit = physical_memory() if xp is np else None
    what = " × ".join(str(int(d)) for d in shape)
    if limit is not None and nbytes > limit:
        raise ResultTooLargeError(
            f"the result ({what} {dtype.name}) needs {nbytes / 2**30:.1f} GiB, more than the "
            f"memory available ({limit / 2**30:.1f} GiB)", hint=_TOO_LARGE_HINT)
    try:
        return xp.empty(shape, dtype=dtype)
    except MemoryError:
        raise ResultTooLargeError(f"the result ({what} {dtype.name}, {nbytes / 2**30:.1f} GiB) "
                                  "could not be allocated", hint=_TOO_LARGE_HINT) from None


def run(plan: Plan, inputs: dict, backend: str = "auto", working_memory: int | None = None,
        drop_zeros: bool = False, dtype=None, strategy: str = "auto", ensure_all_finite=True,
        labels: dict | None = None, ensure_non_empty: bool = False):
    """Execute ``plan`` on ``inputs`` and return the whole result.

    ``strategy`` forces a CUDA kernel strategy ("gather", "scatter", "dense");
    the CPU backend has one implementation per primitive and accepts "auto" only.
    ``ensure_all_finite`` (True, False or "allow-nan") is scikit-learn's
    keyword: NaN and ±inf are refused unless allowed; when allowed, entries
    that involve them are computed in the direct form (the formula's IEEE
    value). ``labels`` and ``ensure_non_empty``: see :func:`bind`.
    """
    if strategy not in STRATEGIES:
        raise InputError("unknown strategy", expected=", ".join(STRATEGIES), got=repr(strategy))
    if backend == "auto" and any(isinstance(s.node, ir.TwoPassUnion) and not s.node.add.idempotent
                                 for s in plan.steps):
        backend = "cpu"  # a union summed directly (steep ops with plus): no CUDA kernel yet
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    working_memory = check_working_memory(working_memory)
    if dtype is not None:
        result_dtype({}, dtype)
    be = get_backend(backend, working_memory)
    if hasattr(be, "run"):
        facts: dict = {}
        checked = validate_inputs(plan, inputs, drop_zeros, ensure_all_finite, labels or {},
                                  ensure_non_empty, facts)
        _check_power_domains(plan, checked)
        # the dtype of the user's inputs (the checked host copies are float64)
        dt = result_dtype({k: (v if hasattr(v, "dtype") else np.zeros(0)) for k, v in inputs.items()},
                          dtype)
        _check_device_result_size(plan, checked, dt)
        try:
            result = be.run(plan, checked, working_memory=working_memory, drop_zeros=drop_zeros,
                            dtype=dt, strategy=strategy)
        except Exception as e:  # CuPy's OutOfMemoryError, matched by name (CuPy is optional)
            if type(e).__name__ != "OutOfMemoryError":
                raise
            raise ResultTooLargeError("the GPU ran out of memory for this product",
                                      got=str(e).split("\n")[0], hint=_TOO_LARGE_HINT) from None
        return fix_result(plan, checked, result, drop_zeros, ensure_all_finite, working_memory,
                          facts)
    if strategy != "auto":
        raise InputError(f"strategy={strategy!r} selects a CUDA kernel; the {be.name} backend has none",
                         hint="use backend='cuda', or strategy='auto'")
    b = bind(plan, inputs, drop_zeros, dtype, ensure_all_finite, labels, ensure_non_empty)
    if plan.output_kind == "matrix":
        out = allocate_result((b.m, b.n), b.dtype)
    elif plan.output_kind == "col":
        out = allocate_result((b.m,), b.dtype)
    else:
        out = None
    for r0, r1, block in iter_blocks(b, be, working_memory):
        if out is None:
            return block.astype(b.dtype) if block.ndim else b.dtype.type(block)
        out[r0:r1] = block
    return out


def validate_inputs(plan: Plan, inputs: dict, drop_zeros: bool, ensure_all_finite, labels: dict,
                    ensure_non_empty: bool, facts: dict | None = None) -> dict:
    """The inputs of a backend that binds its own operands (CUDA), validated first:
    CuPy operands on the device (:func:`gbdist.inputs.check_device_operand`),
    host operands made canonical here (so the backend reads only checked arrays).
    ``facts`` (when given) receives, per CuPy operand's name, what its check learnt
    (NaN/±inf stored, max |x|), for :func:`gbdist.direct.fix_result`."""
    syms = {s.name: s for s in ir.symbols(plan.expr)}
    out = {}
    seen: dict = {}
    seen_name: dict = {}
    for name, x in inputs.items():
        label = labels.get(name, name)
        vector = isinstance(syms.get(name), ir.Vector)
        if id(x) in seen:
            out[name] = seen[id(x)]
            if facts is not None and seen_name[id(x)] in facts:
                facts[name] = facts[seen_name[id(x)]]
        elif is_cupy(x) and not (vector and not hasattr(x, "format")):
            found = check_device_operand(x, label, ensure_all_finite)
            if facts is not None and found is not None:
                facts[name] = found
            out[name] = x
        elif vector:
            out[name] = vector_to_row(x, name, ensure_all_finite, label).toarray().ravel()
        else:
            out[name] = to_csr(x, name, drop_zeros, ensure_all_finite, label)
        seen[id(x)] = out[name]
        seen_name.setdefault(id(x), name)
        if ensure_non_empty and not vector:
            check_non_empty(tuple(out[name].shape), label)
    return out


def _check_device_result_size(plan: Plan, inputs: dict, dtype) -> None:
    """Refuse, before any kernel, an (i, j) result larger than the GPU's whole memory."""
    if plan.output_kind != "matrix":
        return
    try:
        import cupy
        total = int(cupy.cuda.runtime.memGetInfo()[1])
    except Exception:  # no CuPy or no device: the backend reports that itself
        return

    def rows(key):
        name, flipped = key
        shape = tuple(getattr(inputs.get(name), "shape", ()))
        if len(shape) != 2:
            return 1
        return int(shape[1] if flipped else shape[0])

    sides = [(side, key) for step in plan.steps for side, key in step.sides]
    m = max((rows(k) for side, k in sides if side == "left"), default=1)
    n = max((rows(k) for side, k in sides if side == "right"), default=1)
    nbytes = m * n * np.dtype(dtype).itemsize
    if nbytes > total:
        raise ResultTooLargeError(
            f"the result ({m} × {n} {np.dtype(dtype).name}) needs {nbytes / 2**30:.1f} GiB, more "
            f"than the GPU's memory ({total / 2**30:.1f} GiB)", hint=_TOO_LARGE_HINT)


def _check_power_domains(plan: Plan, inputs: dict) -> None:
    """The backend-independent part of :func:`gbdist.inputs.check_domains` (powers and logs found in
    the formulas) for a backend that binds its own operands; only the stored values
    matter, so each input's values serve both orientations."""
    ops_ = [p.analysis.semiring.mul for p in plan.products]
    for node in ir.walk(plan.expr):
        if isinstance(node, ir.Apply):
            ops_.append(node.op)
    if not any(_guarded_bases(o.formula) for o in ops_):
        return
    data = {}
    for name, x in inputs.items():
        if is_cupy(x):
            vals = (x.data if hasattr(x, "format") else x.ravel()).get()
        else:
            vals = x.data if sps.issparse(x) else np.asarray(x).ravel()
        v = sps.csr_matrix((np.asarray(vals, dtype=np.float64), np.zeros(len(vals), dtype=np.int64),
                            np.array([0, len(vals)])), shape=(1, 1))
        data[(name, False)] = data[(name, True)] = v
    check_domains(plan, data)


_check_domains = check_domains  # the name the CUDA backend imports
