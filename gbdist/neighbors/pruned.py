"""The pruned kNN search: the planner rule that chooses it and the call into the kernel.

When the compiler proves that the best pairs with no shared column follow from the row
summaries (:mod:`gbdist.compiler.pruning`) and the data says it pays
(:func:`gbdist.compiler.pruning.pays`: the products over shared columns are few against
the m·n pairs), :func:`gbdist.knn` evaluates only the overlapping pairs and merges them
with the best of the rest (:mod:`gbdist.backends.pruned` on the host, the same search on
the device for operands bound there, :mod:`gbdist.backends.cuda.pruned`). It is asked
before the backend's fused search and declines — the search then runs as before — when
the runtime's direct-form repair would act on tiles (non-finite inputs, values large
enough to overflow), where the environment says ``GBDIST_PRUNE=never``, and where the
device search declines a plan (its module says which).
"""
from __future__ import annotations

from ..backends.pruned import products, search_pruned
from ..compiler import pruning as rule
from ..compiler.exact import operand_pair
from ..runtime import Repair

__all__ = ["search", "decide", "explain_pruning"]


def decide(b, budget) -> tuple[bool, str]:
    """(prune?, why) for a search over the bound operands ``b`` (:class:`gbdist.backends.base.Bound`)
    with a working-memory ``budget``."""
    mode = rule.mode()
    if mode == "never":
        return False, f"{rule.ENV}=never"
    plan = b.plan  # the plan the binding chose (the accuracy rule may take a direct one)
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return False, "not a pairwise result"
    d = rule.pruning(plan)
    if not d.applies:
        return False, f"not proven: {d.reason}"
    repair = Repair(b, budget)
    if repair.active and (repair.data_check or repair.large):
        return False, "non-finite inputs, or values large enough to overflow (tiles repair them)"
    lkey, rkey = operand_pair(plan)
    L, R = b.data[lkey], b.data[rkey]
    t = _device_products(L, R, b.ncols) if _device(b) else products(L, R, b.ncols)
    mn = b.m * b.n
    stats = f"{t:,} products over shared columns for {mn:,} pairs ({t / max(mn, 1):.3g} per pair)"
    if mode == "always":
        return True, f"{rule.ENV}=always; {stats}"
    if rule.pays(t, b.m, b.n):
        return True, f"{stats}: pruning pays ({rule.rule_text()})"
    return False, f"{stats}: every pair is cheaper ({rule.rule_text()})"


def search(b, budget, kk: int, prune: bool | None = None):
    """(distances, indices) of the kk best for every query by the pruned search, or None
    where it does not apply or does not pay (see :func:`decide`). ``prune``: the decision
    already made (True: on a larger search these queries are part of, :mod:`gbdist.dask`:
    only whether it applies is checked here, not whether it pays on these rows alone;
    False: never)."""
    if prune is False:
        return None
    ok = rule.pruning(b.plan).applies if prune else decide(b, budget)[0]
    if not ok:
        return None
    if _device(b):
        from ..backends.cuda.pruned import search_pruned_device
        return search_pruned_device(b, rule.pruning(b.plan), kk, b.dtype)
    return search_pruned(b, rule.pruning(b.plan), kk, b.dtype, budget)


def _device(b) -> bool:
    """Whether the operands are bound on the device (CuPy arrays)."""
    lkey, _ = operand_pair(b.plan)
    return hasattr(b.data[lkey].indices, "get")


def _device_products(L, R, ncols: int) -> int:
    """:func:`gbdist.backends.pruned.products` of device CSR operands."""
    import cupy as cp
    if ncols <= 4 * (int(L.indices.size) + int(R.indices.size)) + 1024:
        a = cp.bincount(L.indices, minlength=ncols).astype(cp.float64)
        b = a if R is L else cp.bincount(R.indices, minlength=ncols).astype(cp.float64)
        return int(a @ b)
    import scipy.sparse as sps
    host = [sps.csr_matrix((cp.asnumpy(M.data), cp.asnumpy(M.indices), cp.asnumpy(M.indptr)),
                           shape=M.shape) for M in (L, R)]
    return products(host[0], host[0] if R is L else host[1], ncols)


def explain_pruning(X, Y=None, metric="euclidean", backend="cpu", **params) -> str:
    """What ``gbdist.knn(X, Y, metric=..., backend=...)`` decides about pruning for these
    data: the proof (or why there is none) and the planner rule's statistics (the same rule
    on the host and on the device, ``backend="cuda"``)."""
    import numpy as np
    from ..front import colparams
    from ..compiler import ir
    from ..pairwise import as_input, metric_program
    from ..runtime import bind
    X = as_input(X, "X")
    Y = X if Y is None else as_input(Y, "Y")
    plan = metric_program(metric, **params).plan
    needed = {s.name for s in ir.symbols(plan.expr)}
    inputs = {k: v for k, v in (("A", X), ("B", Y)) if k in needed}
    inputs.update(colparams.split(params)[1])
    from ..runtime import get_backend
    xp = np if backend == "cpu" else get_backend(backend, None).xp
    b = bind(plan, inputs, drop_zeros=True, labels={"A": "X", "B": "X" if Y is X else "Y"},
             xp=xp)
    ok, why = decide(b, None)
    return "\n".join([f"proof: {rule.pruning(b.plan)}", f"search: {'pruned' if ok else 'full'} ({why})"])
