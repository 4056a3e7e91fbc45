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

The launchers :func:`summary`, :func:`mapped` and :func:`union_pairs` are the only
calls into the kernels (tests/neighbors/pruned_device_emulation.py replaces them by
loops written from this specification).
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


def kernels(plan, storage) -> SimpleNamespace:
    """The generated source of ``plan`` for stored values of dtype ``storage`` (float32 or
    float64), and what each struct computes: ``sums`` [(side, name, operand key, struct,
    what)], ``maps`` {(step, "left"/"right"): struct or None (no chain)}, ``unions``
    {step: (struct, left key, right key, z_A, z_B)}, ``steps`` {name: node}. Raises BackendError where a formula
    does not print (the device search then declines)."""
    st_name = "float" if np.dtype(storage) == np.float32 else "double"
    ck = (plan.expr.key, plan.lowered.key, tuple(sorted(plan.roles.items())), st_name)
    cached = _KERNELS.get(ck)
    if cached is not None:
        return cached
    pr = CudaPrinter(np.float64)
    parts = [read("kernels", "gbdist.cuh"), f"typedef {st_name} gb_real;\ntypedef double gb_acc;\n"]
    sums, maps, unions = [], {}, {}

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
    parts += [read("kernels", "row_reduce.cuh"), read("kernels", "pruned_plan.cuh")]
    source = "\n".join(parts)
    out = SimpleNamespace(source=source, sums=sums, maps=maps, unions=unions,
                          steps={st.name: st.node for st in plan.steps},
                          key="pruned-plan-" + hashlib.sha256(source.encode()).hexdigest()[:24])
    _KERNELS[ck] = out
    return out


def names(pk, itype: str) -> tuple[str, ...]:
    """Every instantiation of ``pk``'s source for indptr type ``itype`` ("int", "long long")."""
    out = [f"gb_row_reduce<{s[3]}, {itype}>" for s in pk.sums]
    out += [f"gb_prune_map<{m}>" for m in pk.maps.values() if m is not None]
    out += [f"gb_prune_union<{u[0]}, {itype}, {g}>" for u in pk.unions.values()
            for g in UNION_LANE_CHOICES]
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
        Aj, Bj = (M.indices.astype(cp.int32, copy=False) for M in (A, B))
        Bp = B.indptr.astype(A.indptr.dtype, copy=False)
        g = union_lanes(A, B)
        _fn(pk, f"gb_prune_union<{spec}, {_itype(A)}, {g}>", A)(
            (_blocks(npairs * g),), (THREADS,),
            (A.indptr, Aj, A.data, Bp, Bj, B.data, cp.ascontiguousarray(pi, dtype=cp.int64),
             cp.ascontiguousarray(pj, dtype=cp.int64), np.int64(npairs), out, shared))
    return out, shared


# -- array code around them ----------------------------------------------------------------


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
