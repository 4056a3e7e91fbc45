"""Masks and the GraphBLAS write-back ``C<M, replace> = accum(C, T)``.

A :class:`Mask` is a Matrix/Vector read as a pattern: structural (``A.S``: every stored
entry) or by value (``A.V``: stored entries whose value is truthy, nonzero), possibly
complemented (``~A.S``). A bare Matrix/Vector given as ``mask=`` is a value mask.

:func:`write_back` is the last step of every operation (the GraphBLAS C API rule):
``Z = accum(C, T)`` (the union: accum where both are stored, the one present elsewhere)
when an accumulator is given, else ``Z = T``; then with a mask, C keeps its entries
outside the mask unless ``replace=True`` (then they are deleted) and takes Z inside it.
Without ``out`` C is empty. Entries are handled as sorted keys (:mod:`.sparse`).
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from . import sparse as S


class Mask:
    """``source`` read as a pattern; ``structural`` or by value; ``complement``."""

    def __init__(self, source, structural: bool, complement: bool = False):
        self.source = source
        self.structural = structural
        self.complement = complement

    def __invert__(self) -> "Mask":
        return Mask(self.source, self.structural, not self.complement)

    def __repr__(self):
        kind = "S" if self.structural else "V"
        return f"{'~' if self.complement else ''}{self.source!r}.{kind}"

    @property
    def shape(self):
        return self.source.shape

    def keys(self):
        """Sorted keys of the pattern (before complementing), cached on the source."""
        src = self.source
        if self.structural:
            return src.keys()

        def build():
            keys = src.keys()
            vals = src._csr.data if src.ndim == 2 else src._vals
            return keys[vals != 0]
        return src.prepared("value-mask-keys", build)

    def allows(self, keys):
        """Bool per key: may the output hold it? A vector mask is read through its dense
        pattern (:meth:`dense`) when that is built already, the vector is full or bitmap,
        or the keys are many; other masks search their sorted keys (dense when they fill
        the key space)."""
        src = self.source
        if src.ndim == 1 and (src.has_prepared(("mask-dense", self.structural))
                              or _dense_form(src)
                              or S.dense_space(src.size, keys.size, src.nvals)):
            inside = self.dense()[keys]
        else:
            inside = S.member(keys, self.keys(), src.xp, space=space_of(src))
        return ~inside if self.complement else inside

    def pattern_csr(self):
        """The pattern (uncomplemented) as a CSR, for the kernels (cached)."""
        src = self.source
        if self.structural:
            return src._csr

        def build():
            csr = src._csr
            keep = csr.data != 0
            xp = src.xp
            keys = src.keys()[keep]
            return S.keys_csr(keys, xp.ones(keys.size, dtype=bool), csr.shape, src.on_device)
        return src.prepared("value-mask-csr", build)

    def dense(self):
        """The pattern (uncomplemented) as a bool vector (vector masks), cached; read only
        (a bitmap vector's structure is its own presence array). A full or bitmap vector's
        comes from its values and flags: no key array is made (issue 28)."""
        src = self.source

        def build():
            xp = src.xp
            if _dense_form(src):
                present = src._present  # None: full, every position stored
                if self.structural:
                    return xp.ones(src.size, dtype=bool) if present is None else present
                out = src._dense_vals != 0
                return out if present is None else xp.logical_and(out, present, out=out)
            out = xp.zeros(src.size, dtype=bool)
            out[self.keys()] = True
            return out
        return src.prepared(("mask-dense", self.structural), build)


def as_mask(mask, shape, what: str):
    """``mask=`` argument → a :class:`Mask` (or None), shape-checked."""
    if mask is None:
        return None
    if hasattr(mask, "prepared") and hasattr(mask, "keys"):  # a gb.Matrix / gb.Vector
        mask = Mask(mask, structural=False)
    if not isinstance(mask, Mask):
        raise InputError(f"{what}: a mask must be a gb.Matrix / gb.Vector or its .S / .V",
                         got=type(mask).__name__, hint="mask=M.S (structural) or mask=M.V (values)")
    if tuple(mask.shape) != tuple(shape):
        raise InputError(f"{what}: the mask's shape differs from the result's",
                         expected=str(tuple(shape)), got=str(tuple(mask.shape)))
    return mask


def write_back(keys, vals, dtype, *, out, mask, accum, replace):
    """Apply ``C<mask, replace> = accum(C, T)``; returns the final (keys, values) in
    ``dtype`` (C's dtype when ``out`` is given). ``keys``/``vals``: T, sorted, in the
    op's domain: cast on write to ``dtype`` (GraphBLAS's typecast,
    :func:`gbdist.backends.graph_reference.cast`); an accumulator is evaluated in
    ``dtype`` (as python-graphblas types it by C). ``out``: C or None."""
    from ..backends.graph_reference import binary, cast
    xp = _xp(keys)
    vals = cast(vals, dtype, xp)
    if out is None:
        if mask is not None:
            keep = mask.allows(keys)
            keys, vals = keys[keep], vals[keep]
        return keys, vals
    ck, cv = out.keys(), (out._csr.data if out.ndim == 2 else out._vals)
    cv = cast(cv, dtype, xp)
    if accum is not None:
        op = getattr(accum, "op", accum)
        zk, zv = S.merge_union(ck, cv, keys, vals, lambda a, b: binary(op, a, b, dtype, xp),
                               dtype, xp, space=space_of(out))
    else:
        zk, zv = keys, vals
    zv = cast(zv, dtype, xp)
    if mask is None:
        return zk, zv
    keep = mask.allows(zk)
    zk, zv = zk[keep], zv[keep]
    if replace:
        return zk, zv
    outside = ~mask.allows(ck)
    k = xp.concatenate([zk, ck[outside]])
    v = xp.concatenate([zv, cv[outside]])
    order = xp.argsort(k, kind="stable")
    return k[order], v[order]


def _dense_form(src) -> bool:
    """A full or bitmap Vector (:mod:`.vector_forms`): its pattern is read from its dense
    arrays, not from keys."""
    return src.ndim == 1 and getattr(src, "_dense_vals", None) is not None


def space_of(x) -> int:
    """The key space of a Matrix (m·n) or Vector (its size)."""
    return x.size if x.ndim == 1 else x.shape[0] * x.shape[1]


def _xp(a):
    return np if isinstance(a, np.ndarray) else S.cupy()
