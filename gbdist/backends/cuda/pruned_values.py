"""The plan's epilogue at pairs of rows in the device pruned kNN (:mod:`.pruned`), as one
generated elementwise kernel.

The pruned search evaluates the epilogue at the overlapping pairs (tens of millions on the
663K-row shape), at each query's candidates with no shared column, and at every step of the
binary searches for a tie's key range (two a query, ~20 steps). Evaluated with CuPy array
math, each evaluation is a chain of kernels, one per gather, operation and cast (20-30 for
jensenshannon), each reading and writing the whole array; here the chain is one kernel
printed from the checked IR (:func:`.codegen.epilogue_expr`, the printer of the fused search's
epilogue), with the row summaries read in place.

Same values as the CuPy path: double throughout, the same CUDA math functions CuPy's
ufuncs call (sqrt, log, pow, ...), NaN propagated by max/min (``gb_max``, as the fused
search's own epilogue: it returns the NaN it met and, of +0 and -0, the second, where
CuPy's maximum gives a canonical NaN and fmax's zero; equal values, other bits), no
contraction of a product and a sum into one fused multiply-add (``--fmad=false``: CuPy's
separate kernels round each), then the result dtype's rounding. Row indices must be in
range (the summaries are read in place: the callers clamp them, as they did for the
array path's gathers).
Where the plan has a piece this printer has no rule for, :func:`evaluate` returns None and
the caller evaluates with CuPy.
"""
from __future__ import annotations

import numpy as np

from ...compiler import ir
from ...errors import BackendError
from ...resources import read

FUSED = True  # False: CuPy array math (the benchmarks compare the two)
# The tie searches as one kernel (:func:`search`; False: array steps around
# :func:`evaluate`). On one H200 (2026-11-27 (k), the 663K-row shape, answers identical):
# the searches 5.2-8.3 ms -> 0.9-1.3 ms a call (docs/benchmarks.md).
FUSED_SEARCH = True
_KERNELS: dict = {}  # (in_params, out_params, operation) -> cupy.ElementwiseKernel
def _combine(monoid, pr, a: str, b: str) -> str:
    """a ⊕ b, printed from the monoid's formula as the fused search's kernels print it
    (:func:`.codegen._comb`: gb_max / gb_min for max and min)."""
    from .codegen import _comb
    return f"({_comb(monoid.op, a, b, pr)})"


def _corner(node, pr, u: str) -> str:
    """:func:`.pruned_plan.corner` as a C expression (``uni``: the pair's union count)."""
    C, e = node.corner, node.add.identity_value
    if node.corner_absorbed:
        return _combine(node.add, pr, u, pr.literal(C))
    if C == e:
        return u
    if node.add.ufunc is np.add:
        return f"({u} + (double)(K - uni) * {pr.literal(C)})"
    if node.add.ufunc is np.multiply:
        return f"({u} * pow({pr.literal(C)}, (double)(K - uni)))"
    return f"(uni < K ? {_combine(node.add, pr, u, pr.literal(C))} : {u})"


def _source(ev, with_mats: bool):
    """(in_params, operation, the summaries it reads in order, whether it reads the rows'
    stored counts) for ``ev``'s plan."""
    from .codegen import CudaPrinter, epilogue_expr
    pr = CudaPrinter(np.float64)
    ins, body, reads, refs = ["int64 pi", "int64 pj"], [], [], {}
    uses_union = False

    def summary(side: str, name: str) -> str:
        var = f"{side}{len(reads)}"
        reads.append((side, name))
        ins.append(f"raw float64 {var}")
        return f"{var}[{'pi' if side == 'L' else 'pj'}]"

    for k, st in enumerate(ev.mats):
        node, var = st.node, f"s{k}"
        if with_mats:
            ins.append(f"float64 m{k}")
            body.append(f"const double {var} = m{k};")
        elif isinstance(node, ir.TwoPassUnion):
            u = _combine(node.add, pr, summary("L", st.name + "a"), summary("R", st.name + "b"))
            corner = _corner(node, pr, var + "u")
            uses_union = uses_union or "uni" in corner
            body.append(f"const double {var}u = {u};")
            body.append(f"const double {var} = {corner};")
        else:
            body.append(f"const double {var} = {pr.literal(node.add.identity_value)};")
        refs[st.name] = var
    for name in ev.col:
        refs[name] = summary("L", name)
    for name in ev.row:
        refs[name] = summary("R", name)
    expr = epilogue_expr(ev.plan.epilogue, refs, pr)
    if uses_union:
        ins += ["raw int64 lnnz", "raw int64 rnnz"]
        body.insert(0, "const long long uni = lnnz[pi] + rnnz[pj];")
    store = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}.get(ev.dtype)
    if store is None:
        raise BackendError(f"no fused rounding to {ev.dtype}")
    ins.append("int64 K")
    body.append(f"out = (double)({store})({expr});")
    return ", ".join(ins), "\n".join(body), reads, uses_union


def _printed(ev, with_mats: bool):
    """:func:`_source` of ``ev``, printed once per search (None: no rule)."""
    memo = ev.__dict__.setdefault("_fused_source", {})
    if with_mats not in memo:
        try:
            memo[with_mats] = _source(ev, with_mats)
        except BackendError:
            memo[with_mats] = None
    return memo[with_mats]


def _kernel(cp, ins: str, outs: str, op: str, name: str):
    kern = _KERNELS.get((ins, outs, op))
    if kern is None:
        kern = _KERNELS[(ins, outs, op)] = cp.ElementwiseKernel(
            ins, outs, op, name, preamble=read("kernels", "gbdist.cuh"),
            options=("--fmad=false",))
    return kern


def _summaries(ev, reads, uses_union) -> list:
    args = [(ev.lsum if side == "L" else ev.rsum)[name] for side, name in reads]
    return args + ([ev.lnnz, ev.rnnz] if uses_union else []) + [np.int64(ev.ncols)]


def evaluate(ev, pi, pj, mats: dict | None):
    """The epilogue at pairs (pi, pj) (in range) as :meth:`.pruned._Device.values` defines
    it, in one kernel; None where a piece has no rule here (the caller's CuPy path runs)."""
    printed = _printed(ev, bool(mats)) if FUSED else None
    if printed is None:
        return None
    cp = ev.cp
    ins, op, reads, uses_union = printed
    args = [cp.asarray(pi, dtype=cp.int64), cp.asarray(pj, dtype=cp.int64)]
    if mats:
        args += [cp.asarray(mats[st.name], dtype=cp.float64) for st in ev.mats]
    return _kernel(cp, ins, "float64 out", op, "gb_prune_values")(
        *args, *_summaries(ev, reads, uses_union))


def search_source(ins: str, op: str) -> tuple[str, str]:
    """(in_params, operation) of :func:`search` from the epilogue's kernel (``ins``, ``op``
    of :func:`_source` without step values): a lower bound along P for each query, the
    epilogue evaluated in the loop (its body in a scope of its own per step)."""
    params = ["int64 row", "float64 tt", "bool strict", "raw int64 P", "int64 size"]
    params += [p for p in ins.split(", ") if p not in ("int64 pi", "int64 pj")]
    body = "\n    ".join(op.split("\n"))
    loop = ("long long lo = 0, hi = size;\n"
            "while (lo < hi) {\n"
            "  const long long mid = (lo + hi) >> 1;\n"
            "  const long long pi = row;\n"
            "  const long long pj = P[mid < size - 1 ? mid : size - 1];\n"
            "  double out;\n"
            f"  {{\n    {body}\n  }}\n"
            "  if (strict ? (out > tt) : (out >= tt)) hi = mid; else lo = mid + 1;\n"
            "}\n"
            "pos = lo;")
    return ", ".join(params), loop


def search(ev, rows, t, strict, P):
    """For each query ``rows[q]``, the least position a along the index order P with
    h(rows[q], P[a]) > t[q] where ``strict[q]``, ≥ t[q] otherwise (P.size where none): h is
    non-decreasing along P (:func:`.pruned_ties.members`' binary searches, one kernel: a
    thread a query, the epilogue evaluated at each step as :func:`evaluate` does). None
    where the epilogue has no rule here."""
    printed = _printed(ev, False) if FUSED and FUSED_SEARCH else None
    if printed is None:
        return None
    cp = ev.cp
    ins, op, reads, uses_union = printed
    sins, sop = search_source(ins, op)
    return _kernel(cp, sins, "int64 pos", sop, "gb_prune_search")(
        cp.asarray(rows, dtype=cp.int64), cp.asarray(t, dtype=cp.float64),
        cp.asarray(strict, dtype=cp.bool_), cp.asarray(P, dtype=cp.int64), np.int64(P.size),
        *_summaries(ev, reads, uses_union))
