"""Forms the compiled graph kernels prepare from their operands (:mod:`.graph`): the
transpose kept while a matrix lives, the checks of a state the caller keeps. Arrays only; no Numba."""
from __future__ import annotations

import weakref

import numpy as np

_PREPARED: dict = {}  # id(B) → [weak reference to B, its arrays and shape, {name: form}]


def _prepared(B, name, build):
    """``build()``, cached for the SciPy matrix ``B`` while it lives with the same arrays
    and shape (kept with the forms and checked by identity: a matrix whose arrays were
    replaced — SciPy's ``A[i, j] = v`` on a new entry, ``eliminate_zeros``, ``resize`` —
    or a new matrix at a recycled id never serves a stale form). Values written into B's
    arrays in place are not seen: the graph operations never do it (gb.Matrix owns its
    arrays and hands out read-only views); a caller of the kernels must not either."""
    entry = _PREPARED.get(id(B))
    if (entry is None or entry[0]() is not B or entry[1] is not B.data
            or entry[2] is not B.indices or entry[3] is not B.indptr or entry[4] != B.shape):
        try:
            ref = weakref.ref(B, lambda _r, k=id(B): _PREPARED.pop(k, None))
        except TypeError:
            return build()
        entry = _PREPARED[id(B)] = [ref, B.data, B.indices, B.indptr, B.shape, {}]
    forms = entry[5]
    if name in forms:
        return forms[name]
    value = forms[name] = build()
    return value


def _transpose(B):
    """B's transpose as canonical CSR (B's CSC), kept while B lives (:func:`_prepared`)."""
    def build():
        T = B.T.tocsr()
        T.sort_indices()
        it = B.indices.dtype
        T.indices, T.indptr = T.indices.astype(it, copy=False), T.indptr.astype(it, copy=False)
        return T
    return _prepared(B, "T", build)


def _check_state(d, p, n, work) -> None:
    """The state of :meth:`CompiledGraphKernels.spmspv_update`: d in the domain, p uint8,
    both of the output's length, writable (the kernel writes them in place)."""
    if (d.shape != (n,) or p.shape != (n,) or d.dtype != np.dtype(work)
            or p.dtype != np.uint8 or not (d.flags.writeable and p.flags.writeable)):
        from ...errors import InputError
        raise InputError("spmspv_update: the state arrays do not fit",
                         expected=f"writable d ({n},) {work} and p ({n},) uint8",
                         got=f"d {d.shape} {d.dtype}, p {p.shape} {p.dtype}")
