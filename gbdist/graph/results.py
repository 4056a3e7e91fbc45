"""The last step every graph operation shares: checks of ``out=`` and where operands
live, :func:`finish` (write T through the mask and accumulator into ``out`` or a new
object) and :func:`dense_result` (the same for a T given densely); the element-wise
pairing of operands. Imported by :mod:`.operations` and the modules of further operations
(:mod:`.indexing`, :mod:`.indexunary`, :mod:`.union`)."""
from __future__ import annotations

import numpy as np

from ..backends.graph_reference import cast
from ..errors import InputError
from . import sparse as S
from . import types as T
from .masks import write_back
from .objects import Matrix, Vector, as_matrix, as_vector


def _device(first, *objs) -> bool:
    """Where the operands live (all in one place, else an InputError)."""
    where = first._on_device
    for o in objs:
        if o is not None and o._on_device != where:
            raise InputError("operands live on different devices",
                             got="host and device operands",
                             hint="move them with .to_device() / .to_host()")
    return where


def _check_out(out, kind, shape, what):
    if out is None:
        return None
    if not isinstance(out, kind) or tuple(out.shape) != tuple(shape):
        raise InputError(f"{what}: out= must be a gb.{kind.__name__} of the result's shape",
                         expected=f"gb.{kind.__name__} of shape {tuple(shape)}",
                         got=repr(out))
    return out


def finish(kind, keys, vals, shape, dtype, fill, decision, *, mask, accum, out, replace, on_device):
    """Write T = (keys, vals), computed in the domain ``dtype``, through the
    mask/accumulator into ``out`` (cast on write to its dtype, the accumulator evaluated in
    it) or a new object of ``dtype``."""
    if accum is not None:
        accum = T.binary_arg(accum, "accum")
    if out is None and mask is None:  # C = T: T's entries in the domain, nothing to merge
        vals = cast(vals, dtype, S.xp_of(on_device))
    else:
        final = np.dtype(out.dtype) if out is not None else np.dtype(dtype)
        keys, vals = write_back(keys, vals, final, out=out, mask=mask, accum=accum,
                                replace=replace)
    if kind is Matrix:
        csr = S.keys_csr(keys, vals, shape, on_device)
        if out is not None:
            out._set(csr, out.dtype)
            res = out
        else:
            res = Matrix._wrap(csr, fill, on_device)
    else:
        if out is not None:
            out._set(keys, vals, shape[0], out.dtype)
            res = out
        else:
            res = Vector._wrap(keys, vals, shape[0], fill, on_device)
    res.decision = decision
    return res


def dense_result(y, present, dt, dec, *, mask, accum, out, replace, on_device):
    """T given densely (``y``: every position's value, an array the kernel made; ``present``:
    its flags, None for all): without ``out=`` and mask, the result itself, in the smallest
    form (:func:`.vector_forms.form_of`: full / bitmap / sparse), no keys made; else written
    through the mask and accumulator as every result (:func:`.results.finish`)."""
    t = Vector._from_dense(cast(y, dt, S.xp_of(on_device)), present, dec.result_fill, on_device)
    if out is None and mask is None:
        if accum is not None:
            T.binary_arg(accum, "accum")
        t.decision = dec
        return t
    return finish(Vector, t._idx, t._vals, (t.size,), dt, dec.result_fill, dec, mask=mask,
                  accum=accum, out=out, replace=replace, on_device=on_device)


def _pair(A, B, what):
    if isinstance(A, Vector) or isinstance(B, Vector) or getattr(A, "ndim", 2) == 1:
        A, B, kind = as_vector(A), as_vector(B), Vector
    else:
        A, B, kind = as_matrix(A), as_matrix(B), Matrix
    if A.shape != B.shape:
        raise InputError(f"{what}: shapes differ", expected="operands of one shape",
                         got=f"{A.shape} and {B.shape}")
    return A, B, kind


def _vals(x):
    return x._csr.data if x.ndim == 2 else x._vals
