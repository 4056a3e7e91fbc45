"""Turning what a user passes into gb.Matrix / gb.Vector storage: SciPy, NumPy and CuPy
inputs copied into arrays the object owns (its prepared forms can never go stale),
duplicates combined, transposes, and the read-only views the objects hand out; the fill
check and the version-keyed cache of prepared forms both objects share (:class:`_Cached`)."""
from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sps

from ..backends.graph_reference import cast as _cast
from ..errors import InputError
from ..inputs import is_cupy
from . import sparse as S


def _family(dt) -> str:
    return "bool" if dt == np.bool_ else "int" if dt.kind in "iu" else dt.kind


def _dedup(keys, values, dtype, dup_op, xp):
    if keys.size > 1 and bool((keys[1:] > keys[:-1]).all()):  # sorted and unique already
        out = _cast(values, dtype, xp)
        return keys, (out.copy() if out is values else out)  # never the caller's array
    keys, order = _stable_sort(keys, xp)
    values = values[order]
    if keys.size < 2 or not bool((keys[1:] == keys[:-1]).any()):
        return keys, _cast(values, dtype, xp)
    if dup_op is None:
        dup = int(keys[1:][keys[1:] == keys[:-1]][0])
        raise InputError("duplicate coordinates", got=f"key {dup} appears more than once",
                         hint="pass dup_op=gb.ops.plus (or any binary op) to combine them")
    from ..backends.graph_reference import fold_segments
    uniq, seg = xp.unique(keys, return_inverse=True)
    op = getattr(dup_op, "op", dup_op)
    vals, _ = fold_segments(op, seg.ravel(), values, int(uniq.size), dtype, xp)
    return uniq, vals


def _stable_sort(keys, xp):
    """Sorted ``keys`` and the stable order. On the host, when ``key · n + position``
    fits in int64, one value sort of those composites (NumPy's vectorised sort; several
    times faster than a stable argsort, which is a merge sort for int64)."""
    n = int(keys.size)
    if xp is np and n > 1 and int(keys.max()) < (2 ** 62) // n and int(keys.min()) >= 0:
        comp = np.sort(keys * n + np.arange(n, dtype=np.int64))
        return comp // n, comp % n
    order = xp.argsort(keys, kind="stable")
    return keys[order], order


def _transpose(csr, on_device):
    if on_device:
        return S.transpose_csr(csr, True)
    t = csr.T.tocsr()
    if not t.has_canonical_format:
        t.sort_indices()
    return t


def _readonly(a):
    """A view of the host array ``a`` that refuses writes (``a`` itself stays writable:
    the kernels take it, and a read-only array is another Numba type, compiled anew)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _readonly_csr(csr):
    """A SciPy CSR over read-only views of ``csr``'s arrays (flags set, no check)."""
    out = sps.csr_matrix(csr.shape, dtype=csr.dtype)
    out.data, out.indices, out.indptr = (_readonly(csr.data), _readonly(csr.indices),
                                         _readonly(csr.indptr))
    out.has_canonical_format = True
    return out


def _dense_parts(x, dtype=None):
    """(None, values, size) of a dense 1-D input, every entry stored (the full form: no
    indices, :class:`~.vector.Vector`); the values in an
    array no one else holds (the caller's array is copied unless a cast makes a new one)."""
    if x is None:
        raise InputError("gb.Vector needs data", hint="gb.Vector.sparse(size, dtype) for an empty one")
    if is_cupy(x):
        cp = S.cupy()
        arr = cp.asarray(x)
        xp = cp
    else:
        arr = np.asarray(x)
        xp = np
    if arr.ndim != 1:
        raise InputError("a Vector needs 1-D data", got=f"{arr.ndim}-D array")
    dt = S.check_dtype(arr.dtype if dtype is None else dtype, "the vector")
    if arr.dtype == dt and (arr is x or getattr(arr, "base", None) is not None):
        arr = arr.copy()
    return None, arr, arr.size


def _refuse_hypersparse(x, what):
    """A HyperMatrix / HyperVector is not made ordinary (its dimension may be 2⁶⁰): the
    operations on it are gr.hyper's."""
    if getattr(x, "hypersparse", False):
        raise InputError(f"a hypersparse {type(x).__name__} is not an ordinary gb.{what}",
                         got=repr(x), hint="use gr.hyper's operations (gr.hyper.mxm, select, "
                         "extract, ewise_union, apply …) or its .compact part")


ABSENT = "absent"


def _check_fill(fill):
    if isinstance(fill, str) and fill == ABSENT:
        return ABSENT
    if not isinstance(fill, str) and fill is not None and not isinstance(fill, bool) and fill == 0:
        return 0
    raise InputError("unknown fill", got=repr(fill),
                     expected="'absent' (graph: only stored entries exist) or 0 (data)")


class _Cached:
    """Version-keyed cache of prepared forms. ``_kind``: (effective fill, fill, dtype), set
    with the storage: what an operation's decisions depend on (:mod:`.memo`)."""

    decision = None  # on results: the fill decision (gbdist.compiler.graph.Decision)
    _view_of = None  # set on an object that is a prepared form of another (A.T): read-only

    def _init_cache(self):
        self._version = 0
        self._cache = {}

    def prepared(self, name, build):
        """The cached form ``name`` of this object, built by ``build()`` once per version."""
        hit = self._cache.get(name)
        if hit is not None and hit[0] == self._version:
            return hit[1]
        value = build()
        self._cache[name] = (self._version, value)
        return value

    def known(self, name, default=None):
        """The form ``name`` when it is cached for the current version, else ``default``:
        nothing is built (what the object already knows, e.g. its symmetry)."""
        hit = self._cache.get(name)
        return hit[1] if hit is not None and hit[0] == self._version else default

    def _know(self, name, value):
        """Record ``value`` as the form ``name`` of the current version: a fact an operation
        derived from its operands' forms, dropped with every other form on the next change."""
        self._cache[name] = (self._version, value)

    def has_prepared(self, name) -> bool:
        """Whether the form ``name`` is cached for the current version."""
        hit = self._cache.get(name)
        return hit is not None and hit[0] == self._version

    def _changed(self):
        self._version += 1
        self._cache.clear()

    @staticmethod
    def _graph_operation(name: str):
        """The graph operation ``gr.<name>``: ``gb.mxm`` / ``gb.mxv`` / ``gb.reduce`` /
        ``gb.apply`` given a graph operand call it through the operand, as gbdist.front (a
        lower stage) does not import gbdist.graph; the package is loaded whenever one of
        its objects exists."""
        return getattr(sys.modules[__package__], name)

    def _check_writable(self):
        """Refuse an in-place change (``out=``, ``assign``) of a prepared form: ``A.T`` is
        cached on A and served to every later ``A.T``; changing it would leave A as it was
        and every later use of ``A.T`` (pull BFS, PageRank, ``mxv`` pushes) stale."""
        if self._view_of is not None:
            raise InputError(
                "A.T is a read-only view of A (the transpose cached on A): it cannot be "
                "written into (out=, assign)",
                got=f"a write into the transpose of {self._view_of!r}",
                hint="write into A itself (with the operation transposed), or into a copy: "
                     "AT = A.T.dup()")
