"""Prepared operands (DESIGN.md §6): the work a call does to one operand, done once.

A call does to each operand what depends on that operand alone: validation, the
canonical CSR, conditioning and normalisation as the plan allows, transposes, the
domain check, the device copy, and in the backends the mapped values, row hashes, row
reductions and the right side's column form. :class:`Operand` keeps one canonical form
with a memo of everything derived from it, keyed by what each derived form depends on
(the plan, the invariance, the dtype, the row range), so that later calls, fitted
estimators and graph loops pay only for what depends on the pair.

Never stale, by construction or by comparison:

* :func:`prepare` (public as ``gb.prepare``) copies the operand into arrays gbdist owns
  and never writes: the caller holds no reference to them, so nothing derived from them
  can go stale. Pass the result wherever the operand is accepted; this is the form for
  large operands and services (``NearestNeighbors.fit`` prepares its index this way).
  (The arrays are not flagged read-only: Numba compiles a second specialisation of
  every kernel for read-only arrays, seconds on a first call.)
* A plain host array or SciPy matrix passed again is recognised (:func:`operand`) when
  it is small (:data:`IMPLICIT_MAX_BYTES`, where the fixed cost of a call matters) and
  its arrays are byte for byte what they were when it was prepared: each lookup compares
  the current arrays with a private snapshot (``np.array_equal`` on their bytes, one
  read of the operand; any in-place change, a replaced array, another shape or dtype is
  a miss and the operand is prepared anew). The entry is keyed by the object's identity
  and dropped when the object is collected (a weak reference), at most
  :data:`IMPLICIT_ENTRIES` entries, least recently used first out.

CuPy inputs are not kept implicitly: comparing device arrays would synchronise the
host with the device on every call; ``gb.prepare`` keeps them on the host side of the
contract (a private copy) instead.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict

import numpy as np
import scipy.sparse as sps

from ..errors import InputError
from ..inputs import check_finite, ensure_all_finite_value, host_csr, is_cupy


def to_csr(x, name: str, drop_zeros: bool = False, ensure_all_finite=True,
           label: str | None = None) -> sps.csr_matrix:
    """A canonical float64 CSR copy on the host: validated, sorted indices, duplicates summed.

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


def _index_dtype(x):
    for attr in ("indices", "row", "col"):
        v = getattr(x, attr, None)
        if v is not None and hasattr(v, "dtype"):
            return np.dtype(v.dtype)
    return None


IMPLICIT_MAX_BYTES = 32 << 20  # larger operands: the fixed cost is small against the work
IMPLICIT_ENTRIES = 64

_STATS = {"prepared": 0, "reused": 0}  # counted for the tests (work, never time)


class Operand:
    """One canonical, validated host CSR (gbdist's own; never written) and the memo of
    the forms derived from it (``derived``)."""

    __slots__ = ("csr", "memo", "__weakref__")

    def __init__(self, csr: sps.csr_matrix):
        self.csr = csr
        self.memo: dict = {}

    def derived(self, key, build):
        """The form ``key`` of this operand, built once by ``build()``."""
        try:
            return self.memo[key]
        except KeyError:
            out = self.memo[key] = build()
            return out


class Prepared:
    """An operand prepared once (``gb.prepare(X)``): a private canonical copy of
    ``X`` and the memo of every form later calls derive from it. Accepted wherever ``X``
    is (``pairwise_distances``, ``knn``, programs, ``NearestNeighbors.fit``)."""

    def __init__(self, x, label: str = "X"):
        if isinstance(x, Prepared):
            x = x.source
        self.dtype = np.dtype(getattr(x, "dtype", np.float64))
        self.on_device = is_cupy(x)  # results of calls on it stay on the device
        # validated and canonical, explicit zeros and non-finite values kept: each call's
        # own ensure_all_finite / drop_zeros give the forms below
        self.source = to_csr(x.get() if is_cupy(x) and not hasattr(x, "format") else x, label,
                             ensure_all_finite=False)
        self.shape = self.source.shape
        self.ndim = 2
        self._forms: dict = {}
        _STATS["prepared"] += 1

    @property
    def nnz(self) -> int:
        return self.source.nnz

    def form(self, drop_zeros: bool, ensure_all_finite, label: str) -> Operand:
        """The canonical operand as a call with ``drop_zeros`` and ``ensure_all_finite``
        binds it (checked once per combination; a refusal is raised every time)."""
        key = (bool(drop_zeros), ensure_all_finite)
        op = self._forms.get(key)
        if op is None:
            csr = self.source
            check_finite(csr, label, ensure_all_finite)
            if drop_zeros and (csr.data == 0).any():
                csr = csr.copy()
                csr.eliminate_zeros()
            op = self._forms[key] = Operand(csr)
        return op

    def __getstate__(self) -> dict:
        """Pickled without the derived forms (device copies among them): rebuilt on use."""
        state = dict(self.__dict__)
        state["_forms"] = {}
        return state

    def __repr__(self) -> str:
        return (f"<gbdist prepared operand {self.shape[0]}×{self.shape[1]}, {self.nnz} stored, "
                f"{self.dtype}>")


def prepare(X, label: str = "X") -> Prepared:
    """``gb.prepare(X)``: validate ``X`` once and keep a private canonical copy
    with everything later calls derive from it (hashes, norms, conditioning, transposes,
    the device copy, the backends' per-operand arrays). Pass it instead of ``X``; ``X``
    itself may then change freely: the prepared operand is a copy. A
    :class:`Prepared` passed again is returned as is."""
    if isinstance(X, Prepared):
        return X
    from ..inputs import refuse_graph_operand
    refuse_graph_operand(X, label)
    if X is None:
        raise InputError("gb.prepare needs an operand", got="None")
    if not (sps.issparse(X) or isinstance(X, np.ndarray) or is_cupy(X)):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError) as e:
            raise InputError(f"{label} cannot be read as a 2-D array",
                             got=str(e).splitlines()[0]) from None
    return Prepared(X, label)


# --- implicit reuse of small host operands ----------------------------------------------


def _arrays(x) -> tuple | None:
    """The arrays whose bytes determine ``x`` (a host ndarray or a SciPy matrix in a
    compressed or COO format), or None for what is not kept implicitly."""
    if isinstance(x, np.ndarray):
        return (x,) if x.dtype.kind in "biuf" else None
    if not sps.issparse(x):
        return None
    fmt = x.format
    if fmt in ("csr", "csc", "bsr"):
        return (x.data, x.indices, x.indptr)
    if fmt == "coo":
        coords = getattr(x, "coords", None)
        row, col = coords if coords is not None and len(coords) == 2 else (x.row, x.col)
        return (x.data, row, col)
    return None


def _signature(x, arrays) -> tuple:
    return (type(x), getattr(x, "format", None), tuple(x.shape),
            tuple((a.dtype.str, a.shape) for a in arrays))


def _bytes(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


class _Entry:
    __slots__ = ("ref", "signature", "snapshot", "prepared")

    def __init__(self, x, arrays, prepared):
        self.ref = weakref.ref(x)
        self.signature = _signature(x, arrays)
        self.snapshot = tuple(_bytes(a).copy() for a in arrays)
        self.prepared = prepared

    def unchanged(self, x, arrays) -> bool:
        return (self.ref() is x and _signature(x, arrays) == self.signature
                and all(np.array_equal(_bytes(a), s) for a, s in zip(arrays, self.snapshot)))


_IMPLICIT: OrderedDict = OrderedDict()


def _forget(key) -> None:
    _IMPLICIT.pop(key, None)


def clear() -> None:
    """Forget every implicitly kept operand (``gb.clear_caches``)."""
    _IMPLICIT.clear()


def operand(x, drop_zeros: bool, ensure_all_finite, label: str) -> Operand:
    """The canonical operand of input ``x`` for a call: a :class:`Prepared` one's form, a
    small host operand seen before and unchanged since (byte for byte), or prepared now
    (and kept, when small, for the next call)."""
    if isinstance(x, Prepared):
        _STATS["reused"] += 1
        return x.form(drop_zeros, ensure_all_finite, label)
    arrays = _arrays(x)
    if arrays is None or sum(a.nbytes for a in arrays) > IMPLICIT_MAX_BYTES:
        return Operand(to_csr(x, label, drop_zeros, ensure_all_finite, label))
    key = id(x)
    entry = _IMPLICIT.get(key)
    if entry is not None and entry.unchanged(x, arrays):
        _IMPLICIT.move_to_end(key)
        _STATS["reused"] += 1
        return entry.prepared.form(drop_zeros, ensure_all_finite, label)
    prepared = Prepared(x, label)
    op = prepared.form(drop_zeros, ensure_all_finite, label)  # refused before it is kept
    if entry is None or entry.ref() is not x:  # one finaliser per object
        try:
            weakref.finalize(x, _forget, key)
        except TypeError:  # not weakly referenceable: prepared for this call only
            return op
    _IMPLICIT[key] = _Entry(x, arrays, prepared)
    while len(_IMPLICIT) > IMPLICIT_ENTRIES:
        _IMPLICIT.popitem(last=False)
    return op


def stats() -> dict:
    """How many operands were prepared and how many lookups reused one (for tests)."""
    return dict(_STATS)
