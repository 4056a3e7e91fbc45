"""The pruned kNN on the device, the parts that read the plan's formulas: the row
summaries, the apply chains of the overlap pass's operands and the two-pass unions at
overlapping pairs, each on the device operands (no host round trip).

One generated source per plan and storage type (float or double; everything is
evaluated in double): an ``RSpec`` struct per summary for ``gb_row_reduce``
(``kernels/row_reduce.cuh``, the fused backend's row reductions, printed by the same
:func:`gbdist.backends.cuda.codegen._rspec`), a ``PMap`` struct per operand chain for
``gb_prune_map`` and a ``PUnion`` struct per two-pass union for ``gb_prune_union``
(``kernels/pruned_plan.cuh``). The summaries are those the host search reads
(:class:`gbdist.backends.pruned.Pairs`): each row-reduction step of the plan (``col``:
of the query rows, ``row``: of the index rows), and for a two-pass union step ``t`` the
⊕ over a row's stored entries of f(x, z_B) (``ta``, query rows) and of f(z_A, y) (``tb``,
index rows), x and y through the side's apply chain.

With :data:`UNION_TOP` on (the default), a two-pass union whose ⊕ is max or min (and
whose corner needs no shared-column count) is evaluated at the pairs by
``gb_prune_union_top`` instead: the overlap SpGEMM's value (⊕ over the shared columns) ⊕
each row's best entry, in an order sorted once per call, whose column the other row lacks
(:func:`union_top`, issue 29).

The launchers :func:`summary`, :func:`mapped`, :func:`union_pairs`, :func:`union_keys`
and :func:`union_top_pairs` are the only calls into the kernels
(tests/neighbors/pruned_device_emulation.py replaces them by loops written from this
specification).
"""
from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np
import sympy as sp

from ...algebra.formulas import X, Y
from ...compiler import ir
from ...compiler.typecheck import row_operand
from ...resources import read
from . import cache
from .codegen import CudaPrinter, Reduction, _eval_const, _rspec, chain_formula, scalar

THREADS = 256
_KERNELS: dict = {}
# gb_prune_union_top for max / min unions (issue 29): on since its GPU tests passed
# (2026-11-28; chebyshev on the 663K-row shape 81.2 -> 61.6 ms on an H200)
UNION_TOP = True


def _key(node) -> tuple:
    name, flipped, _ = row_operand(node)
    return (name, flipped)


def _fill(chain) -> float:
    return float(_eval_const(chain_formula(chain, sp.Integer(0))))


def _map_struct(name: str, expr, pr) -> str:
    return (f"struct {name} {{\n  typedef gb_real T;\n  typedef double A;\n"
            f"  __device__ static A map(T xs) {{ const A x = (A)xs; return {scalar(expr, pr)}; }}\n"
            "};\n")


def _union_struct(name: str, node, lchain, rchain, za: float, zb: float, pr) -> str:
    lit = pr.literal
    return "\n".join([
        f"struct {name} {{",
        "  typedef gb_real T;",
        "  typedef double A;",
        f"  __device__ static A identity() {{ return {lit(node.add.identity_value)}; }}",
        f"  __device__ static A left(T xs) {{ const A x = (A)xs; return {scalar(chain_formula(lchain, X), pr)}; }}",
        f"  __device__ static A right(T xs) {{ const A x = (A)xs; return {scalar(chain_formula(rchain, X), pr)}; }}",
        f"  __device__ static A f(A x, A y) {{ return {scalar(node.mul.formula, pr)}; }}",
        f"  __device__ static A combine(A x, A y) {{ return {scalar(node.add.op.formula, pr)}; }}",
        f"  __device__ static A za() {{ return {lit(za)}; }}",
        f"  __device__ static A zb() {{ return {lit(zb)}; }}",
        "};", ""])


_FINITE, _NOT_NAN, _ANY = 0, 1, 2


def _nan_class(e) -> int:
    """What ``e`` (a formula over x, y) can give at finite x, y, as printed in double:
    _FINITE (a finite value), _NOT_NAN (±inf by overflow, never NaN) or _ANY (maybe NaN:
    anything not recognised). Sums of finite terms overflow at worst; a sum with one
    non-NaN term stays non-NaN (inf + finite), two could be inf − inf; products likewise
    need finite factors or nonzero constants beside one non-NaN factor (0 · inf). A sum
    with a product among its terms (other than a negation) is _ANY too: see
    :func:`_product`."""
    if e.is_Symbol:
        return _FINITE
    if e.is_number:  # a constant, maybe unevaluated (formulas are kept as written)
        return _FINITE if np.isfinite(_const(e)) else _ANY
    args = [_nan_class(a) for a in e.args]
    if isinstance(e, sp.Abs):
        return args[0]
    if isinstance(e, (sp.Max, sp.Min)):  # gb_max / gb_min of non-NaN values
        return max(args)
    if isinstance(e, sp.Add):
        if _ANY in args or args.count(_NOT_NAN) > 1 or any(_product(a) for a in e.args):
            return _ANY
        return _NOT_NAN
    if isinstance(e, sp.Mul):
        consts = [_const(a) for a in e.args if a.is_number]
        factors = [c for a, c in zip(e.args, args) if not a.is_number]
        if _ANY in args or 0.0 in consts:
            return _ANY
        if _NOT_NAN in factors:  # inf times a constant only: a finite factor may be 0
            return _NOT_NAN if len(factors) == 1 else _ANY
        if len(factors) == 1 and all(abs(c) <= 1 for c in consts):
            return _FINITE
        return _NOT_NAN  # finite factors and constants: overflow at worst
    return _ANY


def _const(e) -> float:
    try:
        return float(e)
    except (TypeError, ValueError):  # complex, or not a number
        return float("nan")


def _product(term) -> bool:
    """A term of a sum that the compiler may fuse into it (a * b + c as one fma): a product
    other than a negation. The SpGEMM's module and gb_prune_union's may fuse differently,
    so the ∩ part would not be gb_prune_union's bit for bit."""
    return isinstance(term, sp.Mul) and not (len(term.args) == 2 and -1 in term.args)


def top_union(node) -> bool:
    """Whether two-pass union ``node`` can take ``gb_prune_union_top``: ⊕ is max or min
    (gb_max / gb_min: exact, idempotent, ordered), the corner needs no count of shared
    columns (absorbed, or ⊕'s identity: :func:`corner`), and ⊗ is never NaN at finite
    arguments and holds no product inside a sum (then the overlap SpGEMM's values, whose
    fmax / fmin ignore NaN, are gb_prune_union's ∩ part at rows whose values are finite;
    the kernel sends the other rows' pairs to the full loop)."""
    if node.add.ufunc not in (np.maximum, np.minimum):
        return False
    if not (node.corner_absorbed or node.corner == node.add.identity_value):
        return False
    return _nan_class(node.mul.formula) != _ANY


def kernels(plan, storage) -> SimpleNamespace:
    """The generated source of ``plan`` for stored values of dtype ``storage`` (float32 or
    float64), and what each struct computes: ``sums`` [(side, name, operand key, struct,
    what)], ``maps`` {(step, "left"/"right"): struct or None (no chain)}, ``unions``
    {step: (struct, left key, right key, z_A, z_B)}, ``tops`` {step: "max" / "min"} (the
    unions :func:`top_union` admits), ``steps`` {name: node}. Raises BackendError where a formula
    does not print (the device search then declines)."""
    st_name = "float" if np.dtype(storage) == np.float32 else "double"
    ck = (plan.expr.key, plan.lowered.key, tuple(sorted(plan.roles.items())), st_name)
    cached = _KERNELS.get(ck)
    if cached is not None:
        return cached
    pr = CudaPrinter(np.float64)
    parts = [read("kernels", "gbdist.cuh"), f"typedef {st_name} gb_real;\ntypedef double gb_acc;\n"]
    sums, maps, unions, tops = [], {}, {}, {}

    def reduction(side, name, key, chain, monoid, fill, what):
        spec = f"PSum{len(sums)}"
        red = Reduction(None, chain, monoid.op, monoid.identity_value, fill, monoid.idempotent, side)
        parts.append(_rspec(spec, red, pr))
        sums.append((side, name, key, spec, what))

    for st in plan.steps:
        node = st.node
        if isinstance(node, ir.RowReduce) and st.kind in ("col", "row"):
            _, _, chain = row_operand(node.arg)
            reduction(st.kind, st.name, _key(node.arg), chain, node.monoid, _fill(chain),
                      ("reduce", chain, node.monoid))
        elif isinstance(node, (ir.Intersect, ir.TwoPassUnion)):
            _, _, lchain = row_operand(node.left)
            _, _, rchain = row_operand(node.right)
            for side, chain in (("left", lchain), ("right", rchain)):
                spec = None
                if chain:
                    spec = f"PMap{len(maps)}"
                    parts.append(_map_struct(spec, chain_formula(chain, X), pr))
                maps[(st.name, side)] = spec
            if isinstance(node, ir.TwoPassUnion):
                za, zb = _fill(lchain), _fill(rchain)
                e = node.add.identity_value
                with sp.evaluate(False):  # as written, as the fused kernels print ⊗
                    fa = node.mul.formula.xreplace({X: chain_formula(lchain, X), Y: sp.Float(zb)})
                    fb = node.mul.formula.xreplace({X: sp.Float(za), Y: chain_formula(rchain, X)})
                one = (SimpleNamespace(formula=fa),)
                reduction("col", st.name + "a", _key(node.left), one, node.add, e,
                          ("union", node, "a", lchain, zb))
                reduction("row", st.name + "b", _key(node.right), (SimpleNamespace(formula=fb),),
                          node.add, e, ("union", node, "b", rchain, za))
                spec = f"PUnion{len(unions)}"
                parts.append(_union_struct(spec, node, lchain, rchain, za, zb, pr))
                unions[st.name] = (spec, _key(node.left), _key(node.right), za, zb)
                if top_union(node):
                    tops[st.name] = "max" if node.add.ufunc is np.maximum else "min"
    parts += [read("kernels", "row_reduce.cuh"), read("kernels", "pruned_plan.cuh")]
    source = "\n".join(parts)
    out = SimpleNamespace(source=source, sums=sums, maps=maps, unions=unions, tops=tops,
                          steps={st.name: st.node for st in plan.steps},
                          key="pruned-plan-" + hashlib.sha256(source.encode()).hexdigest()[:24])
    _KERNELS[ck] = out
    return out


def names(pk, itype: str, top: bool | None = None) -> tuple[str, ...]:
    """Every instantiation of ``pk``'s source for indptr type ``itype`` ("int", "long long");
    with ``top`` (default :data:`UNION_TOP`) also gb_prune_union_keys / gb_prune_union_top
    of the unions in ``pk.tops``."""
    out = [f"gb_row_reduce<{s[3]}, {itype}>" for s in pk.sums]
    out += [f"gb_prune_map<{m}>" for m in pk.maps.values() if m is not None]
    out += [f"gb_prune_union<{u[0]}, {itype}, {g}>" for u in pk.unions.values()
            for g in UNION_LANE_CHOICES]
    if UNION_TOP if top is None else top:
        for step in pk.tops:
            u = pk.unions[step][0]
            out += [f"gb_prune_union_keys<{u}, 0>", f"gb_prune_union_keys<{u}, 1>",
                    f"gb_prune_union_top<{u}, {itype}>"]
    return tuple(out)


def _itype(d) -> str:
    return "int" if np.dtype(d.indptr.dtype) == np.int32 else "long long"


def _fn(pk, name: str, d):
    return cache.module(pk.key, pk.source, names(pk, _itype(d))).get_function(name)


UNION_LANE_CHOICES = (4, 8, 16, 32)
UNION_LANES: int | None = None  # force the lanes a pair of gb_prune_union (a probe's switch)


def union_lanes(A, B) -> int:
    """Lanes a pair of ``gb_prune_union``: about one per two entries of the rows' mean
    length, 4 to 32. A warp a pair left 26 of 32 lanes idle on the 663K x 858K shape (~6
    entries a row; 73 ms of the chebyshev search's 100, H200)."""
    if UNION_LANES is not None:
        return UNION_LANES
    mean = max(A.nnz / max(int(A.shape[0]), 1), B.nnz / max(int(B.shape[0]), 1))
    for g in UNION_LANE_CHOICES:
        if mean <= 2 * g:
            return g
    return UNION_LANE_CHOICES[-1]


def _blocks(work: int) -> int:
    return max(1, min(65535, -(-work // THREADS)))


def _union_indices(cp, A, B, pi, pj):
    """(A's columns, B's row pointers, B's columns, pi, pj) as the union kernels read them:
    the columns int32, B's row pointers in A's type (one template type for both sides),
    the pairs' rows contiguous int64."""
    Aj, Bj = (M.indices.astype(cp.int32, copy=False) for M in (A, B))
    Bp = B.indptr.astype(A.indptr.dtype, copy=False)
    return (Aj, Bp, Bj, cp.ascontiguousarray(pi, dtype=cp.int64),
            cp.ascontiguousarray(pj, dtype=cp.int64))


# -- the launchers (one kernel each) -----------------------------------------------------


def summary(pk, s, d, ncols: int):
    """Summary ``s`` (an entry of ``pk.sums``) of every row of the device CSR ``d``: float64."""
    import cupy as cp
    nrows = int(d.shape[0])
    out = cp.empty(nrows, dtype=cp.float64)
    if nrows:
        _fn(pk, f"gb_row_reduce<{s[3]}, {_itype(d)}>", d)(
            (_blocks(nrows * 32),), (THREADS,), (d.indptr, d.data, np.int64(nrows), np.int64(ncols), out))
    return out


def mapped(pk, step: str, side: str, d):
    """The stored values of ``d`` through the apply chain of ``step``'s ``side``: float64."""
    import cupy as cp
    spec = pk.maps[(step, side)]
    if spec is None:
        return d.data.astype(cp.float64)
    n = int(d.data.size)
    out = cp.empty(n, dtype=cp.float64)
    if n:
        _fn(pk, f"gb_prune_map<{spec}>", d)((_blocks(n),), (THREADS,), (d.data, np.int64(n), out))
    return out


def union_pairs(pk, step: str, A, B, pi, pj):
    """(⊕ over the union of the two rows' columns without the corner, the number of
    shared columns) of two-pass union ``step`` at the pairs (pi[t], pj[t]): float64, int64."""
    import cupy as cp
    spec = pk.unions[step][0]
    npairs = int(pi.size)
    out = cp.empty(npairs, dtype=cp.float64)
    shared = cp.empty(npairs, dtype=cp.int64)
    if npairs:
        Aj, Bp, Bj, pi, pj = _union_indices(cp, A, B, pi, pj)
        g = union_lanes(A, B)
        _fn(pk, f"gb_prune_union<{spec}, {_itype(A)}, {g}>", A)(
            (_blocks(npairs * g),), (THREADS,),
            (A.indptr, Aj, A.data, Bp, Bj, B.data, pi, pj, np.int64(npairs), out, shared))
    return out, shared


def union_keys(pk, step: str, side: int, d):
    """gb_prune_union_keys: each stored entry's one-sided term of union ``step`` (side 0:
    f(x, z_B) of the query rows' entries, 1: f(z_A, y) of the index rows'), float64, and
    whether it is bad (a value not finite through its chain, or a NaN key), uint8."""
    import cupy as cp
    n = int(d.data.size)
    key, bad = cp.empty(n, dtype=cp.float64), cp.empty(n, dtype=cp.uint8)
    if n:
        _fn(pk, f"gb_prune_union_keys<{pk.unions[step][0]}, {side}>", d)(
            (_blocks(n),), (THREADS,), (d.data, np.int64(n), key, bad))
    return key, bad


def union_top_pairs(pk, step: str, A, a, B, b, pi, pj, inter):
    """gb_prune_union_top at the pairs (pi[t], pj[t]): the same values as :func:`union_pairs`
    (without the corner) from the SpGEMM's ``inter`` and each side's sorted entries ``a``,
    ``b`` (:func:`top_order`): float64."""
    import cupy as cp
    npairs = int(pi.size)
    out = cp.empty(npairs, dtype=cp.float64)
    if npairs:
        Aj, Bp, Bj, pi, pj = _union_indices(cp, A, B, pi, pj)
        _fn(pk, f"gb_prune_union_top<{pk.unions[step][0]}, {_itype(A)}>", A)(
            (_blocks(npairs),), (THREADS,),
            (A.indptr, Aj, A.data, a.cols, a.keys, a.bad, Bp, Bj, B.data, b.cols, b.keys, b.bad,
             pi, pj, cp.ascontiguousarray(inter, dtype=cp.float64), np.int64(npairs), out))
    return out


# -- array code around them ----------------------------------------------------------------


def top_order(cp, pk, step: str, side: int, d) -> SimpleNamespace:
    """Side ``side`` of union ``step`` on the device CSR ``d``, as gb_prune_union_top reads
    it: ``cols`` / ``keys`` each row's columns and one-sided terms sorted best first (max:
    descending, min: ascending; ties in any order, they give the same key), in place of
    the row's CSR positions; ``bad`` per row (uint8): an entry not finite through its chain
    or a NaN key (its pairs take the full loop, so a bad row's order is never read)."""
    key, bad = union_keys(pk, step, side, d)
    ptr = d.indptr.astype(cp.int64)
    counts = cp.concatenate([cp.zeros(1, dtype=cp.int64), cp.cumsum(bad, dtype=cp.int64)])
    row_bad = (counts[ptr[1:]] > counts[ptr[:-1]]).astype(cp.uint8)
    if key.size == 0:
        return SimpleNamespace(cols=d.indices.astype(cp.int32), keys=key, bad=row_bad)
    rows = _entry_rows(cp, ptr, int(key.size))
    s = cp.where(cp.isnan(key), 0.0, -key if pk.tops[step] == "max" else key)
    order = cp.lexsort(cp.stack([s, rows]))  # the row first, then best first
    return SimpleNamespace(cols=cp.ascontiguousarray(d.indices[order], dtype=cp.int32),
                           keys=cp.ascontiguousarray(key[order]), bad=row_bad)


def union_top(cp, pk, step: str, A, B, pi, pj, inter):
    """Union ``step`` (in ``pk.tops``) at the pairs (pi, pj) without the corner, as
    :func:`union_pairs` gives it, from ``inter``, the overlap SpGEMM's values there."""
    a, b = top_order(cp, pk, step, 0, A), top_order(cp, pk, step, 1, B)
    return union_top_pairs(pk, step, A, a, B, b, pi, pj, inter)


def _entry_rows(cp, ptr, nnz: int):
    """The row of each stored entry (float64: an exact sort key below 2^53)."""
    return (cp.searchsorted(ptr, cp.arange(nnz, dtype=cp.int64), side="right") - 1).astype(cp.float64)


def summaries(pk, data: dict, ncols: int):
    """({name: summary of the query rows}, {name: summary of the index rows}) (float64)."""
    left, right = {}, {}
    for s in pk.sums:
        (left if s[0] == "col" else right)[s[1]] = summary(pk, s, data[s[2]], ncols)
    return left, right


def corner(cp, node, out, union, ncols: int):
    """⊕ the corner f(z_A, z_B) of the columns stored in neither row
    (:func:`gbdist.backends.pruned._corner` on the device)."""
    C, e = node.corner, node.add.identity_value
    fn = getattr(cp, node.add.ufunc.__name__)
    if node.corner_absorbed:
        return fn(out, C)
    if C == e:
        return out
    if node.add.ufunc is np.add:
        return out + (ncols - union) * C
    if node.add.ufunc is np.multiply:
        return out * cp.power(C, ncols - union)
    return cp.where(union < ncols, fn(out, C), out)
