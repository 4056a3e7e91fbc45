"""Array work on canonical CSR rows, NumPy or CuPy alike (``xp``): used by every backend.

* identical rows (:func:`row_hashes`, :func:`hash_matches`, :func:`identical_pairs`) and
  :func:`apply_self_value`, which writes the proven d(a, a) (:func:`gbdist.compiler.exact.self_value`)
  wherever a left row equals a right row. Each canonical row (sorted indices, no duplicates)
  is hashed from its indices and value bits; rows with equal hashes are compared entry by
  entry, so a hash collision never writes a wrong value;
* :func:`condition_rows`: the per-row shift / scaling a metric is proven invariant under
  (:func:`gbdist.runtime.invariance.invariance`), so expanded sums neither cancel nor overflow
  (on the host in one compiled pass once the compiled backend is chosen: it registers its
  kernel through :func:`register_host_condition`; the same values, tested bit for bit);
* :func:`normalise_rows`: ``apply(normalize, A)``, rows divided by their sums.

On CuPy arrays of float32/float64 values and int32/int64 indices these run through the
fused kernels of kernels/rows.cuh (:mod:`gbdist.backends.cuda.rows`), imported only then.
"""
from __future__ import annotations

import numpy as np

from ..errors import DomainError
from .hashing import hash_matches

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _mix(z, xp):
    z = z ^ (z >> np.uint64(30))
    z = z * _M2
    z = z ^ (z >> np.uint64(27))
    z = z * _M3
    return z ^ (z >> np.uint64(31))


def _value_bits(data, xp):
    """Bit patterns of the values as uint64 (float32 and float64 alike; -0.0 as 0.0)."""
    d = data + data.dtype.type(0)  # -0.0 + 0.0 = +0.0
    if d.dtype == np.float32:
        return d.view(xp.uint32).astype(xp.uint64)
    return d.astype(xp.float64, copy=False).view(xp.uint64)


def astype(values, dtype, xp=np):
    """``values`` in ``dtype`` (a copy). On the device, float32 ↔ float64 runs gbdist's own
    kernel, which keeps subnormals; CuPy's ``astype`` flushes them to 0."""
    dtype = np.dtype(dtype)
    if (values.dtype != dtype and _device(xp, values) and dtype in (np.float32, np.float64)
            and values.flags.c_contiguous):
        from .cuda import rows as dev_rows
        return dev_rows.convert(values, dtype)
    return values.astype(dtype)


def _device(xp, values, *indices) -> bool:
    """Whether ``xp`` is CuPy and the fused kernels (gbdist/backends/cuda/rows.py) take
    these arrays' dtypes."""
    if getattr(xp, "__name__", "") != "cupy":
        return False
    from .cuda import rows as dev_rows
    return dev_rows.supported(values, *indices)


def row_hashes(indptr, indices, data, xp=np):
    """A 64-bit hash of each row from its (index, value bits) entries and its length:
    ``mix(Σ_p mix(index·M1 + bits(value)) + length·M3)`` mod 2^64, ``mix`` splitmix64's
    finaliser, -0.0 hashed as +0.0 (kernels/rows.cuh computes the same on the device)."""
    if _device(xp, data, indptr, indices) and indptr.dtype == indices.dtype:
        from .cuda import rows as dev_rows
        return dev_rows.row_hashes(indptr, indices, data)
    if xp is np and _HOST_ROWS:  # the compiled backend's one-pass kernel, once chosen
        out = _HOST_ROWS[0](indptr, indices, data)
        if out is not None:
            return out
    n = indptr.shape[0] - 1
    with np.errstate(over="ignore"):
        tok = _mix(indices.astype(xp.uint64) * _M1 + _value_bits(data, xp), xp)
        cs = xp.concatenate([xp.zeros(1, dtype=xp.uint64), xp.cumsum(tok, dtype=xp.uint64)])
        ip = indptr.astype(xp.int64)
        h = cs[ip[1:]] - cs[ip[:-1]]
        h = _mix(h + (ip[1:] - ip[:-1]).astype(xp.uint64) * _M3, xp)
    return h if n else xp.zeros(0, dtype=xp.uint64)


def operand_hashes(bound, key):
    """The :func:`row_hashes` of a bound's operand ``key``, kept in its memo (once per
    operand: a prepared one's across calls); backends slice them per tile."""
    d = bound.data[key]
    return bound.remember(key, "row hashes", lambda: row_hashes(d.indptr, d.indices, d.data))


def identical_pairs(left, right, xp=np, hashes=None):
    """(i, j) of every row i of ``left`` equal to row j of ``right`` (verified entry by entry).

    ``left`` and ``right`` are (indptr, indices, data) of canonical CSR rows; ``hashes``,
    their :func:`row_hashes` when the caller has them already (a backend keeps each
    operand's once per call and slices them per tile).
    """
    if _device(xp, left[2]) and _device_pair(left, right):
        from .cuda import rows as dev_rows
        return dev_rows.identical_pairs(left, right)
    lp, li, ld = left
    rp, ri, rd = right
    empty = (xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=xp.int64))
    if hashes is None:
        hashes = (row_hashes(lp, li, ld, xp), row_hashes(rp, ri, rd, xp))
    found = hash_matches(hashes[0], hashes[1], xp)
    if found is None:
        return empty
    i, j = found
    if xp is np and _HOST_ROWS:  # the compiled backend's verification, once chosen
        ok = _HOST_ROWS[1](left, right, i, j)
        if ok is not None:
            return i[ok], j[ok]
    # verify: same length, then every entry equal
    lp64, rp64 = lp.astype(xp.int64), rp.astype(xp.int64)
    la = lp64[i + 1] - lp64[i]
    keep = la == (rp64[j + 1] - rp64[j])
    i, j, la = i[keep], j[keep], la[keep]
    if i.shape[0] == 0:
        return empty
    n_entries = int(la.sum())
    if n_entries:
        starts = xp.cumsum(la) - la
        if xp is np:  # the entries of pair t are a contiguous run
            pair = np.repeat(np.arange(la.shape[0], dtype=np.int64), la)
        else:
            pair = xp.searchsorted(xp.cumsum(la), xp.arange(n_entries, dtype=xp.int64),
                                   side="right")
        within = xp.arange(n_entries, dtype=xp.int64) - starts[pair]
        pa = lp64[i][pair] + within
        pb = rp64[j][pair] + within
        bad = (li[pa].astype(xp.int64) != ri[pb].astype(xp.int64)) | \
              (_value_bits(ld[pa], xp) != _value_bits(rd[pb], xp))
        nbad = xp.zeros(i.shape[0], dtype=xp.int64)
        if bool(bad.any()):
            nbad = xp.bincount(pair[bad], minlength=i.shape[0])
        ok = nbad == 0
        i, j = i[ok], j[ok]
    return i, j


def _device_pair(left, right) -> bool:
    from .cuda import rows as dev_rows
    return dev_rows.same_types(left, right)


def apply_self_value(value, out, left, right, xp=np, hashes=None):
    """Write the proven d(a, a) into ``out`` (rows × cols) wherever a left row equals a
    right row and the computed value is finite. Returns ``out`` (a copy when it was a
    read-only NumPy view and something was written). On the device (CuPy, float32/64
    values in ``out``'s dtype, int32/64 indices) one kernel hashes each side's rows (once
    when both are the same arrays), one verifies each candidate pair and writes the value,
    and the only transfer is the number of candidates. ``hashes``: the rows' hashes when
    the caller has them (see :func:`identical_pairs`; host only)."""
    if value is None or out.size == 0:
        return out
    if _device(xp, left[2]) and _device_pair(left, right) and out.ndim == 2 and \
            out.dtype == left[2].dtype and out.flags.c_contiguous:
        from .cuda import rows as dev_rows
        dev_rows.write_self_value(out, left, right, value)
        return out
    i, j = identical_pairs(left, right, xp, hashes)
    if i.shape[0] == 0:
        return out
    cur = out[i, j]
    fin = xp.isfinite(cur)
    if xp is np and not out.flags.writeable:  # a broadcast view: copy only when writing
        out = np.array(out)
    out[i[fin], j[fin]] = out.dtype.type(value)
    return out


_HOST_CONDITION: list = []
_HOST_ROWS: list = []


def register_host_rows(hashes, same) -> None:
    """Let ``hashes(indptr, indices, data)`` compute :func:`row_hashes` of host rows (the
    same values, or None to leave it to NumPy) and ``same(left, right, i, j)`` verify
    candidate pairs (a boolean mask, or None): the compiled CPU backend registers its
    kernels when it is chosen, as for :func:`register_host_condition`."""
    _HOST_ROWS[:] = [hashes, same]


def register_host_condition(fn) -> None:
    """Let ``fn(indptr, data, ncols, inv)`` condition host rows (returning the new values,
    or None to leave it to NumPy): the compiled CPU backend registers its kernel when it is
    chosen, so that NumPy-only processes never import Numba."""
    _HOST_CONDITION[:] = [fn]


def condition_rows(indptr, data, ncols: int, inv, xp=np):
    """New values for CSR rows, transformed as ``inv`` allows, to avoid cancellation and
    overflow: a row that stores all k columns is shifted by its mean (when ``inv.shift``:
    the expanded sums then no longer cancel, e.g. correlation of 1e8 + rand); then each
    row is scaled by the power of two that brings its largest |value| into [0.5, 1) (when
    ``inv.scale``; exact: :func:`scale_exponents`, which scales subnormal rows up too, and
    skips a row that scaling down would push below the normal range).
    Computed in float64, returned in ``data``'s dtype. On the device (CuPy, float32/64
    values, int32/64 indptr) one kernel does it all, a warp per row, with no transfer."""
    if not (inv.scale or inv.shift) or data.shape[0] == 0:
        return data
    if _device(xp, data, indptr):
        from .cuda import rows as dev_rows
        return dev_rows.condition(indptr, data, ncols, inv.shift, inv.scale)
    if xp is np and _HOST_CONDITION:  # the compiled backend's one-pass kernel, once chosen
        out = _HOST_CONDITION[0](indptr, data, ncols, inv)
        if out is not None:
            return out
    v = data.astype(xp.float64)
    ip = indptr.astype(xp.int64)
    counts = ip[1:] - ip[:-1]
    nrows = counts.shape[0]
    host = xp is np
    if host:  # rows are contiguous runs: repeat / bincount / reduceat, no searchsorted
        row = np.repeat(np.arange(nrows, dtype=np.int64), counts)
    else:
        row = xp.searchsorted(ip[1:], xp.arange(v.shape[0], dtype=xp.int64), side="right")
    if inv.shift and ncols > 0:
        full = counts == ncols
        if bool(full.any()):
            if host:  # bincount adds in entry order, as np.add.at does
                sums = np.bincount(row, weights=v, minlength=nrows).astype(np.float64)
            else:
                sums = xp.zeros(nrows, dtype=xp.float64)
                _scatter_add(sums, row, v, xp)
            mean = xp.where(full & xp.isfinite(sums), sums / ncols, 0.0)  # inf rows stay as given
            v = v - mean[row]
    if inv.scale:
        a = xp.abs(v)
        if host:
            big = _row_reduce(np.maximum, a, ip, counts, 0.0)
            small = _row_reduce(np.minimum, np.where(a > 0, a, np.inf), ip, counts, np.inf)
        else:
            big = xp.zeros(nrows, dtype=xp.float64)
            _scatter_max(big, row, a, xp)
            small = xp.full(nrows, xp.inf, dtype=xp.float64)
            _scatter_min(small, row, xp.where(a > 0, a, xp.inf), xp)
        s = scale_exponents(big, small, data.dtype, xp)
        v = xp.ldexp(v, np.repeat(s, counts) if host else s[row])
    return v.astype(data.dtype)


def scale_exponents(big, small, dtype, xp=np):
    """The power of two s (int32) each row is scaled by (``ldexp(v, s)``): -e where its
    largest |value| ``big`` is m·2^e with m in [0.5, 1), or 0 where that is not exact or not
    possible — a row without values (big 0), a NaN or ±inf (big not finite), or a scaling
    DOWN that would push the smallest nonzero |value| ``small`` (m'·2^e') below the normal
    range of ``dtype`` (e' + s <= minexp, compared on the exponents: no rounding).
    Scaling up is always exact, however small ``big`` is: a subnormal ``big`` (down to
    2^-1074, or float32's 2^-149) gives s up to 1074, whose factor 2^s is not a float64;
    hence ldexp, which never forms it. The compiled (helpers.condition_rows) and CUDA
    (kernels/rows.cuh gb_condition) kernels apply the same rule."""
    fine = (big > 0) & xp.isfinite(big)
    _, e = xp.frexp(xp.where(fine, big, 1.0))
    _, es = xp.frexp(xp.where(fine, small, 1.0))
    s = -e.astype(xp.int32)
    ok = fine & ((s >= 0) | (es.astype(xp.int32) + s > np.finfo(dtype).minexp))
    return xp.where(ok, s, 0).astype(xp.int32)


def _row_reduce(ufunc, vals, ip, counts, empty: float):
    """``ufunc`` (np.maximum / np.minimum: exact, any order) over each CSR row's run of
    ``vals``, ``empty`` for a row without entries, combined with ``empty`` (as the
    scatter into a buffer filled with it does)."""
    out = np.full(counts.shape[0], empty, dtype=np.float64)
    nz = counts > 0
    if vals.shape[0] and nz.any():
        out[nz] = ufunc(ufunc.reduceat(vals[:int(ip[-1])], ip[:-1][nz]), empty)
    return out


def _scatter_add(out, idx, vals, xp):
    if xp is np:
        np.add.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_add(out, idx, vals)


def _scatter_max(out, idx, vals, xp):
    if xp is np:
        np.maximum.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_max(out, idx, vals)


def _scatter_min(out, idx, vals, xp):
    if xp is np:
        np.minimum.at(out, idx, vals)
    else:
        import cupyx
        cupyx.scatter_min(out, idx, vals)


def row_sums(ip, v):
    """Each CSR row's float64 values added in the order of the device's ``gb_row_sums``
    (kernels/rows.cuh), so host and device sums agree bit for bit: 32 partial sums, the
    entries at offsets l, l + 32, … of a row added in turn into partial l, then joined by
    a butterfly (partial l plus partial l XOR 16, then 8, 4, 2, 1)."""
    nrows = ip.shape[0] - 1
    counts = ip[1:] - ip[:-1]
    n = int(ip[-1]) if nrows > 0 else 0
    start = np.repeat(ip[:-1], counts)
    key = np.repeat(np.arange(nrows, dtype=np.int64) * 32, counts) + (np.arange(n) - start) % 32
    part = np.bincount(key, weights=v[:n], minlength=nrows * 32).reshape(nrows, 32)
    lanes = np.arange(32)
    for off in (16, 8, 4, 2, 1):  # bincount adds in entry order, from 0.0, as the kernel does
        part = part + part[:, lanes ^ off]
    return part[:, 0].copy()


def normalise_rows(indptr, data, name: str, xp=np):
    """Values of CSR rows divided by each row's sum (float64 arithmetic, ``data``'s dtype).
    A row summing to 0 (an empty row) is left as it is; negative values are refused."""
    if data.shape[0] == 0:
        return data
    v = astype(data, np.float64, xp)  # subnormals kept (CuPy's astype flushes them)
    if bool((v < 0).any()):
        raise DomainError(f"input {name}: normalize divides each row by its sum and needs "
                          "nonnegative values", got=f"a value of {float(v.min()):g}",
                          hint="rows must be nonnegative weights, e.g. counts or probabilities")
    ip = indptr.astype(xp.int64)
    row = xp.searchsorted(ip[1:], xp.arange(v.shape[0], dtype=xp.int64), side="right")
    if _device(xp, v, ip):  # in a fixed order (an atomic scatter-add orders them by chance)
        from .cuda import rows as dev_rows
        sums = dev_rows.row_sums(ip, v)
    else:
        sums = row_sums(ip, v)
    sums = xp.where(sums > 0, sums, 1.0)
    return astype(v / sums[row], data.dtype, xp)
