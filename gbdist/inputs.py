"""Operands from outside, checked once before any kernel reads them.

Every matrix a user hands to gbdist (SciPy sparse in any format, matrix or
array class; NumPy dense; CuPy dense or sparse; a file read by
:mod:`gbdist.io`) passes through :func:`host_csr` (or, for CuPy operands on the
CUDA backend, :func:`check_device_csr`) before it is made canonical. The checks
are O(nnz), vectorised, and run *before* SciPy's own C++ routines
(``sum_duplicates``, ``tocsr``) touch the arrays, because those routines trust
their input and read or write out of bounds when it is corrupt.

What is checked (a :class:`~gbdist.errors.CorruptInputError` names the first
offence and how to find it):

* the shape is two non-negative integers;
* ``indptr`` has rows + 1 entries (CSR; columns + 1 for CSC), starts at 0,
  never decreases and ends at nnz <= len(indices);
* ``indices`` and ``data`` have the same length, and every index lies in
  [0, columns) (COO: rows and columns both in range);
* index arrays hold integers, values hold booleans, integers or real floats.

Non-finite values are a separate, later check (:func:`check_finite`), done on
the canonical matrix: refused by default, as scikit-learn does. The domains of
the plan's ops are checked here too (:func:`check_domains`).

Longer than 500 lines: these are all the checks an operand passes, on the
host and on the device (the same rules, one fused kernel there), and the binding
(:func:`gbdist.runtime.bind`) calls them in one place; a reader auditing what
gbdist trusts reads this one file. The canonicalisation itself is
:mod:`gbdist.runtime.bind`.
"""
from __future__ import annotations

import numbers
import os

import numpy as np
import scipy.sparse as sps

from .compiler import ir
from .errors import CorruptInputError, DomainError, InputError, NonFiniteError, ResultTooLargeError
from .algebra.evaluate import apply_unary, evaluate_formula, formula_text
from .compiler.typecheck import row_operand

FINITE_CHOICES = (True, False, "allow-nan")
_CHECK_HINT = "call {label}.check_format() (SciPy) to see what is wrong, and rebuild the matrix " \
              "from consistent arrays"


def _hint(label: str) -> str:
    if label.startswith("'"):  # a file (gbdist.io labels operands by their quoted path)
        return "the file's arrays are inconsistent: write it again from a valid matrix " \
               "(scipy.sparse.save_npz after X.check_format())"
    return _CHECK_HINT.format(label=label)


def is_cupy(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("cupy") or mod.startswith("cupyx")


def refuse_graph_operand(x, label: str) -> None:
    """Refuse a ``gb.Matrix`` / ``gb.Vector`` given to a distance or neighbor function,
    naming the conversion to use. Recognised by its ``_graph_operation`` marker (as
    gbdist.front.api does): this module is a lower stage than gbdist.graph and does not
    import it. Called where every such input first arrives (``gbdist.pairwise.as_input``,
    the estimators' validation) and again by :func:`host_csr`."""
    if not callable(getattr(type(x), "_graph_operation", None)):
        return
    kind = type(x).__name__
    if kind == "Vector":
        conv = f"{label}.to_dense().reshape(1, -1) (one sample)"
    else:
        conv = f"{label}.to_scipy() (a SciPy CSR; {label}.to_cupy() for the device)"
    raise InputError(f"{label} is a gb.{kind}: the distance and neighbor functions take "
                     "SciPy, NumPy or CuPy matrices",
                     expected="a SciPy sparse matrix, a NumPy or CuPy array, or a cupyx "
                              "sparse matrix",
                     got=f"gb.{kind} of shape {tuple(x.shape)}",
                     hint=f"pass {conv}; its unstored entries are read as 0 in distances (a "
                          "missing edge and a stored 0 are the same there)")


def ensure_all_finite_value(v):
    """Validate the ``ensure_all_finite`` keyword (True, False or "allow-nan")."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, str) and v == "allow-nan":
        return v
    raise InputError("ensure_all_finite must be True, False or 'allow-nan'", got=repr(v),
                     hint="True refuses NaN and infinity (the default), 'allow-nan' refuses "
                          "infinity only, False computes with the formula's IEEE value")


def check_real(dtype, label: str) -> None:
    """Only booleans, integers and real floats are data; complex or text is refused."""
    if np.dtype(dtype).kind not in "biuf":
        raise InputError(f"{label} must hold real numbers", expected="bool, int or float values",
                         got=f"dtype {np.dtype(dtype)}",
                         hint="convert the data first, e.g. X.real or X.astype(np.float64)")


def check_shape(shape, label: str) -> tuple[int, int]:
    """Two non-negative integers."""
    try:
        rows, cols = (int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                      else _not_int(v) for v in shape)
    except (TypeError, ValueError):
        raise CorruptInputError(f"{label} has an invalid shape", expected="two non-negative integers",
                                got=repr(shape), hint=_hint(label)) from None
    if rows < 0 or cols < 0:
        raise CorruptInputError(f"{label} has a negative dimension", expected="a shape (rows >= 0, "
                                "columns >= 0)", got=f"shape ({rows}, {cols})", hint=_hint(label))
    return rows, cols


def _not_int(v):
    raise TypeError(v)


def _index_array(a, what: str, label: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise CorruptInputError(f"{label}.{what} must be a 1-D array", got=f"shape {a.shape}",
                                hint=_hint(label))
    if a.dtype.kind not in "iu":
        raise CorruptInputError(f"{label}.{what} must hold integers (int32 or int64)",
                                got=f"dtype {a.dtype}", hint=_hint(label))
    return a


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def check_compressed(indptr, indices, data, n_major: int, n_minor: int, label: str,
                     fmt: str = "csr") -> int:
    """Check CSR (``fmt="csr"``: major = rows) or CSC arrays; returns nnz = indptr[-1]."""
    major, minor = ("row", "column") if fmt == "csr" else ("column", "row")
    bad = f"{label} is not a valid {fmt.upper()} matrix"
    hint = _hint(label)
    indptr = _index_array(indptr, "indptr", label)
    indices = _index_array(indices, "indices", label)
    if np.ndim(data) != 1:
        raise CorruptInputError(f"{bad}: data must be a 1-D array", got=f"shape {np.shape(data)}",
                                hint=hint)
    if indptr.shape[0] != n_major + 1:
        raise CorruptInputError(f"{bad}: indptr has the wrong length",
                                expected=f"{n_major + 1} entries (number of {major}s + 1)",
                                got=f"{indptr.shape[0]} entries", hint=hint)
    if indices.shape[0] != np.shape(data)[0]:
        raise CorruptInputError(f"{bad}: indices and data differ in length",
                                got=f"{indices.shape[0]} indices, {np.shape(data)[0]} values", hint=hint)
    if int(indptr[0]) != 0:
        raise CorruptInputError(f"{bad}: indptr must start at 0", got=f"indptr[0] = {int(indptr[0])}",
                                hint=hint)
    nnz = int(indptr[-1])
    if nnz > indices.shape[0]:
        raise CorruptInputError(f"{bad}: indptr ends past the stored entries",
                                expected=f"indptr[-1] <= len(indices) = {indices.shape[0]}",
                                got=f"indptr[-1] = {nnz}", hint=hint)
    if n_major:
        dec = indptr[1:] < indptr[:-1]
        if dec.any():
            r = _first(dec)
            raise CorruptInputError(f"{bad}: indptr decreases", expected="a non-decreasing indptr",
                                    got=f"indptr[{r}] = {int(indptr[r])} > indptr[{r + 1}] = "
                                        f"{int(indptr[r + 1])} ({major} {r})", hint=hint)
    if nnz:
        idx = indices[:nnz]
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n_minor:
            p = _first((idx < 0) | (idx >= n_minor))
            r = int(np.searchsorted(indptr, p, side="right")) - 1
            raise CorruptInputError(f"{bad}: a {minor} index lies outside the shape",
                                    expected=f"{minor} indices in [0, {n_minor})",
                                    got=f"index {int(idx[p])} at position {p} ({major} {r})", hint=hint)
    return nnz


def check_coo(row, col, data, shape: tuple[int, int], label: str) -> None:
    bad = f"{label} is not a valid COO matrix"
    hint = _hint(label)
    row = _index_array(row, "row", label)
    col = _index_array(col, "col", label)
    if np.ndim(data) != 1 or not (row.shape[0] == col.shape[0] == np.shape(data)[0]):
        raise CorruptInputError(f"{bad}: row, col and data differ in length",
                                got=f"{row.shape[0]} rows, {col.shape[0]} columns, "
                                    f"{np.shape(data)} values", hint=hint)
    for what, idx, n in (("row", row, shape[0]), ("column", col, shape[1])):
        if idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= n):
            p = _first((idx < 0) | (idx >= n))
            raise CorruptInputError(f"{bad}: a {what} index lies outside the shape",
                                    expected=f"{what} indices in [0, {n})",
                                    got=f"index {int(idx[p])} at position {p}", hint=hint)


def _parts(x):
    """The raw arrays of a sparse matrix (SciPy or CuPy), read without SciPy's methods."""
    get = (lambda a: a.get()) if is_cupy(x) else np.asarray
    fmt = x.format
    if fmt in ("csr", "csc"):
        return fmt, get(x.indptr), get(x.indices), get(x.data)
    if fmt == "coo":
        coords = getattr(x, "coords", None)
        row, col = coords if coords is not None and len(coords) == 2 else (x.row, x.col)
        return fmt, get(row), get(col), get(x.data)
    if fmt == "bsr":
        return fmt, get(x.indptr), get(x.indices), get(x.data)
    return fmt, None, None, None


def host_csr(x, label: str, dtype=np.float64) -> sps.csr_matrix:
    """A validated CSR copy of ``x`` in ``dtype`` (None: the stored dtype), not yet
    deduplicated or sorted.

    The copy owns its arrays: later in-place canonicalisation never touches the
    user's matrix.
    """
    refuse_graph_operand(x, label)
    if sps.issparse(x) or (is_cupy(x) and hasattr(x, "format")):
        return _sparse_csr(x, label, dtype)
    try:
        arr = np.asarray(x.get() if is_cupy(x) else x)
    except (ValueError, TypeError) as e:
        raise InputError(f"{label} is not a rectangular array of numbers", got=str(e).split("\n")[0],
                         hint="every row must have the same length; pass a 2-D NumPy array or a "
                              "SciPy sparse matrix") from None
    if arr.dtype == object:
        raise InputError(f"{label} must be numeric", got="an object array",
                         hint="pass a NumPy array or a SciPy sparse matrix")
    check_real(arr.dtype, label)
    if arr.ndim != 2:
        raise InputError(f"{label} must be a 2-D matrix", got=f"shape {arr.shape}",
                         hint="reshape a single sample with x.reshape(1, -1)")
    return sps.csr_matrix(arr.astype(np.float64))


def _sparse_csr(x, label: str, dtype=np.float64) -> sps.csr_matrix:
    ndim = getattr(x, "ndim", 2)
    if ndim != 2:
        raise InputError(f"{label} must be a 2-D matrix", got=f"{ndim}-D sparse")
    check_real(x.dtype, label)
    shape = check_shape(x.shape, label)
    fmt, a, b, data = _parts(x)
    if fmt not in ("csr", "csc", "coo", "bsr"):
        try:  # lil, dok, dia: their conversion is Python-level; the COO is checked below
            c = x.tocoo()
        except (ValueError, IndexError, TypeError, KeyError) as e:
            raise CorruptInputError(f"{label} is not a valid {fmt.upper()} matrix",
                                    got=f"{type(e).__name__}: {e}",
                                    hint=_hint(label)) from None
        fmt, a, b, data = _parts(c)
    if fmt == "coo":
        check_coo(a, b, data, shape, label)
        _fits(shape[0] + 1, label)
        return sps.coo_matrix((np.array(data, dtype=dtype), (a.copy(), b.copy())),
                              shape=shape).tocsr()
    if fmt == "bsr":
        return _bsr_csr(a, b, data, shape, label, dtype)
    n_major, n_minor = shape if fmt == "csr" else shape[::-1]
    nnz = check_compressed(a, b, data, n_major, n_minor, label, fmt)
    cls = sps.csr_matrix if fmt == "csr" else sps.csc_matrix
    m = cls((np.array(data[:nnz], dtype=dtype), b[:nnz].copy(), a.copy()), shape=shape)
    if fmt == "csr":
        return m
    _fits(shape[0] + 1, label)
    return m.tocsr()


def _fits(entries: int, label: str) -> None:
    """Refuse (typed) an index array the conversion to CSR would allocate beyond memory."""
    mem = physical_memory()
    if mem is not None and 8 * entries > mem:
        raise ResultTooLargeError(f"{label} has too many rows to convert to CSR in memory",
                                  got=f"{entries - 1} rows", hint="pass it as CSR with fewer rows")


def _bsr_csr(indptr, indices, data, shape, label: str, dtype=np.float64) -> sps.csr_matrix:
    data = np.asarray(data)
    if data.ndim != 3 or data.shape[1] < 1 or data.shape[2] < 1 \
            or shape[0] % data.shape[1] or shape[1] % data.shape[2]:
        raise CorruptInputError(f"{label} is not a valid BSR matrix: its blocks do not tile the shape",
                                got=f"data shape {data.shape}, shape {shape}",
                                hint=_hint(label))
    R, C = data.shape[1:]
    flat = np.zeros(data.shape[0])  # a 1-D stand-in with the blocks' count, for the length checks
    nnz = check_compressed(indptr, indices, flat, shape[0] // R, shape[1] // C, label, "csr")
    m = sps.bsr_matrix((np.array(data[:nnz], dtype=dtype), indices[:nnz].copy(),
                        indptr.copy()), shape=shape, blocksize=(R, C))
    return m.tocsr()


def check_finite(csr: sps.csr_matrix, label: str, ensure_all_finite) -> None:
    """Refuse NaN (unless allowed) and ±inf, naming the first offending row and column."""
    if ensure_all_finite is False or csr.nnz == 0:
        return
    data = csr.data
    fin = np.isfinite(data)
    if fin.all():
        return
    nan = np.isnan(data)
    if ensure_all_finite == "allow-nan":
        bad = ~(fin | nan)
        if not bad.any():
            return
        kind = "infinity or a value too large for dtype('float64')"
    elif nan.any():
        bad, kind = nan, "NaN"
    else:
        bad, kind = ~fin, "infinity or a value too large for dtype('float64')"
    p = _first(bad)
    row = int(np.searchsorted(csr.indptr, p, side="right")) - 1
    count = int(np.count_nonzero(bad))
    allow = "ensure_all_finite='allow-nan' to allow NaN, " if kind == "NaN" else ""
    raise NonFiniteError(
        f"Input {label} contains {kind}.",
        got=f"{data[p]} at row {row}, column {int(csr.indices[p])}"
            + (f" (the first of {count})" if count > 1 else ""),
        hint="remove or impute these values (e.g. sklearn.impute.SimpleImputer), or pass "
             f"{allow}ensure_all_finite=False to compute with the formula's IEEE value")


def check_non_empty(shape, label: str, caller: str = "pairwise_distances") -> None:
    """scikit-learn's refusal of empty arrays (0 samples or 0 features)."""
    rows, cols = shape
    if rows < 1:
        raise InputError(f"Found array with 0 sample(s) (shape=({rows}, {cols})) while a minimum "
                         f"of 1 is required by {caller}.", hint=f"{label} needs at least one row")
    if cols < 1:
        raise InputError(f"Found array with 0 feature(s) (shape=({rows}, {cols})) while a minimum "
                         f"of 1 is required by {caller}.", hint=f"{label} needs at least one column")


# --- device operands (CuPy) ------------------------------------------------------------


def check_device_csr(indptr, indices, data, shape, label: str, ensure_all_finite=True) -> dict:
    """The same checks as on the host, on the device with a single transfer: one fused
    kernel (kernels/rows.cuh) for float32/float64 values and int32/int64 indices, CuPy
    reductions otherwise.

    ``indptr``, ``indices`` and ``data`` are CuPy arrays of a CSR matrix of
    ``shape``; nothing here reads them element by element on the host. Returns
    the facts :class:`gbdist.runtime.direct.Repair` reuses (see :func:`_summary`).
    """
    rows, cols = check_shape(shape, label)
    bad = f"{label} is not a valid CSR matrix"
    hint = _hint(label)
    for what, a in (("indptr", indptr), ("indices", indices)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise CorruptInputError(f"{label}.{what} must be a 1-D integer array",
                                    got=f"shape {a.shape}, dtype {a.dtype}", hint=hint)
    if data.ndim != 1 or indices.shape[0] != data.shape[0]:
        raise CorruptInputError(f"{bad}: indices and data differ in length",
                                got=f"{indices.shape} indices, {data.shape} values", hint=hint)
    if indptr.shape[0] != rows + 1:
        raise CorruptInputError(f"{bad}: indptr has the wrong length",
                                expected=f"{rows + 1} entries (number of rows + 1)",
                                got=f"{indptr.shape[0]} entries", hint=hint)
    n = indices.shape[0]
    fast = _fused_facts(indptr, indices, data)
    if fast is not None:
        first, nnz, ndec, lo, hi, nnan, ninf = (fast[k] for k in
                                                ("first", "last", "decreasing", "lo", "hi", "nan", "inf"))
    else:
        first, nnz, ndec, lo, hi, nnan, ninf = _cupy_facts(indptr, indices, data, rows, n)
    if first != 0:
        raise CorruptInputError(f"{bad}: indptr must start at 0", got=f"indptr[0] = {first}", hint=hint)
    if nnz > n:
        raise CorruptInputError(f"{bad}: indptr ends past the stored entries",
                                expected=f"indptr[-1] <= len(indices) = {n}", got=f"indptr[-1] = {nnz}",
                                hint=hint)
    if ndec:
        raise CorruptInputError(f"{bad}: indptr decreases", expected="a non-decreasing indptr",
                                got=f"{ndec} decreasing step(s)", hint=hint)
    if nnz and (lo < 0 or hi >= cols):
        raise CorruptInputError(f"{bad}: a column index lies outside the shape",
                                expected=f"column indices in [0, {cols})",
                                got=f"indices from {lo} to {hi}", hint=hint)
    facts = _summary(fast, nnan, ninf)
    if ensure_all_finite is False or not (nnan or ninf):
        return facts
    if ensure_all_finite == "allow-nan" and not ninf:
        return facts
    # Rare path: locate the first offender on the host for the message.
    host = sps.csr_matrix((data[:nnz].get().astype(np.float64), indices[:nnz].get(), indptr.get()),
                          shape=(rows, cols))
    check_finite(host, label, ensure_all_finite)
    return facts


def _fused_facts(indptr, indices, data) -> dict | None:
    """The facts of one fused kernel (gbdist/backends/cuda/rows.py) for float32/float64
    values and int32/int64 indices (None for other dtypes: the CuPy reductions below)."""
    from .backends.cuda import rows as dev_rows
    if indptr is None:
        if not dev_rows.supported(data):
            return None
    elif not dev_rows.supported(data, indptr, indices):
        return None
    return dev_rows.check_facts(indptr, indices, data)


def _summary(fast: dict | None, nnan: int, ninf: int) -> dict:
    """What :class:`gbdist.runtime.direct.Repair` reuses of a device operand's checks: whether
    it stores NaN/±inf and (when known) max |x| over its non-NaN values."""
    return {"nonfinite": bool(nnan or ninf),
            "max_abs": None if fast is None else fast["max_abs"]}


def _cupy_facts(indptr, indices, data, rows: int, n: int) -> tuple:
    import cupy
    ip = indptr.astype(cupy.int64)
    # One vector of facts, one transfer: [indptr[0], indptr[-1], #decreasing, min, max,
    # #nan, #inf] (the last four over the first min(n, indptr[-1]) entries).
    last = cupy.clip(ip[-1], 0, n)
    pos = cupy.arange(n, dtype=cupy.int64)
    live = pos < last
    idx = indices.astype(cupy.int64)
    big = np.iinfo(np.int64).max
    facts = cupy.stack([
        ip[0], ip[-1],
        cupy.count_nonzero(ip[1:] < ip[:-1]).astype(cupy.int64) if rows else cupy.zeros((), cupy.int64),
        cupy.where(live, idx, big).min() if n else cupy.zeros((), cupy.int64),
        cupy.where(live, idx, -1).max() if n else cupy.full((), -1, cupy.int64),
        cupy.count_nonzero(live & cupy.isnan(data)).astype(cupy.int64) if n and data.dtype.kind == "f"
        else cupy.zeros((), cupy.int64),
        cupy.count_nonzero(live & cupy.isinf(data)).astype(cupy.int64) if n and data.dtype.kind == "f"
        else cupy.zeros((), cupy.int64),
    ]).get()
    return tuple(int(v) for v in facts)


def check_device_operand(x, label: str, ensure_all_finite=True) -> dict:
    """Validate a CuPy operand (dense, or cupyx sparse csr/csc/coo) on the device.

    One fused kernel (or one reduction per fact) and a single transfer for each
    operand; the host sees the arrays only to locate the first offence of an input
    already refused. Returns {"nonfinite": bool, "max_abs": float or None} of its
    values, which :class:`gbdist.runtime.direct.Repair` reuses.
    """
    import cupy
    if hasattr(x, "format"):  # cupyx.scipy.sparse
        check_real(x.dtype, label)
        rows, cols = check_shape(x.shape, label)
        if x.format == "csr":
            return check_device_csr(x.indptr, x.indices, x.data, (rows, cols), label,
                                    ensure_all_finite)
        elif x.format == "csc":
            return check_device_csr(x.indptr, x.indices, x.data, (cols, rows),
                                    f"{label} (CSC, transposed)", ensure_all_finite)
        elif x.format == "coo":
            row, col, data = x.row, x.col, x.data
            if not (row.shape == col.shape == data.shape) or row.ndim != 1:
                raise CorruptInputError(f"{label} is not a valid COO matrix: row, col and data "
                                        "differ in length", got=f"{row.shape}, {col.shape}, {data.shape}")
            n = row.shape[0]
            if n:
                facts = cupy.stack([row.min().astype(cupy.int64), row.max().astype(cupy.int64),
                                    col.min().astype(cupy.int64), col.max().astype(cupy.int64)]).get()
                rlo, rhi, clo, chi = (int(v) for v in facts)
                if rlo < 0 or rhi >= rows or clo < 0 or chi >= cols:
                    raise CorruptInputError(f"{label} is not a valid COO matrix: an index lies outside "
                                            "the shape", expected=f"rows in [0, {rows}), columns in [0, {cols})",
                                            got=f"rows {rlo}..{rhi}, columns {clo}..{chi}",
                                            hint=_hint(label))
            return _check_device_values(data, label, ensure_all_finite)
        else:
            raise InputError(f"{label}: CuPy sparse format {x.format!r} is not supported",
                             expected="csr, csc or coo", hint=f"convert with {label}.tocsr()")
    if x.ndim != 2:
        raise InputError(f"{label} must be a 2-D matrix", got=f"shape {x.shape}",
                         hint="reshape a single sample with x.reshape(1, -1)")
    check_real(x.dtype, label)
    return _check_device_values(x, label, ensure_all_finite)


def _check_device_values(values, label: str, ensure_all_finite) -> dict | None:
    import cupy
    if values.size == 0:
        return _summary({"max_abs": 0.0}, 0, 0)
    fast = _fused_facts(None, None, cupy.ascontiguousarray(values).reshape(-1))
    if fast is not None:
        nnan, ninf = fast["nan"], fast["inf"]
    elif ensure_all_finite is False or values.dtype.kind != "f":
        return None  # not computed: the repair looks itself
    else:
        nnan, ninf = (int(v) for v in cupy.stack([cupy.count_nonzero(cupy.isnan(values)),
                                                  cupy.count_nonzero(cupy.isinf(values))]).get())
    facts = _summary(fast, nnan, ninf)
    if ensure_all_finite is False or not nnan and not ninf or \
            (ensure_all_finite == "allow-nan" and not ninf):
        return facts
    host = values.get().astype(np.float64)
    csr = sps.csr_matrix(host if host.ndim == 2 else host.reshape(1, -1))
    check_finite(csr, label, ensure_all_finite)


# --- memory ------------------------------------------------------------------------


def physical_memory() -> int | None:
    """Bytes of memory this process can still get: MemAvailable of /proc/meminfo on
    Linux (free memory plus reclaimable caches), else the physical memory; None when
    unknown. An allocation beyond it would succeed lazily and be killed on first
    touch, so results are checked against it before they are allocated."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


# --- domains ---------------------------------------------------------------------


def check_domains(plan, data: dict) -> None:
    """Every op sees only inputs of its domain.

    Two sources of a domain: an op declared (or derived) ``nonnegative``
    (hellinger), and, for every op in the plan, each power with a non-integer
    exponent or log whose argument depends on one side only — ``x^0.5``,
    ``x^(1/3)``, ``log(y)`` — checked on that side's stored values and fill, so
    negative data is a :class:`DomainError` rather than a silent NaN. A power
    inside a ``where`` branch is guarded by its condition and is not checked.
    ``data`` values have ``.data`` (the stored values); a device operand may also offer
    ``device_min()``, used where the minimum decides (gbdist.runtime.bind).
    """
    for op, var, name, flipped, chain in _domain_sides(plan):
        if (name, flipped) not in data:
            continue
        d = data[(name, flipped)]
        if hasattr(d, "device_min") and _minimum_decides(op, var, chain) and d.device_min() >= 0:
            continue  # a device operand whose minimum passes: no values to the host
        values = np.concatenate([d.data, [0.0]])  # the fill too
        for c in chain:
            _check_op_domain(c, "x", values, f"input {name} (before {c.name})")
            values = apply_unary(c, values)
        if op:
            _check_op_domain(op, var, values, f"input {name}")


_SIDES: dict = {}


def _minimum_decides(op, var: str, chain: tuple) -> bool:
    """Whether a side's values all pass its check once their minimum is >= 0: the chain
    holds only row scalings of nonnegative rows (``normalize``: the sign is kept), and
    every domain is ``nonnegative`` or none, every guarded base (a power or log argument)
    the bare variable itself. Otherwise (or when the minimum is negative or NaN) the
    values are checked one by one, which also words the error."""
    from .algebra.ops import RowScale
    for c, v in [(c, "x") for c in chain] + ([(op, var)] if op is not None else []):
        if c.domain not in (None, "nonnegative"):
            return False
        if any(sym == v and tuple(base[:2]) != ("Symbol", v) for _, base, sym in c.guarded_bases()):
            return False
    return all(isinstance(c, RowScale) and c.domain == "nonnegative" for c in chain)


def _domain_sides(plan) -> tuple:
    """The (op, var, name, flipped, chain) operand sides of ``plan`` whose values need a
    domain check (an op of the chain or the product is nonnegative, or takes a power or a
    log of one side), each once; remembered per plan (the answer depends on the plan only)."""
    key = plan.expr.key
    found = _SIDES.get(key)
    if found is not None:
        return found
    checked = set()
    sides = []
    for p in plan.products:
        op = p.analysis.semiring.mul
        node = p.node
        pairs = ((node.left, False), (node.right, True)) if isinstance(node, ir.MxM) else \
            ((node.matrix, False), (node.vector, False))
        for var, (operand, flip) in zip(("x", "y"), pairs):
            sides.append((op, var, row_operand(operand, flip)))
    for node in ir.walk(plan.expr):
        if isinstance(node, ir.RowReduce):
            sides.append((None, "x", row_operand(node.arg)))
    out = []
    for op, var, (name, flipped, chain) in sides:
        k = (op.key if op else None, var, name, flipped, chain)
        if k in checked:
            continue
        checked.add(k)
        ops_ = chain + ((op,) if op else ())
        if all(c.domain != "nonnegative" and not c.guarded_bases() for c in ops_):
            continue  # nothing to check: no need to evaluate the chain on the data
        out.append((op, var, name, flipped, chain))
    if len(_SIDES) > 1024:
        _SIDES.clear()
    _SIDES[key] = found = tuple(out)
    return found


def _check_op_domain(op, var: str, values: np.ndarray, what: str) -> None:
    op.check_domain(values[:-1], what)  # the declared domain: stored values only
    for kind, base, sym in op.guarded_bases():
        if sym != var:
            continue
        with np.errstate(all="ignore"):
            v = np.broadcast_to(np.asarray(evaluate_formula(base, {var: values}), dtype=np.float64),
                                values.shape)
        bad = v < 0
        if bad.any():
            shown = formula_text(base)
            at = int(np.argmax(bad))
            where = "the unstored entries (fill)" if at == len(values) - 1 else \
                f"the value {values[at]:g}"
            raise DomainError(
                f"op {op.name!r} takes {kind} of {shown}, which is negative for {where} of {what}",
                expected=f"{shown} >= 0 for every value of {what}",
                got=f"{shown} = {v[at]:g}",
                hint="take abs() of the data first, guard the term with where(...), or use a "
                     "metric defined on reals")
