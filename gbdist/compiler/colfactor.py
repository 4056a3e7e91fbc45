"""Column factors: a ⊗ that reads column operands as a factor of its value,
f(x, y; w) = κ(w)·f₁(x, y), made a *weighted* product (:attr:`gbdist.compiler.ir.MxM.weight`).

:mod:`gbdist.compiler.columns` tries a column scaling first (f = f₁(s·x, s·y), nothing
for the kernels to read); where none exists (f₁ homogeneous of degree 0: Canberra's term,
a weighted count w·[x ≠ y]) and ⊕ = plus, this is the rule: κ is read off the factors of
f that read column operands only, normalised so that κ(1) = 1, and the identity
κ(w)·f₁(x, y) = f(x, y; w) is proven (sympy, else the seeded numeric check) before it is
used. f₁(0, 0) must be 0, so a column stored in neither row adds nothing; the planner
then sums the product directly over the union with each column's term multiplied by
κ(w_c) (:func:`gbdist.compiler.plan.weighted_product`).

The rest of f (f₁) may read column operands of its own, none of κ's: Gower's weighted
mixed term w·min(|x − y|·s(r, g, cat), 1) is κ = w times a term that a column *scaling*
makes column-free (:mod:`gbdist.compiler.columns` applies it to f₁ after this rule).
"""
from __future__ import annotations

import functools

import numpy as np

from ..algebra import columns as cols
from ..algebra.lazy import sympy as sp
from ..errors import AnalysisError


@functools.lru_cache(maxsize=256)
def factor(op, what: str = ""):
    """(f₁ op, κ(w) op, proof, f₁ formula, κ formula) when f(x, y; w) = κ(w)·f₁(x, y) with κ
    a factor of column operands only and f₁(0, 0) = 0 (:attr:`ir.MxM.weight`), else None.
    f₁ may read column operands that κ does not (then it is scaled next: compiler/columns)."""
    from ..algebra.formulas import guarded
    from ..algebra.proofs import analysis_budget
    from ..algebra.ops import Op
    with analysis_budget(), guarded(f"the column operands of op {op.name!r}", AnalysisError):
        f = op.formula
        syms = [c for c in f.free_symbols if cols.is_column(c)]
        if op.arity != 2 or not isinstance(f, sp.Mul):
            return None
        factors = [a for a in f.args if a.free_symbols and a.free_symbols <= set(syms)]
        ksyms = set().union(*(a.free_symbols for a in factors)) if factors else set()
        if not factors or any(a.free_symbols & ksyms for a in f.args if a not in factors):
            return None  # no factor of column operands only, or κ's operands read elsewhere too
        written = _written_core(f, [c for c in syms if c in ksyms])
        kappa = sp.Mul(*factors)
        k1 = sp.simplify(kappa.xreplace({c: sp.Integer(1) for c in ksyms}))
        if not k1.is_number or k1 == 0:
            return None
        kappa = _tidy(kappa / k1)
        from ..algebra.formulas import X, Y
        if sp.simplify(written.xreplace({X: 0, Y: 0})) != 0:
            return None  # a column stored in neither row would add κ(w)·f₁(0, 0)
        proof = _check("κ(w)·f₁(x, y) = f(x, y; w) for every w in its domain (κ: the factor "
                       "of column operands)", kappa * written, f, op.domain)
        if not proof.holds:
            return None
        core_op = Op(f"{op.name}_core", written, op.arity, op.domain)
        return core_op, Op(f"{op.name}_weight", kappa, 1, "real"), proof, written, kappa


def _written_core(f, syms):
    """f with every column operand set to 1, as written, without the factors and powers
    of 1 that leaves (w·|x − y|^p gives |x − y|^p, the unweighted op itself)."""
    from ..algebra.formulas import bottom_up, build, substitute
    one = sp.Integer(1)
    e = substitute(f, {s: one for s in syms})

    def rebuilt(node, args):
        if isinstance(node, sp.Pow) and args[0] == one:
            return one
        if isinstance(node, sp.Mul):
            kept = [a for a in args if a != one]
            if not kept:
                return one
            return kept[0] if len(kept) == 1 else sp.Mul(*kept)
        if all(a is b for a, b in zip(args, node.args)):
            return node
        return node.func(*args)

    return build(lambda: bottom_up(e, rebuilt))


def _tidy(e):
    try:
        from ..algebra.proofs import budget
        with budget():
            out = sp.powsimp(sp.simplify(e), force=False)
        return out
    except Exception:  # noqa: BLE001 - kept as derived
        return e


def _check(claim: str, lhs, rhs, domain: str):
    """A Proof of lhs = rhs over x, y (in ``domain``) and the column operands (in theirs):
    sympy first, else a seeded numeric check as written (IEEE) with w = 0 among the points."""
    from ..algebra.proofs import Proof, budget
    from ..algebra.formulas import on_domain
    try:
        with budget():
            d = sp.simplify(on_domain(lhs, domain) - on_domain(rhs, domain))
        if d == 0:
            return Proof(claim, lhs, rhs, domain, "sympy", True)
    except Exception:  # noqa: BLE001 - undecided: the numeric check decides
        pass
    ok, detail = _numeric(lhs, rhs, domain)
    return Proof(claim, lhs, rhs, domain, "numeric (seeded; x, y and w sampled, w = 0 "
                 "included)", ok, detail)


NUMERIC_POINTS = 3000


def _numeric(lhs, rhs, domain: str) -> tuple[bool, str]:
    from ..algebra.evaluate import evaluate
    rng = np.random.default_rng(2026)
    special = np.array([0.0, 1.0, 2.0, 0.5, 3.7, 1e-3, 1e3])
    n = NUMERIC_POINTS
    env = {}
    for name in ("x", "y"):
        v = np.concatenate([np.repeat(special, 1), rng.uniform(0, 5, n - special.size)])
        if domain != "nonnegative":
            v = v * rng.choice([-1.0, 1.0], size=n)
        rng.shuffle(v)
        env[name] = v
    for s in (lhs.free_symbols | rhs.free_symbols):
        col = cols.parse(s.name)
        if col is None:
            continue
        v = np.concatenate([special, rng.uniform(0, 4, n - special.size)])
        if col.positive:
            v[v == 0] = 0.25
        rng.shuffle(v)
        env[s.name] = v
    with np.errstate(all="ignore"):
        a = np.broadcast_to(np.asarray(evaluate(lhs, env), dtype=np.float64), (n,))
        b = np.broadcast_to(np.asarray(evaluate(rhs, env), dtype=np.float64), (n,))
    same = (a == b) | (np.isnan(a) & np.isnan(b)) | (
        np.abs(a - b) <= 1e-9 * np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-300))
    if same.all():
        return True, ""
    i = int(np.flatnonzero(~same)[0])
    at = ", ".join(f"{k} = {env[k][i]:g}" for k in sorted(env))
    return False, f"at {cols.show(at)}: {a[i]:g} != {b[i]:g}"
