"""Binding: a plan's inputs checked and made canonical once, for every backend.

:func:`bind` validates each operand (:mod:`gbdist.inputs`: memory safety, real dtype,
finiteness as ``ensure_all_finite`` says, domains of the ops), converts it to canonical
CSR (any SciPy sparse format, dense arrays, int32/int64 indices kept, unsorted indices
sorted, duplicates summed), conditions / normalises rows as the plan allows
(:func:`gbdist.backends.rows.condition_rows`, :func:`~gbdist.backends.rows.normalise_rows`)
and builds the transposed operands the steps read. CuPy inputs stay on the device when
the backend computes there (``xp`` is CuPy): they are checked there
(:func:`gbdist.inputs.check_device_operand`) and never copied to the host.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..compiler import exact, ir
from ..compiler.missing import absorbs_nan
from ..compiler.typecheck import row_operand
from ..backends import rows
from ..backends.base import Bound, CallMemo
from . import columns, prepared
from ..errors import InputError
from ..inputs import (
    check_device_operand, check_domains, check_finite, check_non_empty, check_real,
    ensure_all_finite_value, host_csr, is_cupy)


def vector_to_row(x, name: str, ensure_all_finite=True, label: str | None = None) -> sps.csr_matrix:
    """A dense vector as a 1×k row in which every entry is stored (zeros too)."""
    label = label or name
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    if sps.issparse(x) or (is_cupy(x) and hasattr(x, "format")):
        v = host_csr(x, label)
        if v.shape[0] != 1:
            if v.shape[1] != 1:
                raise InputError(f"{label} must be a vector", got=f"shape {v.shape}")
            v = v.T.tocsr()
        v.sum_duplicates()
        check_finite(v, label, ensure_all_finite)
        return v
    try:
        arr = np.asarray(x.get() if is_cupy(x) else x)
    except (ValueError, TypeError) as e:
        raise InputError(f"{label} is not a vector of numbers", got=str(e).split("\n")[0]) from None
    check_real(arr.dtype, label)
    if arr.ndim != 1:
        raise InputError(f"{label} must be a 1-D vector", got=f"shape {arr.shape}")
    arr = arr.astype(np.float64)
    k = arr.shape[0]
    v = sps.csr_matrix((arr, np.arange(k), np.array([0, k])), shape=(1, k))
    check_finite(v, label, ensure_all_finite)
    return v


def result_dtype(inputs: dict, dtype=None) -> np.dtype:
    """float32 when every input is float32 (or asked for), else float64."""
    if dtype is not None:
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            dt = None
        if dt not in (np.float32, np.float64):
            raise InputError("dtype must be float32 or float64", got=repr(dtype),
                             hint="dtype=np.float32, dtype=np.float64 or None (from the inputs)")
        return dt
    dts = [np.dtype(getattr(v, "dtype", np.float64)) for v in inputs.values()]
    return np.dtype(np.float32) if dts and all(d == np.float32 for d in dts) else np.dtype(np.float64)


# --- device operands ----------------------------------------------------------------


def _device_csr(x, label: str, dtype, drop_zeros: bool, ensure_all_finite):
    """A checked CuPy input as a canonical cupyx CSR in ``dtype`` (sorted, no duplicates,
    explicit zeros dropped only with ``drop_zeros``), and the facts its check learnt. The
    caller's matrix is never modified; one already canonical in ``dtype`` is used as is."""
    import cupy
    import cupyx.scipy.sparse as cps
    facts = check_device_operand(x, label, ensure_all_finite)
    if cps.issparse(x):
        m = x if x.format == "csr" else x.tocsr()
    else:
        m = cps.csr_matrix(cupy.asarray(x))
    if m.dtype != dtype:  # subnormals kept (CuPy's astype flushes them)
        m = cps.csr_matrix((rows.astype(m.data, dtype, cupy), m.indices.copy(), m.indptr.copy()),
                           shape=m.shape)
    if not m.has_canonical_format:
        if _canonical_on_device(m):  # already sorted without duplicates: no sort, no copy
            m = cps.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, copy=False)
        else:
            m = m.copy() if m is x else m
            m.sum_duplicates()
    if drop_zeros:
        m = _drop_zeros_device(m)
    m.has_canonical_format = True
    return m, facts


def _canonical_on_device(m) -> bool:
    """Whether a checked cupyx CSR's rows are strictly increasing (the fused kernel of
    gbdist.backends.cuda.rows; CuPy's own sum_duplicates sorts every entry to find out)."""
    from ..backends.cuda import rows as dev_rows
    return dev_rows.supported(m.data, m.indptr, m.indices) and \
        dev_rows.canonical(m.indptr, m.indices)


def _drop_zeros_device(m):
    """A CuPy CSR without explicitly stored zeros (a new matrix; the input is kept)."""
    import cupy
    import cupyx.scipy.sparse as cps
    keep = m.data != 0
    if bool(keep.all()):
        return m
    rows_ = cupy.searchsorted(m.indptr, cupy.arange(m.data.shape[0]), side="right") - 1
    kept = cupy.bincount(rows_[keep], minlength=m.shape[0])
    indptr = cupy.concatenate([cupy.zeros(1, dtype=m.indptr.dtype),
                               cupy.cumsum(kept).astype(m.indptr.dtype)])
    return cps.csr_matrix((m.data[keep], m.indices[keep], indptr), shape=m.shape)


def _transposed(v):
    """The canonical transpose of a canonical CSR (SciPy or cupyx)."""
    t = v.T.tocsr()
    if is_cupy(t.data):
        if not t.has_canonical_format:
            t.sum_duplicates()
        t.has_canonical_format = True
    else:
        t.sort_indices()
    return t


def _with_values(v, values):
    """The CSR ``v`` with new values (the same index arrays)."""
    if is_cupy(values):
        import cupyx.scipy.sparse as cps
        out = cps.csr_matrix((values, v.indices, v.indptr), shape=v.shape)
        out.has_canonical_format = True
        return out
    return sps.csr_matrix((values, v.indices, v.indptr), shape=v.shape)


def _xp_of(v):
    if is_cupy(v.data):
        import cupy
        return cupy
    return np


def _upload(v, dtype):
    """A canonical host CSR on the device, in ``dtype`` (a cupyx CSR, marked canonical)."""
    import cupy
    import cupyx.scipy.sparse as cps
    m = cps.csr_matrix((cupy.asarray(v.data.astype(dtype)), cupy.asarray(v.indices),
                        cupy.asarray(v.indptr)), shape=v.shape)
    m.has_canonical_format = True
    return m


def _check_domains(plan, data: dict, known: dict | None = None) -> None:
    """:func:`gbdist.inputs.check_domains` on host and device operands alike. A device
    operand is checked by its minimum on the device where that decides (a nonnegative
    domain, no powers or logs); otherwise by its values on the host: ``known`` ones
    (uploaded from there and unchanged since), else copied back."""
    known = known or {}
    host = {}
    for key, v in data.items():
        host[key] = _DeviceValues(v, known.get(key)) if is_cupy(v.data) else v
    check_domains(plan, host)


class _DeviceValues:
    """A device operand as :func:`gbdist.inputs.check_domains` reads it: ``.data`` is
    the host copy of its values when known, else fetched from the device; ``min()`` is
    computed on the device (the common nonnegative-domain case)."""

    def __init__(self, v, host=None):
        self._v = v
        self._host = host

    @property
    def data(self):
        if self._host is None:  # fetched once, however many checks read it
            self._host = self._v.data.get()
        return np.asarray(self._host, dtype=np.float64)

    def device_min(self):
        import cupy
        return float(cupy.min(self._v.data)) if self._v.data.shape[0] else 0.0


def _accuracy_rule(plan, base: dict, ops: dict, derive, inv, this_call: dict):
    """The plan to run on ``base`` by the accuracy rule (:func:`gbdist.runtime.accuracy.decide`):
    the plan itself, the plan with both operands centred (``base`` updated), or its direct
    plan. Statistics are kept with each prepared operand (per call without one)."""
    from . import accuracy
    from ..compiler import accuracy as _rule
    from ..compiler.accuracy import guards
    if not guards(plan):
        return plan
    if isinstance(plan, _rule.Decided):  # decided once for the whole data (gbdist.dask)
        if plan.centre is not None:
            keys = {row_operand(n)[:2] for g in guards(plan) for n in (g.left, g.right)}
            for name in sorted({k[0] for k in keys if not k[1]}):
                base[name] = derive(name, ("centre", accuracy._digest(plan.centre)),
                                    lambda m=base[name]: accuracy.centred(m, plan.centre))
        return plan
    device = any(is_cupy(base[row_operand(n)[0]].data) for g in guards(plan)
                 for n in (g.left, g.right))
    if device and not accuracy.DEVICE_RULE:
        accuracy.log_skipped("device operands")
        return plan
    # on the device the statistics are CuPy reductions (a few O(stored entries) kernels, a
    # small host read); the CUDA backend's pass for a union summed as written is a switch
    direct = not device or _device_direct_union(plan)
    mats = {}
    for g in guards(plan):
        for node in (g.left, g.right):
            name, flipped, _ = row_operand(node)
            key = (name, flipped)
            if key not in mats:
                op, path = ops[name]
                m = base[name]
                if flipped:
                    m = op.derived(path + ("transpose",), lambda m=m: _transposed(m)) \
                        if op is not None else _transposed(m)
                mats[key] = m

    def remember(key, what, build):
        op, path = ops[key[0]]
        if op is None:
            k = (id(mats[key]), what)
            if k not in this_call:
                this_call[k] = build()
            return this_call[k]
        return op.derived(path + (("transpose",) if key[1] else ()) + ("accuracy",) + what, build)

    if len({m.shape[1] for m in mats.values()}) > 1:
        return plan  # the operands' shapes are refused below, with their message
    ncols = next(iter(mats.values())).shape[1]
    decision = accuracy.decide(plan, mats, remember, bool(getattr(inv, "translate", False)), ncols,
                               direct)
    accuracy.log(decision)
    if not direct and decision.plan is plan and decision.ratio > _rule.TOLERANCE:
        accuracy.warn_no_direct(decision)
    for (name, _flipped), m in decision.centred.items():
        base[name] = derive(name, ("centre", accuracy._digest(decision.centre)), lambda m=m: m)
    return decision.plan


def _device_direct_union(plan=None) -> bool:
    """Whether the CUDA backend sums a plus over the union of stored columns (the accuracy
    rule's direct plan): its code generator's switch, and, for ``plan``, whether every
    step of ``plan``'s direct plan is one it generates (a corner f(0, 0) it cannot absorb
    is refused there: the rule then keeps the rewrite, with its warning)."""
    from ..backends.cuda import genstore  # the generator's switches, without sympy
    if plan is None:
        return bool(genstore.DIRECT_UNION)
    from ..compiler.accuracy import direct_plan
    return bool(genstore.DIRECT_UNION) and genstore.sums_as_written(direct_plan(plan))


def device_sums_as_written(plan) -> bool:
    """Whether the CUDA backend generates every plus-over-the-union step of ``plan`` as it
    stands (a plan direct from the start: steep ops, or the rule's direct plan given by
    gbdist.dask); where it does not, ``backend="auto"`` runs the plan on the CPU. Answered
    without importing the code generator (sympy's printer): :mod:`.genstore` holds the rule."""
    from ..backends.cuda import genstore
    return genstore.sums_as_written(plan)


def _scale_columns(needed: dict, inputs: dict, base: dict, raw: dict, labels: dict,
                   derive, steps, weights: dict) -> None:
    """The column operands checked (or computed from the data as they default), each
    scaled operand's values multiplied by its scale s(w) at their columns
    (:mod:`gbdist.runtime.columns`), and each weighted step's κ(w) put in ``weights``."""
    scaled = {n: s for n, s in needed.items() if isinstance(s, ir.ColScaled)}
    vectors = columns.bind_columns(needed, inputs, {n: raw[n] for n in base}, labels)
    mapped = {n: s for n, s in needed.items() if isinstance(s, ir.Mapped)}
    if mapped:  # row transforms (ir.Mapped): whiten, sphere
        for name, node in mapped.items():
            m = base[name]
            base[name] = derive(name, ("mapped", columns.mapped_digest(node, vectors)),
                                lambda m=m, node=node: columns.map_rows(node, m, vectors))
    weighted = {st.node.weight.key: st.node.weight for st in steps
                if isinstance(st.node, ir.TwoPassUnion) and st.node.weight is not None}
    weights.update({k: columns.scale_vector(op, vectors) for k, op in weighted.items()})
    for name, node in scaled.items():
        s = columns.scale_vector(node.scale, vectors)
        m = base[name]
        pre = node.pre
        base[name] = derive(name, ("colscale", columns.digest(s, pre)),
                            lambda m=m, s=s, pre=pre: _with_values(
                                m, columns.scaled_values(m, s, pre)))


def bind_operands(plan, inputs: dict, drop_zeros: bool = False, dtype=None,
                  ensure_all_finite=True, labels: dict | None = None,
                  ensure_non_empty: bool = False, conditioning=None, xp=np) -> Bound:
    """Check and canonicalise the inputs of a plan, once, for every backend.

    Every operand is validated (memory safety, real dtype, finiteness as
    ``ensure_all_finite`` says) before anything reads it. ``labels`` maps input
    names to the names errors use (``{"A": "X", "B": "Y"}`` for
    ``pairwise_distances``); ``ensure_non_empty`` refuses 0 rows or 0 columns
    with scikit-learn's message. The same object passed under two names is
    canonicalised once. ``conditioning``: (invariance, names) — the rows of those inputs
    are shifted / scaled as the metric is proven invariant under, so that expanded sums
    do not cancel or overflow (``gbdist.runtime.bind`` passes the plan's).
    ``xp``: the array module of the backend. When it is CuPy, CuPy inputs stay on the
    device (validated there) and host inputs are validated on the host and uploaded
    once, both in the result dtype, then conditioned there; else CuPy inputs are copied
    to the host. A plan that reads NaN as a missing value (:mod:`gbdist.compiler.missing`)
    takes NaN where ``ensure_all_finite`` is True, and its rows are not repaired for it.
    """
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    as_run = ensure_all_finite  # what Bound.finite says to the repair of non-finite rows
    if ensure_all_finite is not False and absorbs_nan(plan.expr):
        ensure_all_finite, as_run = "allow-nan", True
    labels = labels or {}
    needed = {s.name: s for s in ir.symbols(plan.expr)}
    missing = sorted(n for n in set(needed) - set(inputs)
                     if not (isinstance(needed[n], ir.ColVector) and needed[n].default))
    if missing:
        raise InputError("the program needs more inputs", expected=", ".join(sorted(needed)),
                         got=", ".join(sorted(inputs)) or "none",
                         hint=f"call program({', '.join(f'{m}=...' for m in missing)})")
    extra = sorted(set(inputs) - set(needed))
    if extra:
        raise InputError("unknown input name(s)", expected=", ".join(sorted(needed)),
                         got=", ".join(extra))
    dt = result_dtype(inputs, dtype)
    structural = any(getattr(s.node, "structural", False) for s in plan.steps)
    on_device = any(is_cupy(v) or getattr(v, "on_device", False) is True
                    for v in inputs.values())
    base, facts, seen = {}, {}, {}
    ops: dict = {}  # name -> (its prepared Operand or None, the path of its current form)
    for name, sym in sorted(needed.items()):
        if isinstance(sym, ir.ColVector):
            continue  # bound below, once the matrices are (columns.bind_columns)
        label = labels.get(name, name)
        x = inputs[name]
        vector = isinstance(sym, ir.Vector)
        key = (id(x), vector)
        if key not in seen:
            if vector:
                src = x.source if isinstance(x, prepared.Prepared) else x
                seen[key] = (vector_to_row(src, name, ensure_all_finite, label), None, None)
            elif xp is not np and is_cupy(x):
                # a stored 0 equals the fill for data semantics: dropped only where it is
                # an entry (structural products), which costs a transfer
                seen[key] = (*_device_csr(x, label, dt, drop_zeros and structural,
                                          ensure_all_finite), None)
            else:
                op = prepared.operand(x, drop_zeros, ensure_all_finite, label)
                seen[key] = (op.csr, None, op)
        base[name], found, op = seen[key]
        ops[name] = (op, ())
        if found is not None:
            facts[name] = found
        if ensure_non_empty:
            check_non_empty(tuple(base[name].shape), label)
    raw = dict(base)

    this_call: dict = {}  # (id of a form without an operand memo, step) -> the next form

    def derive(name: str, step: tuple, build):
        """base[name]'s next form ``step``: from its operand's memo when it has one (else
        once per call: a self-join's two names share one device operand)."""
        op, path = ops[name]
        ops[name] = (op, path + step)
        if op is not None:
            return op.derived(path + step, build)
        key = (id(base[name]), step)
        if key not in this_call:
            this_call[key] = build()
        return this_call[key]

    host_values: dict = {}  # id(device operand) -> its values on the host, where they are known
    if xp is not np:
        # A backend on the device: host operands are uploaded once, in the result dtype, and
        # conditioned / normalised / transposed there (fused kernels, no host round trip).
        uploaded: dict = {}
        for name, v in list(base.items()):
            if isinstance(needed[name], ir.Vector) or is_cupy(v.data):
                continue
            if id(v) not in uploaded:
                uploaded[id(v)] = derive(name, ("upload", dt), lambda v=v: _upload(v, dt))
                host_values[id(uploaded[id(v)])] = v.data
            else:
                ops[name] = (ops[name][0], ops[name][1] + ("upload", dt))
            base[name] = uploaded[id(v)]
    # Conditioning acts on the rows as given (the proven invariance is of the metric as a
    # function of its inputs), then apply(normalize, ·) divides rows by their sums; new
    # value arrays: the caller's arrays are never modified.
    if conditioning is not None:
        inv, names = conditioning
        for name in names:
            m = base[name]
            base[name] = derive(name, ("condition", inv), lambda m=m: _with_values(
                m, rows.condition_rows(m.indptr, m.data, m.shape[1], inv, _xp_of(m))))
    for name in exact.normalised_names(plan):
        m = base[name]
        base[name] = derive(name, ("normalise",), lambda m=m, name=name: _with_values(
            m, rows.normalise_rows(m.indptr, m.data, name, _xp_of(m))))
    weights: dict = {}  # κ(w) of the weighted steps, by the op's key
    _scale_columns(needed, inputs, base, raw, labels, derive, plan.steps, weights)
    if conditioning is not None:
        # the accuracy rule (not for the numeric checks' raw runs), on the host or the device
        # (docs/decision.md, "Accuracy")
        plan = _accuracy_rule(plan, base, ops, derive, conditioning[0], this_call)
    data, left_keys, known, memos, unchecked = {}, set(), {}, {}, {}
    for step in plan.steps:
        for side, key in step.sides:
            name, flipped = key
            if key not in data:
                op, path = ops[name]
                here = path + (("transpose",) if flipped else ())
                if not flipped:
                    data[key] = base[name]
                elif op is None:
                    data[key] = _transposed(base[name])
                else:
                    data[key] = op.derived(here, lambda m=base[name]: _transposed(m))
                # the backends' per-operand forms (mapped values, hashes, reductions)
                memos[key] = CallMemo() if op is None else op.derived(here + ("memo",), dict)
                # a transpose holds the same values: the domain check reads them as a set
                known[key] = host_values.get(id(base[name]))
                checked = ("domain checked", plan.expr.key, key)
                if checked not in memos[key]:
                    unchecked[key] = checked
            if side == "left":
                left_keys.add(key)
    widths = {k: v.shape[1] for k, v in data.items()}
    if len(set(widths.values())) > 1:
        desc = ", ".join(f"{labels.get(k[0], k[0])}{'.T' if k[1] else ''}: {w} columns"
                         for k, w in sorted(widths.items()))
        raise InputError("every matrix operand of one expression must have the same number of "
                         "columns k, as its products and reductions read it (a row of each is "
                         "a point of the same k-dimensional space)", got=desc,
                         hint="mxm(A, B.T) needs A and B with k columns each, and a metric over "
                              "more operands needs all of them with the same k "
                              "(docs/api.md, 'Operand shapes')")
    ncols = next(iter(widths.values())) if widths else next(
        (v.shape[1] for v in base.values()), 0)
    m = max((data[k].shape[0] for k in left_keys), default=1)
    right_rows = [data[key].shape[0] for step in plan.steps for side, key in step.sides
                  if side == "right"]
    n = max(right_rows, default=1)
    for name, (op, _path) in ops.items():  # facts of the operands as given (direct.Repair)
        memos[("raw", name)] = CallMemo() if op is None else op.derived(("memo",), dict)
    _check_domains(plan, {k: data[k] for k in unchecked}, known)
    for key, checked in unchecked.items():  # never again for this operand and plan
        memos[key][checked] = True
    return Bound(plan, data, m, n, ncols, frozenset(left_keys), dt, as_run, raw,
                 facts, drop_zeros, on_device, memos, weights)
