"""Hypersparse graphs: dimensions far beyond the stored entries (2⁶⁰ vertices keyed by
hashes), with no array of the dimension's size anywhere.

A :class:`HyperMatrix` stores the sorted ids of its non-empty rows and columns (int64,
anywhere in ``[0, nrows)`` / ``[0, ncols)``, up to 2⁶³ − 1) and a *compact* ordinary
:class:`~.objects.Matrix` over them (``len(row_ids) × len(col_ids)``: SuiteSparse's
hypersparse format, with the column ids compressed too). A :class:`HyperVector` stores
its ids and a compact Vector. Every operation relabels its operands into one compact
space (``searchsorted`` on the ids: O(entries · log)), runs the ordinary operation there
(:mod:`.operations`, whatever kernels and backend it picks) and maps the result's
positions back to ids, dropping rows and columns left empty:

* ``mxm(A, B)``: only inner ids stored on both sides can meet, so A keeps those columns
  and B those rows; the result lives on A's row ids × B's column ids;
* ``mxv(A, u)`` / ``vxm(u, A)``: u's entries at A's column (row) ids;
* ``ewise_add`` / ``ewise_mult``: both operands on the union (intersection) of their ids;
* ``ewise_union(A, B, op, a, b)``: both operands on the union of their ids;
* ``reduce_rows`` / ``reduce_cols`` / ``reduce_scalar``, ``apply`` (a unary op or a
  bound scalar), ``select`` by value: on the compact matrix itself;
* what reads positions — ``select`` with ``tril``, ``rowle`` … or an index-unary op,
  ``apply`` of an index-unary op (``rowindex`` …), products over a positional semiring
  (``any_secondi`` …) — reads the *ids*, never the compact positions;
* ``extract(H, rows, cols)`` and ``H[i, :]``, ``H[:, j]``, ``H[i, j]``, ``H[rows, cols]``:
  index lists and slices over ids (:mod:`.hyper_store`), a result of the selection's shape.

The ordinary operations (``gr.mxm``, ``gr.select`` …) refuse a hypersparse operand with
an error naming these.

A mask is a hypersparse operand's ``H.S`` / ``H.V`` (``~`` complements it), mapped onto
the result's compact space (an entry outside it cannot be in the result, so a complement
needs nothing beyond it). ``out=`` (a HyperMatrix / HyperVector of the result's shape,
changed in place), ``accum=`` and ``replace=`` write as GraphBLAS does,
``out<mask, replace> = accum(out, T)``, on the union of T's and out's ids
(:func:`_writes`). Results are graphs (fill ``"absent"``); their ``decision`` is the
compact operation's.
"""
from __future__ import annotations

import functools

import numpy as np

from ..algebra.positional import index_unary_arg, is_positional, lower
from ..compiler import graph as rule
from ..errors import InputError
from . import indexunary as IU
from . import operations as ops_
from . import types as T
from .hyper_store import (  # noqa: F401 - the classes are gr.hyper's too
    MAX_DIM, HyperMatrix, HyperVector, _intersect, _onto, _union, _vector_onto, getitem,
    select_ids)
from .masks import Mask
from .objects import Matrix, Vector
from .union import ewise_union as _plain_union


def _plain(kwargs, what, rows=None, cols=None, shape=None):
    """Map a hypersparse mask onto the result's compact space (``rows`` × ``cols`` ids, or
    ``rows`` alone for a vector result); accum= and out= are :func:`_writes`'."""
    mask = kwargs.get("mask")
    if mask is None:
        return
    if rows is None:
        raise InputError(f"{what} on hypersparse operands takes no mask=")
    kwargs["mask"] = _mask_onto(mask, rows, cols, shape, what)


def _mask_onto(mask, rows, cols, shape, what) -> Mask:
    if isinstance(mask, (HyperMatrix, HyperVector)):
        mask = mask.V
    src = getattr(mask, "source", None)
    want = HyperVector if cols is None else HyperMatrix
    if not isinstance(mask, Mask) or not isinstance(src, want) or src.shape != shape:
        raise InputError(f"{what}: the mask of a hypersparse result is a {want.__name__} "
                         "of its shape (H.S, H.V, ~H.S)", got=repr(src if src is not None else mask),
                         expected=f"a {want.__name__} of shape {shape}")
    mapped = _vector_onto(src, rows) if cols is None else _onto(src, rows, cols)
    return Mask(mapped, mask.structural, mask.complement)


def _writes(fn):
    """An operation with GraphBLAS's write-back: ``out<mask, replace> = accum(out, T)``. T is
    computed (with the mask) as before; then T, ``out`` and the mask are relabelled onto
    the union of T's and out's ids (no entry of the result lies outside it) and written by
    the ordinary ``apply(identity, T, mask=, accum=, out=, replace=)``. ``out`` (a
    HyperMatrix / HyperVector of the result's shape) is changed in place and returned."""
    @functools.wraps(fn)
    def run(*args, out=None, accum=None, replace=False, **kw):
        what = fn.__name__
        if out is None:
            if accum is not None:
                raise InputError(f"{what}(accum=...) on hypersparse operands needs out=: the "
                                 "accumulator combines the result with out's entries")
            return fn(*args, replace=replace, **kw) if replace else fn(*args, **kw)
        T = fn(*args, **kw)
        return _write_back(what, T, out, kw.get("mask"), accum, replace)
    return run


def _write_back(what, T, out, mask, accum, replace):
    from ..algebra.ops import BY_NAME
    kind = type(T)
    if not isinstance(out, kind) or out.shape != T.shape:
        raise InputError(f"{what}: out= is a {kind.__name__} of the result's shape",
                         expected=f"a {kind.__name__} of shape {T.shape}", got=repr(out))
    identity = BY_NAME["identity"]
    if kind is HyperVector:
        ids = _union(T.ids, out.ids)
        m = None if mask is None else _mask_onto(mask, ids, None, T.shape, what)
        Z = ops_.apply(identity, _vector_onto(T, ids), mask=m, accum=accum,
                       out=_vector_onto(out, ids), replace=replace)
        res = HyperVector(ids, Z, T.size)
        out.ids, out.compact = res.ids, res.compact
    else:
        rows, cols = _union(T.row_ids, out.row_ids), _union(T.col_ids, out.col_ids)
        m = None if mask is None else _mask_onto(mask, rows, cols, T.shape, what)
        Z = ops_.apply(identity, _onto(T, rows, cols), mask=m, accum=accum,
                       out=_onto(out, rows, cols).dup(), replace=replace)
        res = HyperMatrix(rows, cols, Z, T.shape)
        out.row_ids, out.col_ids, out.compact = res.row_ids, res.col_ids, res.compact
    out.decision = T.decision
    return out


def _same(a, b, what):
    if a != b:
        raise InputError(f"{what}: dimensions differ", got=f"{a} and {b}")


# --- operations -------------------------------------------------------------------------


def _semiring(sr, what):
    return T.semiring_arg(sr, what)


def _positional(name, fn, left, right, sr, kw):
    """A product over a positional ⊗ (``any_secondi`` …): the algebra's rewrite, as for
    ordinary operands (:func:`.indexunary.product`), with the index read from the *ids*:
    the operand it comes from is replaced by its id-valued :func:`apply`."""
    low = lower(sr.mul)
    if low.side == "first":
        left = apply(low.index_op, left, row_vector=(name == "vxm"))
    else:
        right = apply(low.index_op, right)
    kw.setdefault("dtype", np.int64)
    if kw["dtype"] is None:
        kw["dtype"] = np.int64
    return fn(left, right, IU._value_semiring(sr, low.value_mul), **kw)


@_writes
def mxm(A: HyperMatrix, B: HyperMatrix, sr, **kw) -> HyperMatrix:
    sr = _semiring(sr, "mxm")
    if is_positional(sr.mul):
        return _positional("mxm", mxm, A, B, sr, kw)
    _same(A.ncols, B.nrows, "mxm")
    _plain(kw, "mxm", A.row_ids, B.col_ids, (A.nrows, B.ncols))
    inner = _intersect(A.col_ids, B.row_ids)
    C = ops_.mxm(_onto(A, A.row_ids, inner), _onto(B, inner, B.col_ids), sr, **kw)
    return HyperMatrix(A.row_ids, B.col_ids, C, (A.nrows, B.ncols))


@_writes
def mxv(A: HyperMatrix, u: HyperVector, sr, **kw) -> HyperVector:
    sr = _semiring(sr, "mxv")
    if is_positional(sr.mul):
        return _positional("mxv", mxv, A, u, sr, kw)
    _same(A.ncols, u.size, "mxv")
    _plain(kw, "mxv", A.row_ids, None, (A.nrows,))
    w = ops_.mxv(A.compact, _vector_onto(u, A.col_ids), sr, **kw)
    return HyperVector(A.row_ids, w, A.nrows)


@_writes
def vxm(u: HyperVector, A: HyperMatrix, sr, **kw) -> HyperVector:
    sr = _semiring(sr, "vxm")
    if is_positional(sr.mul):
        return _positional("vxm", vxm, u, A, sr, kw)
    _same(A.nrows, u.size, "vxm")
    _plain(kw, "vxm", A.col_ids, None, (A.ncols,))
    w = ops_.vxm(_vector_onto(u, A.row_ids), A.compact, sr, **kw)
    return HyperVector(A.col_ids, w, A.ncols)


def _ewise(fn, A, B, op, union, kw, *defaults):
    pick = _union if union else _intersect
    if isinstance(A, HyperVector):
        _same(A.size, B.size, fn.__name__)
        ids = pick(A.ids, B.ids)
        _plain(kw, fn.__name__, ids, None, A.shape)
        w = fn(_vector_onto(A, ids), _vector_onto(B, ids), op, *defaults, **kw)
        return HyperVector(ids, w, A.size)
    _same(A.shape, B.shape, fn.__name__)
    rows, cols = pick(A.row_ids, B.row_ids), pick(A.col_ids, B.col_ids)
    _plain(kw, fn.__name__, rows, cols, A.shape)
    C = fn(_onto(A, rows, cols), _onto(B, rows, cols), op, *defaults, **kw)
    return HyperMatrix(rows, cols, C, A.shape)


@_writes
def ewise_add(A, B, op, **kw):
    return _ewise(ops_.ewise_add, A, B, op, True, kw)


@_writes
def ewise_mult(A, B, op, **kw):
    return _ewise(ops_.ewise_mult, A, B, op, False, kw)


@_writes
def ewise_union(A, B, op, left_default, right_default, **kw):
    """eWiseUnion (:func:`gbdist.graph.ewise_union`) on the union of the ids: an entry
    stored on neither side stays unstored, so nothing beyond the ids is needed."""
    return _ewise(_plain_union, A, B, op, True, kw, left_default, right_default)


def _coords(A):
    """(row ids, column ids, values) of the stored entries, in the compact order; a
    vector's entries are (ids, zeros) — a row vector's (zeros, ids) with ``row_vector``."""
    if isinstance(A, HyperVector):
        ids, v = A.to_coo()
        return ids, np.zeros(ids.shape, np.int64), v
    return A.to_coo()


def _rebuilt(A, keep, vals, kw, decision):
    """A's compact entries ``keep`` with ``vals``, on A's ids; then mask= and dtype= as
    the identity apply writes them."""
    from ..algebra.ops import BY_NAME
    C = A.compact
    if isinstance(A, HyperVector):
        c = Vector.from_coo(C.indices[keep], vals, C.size, dtype=vals.dtype)
    else:
        r, cc, _ = C.to_coo()
        c = Matrix.from_coo(r[keep], cc[keep], vals, C.shape, dtype=vals.dtype)
    if kw.get("mask") is not None or kw.get("dtype") is not None:
        c = ops_.apply(BY_NAME["identity"], c, **kw)
    c.decision = decision
    return HyperVector(A.ids, c, A.size) if isinstance(A, HyperVector) else HyperMatrix(
        A.row_ids, A.col_ids, c, A.shape)


def _plain_of(A, kw, what):
    if isinstance(A, HyperVector):
        _plain(kw, what, A.ids, None, A.shape)
    else:
        _plain(kw, what, A.row_ids, A.col_ids, A.shape)


@_writes
def apply(op, A, thunk=None, row_vector=False, **kw):
    """A unary op, a bound scalar (``left=`` / ``right=``) on the compact values; an
    index-unary op (``rowindex`` …, its thunk ``thunk=`` or ``right=``) on the ids."""
    _plain_of(A, kw, "apply")
    if IU.is_index_unary(op):
        if thunk is None:
            thunk = kw.pop("right", None)
        iop = index_unary_arg(op, "apply")
        r, c, v = _coords(A)
        if row_vector:
            r, c = c, r
        res = np.asarray(iop.evaluate(v, r, c, IU._thunk(iop, thunk, A.compact, "apply"), np))
        natural = {"bool": np.dtype(np.bool_), "int64": np.dtype(np.int64)}.get(iop.result,
                                                                              res.dtype)
        dec = rule.Decision("apply", True, rule.ABSENT, IU._DEC.format(f"apply {iop.name}")
                            + "; hypersparse: the positions are the ids")
        keep = np.ones(v.size, bool)
        return _rebuilt(A, keep, np.broadcast_to(res, v.shape).astype(natural), kw, dec)
    if isinstance(A, HyperVector):
        return HyperVector(A.ids, ops_.apply(op, A.compact, **kw), A.size)
    return HyperMatrix(A.row_ids, A.col_ids, ops_.apply(op, A.compact, **kw), A.shape)


_DIAGONALS = {"tril": np.less_equal, "triu": np.greater_equal, "diag": np.equal,
              "offdiag": np.not_equal}


@_writes
def select(A, op, k=0, **kw):
    """The stored entries that pass ``op`` (:func:`gbdist.graph.select`'s selectors and
    index-unary ops): value tests on the compact values; ``tril`` … and index-unary ops
    on the ids (``tril``: j − i ≤ k; ids in [0, 2⁶³) subtract without overflow)."""
    _plain_of(A, kw, "select")
    positional = op in _DIAGONALS or IU.is_index_unary(op)
    if not positional:
        C = ops_.select(A.compact, op, k, **kw)
        if isinstance(A, HyperVector):
            return HyperVector(A.ids, C, A.size)
        return HyperMatrix(A.row_ids, A.col_ids, C, A.shape)
    r, c, v = _coords(A)
    if op in _DIAGONALS:
        if isinstance(A, HyperVector):
            raise InputError(f"select: {op!r} is positional and needs a matrix",
                             hint="value predicates and index-unary ops work on vectors")
        keep = _DIAGONALS[op](c - r, int(k))
        name = op
    else:
        iop = index_unary_arg(op, "select")
        keep = np.asarray(iop.evaluate(v, r, c, IU._thunk(iop, k, A.compact, "select"), np)) != 0
        keep = np.broadcast_to(keep, v.shape)
        name = iop.name
    dec = rule.Decision("select", True, rule.ABSENT, IU._DEC.format(f"select {name}")
                        + "; hypersparse: the positions are the ids")
    return _rebuilt(A, keep, v[keep], kw, dec)


@_writes
def extract(A, rows=None, cols=None, **kw):
    """``A(rows, cols)`` (a vector: ``A(rows)``): None, a slice, an int or a sequence of
    ids (repeats allowed); a HyperMatrix (HyperVector) of the selection's shape, whatever
    its size (``extract(H, slice(None), [i])`` is H's column i over all 2⁶⁰ rows)."""
    if isinstance(A, HyperVector) and cols is not None:
        raise InputError("extract: a vector takes rows= only", got=f"cols={cols!r}")
    X = select_ids(A, rows) if isinstance(A, HyperVector) else select_ids(A, rows, cols)
    if kw.get("mask") is None and kw.get("dtype") is None:
        return X
    _plain_of(X, kw, "extract")
    return _rebuilt(X, np.ones(X.nvals, bool), X.to_coo()[-1], kw, X.decision)


@_writes
def reduce_rows(A: HyperMatrix, monoid, **kw) -> HyperVector:
    _plain(kw, "reduce_rows", A.row_ids, None, (A.nrows,))
    return HyperVector(A.row_ids, ops_.reduce_rows(A.compact, monoid, **kw), A.nrows)


@_writes
def reduce_cols(A: HyperMatrix, monoid, **kw) -> HyperVector:
    _plain(kw, "reduce_cols", A.col_ids, None, (A.ncols,))
    return HyperVector(A.col_ids, ops_.reduce_cols(A.compact, monoid, **kw), A.ncols)


def reduce_scalar(A, monoid, **kw):
    return ops_.reduce_scalar(A.compact, monoid, **kw)
