"""The graph :class:`Vector` (module docstring of :mod:`.objects`: storage, prepared forms,
what can change it) and its three forms (:mod:`.vector_forms`)."""
from __future__ import annotations

import numpy as np

from ..backends.graph_reference import cast as _cast
from ..errors import InputError
from ..inputs import is_cupy
from . import sparse as S
from . import vector_forms as VF
from .construct import ABSENT, _Cached, _check_fill, _dedup, _dense_parts, _family, _readonly, \
    _refuse_hypersparse
from .masks import Mask


class Vector(_Cached):
    """A sparse vector operand: ``gb.Vector(dense_1d)`` stores every entry.

    Stored in one of three forms, one semantics (:mod:`.vector_forms`): *sparse* (sorted
    int64 keys and their values), *full* (every position stored: the values alone) or
    *bitmap* (values of every position, 0 where absent, and a presence flag each; most
    positions stored). The keys of a full or bitmap vector are made when something asks
    for them (``indices``, ``keys()``, a sparse operation) and kept."""

    def __init__(self, x=None, fill=ABSENT, dtype=None, *, _parts=None):
        self._init_cache()
        self._fill = _check_fill(fill)
        if _parts is None:
            if isinstance(x, Vector):  # shares x's arrays (never written in place)
                self._adopt(x, dtype)
                return
            _refuse_hypersparse(x, "Vector")
            _parts = _dense_parts(x, dtype)
        self._set(*_parts, dtype=dtype)

    def _set(self, idx, vals, size, dtype=None):
        """Replace the storage (arrays gbdist owns) and bump the version. ``idx`` None:
        ``vals`` holds every position (the full form)."""
        self._check_writable()
        dt = S.check_dtype(vals.dtype if dtype is None else dtype, "the vector")
        on_device = is_cupy(vals)
        if idx is not None and idx.size == size and size > 0:  # every position: full
            idx = None
        self._store(idx, _cast(vals, dt, S.xp_of(on_device)), int(size), on_device)
        self._changed()

    def _store(self, idx, vals, size, on_device):
        if idx is None:
            self._store_form(None, None, vals, None, size, size, on_device)
        else:
            self._store_form(idx, vals, None, None, size, int(idx.size), on_device)

    def _store_form(self, idx, vals, dense, present, size, nvals, on_device):
        self._sparse_idx, self._sparse_vals = idx, vals
        self._dense_vals, self._present = dense, present
        self._size, self._nvals = size, nvals
        self._on_device = on_device
        self._xp = S.xp_of(on_device)
        dt = (dense if dense is not None else vals).dtype
        self._kind = (None if nvals == size else self._fill, self._fill, dt)

    @classmethod
    def _wrap(cls, idx, vals, size, fill, on_device=False) -> "Vector":
        """A new Vector holding sorted unique int64 ``idx`` and ``vals`` of a graph dtype
        that gbdist made and no one else holds, without the checks of ``__init__``."""
        self = cls.__new__(cls)
        self._version, self._cache = 0, {}
        self._fill = fill
        self._store(idx, vals, size, on_device)
        return self

    @classmethod
    def _from_dense(cls, y, present, fill, on_device=False) -> "Vector":
        """A new Vector of a kernel's dense result: ``y`` (an array gbdist made and no one
        else holds: written in place) and ``present`` (None: every position; may be shared,
        never written), in the form :func:`.vector_forms.form_of` picks."""
        self = cls.__new__(cls)
        self._version, self._cache = 0, {}
        self._fill = fill
        self._store_form(*VF.form_of(y, present, S.xp_of(on_device)), on_device)
        return self

    @classmethod
    def from_coo(cls, indices, values, size, dtype=None, dup_op=None, fill=ABSENT, on_device=False):
        xp = S.xp_of(on_device)
        idx = xp.asarray(indices).astype(np.int64).ravel()
        values = xp.asarray(values)
        if values.ndim == 0:
            values = xp.ascontiguousarray(xp.broadcast_to(values, idx.shape))
        values = values.ravel()
        if idx.size != values.size:
            raise InputError("from_coo: indices and values differ in length",
                             got=f"{idx.size}, {values.size}")
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
            raise InputError("from_coo: an index is outside the vector", expected=f"size {size}",
                             got=f"indices in [{int(idx.min())}, {int(idx.max())}]")
        dt = S.check_dtype(values.dtype if dtype is None else dtype, "values")
        keys, vals = _dedup(idx, values, dt, dup_op, xp)
        return cls(fill=fill, _parts=(keys, vals, size))

    @classmethod
    def sparse(cls, size, dtype=np.float64, fill=ABSENT, on_device=False):
        xp = S.xp_of(on_device)
        return cls(fill=fill, _parts=(xp.zeros(0, np.int64),
                                      xp.zeros(0, S.check_dtype(dtype, "dtype")), size))

    def _adopt(self, x, dtype):
        """x's storage, in x's form (cast to ``dtype``: new arrays)."""
        dt = S.check_dtype(x.dtype if dtype is None else dtype, "the vector")
        c = lambda a: None if a is None else _cast(a, dt, x.xp)  # noqa: E731
        dense = x._dense_vals is not None
        self._store_form(x._sparse_idx, None if dense else c(x._sparse_vals), c(x._dense_vals),
                         x._present, x._size, x._nvals, x._on_device)
        self._changed()

    def dup(self, dtype=None, fill=None) -> "Vector":
        """A copy (data copied, in this vector's form), optionally cast / with another fill."""
        out = Vector(self, fill=self._fill if fill is None else fill, dtype=dtype)
        own = lambda a, b: b.copy() if b is not None and b is a else b  # noqa: E731
        if out._dense_vals is None:
            out._sparse_idx = own(self._sparse_idx, out._sparse_idx)
            out._sparse_vals = own(self._sparse_vals, out._sparse_vals)
        else:  # keys made later from the presence flags (never written): not copied
            out._dense_vals = own(self._dense_vals, out._dense_vals)
        return out

    size = property(lambda self: self._size)
    shape = property(lambda self: (self._size,))
    nvals = property(lambda self: self._nvals)
    dtype = property(lambda self: self._kind[2])
    fill = property(lambda self: self._fill)
    on_device = property(lambda self: self._on_device)
    ndim = 1

    @property
    def _idx(self):
        """The stored indices (sorted int64): made from a full or bitmap form on first use."""
        if self._sparse_idx is None:
            self._sparse_idx = VF.keys_of(self._present, self._size, self._xp)
        return self._sparse_idx

    @property
    def _vals(self):
        """The stored values, one per :attr:`_idx` (a full vector's own values, uncopied)."""
        if self._sparse_vals is None:
            d = self._dense_vals
            self._sparse_vals = d if self._present is None else d[self._idx]
        return self._sparse_vals

    @property
    def format(self) -> str:
        """How the entries are held: ``"sparse"``, ``"full"`` or ``"bitmap"``."""
        return "sparse" if self._dense_vals is None else "full" if self._present is None \
            else "bitmap"

    @property
    def indices(self):
        """The stored indices (sorted int64), shared: read-only on the host."""
        return self._idx if self._on_device else self.prepared(
            "read-only indices", lambda: _readonly(self._idx))

    @property
    def values(self):
        """The stored values, shared: read-only on the host."""
        return self._vals if self._on_device else self.prepared(
            "read-only values", lambda: _readonly(self._vals))

    xp = property(lambda self: self._xp)  # NumPy or CuPy: where the arrays live

    @property
    def effective_fill(self):
        return None if self._nvals == self._size else self._fill

    def keys(self):
        return self._idx

    def dense_values(self):
        """``(values (size,), present bool (size,) or None)``: None when every position is
        stored; 0 where absent. No copy for a full or bitmap vector."""
        if self._dense_vals is not None:
            return self._dense_vals, self._present
        if self._nvals == self._size:
            return self._sparse_vals, None
        return self.dense_parts()

    def dense_parts(self):
        """``(values (size,), present bool (size,))``, cached; 0 where absent. A full or
        bitmap vector's values are its own array (not copied)."""
        if self._dense_vals is not None and self._present is not None:
            return self._dense_vals, self._present

        def build():
            xp = self.xp
            if self._nvals == self._size:
                return self.dense_values()[0], xp.ones(self._size, dtype=bool)
            vals = xp.zeros(self._size, dtype=self.dtype)
            present = xp.zeros(self._size, dtype=bool)
            vals[self._idx] = self._vals
            present[self._idx] = True
            return vals, present
        return self.prepared("dense", build)

    def to_dense(self, fill=0):
        xp = self.xp
        dt = np.result_type(self.dtype, np.asarray(fill).dtype) if fill != 0 else self.dtype
        if self._dense_vals is not None:
            out = self._dense_vals.astype(dt, copy=True)
            if self._present is not None and fill != 0:
                out[~self._present] = fill
            return out
        out = xp.full(self._size, fill, dtype=dt)
        out[self._idx] = self._vals
        return out

    S = property(lambda self: Mask(self, structural=True))
    V = property(lambda self: Mask(self, structural=False))

    def to_device(self) -> "Vector":
        if self._on_device:
            return self
        return self._moved(S.cupy().asarray)

    def to_host(self) -> "Vector":
        if not self._on_device:
            return self
        return self._moved(lambda a: a.get())

    def _moved(self, move) -> "Vector":
        """This vector's form with every array moved by ``move`` (to or from the device)."""
        if self._dense_vals is None:
            return Vector(fill=self._fill, _parts=(move(self._idx), move(self._vals), self._size))
        out = Vector._wrap(None, move(self._dense_vals), self._size, self._fill,
                           not self._on_device)
        if self._present is not None:
            out._store_form(None, None, out._dense_vals, move(self._present), self._size,
                            self._nvals, out._on_device)
        return out

    def isequal(self, other) -> bool:
        other = other if isinstance(other, Vector) else Vector(other)
        if self.size != other.size or self.nvals != other.nvals:
            return False
        if _family(self.dtype) != _family(other.dtype):
            return False
        a, b = self.to_host(), other.to_host()
        if a.nvals == a.size:  # both full: the values alone
            return bool(np.array_equal(a.dense_values()[0], b.dense_values()[0],
                                       equal_nan=a.dtype.kind == "f"))
        return bool(np.array_equal(a._idx, b._idx)
                    and np.array_equal(a._vals, b._vals, equal_nan=a.dtype.kind == "f"))

    def __repr__(self):
        where = "device" if self.on_device else "host"
        return (f"gb.Vector(size={self._size}, nvals={self.nvals}, dtype={self.dtype}, "
                f"fill={self._fill!r}, {where})")

    def __len__(self):
        return self._size

    def __array__(self, dtype=None, copy=None):
        """No silent conversion: which value stands for an unstored entry is the caller's
        choice (and NumPy would otherwise iterate ``v[0], v[1] …`` as Scalars)."""
        raise TypeError("a gb.Vector is not converted implicitly: use v.to_dense(fill) or "
                        "v.indices / v.values")

    def __getitem__(self, index):
        """``v[i]`` a Scalar, ``v[idx]`` a Vector."""
        return self._graph_operation("_getitem")(self, index)

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__
