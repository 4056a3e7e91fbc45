"""The one protocol every backend implements, and the bound operands it receives.

The runtime (:mod:`gbdist.runtime`) checks and canonicalises a plan's inputs once,
for every backend (:func:`gbdist.runtime.bind`: formats, dtype, index width, domains,
finiteness, conditioned / normalised rows), into a :class:`Bound`. A backend never
binds, validates or re-checks inputs itself; it is driven only through
:class:`Backend`:

==========================  ====================================================  ===================================
method                      what it does                                          called by
==========================  ====================================================  ===================================
``prepare(bound, strategy,    puts the canonical operands where the backend         ``runtime.run``, ``neighbors``
exact)``                      computes (host CSR, device CSR) and checks the
                              options it alone knows (``strategy``); ``exact``:
                              write the proven d(a, a) in every tile
``run_tile(prep, r0, r1,    the whole plan (products, row reductions, epilogue,  ``runtime.tiles`` (one loop, both
c0, c1)``                     the proven d(a, a)) on output rows r0:r1 × columns   for pairwise and for the searches)
                              c0:c1, as a ``Tile`` of ``xp`` values
``run_tile(..., upper=True)``  optional (a backend with ``upper_tiles = True``): a    ``neighbors.search`` (a symmetric
                              diagonal tile (r0:r1 == c0:c1) of a self-join under  self-join's diagonal tiles)
                              a metric proven symmetric; the backend may compute
                              the cells on and above the diagonal and mirror them
``select_k(D, k, offset)``  the k smallest of each row by (distance, column),    ``neighbors.search``
                              NaN last
``merge_k(d1, i1, d2, i2,   two sorted candidate lists per row → the k best      ``neighbors.search``
k)``
``cell_bytes(plan, dtype)`` bytes per output cell of a tile (results,             ``runtime.memory`` (tile shapes)
                              temporaries; ``select_bytes`` more in a search);
                              ``row_bytes(bound)`` per left row
``default_budget(result)``  the working memory when the user gave none            ``runtime.memory``
``is_out_of_memory(e)``,    an allocation failure, and releasing cached memory   ``runtime.tiles`` (shrink on OOM)
``release()``                 before a smaller retry
``xp``, ``to_host(x)``      the array module of results (NumPy, CuPy) and a       the runtime, ``neighbors``
                              copy to NumPy
==========================  ====================================================  ===================================

A new backend (a compiled CPU one, another accelerator) implements these and is
returned by :func:`gbdist.runtime.get_backend`; nothing else changes. The
runtime's memory model and its tiling are the same for every backend.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass
class Bound:
    """A plan with its checked, canonical operands (one per ``(name, transposed)`` key).

    ``data`` values are canonical CSR matrices (sorted indices, no duplicates; SciPy on
    the host, cupyx on the device when the input lived there and the backend computes
    there), conditioned / normalised as the plan allows. ``raw`` holds, per input name,
    the canonical operand *before* conditioning (the same object when nothing was
    conditioned), for the direct-form repair. ``ncols`` is the number of columns k the
    formula sees. ``finite`` is the ``ensure_all_finite`` the data was checked with;
    ``facts`` what device validation learnt per input name (NaN/±inf stored, max |x|).
    ``on_device``: an input was a CuPy array, so results stay on the device. ``memos``:
    per ``data`` key, the dict where a backend keeps what it derives from that operand
    alone (mapped values, row hashes, row reductions, column forms), keyed by what each
    depends on: the operand's memo when it was prepared (kept for later calls;
    :mod:`gbdist.runtime.prepared`), else a dict of this call.
    """

    plan: Any
    data: dict
    m: int
    n: int
    ncols: int
    left_keys: frozenset
    dtype: np.dtype
    finite: object = True
    raw: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    drop_zeros: bool = False
    on_device: bool = False
    memos: dict = field(default_factory=dict)
    # κ(w) of each weighted step (TwoPassUnion.weight), by the op's key: a float64 vector
    # over the columns (the operands' columns are then never compressed)
    weights: dict = field(default_factory=dict)

    def memo(self, key) -> dict:
        """The memo of operand ``key`` (a :class:`CallMemo` for one bound without memos)."""
        m = self.memos.get(key)
        if m is None:
            m = self.memos[key] = CallMemo()
        return m

    def remember(self, key, what, build):
        """``build()``, kept in operand ``key``'s memo under ``what`` (built once)."""
        memo = self.memo(key)
        try:
            return memo[what]
        except KeyError:
            value = memo[what] = build()
            return value

    def with_data(self, data: dict) -> "Bound":
        """This bound with a backend's forms of its operands: one the backend changed
        (columns compressed with the other operands', indices widened) starts a memo of
        this call's own."""
        memos = dict(self.memos)
        memos.update({k: self.memo(k) if v is self.data[k] else CallMemo()
                      for k, v in data.items()})
        return replace(self, data=data, memos=memos)

    @property
    def width(self) -> int:
        """Columns of the stored data."""
        return next((v.shape[1] for v in self.data.values()), 0)

    @property
    def right_sliceable(self) -> bool:
        """Whether every right-side operand has one row per output column (so column tiles
        slice it); false for plans whose right side is a vector or a transposed operand."""
        return all(v.shape[0] == self.n for key, v in self.data.items() if key not in self.left_keys)


class CallMemo(dict):
    """The memo of an operand that was not prepared: it lives for one call (a backend may
    skip keeping what only a later call would reuse)."""


@dataclass
class Tile:
    """What :meth:`Backend.run_tile` returns: the tile's values (``xp`` array, rows × cols
    for a matrix result; the output kind's shape otherwise) and, when the backend can tell,
    the mask of entries a rewritten step computed as non-finite (``suspect``, for the
    direct-form repair; None when the backend does not report it)."""

    values: Any
    suspect: Any = None


@runtime_checkable
class Backend(Protocol):
    """The protocol every backend implements (see the module's table)."""

    name: str
    xp: Any

    def prepare(self, bound: Bound, strategy: str = "auto", exact: bool = True) -> Any: ...

    def run_tile(self, prepared: Any, r0: int, r1: int, c0: int, c1: int) -> Tile: ...

    def select_k(self, D, k: int, offset: int = 0): ...

    def merge_k(self, d1, i1, d2, i2, k: int): ...

    select_bytes: int  # bytes per cell of a search's selection temporaries

    def cell_bytes(self, plan, dtype) -> int: ...

    def row_bytes(self, bound: Bound) -> int: ...

    def default_budget(self, result: bool = False) -> int | None: ...

    def is_out_of_memory(self, e: BaseException) -> bool: ...

    def release(self) -> None: ...

    def to_host(self, x) -> np.ndarray: ...


MISS = object()
"""What :func:`recall` returns when nothing is kept (a kept value may be None)."""


def recall(obj, attr: str, key):
    """The per-matrix fact :func:`keep` left on ``obj`` (a CSR object) under ``attr`` for
    ``key`` (its buffers' addresses and shape), else :data:`MISS`."""
    memo = getattr(obj, attr, None)
    return memo[1] if memo is not None and memo[0] == key else MISS


def keep(obj, attr: str, key, value):
    """``value`` kept on ``obj`` under ``attr`` for ``key`` (an object without attributes
    keeps nothing); returns ``value``. The facts assume the buffers are not written in place."""
    try:
        setattr(obj, attr, (key, value))
    except AttributeError:
        pass
    return value


def cupyx_csr(data, indices, indptr, shape, *, valid: bool = False):
    """A cupyx CSR of device arrays. ``valid``: the parts are a canonical CSR by construction
    (a kernel's output: ``indptr[-1] == data.size``, indices in range): where the installed
    CuPy has the pre-validated constructor (``_from_parts``, CuPy >= 14.1) and the indices
    are int32 (the dtype cupyx would keep), no checks run; the tuple constructor's read of
    ``indptr``'s ends waits for the kernels and scans the indices' dtype."""
    import cupyx.scipy.sparse as cps
    parts = getattr(cps.csr_matrix, "_from_parts", None) if valid else None
    if parts is not None and indices.dtype == indptr.dtype == np.int32:
        return parts(data, indices, indptr, (int(shape[0]), int(shape[1])))
    return cps.csr_matrix((data, indices, indptr), shape=shape)


class DeviceCSR:
    """A canonical CSR of CuPy arrays for the integer result types (cupyx.scipy.sparse holds
    bool, float32/64 and complex only). Read like a cupyx CSR: ``data``, ``indices``,
    ``indptr``, ``shape``, ``nnz``, ``dtype``, ``copy()``, ``astype()``; ``get()`` is the
    SciPy CSR. The CUDA graph kernels return it for integer results and
    :mod:`gbdist.graph` holds integer device matrices in it."""

    has_canonical_format = True
    has_sorted_indices = True
    format = "csr"

    def __init__(self, data, indices, indptr, shape):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))

    nnz = property(lambda self: int(self.data.size))
    dtype = property(lambda self: self.data.dtype)

    def copy(self):
        return DeviceCSR(self.data.copy(), self.indices.copy(), self.indptr.copy(), self.shape)

    def astype(self, dtype):
        """A copy with values of ``dtype`` (a cupyx CSR where cupyx holds that dtype)."""
        data = self.data.astype(dtype)
        if data.dtype.char in "?fd":
            import cupyx.scipy.sparse as cps
            return cps.csr_matrix((data, self.indices, self.indptr), shape=self.shape)
        return DeviceCSR(data, self.indices, self.indptr, self.shape)

    def get(self):
        """The matrix as a SciPy ``csr_matrix`` on the host."""
        import scipy.sparse as sps
        return sps.csr_matrix((self.data.get(), self.indices.get(), self.indptr.get()), shape=self.shape)

    def __repr__(self):
        return f"DeviceCSR({self.shape}, nnz={self.nnz}, dtype={self.dtype})"


def has_rewrite(plan) -> bool:
    """True when some product is not computed as written on finite data (an expansion or
    a union correction), so overflow can appear in the rewrite only."""
    return any(p.strategy == "union-correction" or p.expansion_rank for p in plan.products)


def output_shape(kind: str, rows: int, cols: int) -> tuple:
    """The shape of an output kind on a tile of rows × cols."""
    return {"matrix": (rows, cols), "col": (rows,), "row": (cols,)}.get(kind, ())


def shape_output(out, kind: str, rows: int, cols: int, xp=np):
    """An epilogue's value (broadcast from scalars / vectors) in the output kind's shape,
    a contiguous array of its own."""
    out = xp.asarray(out)
    shape = output_shape(kind, rows, cols)
    if kind == "col" and out.ndim == 2:
        out = out.reshape(-1)
    elif kind == "row" and out.ndim == 2:
        out = out.reshape(-1)
    if out.shape == shape:
        return out
    return xp.ascontiguousarray(xp.broadcast_to(out, shape))


@runtime_checkable
class GraphKernels(Protocol):
    """The kernels behind the graph operations (:mod:`gbdist.graph`), one set per backend:
    ``graph_reference_kernels.ReferenceGraphKernels`` (NumPy), ``compiled.graph.CompiledGraphKernels``
    (Numba), ``cuda.graph.CudaGraphKernels`` (CuPy). Constructed with no arguments.

    Every kernel computes *structural* semantics: only stored entries take part; a stored
    0 is a value like any other; an output entry is stored iff at least one ⊗ term exists
    for it (and the mask allows it). Operands are canonical CSR (sorted indices, no
    duplicates; SciPy on the host, cupyx on the device); dense vectors are 1-D ``xp``
    arrays. Values are combined with the ops' formulas (``sr.mul``, ``sr.add.op``,
    ``sr.add.identity``), user ops included; the result dtype is ``out_dtype``.
    """

    name: str  # "reference", "compiled", "cuda"
    xp: Any  # numpy or cupy

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype,
               symmetric=None) -> Any:
        """CSR ``C(i,j) = ⊕_{k: A(i,k), B(k,j) stored} mul(A(i,k), B(k,j))``, sorted
        indices. ``mask``: a CSR whose *pattern* restricts the output; ``complement``:
        keep only (i, j) not in the mask. ``symmetric``: what the caller already knows of
        A == Aᵀ (``gr.Matrix.known_symmetry``: ``"values"``, ``"pattern"``, False, None),
        so that a kernel set that checks it (the compiled half product of a symmetric
        ``C⟨A⟩ = A ⊕.⊗ A``) need not; a kernel set may ignore it."""

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False) -> tuple:
        """Pull: ``y(i) = ⊕_{k: A(i,k) stored, x_present[k]} mul(A(i,k), x[k])``.
        ``x_present``: bool (n,) or None (all present); ``mask``: bool (m,) or None.
        ``compensated``: when ⊕ is plus and the result floating-point, each row's terms
        are summed with a compensated (Neumaier) sum: about one rounding of error whatever
        the row's length (other monoids and integer results do not round: no change).
        Returns ``(y (m,), y_present (m,))``; y is the ⊕ identity where not present."""

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype) -> tuple:
        """Push (vxm): ``y(j) = ⊕_{k in u_idx, A(k,j) stored} mul(u(k), A(k,j))``, walking
        the rows of A named by ``u_idx`` (sorted, unique). Returns ``(y (n,), y_present (n,))``."""

    def spmspv_update(self, A, u_idx, u_val, sr, d, p, *, only_new, out_dtype) -> tuple:
        """Push into a state kept by the caller, frontier-proportional: ``t(j) = ⊕_k
        mul(u(k), A(k,j))`` over the rows named by ``u_idx`` (sorted, unique), merged into
        ``d`` (values, ``out_dtype``) and ``p`` (uint8 presence, 0/1) in place: a j with
        p[j] = 0 enters with t(j); a present j is skipped when ``only_new`` (the
        complemented structural mask ``~p``), else takes d(j) ⊕ t(j) when that differs from
        d(j). Returns ``(indices, values)`` of the entries that entered or changed (sorted).
        Nothing n-wide is allocated or scanned."""

    def segment_reduce(self, indptr, values, monoid, *, out_dtype) -> tuple:
        """Per segment s: ⊕ of ``values[indptr[s]:indptr[s+1]]``; returns ``(values,
        present)``, present = the segment is non-empty (the identity elsewhere)."""

    def rank_lower_counts(self, A, deg, *, only_none: bool = False) -> Any:
        """(3, m), in ``deg``'s integer type, for a square canonical CSR ``A`` and its row degrees ``deg``: per row
        i, the stored (i, j) with j ranked below i with no ranking (j < i), by increasing
        degree ((deg j, j) < (deg i, i)) and by decreasing degree (deg j > deg i, ties by
        index). Self loops rank below nothing. ``only_none``: the first row only (the
        others 0): no degree is read."""

    def rank_lower_fill(self, A, deg, mode: int, lp, *, with_values: bool, nnz=None) -> tuple:
        """``(columns, values or None)`` of L, the entries kept under ordering ``mode`` (0
        none, 1 increasing, 2 decreasing degree), each row's in A's order at the row
        pointers ``lp`` (the cumulative sum of that ordering's counts; ``nnz``: its last
        entry where the caller knows it, so a device set need not read it)."""

    def pattern_symmetric(self, A) -> bool:
        """Whether the square canonical CSR ``A``'s pattern is symmetric ((i, j) stored
        exactly when (j, i) is), without building Aᵀ."""

    def union_merge(self, A, B, xa, xb, *, itype) -> tuple:
        """eWiseUnion of two canonical CSR ``A`` and ``B`` of one shape, ``xa`` / ``xb``
        (one dtype, one value per entry of A / of B) the values of the entries only one of
        them stores: ``(indptr, indices, values, at, a_pos, b_pos)``, C's row pointers and
        columns (``itype``; canonical: sorted, unique) and values (``xa[p]`` where only A's
        entry p is stored, ``xb[q]`` where only B's entry q is); the (i, j) both store are
        C's entries ``at``, left for the caller (``op(A.data[a_pos], B.data[b_pos])``);
        ``at``, ``a_pos``, ``b_pos`` int64, in C's order."""

    def intersect_merge(self, A, B, *, itype) -> tuple:
        """The (i, j) both canonical CSR ``A`` and ``B`` (one shape) store (eWiseMult's
        pattern): ``(indptr, indices, a_pos, b_pos)``, C's row pointers and columns
        (``itype``, canonical) and, per entry of C in order, the A entry and the B entry it
        comes from (int64); ``a_pos`` (``b_pos``) may be None where it would be every entry
        of A (of B) in order (C's pattern is A's: the caller uses A's values as they are)."""

    def union_keys(self, ka, kb, va, vb, op, left_default, right_default, *, out_dtype,
                   space=None) -> tuple:
        """eWiseUnion of two vectors (or any sorted unique int64 keys) ``ka`` and ``kb``
        with values ``va`` / ``vb``: ``(keys, values)``, the sorted union, each value in
        ``out_dtype`` (operands and defaults cast to it, ``op`` evaluated in it as
        :func:`gbdist.backends.graph_reference.binary` does): ``op(a, right_default)``
        where only A holds the key, ``op(left_default, b)`` where only B does, ``op(a, b)``
        where both do. ``space``: the key space's size where the keys fill much of it (a
        set may merge through a presence array then), else None."""
