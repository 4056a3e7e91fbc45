"""Column operands at bind time: the vectors checked, their defaults computed, and the
operands they scale (:class:`gbdist.compiler.ir.ColScaled`) built once per call.

The compiler has written every product that reads a column vector as a column-free
product over operands whose column c is scaled by s(w_c) (:mod:`gbdist.compiler.columns`);
here s is evaluated on the vectors (k values) and the stored values of each scaled operand
multiplied by it, on the host or on the device, so no backend reads a column vector.
"""
from __future__ import annotations

import functools
import hashlib

import numpy as np

from ..algebra import columns as cols
from ..algebra import terms
from ..errors import InputError


def column_vector(x, col: cols.Column, k: int) -> np.ndarray:
    """The column operand ``x`` as float64 values, checked: a 1-D vector of k finite
    numbers in the operand's domain (>= 0, or > 0)."""
    name = col.name
    if hasattr(x, "get") and not isinstance(x, np.ndarray):  # a CuPy array
        x = x.get()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(f"the column operand {name!r} is not a vector of numbers",
                         expected=f"{k} numbers, one per column", got=str(e).splitlines()[0],
                         hint=f"pass {name}= a 1-D array of length {k}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1 or arr.shape[0] != k:
        raise InputError(f"the column operand {name!r} must have one value per column",
                         expected=f"a 1-D vector of length {k} (the number of columns of X)",
                         got=f"shape {np.shape(x)}",
                         hint=f"{name}[c] is the value of column c")
    bad = ~np.isfinite(arr)
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise InputError(f"the column operand {name!r} must be finite",
                         expected="finite numbers", got=f"{name}[{c}] = {arr[c]}")
    low = arr <= 0 if col.positive else arr < 0
    if low.any():
        c = int(np.flatnonzero(low)[0])
        raise InputError(f"the column operand {name!r} must be "
                         f"{'positive' if col.positive else 'nonnegative'}",
                         expected=f"{name} {'> 0' if col.positive else '>= 0'} in every column",
                         got=f"{name}[{c}] = {arr[c]:g}",
                         hint="a weight of 0 leaves a column out; a variance or range the "
                              "metric divides by must be > 0" if not col.positive else
                              f"{name} is divided by: every value must be > 0")
    if col.relative:  # relative weights: bound divided by their mean, so Σ w = k
        total = float(np.sum(arr))
        if not total > 0:
            raise InputError(f"the relative weights {name!r} must not all be 0",
                             expected=f"{name} >= 0 with a positive sum (the metric divides "
                                      f"by Σ {name})", got=f"sum({name}) = {total:g}",
                             hint="a weight of 0 leaves a column out; at least one column "
                                  "must be kept")
        arr = arr * (k / total)
    return arr


def statistic(kind: str, mats: list, k: int) -> np.ndarray:
    """The column variances (ddof = 1, as NumPy's ``var`` over the stacked rows: SciPy's
    ``seuclidean`` default), ranges (max − min) or gaps (the smallest difference between
    two distinct values) of the stacked CSR matrices ``mats`` (host or device; unstored
    entries are 0). A column with no spread gets 1: every pair differs by 0 there, so any
    positive value gives its term 0."""
    xp = _xp(mats[0])
    n = sum(int(m.shape[0]) for m in mats)
    if kind == "var":
        total = sum(xp.bincount(m.indices, weights=m.data.astype(np.float64), minlength=k)
                    for m in mats)
        mean = total / max(n, 1)
        ss = xp.zeros(k, dtype=np.float64)
        count = xp.zeros(k, dtype=np.float64)
        for m in mats:  # two passes: Σ (x − mean)² without cancellation (offset data)
            d = m.data.astype(np.float64) - mean[m.indices]
            ss = ss + xp.bincount(m.indices, weights=d * d, minlength=k)
            count = count + xp.bincount(m.indices, minlength=k)
        ss = ss + (n - count) * mean * mean  # the unstored zeros
        out = ss / max(n - 1, 1)
    elif kind == "gap":
        out = _gaps([m.get() if xp is not np else m for m in mats], n, k)
    else:
        hi = functools.reduce(xp.maximum, (_dense(m.max(axis=0), xp) for m in mats))
        lo = functools.reduce(xp.minimum, (_dense(m.min(axis=0), xp) for m in mats))
        out = hi - lo
    out = out.get() if hasattr(out, "get") else np.asarray(out)
    return np.where(out > 0, out, 1.0)


def _gaps(mats: list, n: int, k: int) -> np.ndarray:
    """The smallest difference between two distinct values of each column of the stacked
    host CSR matrices (an unstored entry is the value 0), or 0 where a column holds fewer
    than two distinct values. Exact: the order of the rows does not change it."""
    cols = np.concatenate([m.indices for m in mats]).astype(np.int64)
    vals = np.concatenate([m.data for m in mats]).astype(np.float64)
    count = np.bincount(cols, minlength=k)
    zero_cols = np.flatnonzero(count < n)  # columns with an unstored (0) entry
    cols = np.concatenate([cols, zero_cols])
    vals = np.concatenate([vals, np.zeros(zero_cols.size)])
    order = np.lexsort((vals, cols))
    cols, vals = cols[order], vals[order]
    step = np.diff(vals)
    keep = (cols[1:] == cols[:-1]) & (step > 0)
    out = np.full(k, np.inf)
    np.minimum.at(out, cols[1:][keep], step[keep])
    return np.where(np.isfinite(out), out, 0.0)


def _dense(v, xp):
    """A 1 × k reduction of a sparse matrix (sparse or dense, by library) as float64."""
    v = v.toarray() if hasattr(v, "toarray") else v
    return xp.asarray(v, dtype=np.float64).ravel()


def scale_vector(scale_op, vectors: dict) -> np.ndarray:
    """s(w) on the column vectors (name -> float64 array), checked finite and >= 0."""
    env = {c.symbol_name: vectors[c.name] for c in scale_op.columns}
    k = len(next(iter(env.values())))
    with np.errstate(all="ignore"):
        s = np.broadcast_to(np.asarray(terms.evaluate(scale_op.term, env), dtype=np.float64),
                            (k,)).copy()
    bad = ~np.isfinite(s) | (s < 0)
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        from ..algebra.mathtext import math
        raise InputError("a column operand gives a scale that is not a finite nonnegative number",
                         got=f"s = {cols.show(math(scale_op.formula))} = {s[c]} at column {c}",
                         hint="column operands must be finite; one the metric divides by "
                              "must be > 0")
    return s


def digest(s: np.ndarray, pre=None) -> str:
    """What a scaled operand's prepared form is keyed on: the scale's values (and the op
    applied before scaling)."""
    h = hashlib.sha256(np.ascontiguousarray(s).tobytes())
    if pre is not None:
        h.update(repr(pre.key).encode("utf-8"))
    return h.hexdigest()[:32]


def scaled_values(m, s: np.ndarray, pre=None):
    """The stored values of the CSR ``m`` (host or device) times s at their columns, in
    their dtype (a new array); ``pre`` (a column-free unary op, pre(0) = 0) applied to
    the values first (``nonzero``: the pattern)."""
    xp = _xp(m)
    sv = xp.asarray(s) if xp is not np else s
    data = m.data
    if pre is not None:
        data = pre_values(pre, data)
    return (data * sv[m.indices]).astype(m.data.dtype, copy=False)


def pre_values(pre, data):
    """pre(x) on an array of stored values (host or device), by the op's term."""
    on_device = hasattr(data, "get") and not isinstance(data, np.ndarray)
    host = data.get() if on_device else np.asarray(data)
    with np.errstate(all="ignore"):
        out = np.broadcast_to(np.asarray(terms.evaluate(pre.term, {"x": host.astype(
            np.float64)}), dtype=np.float64), host.shape)
    if on_device:
        import cupy
        return cupy.asarray(out)
    return out


def _xp(m):
    if hasattr(m.data, "get") and not isinstance(m.data, np.ndarray):
        import cupy
        return cupy
    return np


def bind_columns(needed: dict, inputs: dict, base: dict, labels: dict) -> dict:
    """name -> float64 vector of each column operand of ``needed`` (ColVector nodes): as
    given, or its default statistic over the matrix operands in ``base``."""
    from ..compiler import ir
    vecs = {n: s for n, s in needed.items() if isinstance(s, ir.ColVector)}
    if not vecs:
        return {}
    widths = {int(v.shape[1]) for v in base.values()}
    k = widths.pop() if len(widths) == 1 else None
    if k is None:
        raise InputError("the operands of a metric with column operands must have the same "
                         "number of columns", got=", ".join(
                             f"{labels.get(n, n)}: {v.shape[1]}" for n, v in sorted(base.items())))
    out = {}
    for name, node in sorted(vecs.items()):
        if node.square:
            out[name] = _square_param(name, node, inputs, base, k)
            continue
        if node.signed:
            out[name] = _signed_param(name, node, inputs, base, k)
            continue
        col = node.column
        if name in inputs and inputs[name] is not None:
            out[name] = column_vector(inputs[name], col, k)
        elif col.default is not None:
            mats, seen = [], set()
            for v in base.values():
                if id(v) not in seen:
                    seen.add(id(v))
                    mats.append(v)
            out[name] = statistic(col.default, mats, k)
        else:
            raise InputError(f"the metric needs the column operand {name!r}",
                             expected=f"{name}= a vector of {k} values, one per column",
                             hint=f"pass {name}=... with the metric's parameters")
    return out


def samples(plan, inputs: dict) -> dict:
    """Seeded positive vectors for the column operands of ``plan`` that ``inputs`` lacks
    (and that have no default): what the runtime's numeric checks of a plan (identical
    rows, row invariances: :mod:`gbdist.runtime.invariance`) run it with. The scaling is
    proven for every vector in the domain; the checks see one."""
    from ..compiler import ir
    k = next((int(np.shape(v)[1]) for v in inputs.values() if len(np.shape(v)) == 2), None)
    out = {}
    for s in ir.symbols(plan.expr):
        if isinstance(s, ir.ColVector) and s.name not in inputs and not s.default and k:
            out[s.name] = np.random.default_rng(26).uniform(0.5, 2.0, k)
    return out


# ---------------------------------------------------------------------------
# row transforms (ir.Mapped): mahalanobis' whitening, haversine's sphere
# ---------------------------------------------------------------------------


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _stacked(mats: list) -> np.ndarray:
    """The rows of the (host or device) CSR matrices, stacked dense on the host, float64."""
    return np.vstack([_host(m.toarray()) for m in mats]).astype(np.float64)


def _distinct(base: dict) -> list:
    mats, seen = [], set()
    for v in base.values():
        if id(v) not in seen:
            seen.add(id(v))
            mats.append(v)
    return mats


def _signed_param(name: str, node, inputs: dict, base: dict, k: int) -> np.ndarray:
    """A vector of any sign over the columns (whiten's centre): as given, checked, or its
    default ("mean": the column means of the stacked rows)."""
    x = inputs.get(name)
    if x is None:
        return common_centre(_distinct(base))
    try:
        arr = np.asarray(_host(x) if hasattr(x, "shape") else x, dtype=np.float64).ravel()
    except (TypeError, ValueError) as e:
        raise InputError(f"the parameter {name!r} is not a vector of numbers",
                         got=str(e).splitlines()[0]) from None
    if arr.shape != (k,) or not np.isfinite(arr).all():
        raise InputError(f"the parameter {name!r} must be {k} finite numbers, one per column",
                         got=f"shape {np.shape(x)}")
    return arr


def _square_param(name: str, node, inputs: dict, base: dict, k: int) -> np.ndarray:
    """A k × k matrix parameter (whiten's VI) as float64: as given, checked, or its default
    (``invcov``: SciPy's, the inverse of the covariance of the stacked rows, transposed)."""
    x = inputs.get(name)
    if x is not None:
        arr = _host(x) if hasattr(x, "shape") else x
        try:
            arr = np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InputError(f"the matrix parameter {name!r} is not a matrix of numbers",
                             expected=f"a {k} x {k} array", got=str(e).splitlines()[0]) from None
        if arr.shape != (k, k):
            raise InputError(f"the matrix parameter {name!r} must be k x k (k = {k}, the "
                             "number of columns)", expected=f"shape ({k}, {k})",
                             got=f"shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise InputError(f"the matrix parameter {name!r} must be finite")
        return arr
    if node.default != "invcov":
        raise InputError(f"the metric needs the matrix parameter {name!r}",
                         expected=f"{name}= a {k} x {k} array")
    S = _stacked(_distinct(base))
    if S.shape[0] <= k:
        # SciPy's rule (its cdist / pdist raise, scikit-learn's inv fails or returns noise):
        # m <= k rows span at most m - 1 < k directions, and m rows in general position are
        # all at the same distance under the inverse on their span: no information
        raise InputError(f"the default {name} (the inverse covariance of the rows) needs more "
                         f"rows than columns: with {S.shape[0]} row(s) of {k} columns the "
                         "covariance is singular", expected=f"at least {k + 1} rows (X and Y "
                         "together), or the parameter given",
                         got=f"{S.shape[0]} row(s), {k} column(s)",
                         hint=f"pass {name}= (a {k} x {k} positive semidefinite matrix)")
    cov = np.atleast_2d(np.cov(S.T))
    sd = np.sqrt(np.diag(cov))  # the rank of the correlation: the columns' units do not count
    if (sd > 0).all() and np.linalg.matrix_rank(cov / np.outer(sd, sd)) == k:
        return np.linalg.inv(cov).T  # SciPy's default
    # singular with more rows than columns (a constant column, a column a combination of
    # others): SciPy's inv raises or returns rounding noise; the pseudo-inverse is the
    # inverse on the directions the rows span, which hold every difference of two rows
    return np.linalg.pinv(cov, hermitian=True)


def whitening(VI: np.ndarray, name: str = "VI") -> np.ndarray:
    """L with (VI + VIᵀ)/2 = L·Lᵀ (eigendecomposition), so that (u − v)ᵀ·VI·(u − v) =
    ‖(u − v)·L‖²; VI must be positive semidefinite (else the quadratic form is negative for
    some pairs, and the distance its square root NaN)."""
    sym = (VI + VI.T) / 2
    lam, Q = np.linalg.eigh(sym)
    scale = max(float(np.max(np.abs(lam))), np.finfo(np.float64).tiny)
    if lam.min() < -1e-10 * scale:
        raise InputError(f"{name} must be positive semidefinite: (u − v)ᵀ·{name}·(u − v) is "
                         "negative for some u − v, and its square root is not a distance",
                         got=f"smallest eigenvalue {lam.min():.3g} (largest {lam.max():.3g})",
                         hint="SciPy returns NaN for such pairs; pass the inverse of a "
                              "covariance matrix")
    return Q * np.sqrt(np.clip(lam, 0.0, None))


def _csr_like(m, dense):
    if hasattr(dense, "get") and not isinstance(dense, np.ndarray):
        import cupyx.scipy.sparse as cps
        return cps.csr_matrix(dense)
    import scipy.sparse as sps
    return sps.csr_matrix(dense)


def _whiten(m, param, centre):
    """(a − μ)·L for every row a of the CSR ``m`` (host or device), dense, in m's dtype."""
    xp = _xp(m)
    L = xp.asarray(whitening(param)) if xp is not np else whitening(param)
    mu = xp.asarray(centre) if xp is not np else centre
    dense = m.toarray().astype(np.float64) - mu[None, :]
    return _csr_like(m, (dense @ L).astype(m.dtype, copy=False))


def _sphere(m, param, centre):
    """Rows (latitude, longitude) in radians → (cos φ cos λ, cos φ sin λ, sin φ)."""
    if m.shape[1] != 2:
        raise InputError("haversine reads rows of two columns, (latitude, longitude) in radians",
                         got=f"{m.shape[1]} columns", expected="2 columns")
    xp = _xp(m)
    d = m.toarray().astype(np.float64)
    lat, lon = d[:, 0], d[:, 1]
    out = xp.stack([xp.cos(lat) * xp.cos(lon), xp.cos(lat) * xp.sin(lon), xp.sin(lat)], axis=1)
    return _csr_like(m, out.astype(m.dtype, copy=False))


def _wcentre(m, param, centre):
    """√w·(u − Σ w·u / Σ w) for every row u of the CSR ``m`` (w = 1 when ``param`` is
    None): centred by its weighted mean, scaled so that plain dot products are weighted. A
    row constant over the columns with w > 0 maps to 0 exactly (decided on the values, not
    from a rounded mean), so its correlation is 0/0 = NaN."""
    xp = _xp(m)
    d = m.toarray().astype(np.float64)
    w = xp.ones(d.shape[1]) if param is None else xp.asarray(param, dtype=np.float64)
    mu = (d @ w) / w.sum()
    kept = d[:, w > 0]
    flat = (kept.max(axis=1) == kept.min(axis=1)) if kept.shape[1] else xp.ones(d.shape[0], bool)
    out = (d - mu[:, None]) * xp.sqrt(w)
    out[flat] = 0.0
    return _csr_like(m, out.astype(m.dtype, copy=False))


TRANSFORMS = {"whiten": _whiten, "sphere": _sphere, "wcentre": _wcentre}
"""The row transforms an :class:`gbdist.compiler.ir.Mapped` operand names."""
WIDTHS = {"sphere": 2}
"""The number of columns a transform reads, where it reads a fixed number."""


def required_width(plan, default: int) -> int:
    """The number of columns the plan's operands must have (a row transform that reads a
    fixed number, haversine's sphere: 2), else ``default``: what the numeric checks of a
    plan (:mod:`gbdist.runtime.invariance`) draw their random rows with."""
    from ..compiler import ir
    for n in ir.walk(plan.expr):
        if isinstance(n, ir.Mapped) and n.transform in WIDTHS:
            return WIDTHS[n.transform]
    return default


def common_centre(raw_mats: list) -> np.ndarray:
    """μ: the column means of the operands' stacked rows (float64, host), a translation
    common to both operands (whiten maps a row a to (a − μ)·L: differences are kept while
    offsets stop costing digits)."""
    n = sum(int(r.shape[0]) for r in raw_mats)
    total = sum(_host(r.sum(axis=0)).ravel().astype(np.float64) for r in raw_mats)
    return total / max(n, 1)


def map_rows(node, m, vectors: dict):
    """The rows of ``m`` mapped by ``node.transform``, with its parameters from
    ``vectors`` (whiten: VI and the common translation μ)."""
    param = vectors.get(node.param) if node.param else None
    centre = vectors.get(node.centre) if node.centre else None
    return TRANSFORMS[node.transform](m, param, centre)


def mapped_digest(node, vectors: dict) -> str:
    """What a mapped operand's prepared form is keyed on: the transform and its
    parameters (μ depends on the other operand too)."""
    h = hashlib.sha256(node.transform.encode("utf-8"))
    for p in (node.param, node.centre):
        if p:
            h.update(p.encode("utf-8") + np.ascontiguousarray(vectors[p]).tobytes())
    return h.hexdigest()[:32]
